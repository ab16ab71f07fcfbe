//! Trusted public keys.

use std::path::{Path, PathBuf};

use stackpack_schema::signature::PublicKey;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read public key `{path}`: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not an ed25519 or ECDSA P-256 public key in SPKI PEM (`-----BEGIN PUBLIC KEY-----`)")]
    NotAPublicKey { path: PathBuf },
}

/// Reads one SPKI PEM public key file.
pub fn read_public_key(path: &Path) -> Result<PublicKey, TrustError> {
    let text = std::fs::read_to_string(path).map_err(|source| TrustError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    PublicKey::from_pem(&text).map_err(|_| TrustError::NotAPublicKey {
        path: path.to_path_buf(),
    })
}
