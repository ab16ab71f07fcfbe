//! The packager's one error type: what failed, where, and what to do next.

use std::fmt;

/// How the program should exit for an error: refused (1) or used wrongly (2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The command was right but the thing asked for was refused or failed.
    Refused,
    /// The command itself was wrong: bad flags, missing file, bad configuration.
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

    pub fn exit_code(&self) -> i32 {
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

impl From<stackpack_customer_bundle::layout::LayoutError> for Error {
    fn from(e: stackpack_customer_bundle::layout::LayoutError) -> Self {
        Error::refused(e.to_string())
    }
}
