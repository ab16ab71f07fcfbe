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

/// Parses the program's command line as `P`, as `P::parse()` does (a wrong one is
/// exit 2, said by clap), except that a mistyped flag clap finds no similar argument
/// for (a swap of two letters: `build --kye`) is given the nearest flag of the
/// command too, so every program says "a similar argument exists" for it.
pub fn parse<P: clap::Parser>() -> P {
    P::try_parse().unwrap_or_else(|error| with_similar_flag::<P>(error).exit())
}

fn with_similar_flag<P: clap::CommandFactory>(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument || error.get(ContextKind::SuggestedArg).is_some()
    {
        return error;
    }
    let Some(ContextValue::String(given)) = error.get(ContextKind::InvalidArg) else {
        return error;
    };
    let Some(flag) = given.strip_prefix("--") else {
        return error;
    };
    let flag = flag.split('=').next().unwrap_or(flag).to_string();
    let mut command = P::command();
    command.build();
    // `args_os`: a path that is not UTF-8 must not panic here.
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    if let Some(near) = nearest_flag(&command, &words, &flag) {
        error.insert(
            ContextKind::SuggestedArg,
            ContextValue::String(format!("--{near}")),
        );
    }
    error
}

/// The long flag of the (sub)command `words` name nearest to `flag`: one letter
/// added, dropped, changed or two swapped (two for a flag of six letters or more).
fn nearest_flag(command: &clap::Command, words: &[String], flag: &str) -> Option<String> {
    let mut command = command;
    // Global flags (`-v`) may come before the subcommand: skip flags, descend on
    // each word that names a subcommand of the one reached.
    for word in words.iter().filter(|w| !w.starts_with('-')) {
        if let Some(sub) = command.find_subcommand(word) {
            command = sub;
        }
    }
    let allowed = if flag.len() >= 6 { 2 } else { 1 };
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .filter_map(|arg| arg.get_long())
        .map(|long| (strsim::osa_distance(flag, long), long))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, long)| long.to_string())
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
