//! `stackpack-runner`: the customer's side of Stackpack.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    stackpack_terminal::die_quietly_on_closed_pipe();
    let cli = cli::Cli::parse();
    commands::init_output(&cli.global);
    match commands::run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) => ExitCode::from(commands::report_error(&error)),
    }
}
