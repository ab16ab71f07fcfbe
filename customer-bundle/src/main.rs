//! `stackpack-runner`: the customer's side of Stackpack.

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    stackpack_terminal::die_quietly_on_closed_pipe();
    // The home holds state, inputs and plans with secrets in them: whatever the
    // caller's umask, nothing the runner or its engine creates is readable by others.
    #[cfg(unix)]
    // SAFETY: umask only changes this process's file creation mask.
    unsafe {
        libc::umask(0o077);
    }
    let cli = cli::Cli::parse();
    commands::init_output(&cli.global);
    stackpack_terminal::finish(commands::run(&cli))
}
