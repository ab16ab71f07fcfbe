//! The packager's user-facing error: the same type the runner uses, so both programs
//! say what failed, where, and what to do next in the same way.

pub use stackpack_bundle::error::{io, Error, ErrorKind, Result};
