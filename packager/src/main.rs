//! `stackpack`: the CI side of Stackpack.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    stackpack_terminal::die_quietly_on_closed_pipe();
    let cli = cli::Cli::parse();
    output::init(&cli.global);
    let result = match &cli.command {
        cli::Command::Keygen(args) => commands::keygen::run(args, &cli.global),
        cli::Command::Version(args) => commands::version::run(args, &cli.global),
        cli::Command::Build(args) => commands::build::run(args, &cli.global),
        cli::Command::Inspect(args) => commands::inspect::run(args, &cli.global),
        cli::Command::Publish(args) => commands::publish::run(args, &cli.global),
        cli::Command::Export(args) => commands::export::run(args, &cli.global),
        cli::Command::Check(args) => commands::check::run(args).map(|code| code as u8),
        cli::Command::Customer(cli::CustomerCommand::New(args)) => commands::customer::new(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => ExitCode::from(output::report_error(&error)),
    }
}
