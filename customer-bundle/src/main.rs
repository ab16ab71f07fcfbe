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
    if let Some(log) = cli
        .global
        .engine_log
        .as_ref()
        .filter(|log| !log.as_os_str().is_empty())
    {
        // Where every engine run reads it (`Engine::locate`), however deep. An
        // absolute path: the engine runs in a work folder of its own. Set before any
        // thread starts.
        let log = std::path::absolute(log).unwrap_or_else(|_| log.clone());
        std::env::set_var(stackpack_runner::engine::ENGINE_LOG_VARIABLE, log);
    }
    commands::init_output(&cli.global);
    stackpack_terminal::finish(commands::run(&cli))
}
