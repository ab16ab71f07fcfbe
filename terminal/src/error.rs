//! The one user-facing error of the three programs, and the one exit model.
//!
//! Library crates keep their own `thiserror` enums. At the edge, a command converts
//! them into an [`Error`]: what failed (the message, values in backticks), where (a
//! file, a home, a registry), what to do next (one hint), and how the program exits.
//! The typed cause travels along as the error's `source`, never flattened into the
//! message, so `--verbose` can show the whole chain.

use std::fmt;
use std::process::ExitCode;

/// How a program ends, the same rule in all three (`shared/STYLE.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExitStatus {
    /// 0: done.
    Success,
    /// 1: the thing asked for was refused or failed (verification, a breaking change,
    /// an apply).
    Failure,
    /// 2: the command itself was wrong: a flag, or a file or folder it names.
    Usage,
    /// 3: a look found what it looks for (`drift` found drift), so a scheduled check
    /// tells "changed" from "could not check".
    Found,
    /// 141: stdout was closed by its reader (`… | head`), as a shell reports SIGPIPE.
    ClosedPipe,
}

impl ExitStatus {
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Found => 3,
            ExitStatus::ClosedPipe => 141,
        }
    }

    /// Success when `ok`, otherwise a failure: for commands whose result is a verdict.
    pub fn success_if(ok: bool) -> ExitStatus {
        if ok {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> ExitCode {
        ExitCode::from(status.code())
    }
}

/// The exit codes, for the end of every program's `--help`.
macro_rules! exit_codes_help {
    () => {
        "Exit status, the same in stackpack, stackpack-runner and stackpack-registry:
  0  success
  1  refused or failed: verification, a breaking change, a policy, the engine
  2  the command line is wrong: a flag, or a file or folder it names that is missing
  3  a look found what it looks for (`drift` found drift)"
    };
}

/// The exit codes, for the end of every program's `--help`.
pub const EXIT_CODES_HELP: &str = exit_codes_help!();

/// [`EXIT_CODES_HELP`] and the runner's two more: an engine run stopped by a signal
/// is recorded, then ends as a shell reports the signal (128 + its number).
pub const RUNNER_EXIT_CODES_HELP: &str = concat!(
    exit_codes_help!(),
    "
  130  stopped by Ctrl-C (SIGINT), after recording what the run did
  143  stopped by SIGTERM, after recording what the run did"
);

/// Which of the two error exits an [`Error`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Refused or failed: exit 1.
    Refused,
    /// The command line, or a path it names, is wrong: exit 2.
    Usage,
}

impl ErrorKind {
    pub fn exit_status(self) -> ExitStatus {
        match self {
            ErrorKind::Refused => ExitStatus::Failure,
            ErrorKind::Usage => ExitStatus::Usage,
        }
    }
}

type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What failed, where, and what to do next.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub location: Option<String>,
    pub hint: Option<String>,
    /// The typed error this one was made from, kept for `--verbose`.
    pub source: Option<Source>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            location: None,
            hint: None,
            source: None,
        }
    }

    pub fn refused(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Refused, message)
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Usage, message)
    }

    /// A refusal whose message is a library error's own words, the error kept as
    /// the source.
    pub fn refused_by<E: std::error::Error + Send + Sync + 'static>(error: E) -> Self {
        Error::refused(error.to_string()).caused_by(error)
    }

    /// A usage error whose message is a library error's own words.
    pub fn usage_by<E: std::error::Error + Send + Sync + 'static>(error: E) -> Self {
        Error::usage(error.to_string()).caused_by(error)
    }

    pub fn at(mut self, location: impl fmt::Display) -> Self {
        self.location = Some(location.to_string());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Keeps `error` as the typed cause.
    pub fn caused_by<E: std::error::Error + Send + Sync + 'static>(mut self, error: E) -> Self {
        self.source = Some(Box::new(error));
        self
    }

    pub fn exit_status(&self) -> ExitStatus {
        self.kind.exit_status()
    }

    pub fn exit_code(&self) -> u8 {
        self.exit_status().code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// `cannot <what> \`path\`: error`, as a refusal that keeps the I/O error.
pub fn io(what: &str, path: &std::path::Path, error: std::io::Error) -> Error {
    Error::refused(format!("cannot {what} `{}`: {error}", path.display())).caused_by(error)
}

/// Prints `error: …`, `  --> where`, `hint: …` on stderr, with the chain of typed
/// causes under `--verbose` (a cause whose words the message already holds is not
/// repeated); returns how the program exits.
pub fn report(error: &Error) -> ExitStatus {
    crate::print_error(
        &error.message,
        error.location.as_deref(),
        error.hint.as_deref(),
    );
    if crate::verbose() {
        let mut cause = std::error::Error::source(error);
        while let Some(inner) = cause {
            let text = inner.to_string();
            if !error.message.contains(&text) {
                eprintln!("  caused by: {text}");
            }
            cause = inner.source();
        }
    }
    error.exit_status()
}

/// The end of every program's `main`: a command's result becomes its exit code, an
/// error is reported first.
pub fn finish(result: Result<ExitStatus>) -> ExitCode {
    match result {
        Ok(status) => status.into(),
        Err(error) => report(&error).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_style_guide() {
        assert_eq!(ExitStatus::Success.code(), 0);
        assert_eq!(Error::refused("x").exit_code(), 1);
        assert_eq!(Error::usage("x").exit_code(), 2);
        assert_eq!(ExitStatus::Found.code(), 3);
    }

    #[test]
    fn a_converted_error_keeps_its_typed_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let error = Error::refused_by(io);
        assert_eq!(error.message, "gone");
        let source = std::error::Error::source(&error).expect("the cause is kept");
        assert!(source.downcast_ref::<std::io::Error>().is_some());
    }
}
