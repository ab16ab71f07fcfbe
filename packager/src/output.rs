//! How `stackpack` talks: errors with a location and a hint, tables, colour only on a
//! terminal and never with `NO_COLOR`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use stackpack_packager::Error;

use crate::cli::GlobalArgs;

static QUIET: AtomicBool = AtomicBool::new(false);
static VERBOSE: AtomicBool = AtomicBool::new(false);

pub fn init(global: &GlobalArgs) {
    QUIET.store(global.quiet, Ordering::Relaxed);
    VERBOSE.store(global.verbose, Ordering::Relaxed);
}

/// True when stderr takes colour.
fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

fn paint(code: &str, text: &str) -> String {
    if colour() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A progress or status line on stderr (not with `--quiet`).
pub fn status(message: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{message}");
    }
}

/// A detail shown only with `--verbose`.
pub fn detail(message: &str) {
    if VERBOSE.load(Ordering::Relaxed) {
        eprintln!("{message}");
    }
}

pub fn warning(message: &str) {
    eprintln!("{} {message}", paint("1;33", "warning:"));
}

/// Prints an error as `error: …`, `--> where`, `hint: …`; returns the exit code.
pub fn report_error(error: &anyhow::Error) -> u8 {
    if let Some(error) = error.downcast_ref::<Error>() {
        eprintln!("{} {}", paint("1;31", "error:"), error.message);
        if let Some(location) = &error.location {
            eprintln!("  --> {location}");
        }
        if let Some(hint) = &error.hint {
            eprintln!("{} {hint}", paint("1;36", "hint:"));
        }
        return error.exit_code();
    }
    eprintln!("{} {error}", paint("1;31", "error:"));
    for cause in error.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    1
}

/// Prints rows as aligned columns; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (index, cell) in row.iter().enumerate().take(columns) {
            widths[index] = widths[index].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            if index + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(widths[index] - cell.chars().count() + 2));
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

/// `1.2 MB`-style sizes for screens.
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

pub fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON values serialise")
    );
}
