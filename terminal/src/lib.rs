//! How the three programs talk to people, in one place (see `shared/STYLE.md`).
//!
//! - [`Error`] is the one user-facing error (what, where, hint, typed cause) and
//!   [`ExitStatus`] the one exit model; [`finish`] ends every program's `main`.
//! - [`Verbosity`] is set once from the global flags; [`status`] and [`detail`]
//!   honour it.
//! - [`print_error`] and [`warning`] write the `error:`/`-->`/`hint:` block.
//! - [`table`] aligns columns; [`print_json`] writes any `Serialize` value.
//! - [`args::ExistingPath`] refuses a file or folder named on the command line that
//!   does not exist (exit 2), while the command line is parsed.
//! - [`words::count`] writes a counted noun (`1 customer`, `2 customers`).
//! - [`die_quietly_on_closed_pipe`] makes a closed stdout end the program quietly, as Unix tools
//!   do, instead of a panic from `println!`.
//!
//! Colour is used only when stderr is a terminal and `NO_COLOR` is unset or empty.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;

pub mod args;
pub mod error;
pub mod words;

pub use error::{
    finish, io, report, Error, ErrorKind, ExitStatus, Result, EXIT_CODES_HELP,
    RUNNER_EXIT_CODES_HELP,
};

/// What `--version` prints after the program's name: the version, the commit it
/// was built from with that commit's date (release builds, `scripts/dist.sh`), and
/// the target, e.g. `0.1.0 (commit 3f9a1c2e4b5d 2026-12-05, x86_64-unknown-linux-gnu, glibc 2.17)`.
pub const VERSION: &str = env!("STACKPACK_VERSION_LINE");

/// How much a program says on stderr besides errors and warnings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

static VERBOSITY: AtomicU8 = AtomicU8::new(1);

impl Verbosity {
    /// From the usual `--quiet` and `--verbose` flags (quiet wins).
    pub fn from_flags(quiet: bool, verbose: bool) -> Verbosity {
        match (quiet, verbose) {
            (true, _) => Verbosity::Quiet,
            (false, true) => Verbosity::Verbose,
            (false, false) => Verbosity::Normal,
        }
    }

    /// Sets the program's verbosity, once, at start.
    pub fn set(self) {
        VERBOSITY.store(self as u8, Ordering::Relaxed);
    }

    pub fn current() -> Verbosity {
        match VERBOSITY.load(Ordering::Relaxed) {
            0 => Verbosity::Quiet,
            2 => Verbosity::Verbose,
            _ => Verbosity::Normal,
        }
    }
}

pub fn quiet() -> bool {
    Verbosity::current() == Verbosity::Quiet
}

pub fn verbose() -> bool {
    Verbosity::current() == Verbosity::Verbose
}

/// Lets a closed stdout (`stackpack … | head`) end the program quietly, as Unix
/// tools do: no panic message, exit code 141 (what a shell reports for SIGPIPE).
///
/// SIGPIPE itself stays ignored (Rust's default), because a TLS client writing to a
/// peer that hung up would otherwise be killed by the signal without a word; that
/// peer gets a proper error instead. Only the panic that `println!` raises on a
/// closed stdout is turned into a quiet exit.
pub fn die_quietly_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(ExitStatus::ClosedPipe.code()));
        }
        default(info);
    }));
}

/// True when stderr takes colour.
pub fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// `text` in an ANSI style (`"1;31"`) when colour is on.
pub fn paint(code: &str, text: &str) -> String {
    if colour() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A progress or status line on stderr (not with `--quiet`).
pub fn status(message: &str) {
    if !quiet() {
        eprintln!("{message}");
    }
}

/// A detail shown only with `--verbose`.
pub fn detail(message: &str) {
    if verbose() {
        eprintln!("{message}");
    }
}

pub fn warning(message: &str) {
    eprintln!("{} {message}", paint("1;33", "warning:"));
}

/// Prints `error: …`, `  --> where`, `hint: …` on stderr.
pub fn print_error(message: &str, location: Option<&str>, hint: Option<&str>) {
    eprintln!("{} {message}", paint("1;31", "error:"));
    if let Some(location) = location {
        eprintln!("  --> {location}");
    }
    if let Some(hint) = hint {
        eprintln!("{} {hint}", paint("1;36", "hint:"));
    }
}

/// Rows as aligned columns under `headers`; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (index, cell) in row.iter().enumerate().take(widths.len()) {
            widths[index] = widths[index].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            text.push_str(cell);
            if index + 1 < cells.len() {
                let width = widths.get(index).copied().unwrap_or(0);
                text.push_str(&" ".repeat(width.saturating_sub(cell.chars().count()) + 2));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

/// Any `Serialize` value as pretty JSON on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string_pretty(value).expect("output types serialise to JSON");
    let mut stdout = std::io::stdout().lock();
    // A closed stdout is the reader's choice, not our failure.
    let _ = writeln!(stdout, "{text}");
}

/// `1.2 MB`-style sizes for screens (powers of 1000, as `ls -h --si`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_every_column_but_the_last() {
        let text = table(
            &["STACK", "VERSION", "NOTE"],
            &[
                vec!["data-plane".into(), "1.4.0".into(), "current".into()],
                vec!["cp".into(), "10.0.0-pr.1".into(), String::new()],
            ],
        );
        assert_eq!(
            text,
            "STACK       VERSION      NOTE\ndata-plane  1.4.0        current\ncp          10.0.0-pr.1\n"
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(999), "999 B");
        assert_eq!(human_size(1_500_000), "1.5 MB");
    }
}
