//! One module per command; each is thin: read its arguments, call the library,
//! print. Errors carry their exit code (see [`UsageError`] and [`Refused`]).

pub mod adoption;
pub mod customer;
pub mod fleet;
pub mod gc;
pub mod init;
pub mod receipts;
pub mod remote;
pub mod serve;
pub mod token;

use std::path::Path;

use stackpack_registry::config::Config;
use stackpack_registry::state::AppState;
use stackpack_registry::OpenError;

/// A usage mistake (exit 2) rather than a refusal (exit 1), with an optional hint.
#[derive(Debug)]
pub struct UsageError(pub String, pub Option<String>);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A refusal (exit 1) that knows what to do next.
#[derive(Debug)]
pub struct Refused(pub String, pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// Opens the registry in `data`, which must exist: only `init` and `serve` create
/// one, so a mistyped `--data` is an error rather than a new, empty registry.
pub fn open_existing(data: &Path) -> anyhow::Result<AppState> {
    match stackpack_registry::open_existing(Config::new(data)) {
        Ok(state) => Ok(state),
        Err(e @ OpenError::Missing(_)) => Err(Refused(
            e.to_string(),
            format!(
                "check `--data`; to start a new registry there, run `stackpack-registry init --data {}`",
                data.display()
            ),
        )
        .into()),
        Err(e) => Err(anyhow::Error::new(e)
            .context(format!("cannot open the registry in `{}`", data.display()))),
    }
}

/// Prints aligned columns, no borders, the widest column last.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    print_line(&widths, headers);
    for row in rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        print_line(&widths, &cells);
    }
}

fn print_line(widths: &[usize], cells: &[&str]) {
    let mut text = String::new();
    for (index, cell) in cells.iter().enumerate() {
        text.push_str(cell);
        if index + 1 < cells.len() {
            text.push_str(&" ".repeat(widths[index] - cell.chars().count() + 2));
        }
    }
    println!("{}", text.trim_end());
}

/// Writes a JSON array to stdout one page of elements at a time, so a whole-fleet
/// answer is never held in memory: `[`, the elements as they come, `]`. Nothing is
/// written before the first page arrives, so a refusal leaves stdout empty.
pub struct JsonArray {
    out: std::io::BufWriter<std::io::Stdout>,
    written: usize,
    opened: bool,
}

impl JsonArray {
    pub fn start() -> anyhow::Result<JsonArray> {
        Ok(JsonArray {
            out: std::io::BufWriter::new(std::io::stdout()),
            written: 0,
            opened: false,
        })
    }

    fn open(&mut self) -> anyhow::Result<()> {
        use std::io::Write as _;
        if !self.opened {
            self.out.write_all(b"[")?;
            self.opened = true;
        }
        Ok(())
    }

    pub fn push<T: serde::Serialize>(&mut self, elements: &[T]) -> anyhow::Result<()> {
        use std::io::Write as _;
        self.open()?;
        for element in elements {
            self.out
                .write_all(if self.written == 0 { b"\n" } else { b",\n" })?;
            serde_json::to_writer_pretty(&mut self.out, element)?;
            self.written += 1;
        }
        Ok(())
    }

    pub fn finish(mut self) -> anyhow::Result<()> {
        use std::io::Write as _;
        self.open()?;
        self.out
            .write_all(if self.written == 0 { b"]\n" } else { b"\n]\n" })?;
        self.out.flush()?;
        Ok(())
    }
}
