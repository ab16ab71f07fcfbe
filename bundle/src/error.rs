//! The user-facing error of the runner and the packager (both depend on this crate): what failed, where, and
//! what to do next. Both programs print it the same way (`error:`, `-->`, `hint:`).

use std::fmt;

/// How the program should exit: refused or failed (1), or used wrongly (2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Refused,
    Usage,
}

#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub location: Option<String>,
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn refused(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Refused,
            message: message.into(),
            location: None,
            hint: None,
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Usage,
            message: message.into(),
            location: None,
            hint: None,
        }
    }

    pub fn at(mut self, location: impl fmt::Display) -> Self {
        self.location = Some(location.to_string());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ErrorKind::Refused => 1,
            ErrorKind::Usage => 2,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<crate::layout::LayoutError> for Error {
    fn from(e: crate::layout::LayoutError) -> Self {
        Error::refused(e.to_string())
    }
}

/// `cannot <what> \`path\`: error`, as a refusal.
pub fn io(what: &str, path: &std::path::Path, error: std::io::Error) -> Error {
    Error::refused(format!("cannot {what} `{}`: {error}", path.display()))
}
