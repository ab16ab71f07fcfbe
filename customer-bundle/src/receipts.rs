//! The installation key (made on first use) and signing receipts.

use std::path::Path;

use stackpack_schema::receipt::{Receipt, SignedReceipt};
use stackpack_schema::signature::PrivateKey;

use super::error::{io, Error, Result};
use super::files;

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
            files::create_private(path, key.to_pem().as_bytes())?;
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

/// Now, RFC 3339 UTC, to the millisecond and always with three digits
/// (`2026-12-01T19:40:00.250Z`). Seconds alone were not enough: a rollback and two
/// drift checks can finish within one second, reported together, and the ledger
/// could then not tell which came last.
pub fn now() -> String {
    const FORMAT: &[time::format_description::FormatItem<'static>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::now_utc()
        .format(FORMAT)
        .expect("formats")
}

/// Whether RFC 3339 time `a` is at or after `b`, by the instants they name (a time
/// written to the second and one to the millisecond compare as instants, not text).
pub fn at_or_after(a: &str, b: &str) -> bool {
    let parse = |text: &str| {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
    };
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => a >= b,
        _ => a >= b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipt_times_have_milliseconds_and_compare_as_instants() {
        let now = now();
        assert_eq!(now.len(), "2026-12-01T19:40:00.250Z".len(), "{now}");
        assert!(
            time::OffsetDateTime::parse(&now, &time::format_description::well_known::Rfc3339)
                .is_ok()
        );
        assert!(at_or_after(
            "2026-12-01T19:40:00.250Z",
            "2026-12-01T19:40:00Z"
        ));
        assert!(!at_or_after(
            "2026-12-01T19:40:00Z",
            "2026-12-01T19:40:00.250Z"
        ));
        assert!(at_or_after(
            "2026-12-01T19:40:01Z",
            "2026-12-01T19:40:00.999Z"
        ));
    }
}
