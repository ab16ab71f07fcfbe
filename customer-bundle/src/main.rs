//! `stackpack-runner`: the customer's side of Stackpack.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    #[cfg(unix)]
    unsafe {
        // Die quietly on a closed pipe (`… | head`), as Unix tools do.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cli::Cli::parse();
    commands::init_output(&cli.global);
    match commands::run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) => ExitCode::from(commands::report_error(&error)),
    }
}
