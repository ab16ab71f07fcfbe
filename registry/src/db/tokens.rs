//! API tokens. Only the SHA-256 of a token is stored; the token itself is shown once.

use rusqlite::{params, Connection, OptionalExtension};

pub struct TokenRow {
    pub id: String,
    pub hash: Vec<u8>,
    pub role: String,
    pub customer: Option<String>,
}

pub fn insert(
    conn: &Connection,
    id: &str,
    hash: &[u8],
    role: &str,
    customer: Option<&str>,
    created: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO tokens (id, hash, role, customer, created) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, hash, role, customer, created],
    )?;
    Ok(())
}

pub fn by_hash(conn: &Connection, hash: &[u8]) -> rusqlite::Result<Option<TokenRow>> {
    conn.prepare_cached("SELECT id, hash, role, customer FROM tokens WHERE hash = ?1")?
        .query_row(params![hash], |r| {
            Ok(TokenRow {
                id: r.get(0)?,
                hash: r.get(1)?,
                role: r.get(2)?,
                customer: r.get(3)?,
            })
        })
        .optional()
}

pub fn count(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT COUNT(*) FROM tokens", [], |r| r.get(0))
}
