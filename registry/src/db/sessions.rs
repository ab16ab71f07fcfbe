//! Support page sessions in the database, so that a sign-in on one replica holds on
//! every other. Only hashes are kept: the SHA-256 of the session id (the cookie's
//! value) and of the token that opened it.

use rusqlite::{params, Connection, OptionalExtension};

/// Records a session until `expires_ns`, and forgets those that expired by `now_ns`.
pub fn open(
    conn: &Connection,
    id_hash: &[u8],
    token_hash: &[u8],
    now_ns: i64,
    expires_ns: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM ui_sessions WHERE expires_ns <= ?1")?
        .execute([now_ns])?;
    conn.prepare_cached(
        "INSERT INTO ui_sessions (id_hash, token_hash, expires_ns) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![id_hash, token_hash, expires_ns])?;
    Ok(())
}

/// The token hash behind a session that is live at `now_ns`.
pub fn token_hash(
    conn: &Connection,
    id_hash: &[u8],
    now_ns: i64,
) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached(
        "SELECT token_hash FROM ui_sessions WHERE id_hash = ?1 AND expires_ns > ?2",
    )?
    .query_row(params![id_hash, now_ns], |r| r.get(0))
    .optional()
}

/// Ends a session.
pub fn close(conn: &Connection, id_hash: &[u8]) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM ui_sessions WHERE id_hash = ?1")?
        .execute([id_hash])?;
    Ok(())
}
