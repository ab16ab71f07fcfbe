//! The `stackpack-registry` command line: `cli` says what it accepts, `commands`
//! does it.

mod cli;
mod commands;

use std::process::ExitCode;

fn main() -> ExitCode {
    // A closed stdout (`fleet … | head`) ends a one-shot command quietly. SIGPIPE
    // itself stays ignored, as in the other two programs: the server must outlive a
    // client hanging up, and a TLS client (`--url`) must get an error, not die silently.
    stackpack_terminal::die_quietly_on_closed_pipe();
    let cli: cli::Cli = stackpack_terminal::args::parse();
    stackpack_terminal::Verbosity::from_flags(cli.quiet, cli.verbose).set();
    stackpack_terminal::finish(commands::run(&cli))
}
