//! Upload sessions. The bytes live in `uploads/<id>`; the row says which repository
//! the session belongs to and when it was last touched.

use rusqlite::{params, Connection, OptionalExtension};

pub struct Upload {
    pub repo: String,
    pub updated: i64,
}

pub fn create(conn: &Connection, id: &str, repo: &str, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO uploads (id, repo, created, updated) VALUES (?1, ?2, ?3, ?3)",
    )?
    .execute(params![id, repo, now])?;
    Ok(())
}

pub fn get(conn: &Connection, id: &str) -> rusqlite::Result<Option<Upload>> {
    conn.prepare_cached("SELECT repo, updated FROM uploads WHERE id = ?1")?
        .query_row(params![id], |r| {
            Ok(Upload {
                repo: r.get(0)?,
                updated: r.get(1)?,
            })
        })
        .optional()
}

pub fn touch(conn: &Connection, id: &str, now: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE uploads SET updated = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}

pub fn delete(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("DELETE FROM uploads WHERE id = ?1")?
        .execute(params![id])?
        > 0)
}

/// Deletes sessions last touched before `before`; returns their ids.
pub fn delete_expired(conn: &Connection, before: i64) -> rusqlite::Result<Vec<String>> {
    let ids: Vec<String> = conn
        .prepare("SELECT id FROM uploads WHERE updated < ?1")?
        .query_map(params![before], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    conn.execute("DELETE FROM uploads WHERE updated < ?1", params![before])?;
    Ok(ids)
}

pub fn all_ids(conn: &Connection) -> rusqlite::Result<std::collections::HashSet<String>> {
    conn.prepare("SELECT id FROM uploads")?
        .query_map([], |r| r.get(0))?
        .collect()
}
