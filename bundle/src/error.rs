//! The user-facing error is the one the three programs share (`stackpack_terminal`);
//! this crate re-exports it so its operations can say what failed, where, and what to
//! do next. Its own typed errors (layouts, archives, transport) convert into it.

pub use stackpack_terminal::error::{io, Error, ErrorKind, ExitStatus, Result};

impl From<crate::layout::LayoutError> for Error {
    fn from(e: crate::layout::LayoutError) -> Self {
        match e {
            // A key held elsewhere (a KMS) did not sign: nothing was added.
            crate::layout::LayoutError::Sign(_) => Error::refused_by(e).hint(SIGN_HINT),
            e => Error::refused_by(e),
        }
    }
}

/// What to do when a key held elsewhere (a KMS) did not sign.
const SIGN_HINT: &str = "check the signing key (`--key`, `[signing] key`) and the AWS credentials, then run the same command again: nothing was signed with that answer";

/// A registry that refused or could not be reached: the transport's own words and
/// hint (`--insecure`, a token), the typed error kept as the source.
impl From<crate::remote::RemoteError> for Error {
    fn from(e: crate::remote::RemoteError) -> Self {
        let hint = e.hint();
        let error = Error::refused(e.to_string());
        let error = match hint {
            Some(hint) => error.hint(hint),
            None => error,
        };
        error.caused_by(e)
    }
}

/// A release that cannot be trusted or is incomplete: nothing of it is used.
impl From<crate::release::ReleaseError> for Error {
    fn from(e: crate::release::ReleaseError) -> Self {
        use crate::release::ReleaseError;
        let hint = match &e {
            ReleaseError::NotFound { .. } => {
                Some("import the release's tar or pull it first (`stackpack-runner pull HOST/NS/releases/NAME:VERSION`)")
            }
            ReleaseError::MissingPart { .. } | ReleaseError::WrongPart { .. } => Some(
                "export the release again (`stackpack export NAME@VERSION`): a release travels with every part it pins",
            ),
            ReleaseError::Signature(_) => Some(
                "ask your vendor for the key that signs their releases, then `stackpack-runner trust add vendor.pub`",
            ),
            _ => None,
        };
        let error = Error::refused(e.to_string());
        match hint {
            Some(hint) => error.hint(hint).caused_by(e),
            None => error.caused_by(e),
        }
    }
}

/// An engine a release carries that cannot be packed or run as signed.
impl From<crate::carried_engine::EngineError> for Error {
    fn from(e: crate::carried_engine::EngineError) -> Self {
        use crate::carried_engine::EngineError;
        let hint = match &e {
            EngineError::WrongPlatform { platform, .. } => Some(format!(
                "put the engine's `{platform}` build there (the binary from its `{platform}` release zip)"
            )),
            EngineError::Changed { path, .. } => Some(format!(
                "something changed a program this runner executes: find out what, then delete `{}`; the next run installs it again from the verified release",
                path.parent().unwrap_or(path).display()
            )),
            _ => None,
        };
        let error = Error::refused(e.to_string());
        match hint {
            Some(hint) => error.hint(hint).caused_by(e),
            None => error.caused_by(e),
        }
    }
}
