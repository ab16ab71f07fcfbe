//! API tokens. Only the SHA-256 of a token is stored; the token itself is shown once.

use rusqlite::{params, Connection, OptionalExtension};

use super::parsed;
use crate::auth::Role;
use crate::timestamp::Timestamp;

pub struct TokenRow {
    pub id: String,
    pub hash: Vec<u8>,
    pub role: Role,
    pub customer: Option<String>,
    /// `None` never expires.
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    pub last_used: Option<Timestamp>,
}

/// `last_used` is written at most this often per token, so that using a token
/// costs no write on nearly every request.
pub const LAST_USED_SECS: i64 = 60;

/// What `token list` shows: never the token or its hash.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    pub id: String,
    /// What `token create --name` called it; `None` for a token made without one.
    pub name: Option<String>,
    pub role: Role,
    pub customer: Option<String>,
    pub created: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    /// When a request last presented it (to within a minute); `None` if never.
    pub last_used: Option<Timestamp>,
}

/// A token to store: everything but its id and hash is what `token create` was told.
pub struct NewToken<'a> {
    pub role: Role,
    pub name: Option<&'a str>,
    pub customer: Option<&'a str>,
    pub created: &'a str,
    pub expires_at: Option<&'a str>,
}

pub fn insert(
    conn: &Connection,
    id: &str,
    hash: &[u8],
    new: &NewToken<'_>,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO tokens (id, hash, role, name, customer, created, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            id,
            hash,
            new.role.as_str(),
            new.name,
            new.customer,
            new.created,
            new.expires_at
        ],
    )?;
    Ok(())
}

/// Whether a token (revoked or not) already has this name: names are unique, so
/// `token list` never shows two tokens one could mistake for each other.
pub fn name_taken(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM tokens WHERE name = ?1)",
        params![name],
        |r| r.get(0),
    )
}

pub fn by_hash(conn: &Connection, hash: &[u8]) -> rusqlite::Result<Option<TokenRow>> {
    conn.prepare_cached(
        "SELECT id, hash, role, customer, expires_at, revoked_at, last_used FROM tokens
         WHERE hash = ?1",
    )?
    .query_row(params![hash], |r| {
        Ok(TokenRow {
            id: r.get(0)?,
            hash: r.get(1)?,
            role: parsed(r, 2)?,
            customer: r.get(3)?,
            expires_at: r.get(4)?,
            revoked_at: r.get(5)?,
            last_used: r.get(6)?,
        })
    })
    .optional()
}

/// Every token, oldest first, without its hash.
pub fn list(conn: &Connection) -> rusqlite::Result<Vec<TokenInfo>> {
    conn.prepare(
        "SELECT id, role, customer, created, expires_at, revoked_at, last_used, name
         FROM tokens ORDER BY created, id",
    )?
    .query_map([], |r| {
        Ok(TokenInfo {
            id: r.get(0)?,
            name: r.get(7)?,
            role: parsed(r, 1)?,
            customer: r.get(2)?,
            created: r.get(3)?,
            expires_at: r.get(4)?,
            revoked_at: r.get(5)?,
            last_used: r.get(6)?,
        })
    })?
    .collect()
}

/// Marks a token revoked (keeping the first revocation time). Returns the token's
/// revocation time, or `None` when no token has that id.
pub fn revoke(conn: &Connection, id: &str, now: &str) -> rusqlite::Result<Option<String>> {
    conn.execute(
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
        params![id, now],
    )?;
    conn.query_row(
        "SELECT revoked_at FROM tokens WHERE id = ?1",
        params![id],
        |r| r.get(0),
    )
    .optional()
}

pub fn count(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT COUNT(*) FROM tokens", [], |r| r.get(0))
}

/// Records that token `id` was used at `now`.
pub fn touch(conn: &Connection, id: &str, now: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE tokens SET last_used = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    Ok(())
}
