//! The user-facing error is the one the three programs share (`stackpack_terminal`);
//! this crate re-exports it so its operations can say what failed, where, and what to
//! do next. Its own typed errors (layouts, archives, transport) convert into it.

pub use stackpack_terminal::error::{io, Error, ErrorKind, ExitStatus, Result};

impl From<crate::layout::LayoutError> for Error {
    fn from(e: crate::layout::LayoutError) -> Self {
        Error::refused_by(e)
    }
}
