//! The packager's user-facing error: the same type the runner uses, so both programs
//! say what failed, where, and what to do next in the same way.

pub use stackpack_bundle::error::{io, Error, ErrorKind, Result};

use crate::check::CheckError;

/// A check that could not run (a commit git cannot read, a stack whose files the
/// engine would refuse) refuses the command; the typed error stays its source.
impl From<CheckError> for Error {
    fn from(error: CheckError) -> Self {
        let hint = match &error {
            CheckError::Broken(_) => {
                Some("fix these files first: no version can be judged until they parse")
            }
            CheckError::Git { .. } => {
                Some("fetch the full history (`git fetch --unshallow`) or pass another `--against`")
            }
            CheckError::Interface(_) | CheckError::Unpack { .. } => None,
        };
        let converted = Error::refused_by(error);
        match hint {
            Some(hint) => converted.hint(hint),
            None => converted,
        }
    }
}
