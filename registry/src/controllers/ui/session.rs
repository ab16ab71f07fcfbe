//! Support page sessions: signing in with a token opens a session whose random id
//! travels in an `HttpOnly`, `SameSite=Strict` cookie. The server keeps only the
//! SHA-256 of the session id and of the token, so neither is ever stored, and every
//! request checks the token again: revoking or expiring it ends its sessions at once.
//! Sessions live in memory; a restart signs everyone out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap};
use base64::Engine as _;

/// The cookie's name.
pub const COOKIE: &str = "stackpack_session";

/// How long a session lasts, whatever happens in it.
pub const LIFETIME: Duration = Duration::from_secs(8 * 3600);

/// The most sessions kept at once; the oldest goes first.
const MAX_SESSIONS: usize = 10_000;

struct Session {
    token_hash: Vec<u8>,
    opened: Instant,
}

#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<Vec<u8>, Session>>,
}

impl Sessions {
    /// Opens a session for the token with this hash; returns the cookie's value.
    pub fn open(&self, token_hash: Vec<u8>) -> String {
        let mut bytes = [0u8; 32];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|_, s| s.opened.elapsed() < LIFETIME);
        if open.len() >= MAX_SESSIONS {
            if let Some(oldest) = open
                .iter()
                .min_by_key(|(_, s)| s.opened)
                .map(|(k, _)| k.clone())
            {
                open.remove(&oldest);
            }
        }
        open.insert(
            crate::auth::hash_token(&id),
            Session {
                token_hash,
                opened: Instant::now(),
            },
        );
        id
    }

    /// The token hash behind a live session.
    pub fn token_hash(&self, id: &str) -> Option<Vec<u8>> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.get(&crate::auth::hash_token(id))
            .filter(|s| s.opened.elapsed() < LIFETIME)
            .map(|s| s.token_hash.clone())
    }

    pub fn close(&self, id: &str) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.remove(&crate::auth::hash_token(id));
    }
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
        let sessions = Sessions::default();
        let a = sessions.open(vec![1]);
        let b = sessions.open(vec![2]);
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert_eq!(sessions.token_hash(&a), Some(vec![1]));
        sessions.close(&a);
        assert_eq!(sessions.token_hash(&a), None);
        assert_eq!(sessions.token_hash(&b), Some(vec![2]));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            format!("other=1; {COOKIE}={b}").parse().unwrap(),
        );
        assert_eq!(cookie(&headers).as_deref(), Some(b.as_str()));
    }
}
