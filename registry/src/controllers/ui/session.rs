//! Support page sessions: signing in with a token opens a session whose random id
//! travels in an `HttpOnly`, `SameSite=Strict` cookie. The database keeps only the
//! SHA-256 of the session id and of the token ([`crate::db::sessions`]), so neither
//! is ever stored, and every request checks the token again: revoking or expiring it
//! ends its sessions at once. Sessions live in the database, so a session opened on
//! one replica is good on every other, and survives a restart.

use std::time::Duration;

use axum::http::{header, HeaderMap};
use base64::Engine as _;

use crate::db::locks::Lock;
use crate::db::{self, Db};
use crate::error::Error;

/// The cookie's name.
pub const COOKIE: &str = "stackpack_session";

/// How long a session lasts, whatever happens in it.
pub const LIFETIME: Duration = Duration::from_secs(8 * 3600);

fn lifetime_ns() -> i64 {
    i64::try_from(LIFETIME.as_nanos()).unwrap_or(i64::MAX)
}

/// Opens a session for the token with this hash; returns the cookie's value.
pub fn open(db: &Db, token_hash: &[u8]) -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let now = crate::rollout::now_ns();
    let id_hash = crate::auth::hash_token(&id);
    let key = hex::encode(&id_hash);
    db.write_keyed(&[Lock::Session(&key)], |tx| {
        Ok(db::sessions::open(
            tx,
            &id_hash,
            token_hash,
            now,
            now.saturating_add(lifetime_ns()),
        )?)
    })?;
    Ok(id)
}

/// The token hash behind a live session.
pub fn token_hash(db: &Db, id: &str) -> Result<Option<Vec<u8>>, Error> {
    let id_hash = crate::auth::hash_token(id);
    let now = crate::rollout::now_ns();
    db.read_any(|c| db::sessions::token_hash(c, &id_hash, now))
}

/// Ends a session (signing out, or its token stopped working).
pub fn close(db: &Db, id: &str) -> Result<(), Error> {
    let id_hash = crate::auth::hash_token(id);
    let key = hex::encode(&id_hash);
    db.write_keyed(&[Lock::Session(&key)], |tx| {
        Ok(db::sessions::close(tx, &id_hash)?)
    })
}

/// The session id in the request's cookies, if any.
pub fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|v| !v.is_empty())
}

/// `Set-Cookie` for a new session (`Secure` when the registry is served over HTTPS).
pub fn set_cookie(id: &str, secure: bool) -> String {
    format!(
        "{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{}",
        LIFETIME.as_secs(),
        if secure { "; Secure" } else { "" }
    )
}

/// `Set-Cookie` that removes the session cookie.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_session_is_gone_and_ids_are_unguessable() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("registry.db"), 1).unwrap();
        let a = open(&db, &[1]).unwrap();
        let b = open(&db, &[2]).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert_eq!(token_hash(&db, &a).unwrap(), Some(vec![1]));
        close(&db, &a).unwrap();
        assert_eq!(token_hash(&db, &a).unwrap(), None);
        assert_eq!(token_hash(&db, &b).unwrap(), Some(vec![2]));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("other=1; {COOKIE}={b}").parse().unwrap(),
        );
        assert_eq!(cookie(&headers).as_deref(), Some(b.as_str()));
    }
}
