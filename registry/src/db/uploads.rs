//! Upload sessions. The bytes live in `uploads/<id>`; the row says which repository
//! the session belongs to and when it was last touched.

use rusqlite::{params, Connection, OptionalExtension};

pub struct Upload {
    pub repo: String,
    pub updated: i64,
}

/// Opens a session of `repo` for `owner` (the token id, or `anonymous`).
pub fn create(
    conn: &Connection,
    id: &str,
    repo: &str,
    owner: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO uploads (id, repo, owner, created, updated) VALUES (?1, ?2, ?3, ?4, ?4)",
    )?
    .execute(params![id, repo, owner, now])?;
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

/// Up to `limit` sessions last touched at or before `before`.
pub fn expired(conn: &Connection, before: i64, limit: usize) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT id FROM uploads WHERE updated <= ?1 LIMIT ?2")?
        .query_map(params![before, limit as i64], |r| r.get(0))?
        .collect()
}

/// How many sessions `owner` has open that were touched after `after`.
pub fn open_by_owner(conn: &Connection, owner: &str, after: i64) -> rusqlite::Result<u64> {
    conn.prepare_cached("SELECT COUNT(*) FROM uploads WHERE owner = ?1 AND updated > ?2")?
        .query_row(params![owner, after], |r| r.get(0))
}

pub fn all_ids(conn: &Connection) -> rusqlite::Result<std::collections::HashSet<String>> {
    conn.prepare("SELECT id FROM uploads")?
        .query_map([], |r| r.get(0))?
        .collect()
}

/// One stored piece of a session's bytes (object storage only): `size` bytes from
/// byte `start` of the upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub size: u64,
}

/// How many bytes the recorded segments of session `id` hold.
pub fn segments_size(conn: &Connection, id: &str) -> rusqlite::Result<u64> {
    conn.prepare_cached("SELECT COALESCE(SUM(size), 0) FROM upload_segments WHERE upload = ?1")?
        .query_row(params![id], |r| r.get(0))
}

/// The recorded segments of session `id`, in order.
pub fn segments(conn: &Connection, id: &str) -> rusqlite::Result<Vec<Segment>> {
    conn.prepare_cached("SELECT start, size FROM upload_segments WHERE upload = ?1 ORDER BY start")?
        .query_map(params![id], |r| {
            Ok(Segment {
                start: r.get(0)?,
                size: r.get(1)?,
            })
        })?
        .collect()
}

/// Records a segment of session `id` when it starts where the recorded ones end;
/// returns false otherwise (another replica appended meanwhile: the caller's bytes
/// do not continue the session).
pub fn add_segment(
    conn: &Connection,
    id: &str,
    segment: Segment,
    now: i64,
) -> rusqlite::Result<bool> {
    if segments_size(conn, id)? != segment.start || get(conn, id)?.is_none() {
        return Ok(false);
    }
    conn.prepare_cached("INSERT INTO upload_segments (upload, start, size) VALUES (?1, ?2, ?3)")?
        .execute(params![id, segment.start, segment.size])?;
    touch(conn, id, now)?;
    Ok(true)
}
