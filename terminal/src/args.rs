//! Command-line arguments that name files the command reads.
//!
//! A file or folder named on the command line that does not exist is a wrong command
//! line: exit 2, said before anything runs (nothing half-done), in every program.

use std::ffi::OsStr;
use std::path::PathBuf;

/// The value parser of an argument naming a file or folder the command reads: refuses
/// one that does not exist (exit 2) while the command line is parsed. `-` (standard
/// input) passes.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExistingPath;

impl clap::builder::TypedValueParser for ExistingPath {
    type Value = PathBuf;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<PathBuf, clap::Error> {
        let path = PathBuf::from(value);
        if value == "-" || path.exists() {
            return Ok(path);
        }
        let message = missing_path(&path, &arg.map(shown).unwrap_or_default());
        Err(clap::Error::raw(clap::error::ErrorKind::ValueValidation, message).with_cmd(command))
    }
}

/// `--inputs`, or `<FILE>` for a positional argument.
fn shown(arg: &clap::Arg) -> String {
    match arg.get_long() {
        Some(long) => format!("--{long}"),
        None => {
            let name = arg
                .get_value_names()
                .and_then(|names| names.first())
                .map(|name| name.to_string())
                .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
            format!("<{name}>")
        }
    }
}

/// What, where (the argument), and one hint: the current folder a relative path
/// starts from.
pub fn missing_path(path: &std::path::Path, argument: &str) -> String {
    let given = if argument.is_empty() {
        String::new()
    } else {
        format!(" (given as `{argument}`)")
    };
    let hint = match std::env::current_dir() {
        Ok(here) if path.is_relative() => format!(
            "check the path; a relative one starts in the current folder `{}`",
            here.display()
        ),
        _ => "check the path".to_string(),
    };
    format!("`{}` does not exist{given}\nhint: {hint}\n", path.display())
}
