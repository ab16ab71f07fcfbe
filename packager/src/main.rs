//! `stackpack`: the CI side of Stackpack.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

fn main() -> ExitCode {
    stackpack_terminal::die_quietly_on_closed_pipe();
    let cli: cli::Cli = stackpack_terminal::args::parse();
    output::init(&cli.global);
    stackpack_terminal::finish(commands::run(&cli))
}
