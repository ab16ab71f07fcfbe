//! `stackpack-runner`: the customer's side of Stackpack.

mod cli;
mod commands;

use std::process::ExitCode;

fn main() -> ExitCode {
    stackpack_terminal::die_quietly_on_closed_pipe();
    // The home holds state, inputs and plans with secrets in them: whatever the
    // caller's umask, nothing the runner or its engine creates is readable by others.
    #[cfg(unix)]
    // SAFETY: umask only changes this process's file creation mask.
    unsafe {
        libc::umask(0o077);
    }
    let cli: cli::Cli = stackpack_terminal::args::parse();
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
    let result = commands::run(&cli);
    // A run stopped by SIGINT or SIGTERM has recorded what it did (a `failed`
    // receipt); it then ends as a shell reports a program a signal stopped: 130 for
    // Ctrl-C, 143 for SIGTERM. A command that ended well despite one (`sync`
    // stopping between passes) keeps its own exit.
    match stackpack_runner::interrupt::received() {
        Some(signal) if !matches!(result, Ok(stackpack_terminal::ExitStatus::Success)) => {
            if let Err(error) = &result {
                stackpack_terminal::report(error);
            }
            ExitCode::from(stackpack_runner::interrupt::exit_code(signal))
        }
        _ => stackpack_terminal::finish(result),
    }
}
