//! The commands, and how `stackpack-runner` talks: errors with a location and a hint,
//! tables, colour only on a terminal and never with `NO_COLOR`.

pub mod deploy;
pub mod import;
pub mod inputs;
pub mod receipts;
pub mod setup;
pub mod status;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use semver::Version;
use stackpack_customer_bundle::runner::home::{self, Home};
use stackpack_customer_bundle::runner::{Error, Result};
use stackpack_schema::reference::StackRef;

use crate::cli::{Cli, Command, GlobalArgs, ReceiptsCommand, TrustCommand};

static QUIET: AtomicBool = AtomicBool::new(false);
static VERBOSE: AtomicBool = AtomicBool::new(false);

pub fn init_output(global: &GlobalArgs) {
    QUIET.store(global.quiet, Ordering::Relaxed);
    VERBOSE.store(global.verbose, Ordering::Relaxed);
}

pub fn run(cli: &Cli) -> Result<u8> {
    let g = &cli.global;
    match &cli.command {
        Command::Init(args) => setup::init(g, args),
        Command::Trust(TrustCommand::Add { file, json }) => setup::trust_add(g, file, *json),
        Command::Trust(TrustCommand::List { json }) => setup::trust_list(g, *json),
        Command::Trust(TrustCommand::Remove { key_id, json }) => {
            setup::trust_remove(g, key_id, *json)
        }
        Command::Import(args) => import::import(g, args),
        Command::Verify(args) => import::verify(g, args),
        Command::CheckInputs(args) => inputs::check_inputs(g, args),
        Command::Plan(args) => deploy::plan(g, args),
        Command::Apply(args) => deploy::apply(g, args),
        Command::Rollback(args) => deploy::rollback(g, args),
        Command::Drift(args) => deploy::drift(g, args),
        Command::Status(args) => status::status(g, args),
        Command::Report(args) => receipts::report(g, args),
        Command::Receipts(ReceiptsCommand::Export {
            out,
            dir,
            unreported,
            json,
        }) => receipts::export(g, out.as_deref(), dir.as_deref(), *unreported, *json),
        Command::Receipts(ReceiptsCommand::List { json }) => receipts::list(g, *json),
    }
}

/// The home folder the flags and environment name.
pub fn home_root(global: &GlobalArgs) -> Result<PathBuf> {
    global.home.clone().or_else(home::default_root).ok_or_else(|| {
        Error::usage("cannot tell where the runner home is: neither `--home`, `STACKPACK_RUNNER_HOME` nor `HOME` is set")
    })
}

pub fn open_home(global: &GlobalArgs) -> Result<Home> {
    Home::open(&home_root(global)?)
}

/// `STACK@VERSION`.
pub fn parse_bundle(text: &str) -> Result<(String, Version)> {
    let reference: StackRef = text
        .parse()
        .map_err(|e: stackpack_schema::reference::ReferenceError| Error::usage(e.to_string()))?;
    match reference.version {
        Some(version) => Ok((reference.stack, version)),
        None => Err(
            Error::usage(format!("`{text}` names no version")).hint(format!(
                "write `{text}@VERSION`; `stackpack-runner status` lists what the store holds"
            )),
        ),
    }
}

pub fn parse_stack(text: &str) -> Result<String> {
    stackpack_schema::reference::validate_name(text).map_err(|e| Error::usage(e.to_string()))?;
    Ok(text.to_string())
}

pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

pub fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}

fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

pub fn paint(code: &str, text: &str) -> String {
    if colour() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A progress line on stderr (not with `--quiet`).
pub fn status(message: &str) {
    if !quiet() {
        eprintln!("{message}");
    }
}

/// Prints `error: …`, `--> where`, `hint: …`; returns the exit code.
pub fn report_error(error: &Error) -> u8 {
    eprintln!("{} {}", paint("1;31", "error:"), error.message);
    if let Some(location) = &error.location {
        eprintln!("  --> {location}");
    }
    if let Some(hint) = &error.hint {
        eprintln!("{} {hint}", paint("1;36", "hint:"));
    }
    error.exit_code()
}

/// Aligned columns; the last column is not padded.
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

pub fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON values serialise")
    );
}
