//! The installation key (made on first use) and signing receipts.

use std::io::Write;
use std::path::Path;

use stackpack_schema::receipt::{Receipt, SignedReceipt};
use stackpack_schema::signature::PrivateKey;

use super::error::{io, Error, Result};

/// Reads the installation key, making one (mode 0600) if there is none yet.
/// The key of the receipts' inputs hash: derived from the installation key, so it
/// never leaves the home and needs no file of its own.
pub fn inputs_secret(key: &PrivateKey) -> [u8; 32] {
    use sha2::{Digest as _, Sha256};
    Sha256::new()
        .chain_update(b"stackpack-runner inputs hash v1\0")
        .chain_update(key.to_pem().as_bytes())
        .finalize()
        .into()
}

pub fn installation_key(path: &Path) -> Result<PrivateKey> {
    match std::fs::read_to_string(path) {
        Ok(pem) => PrivateKey::from_pem(&pem).map_err(|_| {
            Error::refused(format!(
                "`{}` is not an ed25519 private key",
                path.display()
            ))
            .hint("restore it from a backup; receipts signed with a new key must be registered with the vendor")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut secret = [0u8; 32];
            rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut secret);
            let key = PrivateKey::from_secret_bytes(secret);
            secret.fill(0);
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut file = options.open(path).map_err(|e| io("create", path, e))?;
            file.write_all(key.to_pem().as_bytes())
                .and_then(|_| file.sync_all())
                .map_err(|e| io("write", path, e))?;
            Ok(key)
        }
        Err(e) => Err(io("read", path, e)),
    }
}

/// A fresh random receipt id: `r-` and 32 hex characters.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("r-{hex}")
}

pub fn sign(receipt: Receipt, key: &PrivateKey) -> SignedReceipt {
    SignedReceipt::sign(receipt, key)
}

/// Now, RFC 3339 UTC, seconds.
pub fn now() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("zero nanoseconds is valid");
    now.format(&time::format_description::well_known::Rfc3339)
        .expect("formats")
}
