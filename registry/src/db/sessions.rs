//! Support page sessions in the database, so that a sign-in on one replica holds on
//! every other. Only hashes are kept: the SHA-256 of the session id (the cookie's
//! value) and of the token that opened it.

use super::sql::Sql;

/// Records a session until `expires_ns`, and forgets those that expired by `now_ns`.
pub fn open<C: Sql + ?Sized>(
    conn: &C,
    id_hash: &[u8],
    token_hash: &[u8],
    now_ns: i64,
    expires_ns: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "DELETE FROM ui_sessions WHERE expires_ns <= $1",
        &[now_ns.into()],
    )?;
    conn.execute(
        "INSERT INTO ui_sessions (id_hash, token_hash, expires_ns) VALUES ($1, $2, $3)",
        &[id_hash.into(), token_hash.into(), expires_ns.into()],
    )?;
    Ok(())
}

/// The token hash behind a session that is live at `now_ns`.
pub fn token_hash<C: Sql + ?Sized>(
    conn: &C,
    id_hash: &[u8],
    now_ns: i64,
) -> Result<Option<Vec<u8>>, C::Error> {
    let row = conn.query_opt(
        "SELECT token_hash FROM ui_sessions WHERE id_hash = $1 AND expires_ns > $2",
        &[id_hash.into(), now_ns.into()],
    )?;
    Ok(row.map(|r| r.get("token_hash")).transpose()?)
}

/// Ends a session.
pub fn close<C: Sql + ?Sized>(conn: &C, id_hash: &[u8]) -> Result<(), C::Error> {
    conn.execute(
        "DELETE FROM ui_sessions WHERE id_hash = $1",
        &[id_hash.into()],
    )?;
    Ok(())
}
