//! Upload sessions. The bytes live in `uploads/<id>` (or, in object storage, in the
//! segments recorded here); the row says which repository the session belongs to
//! and when it was last touched. Written against [`Sql`], so the same functions
//! run on SQLite and PostgreSQL.

use super::sql::{from_rows, Decode, FromRow, Row, Sql};

pub struct Upload {
    pub repo: String,
    pub updated: i64,
}

impl FromRow for Upload {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Upload {
            repo: r.get("repo")?,
            updated: r.get("updated")?,
        })
    }
}

/// Opens a session of `repo` for `owner` (the token id, or `anonymous`).
pub fn create<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    repo: &str,
    owner: &str,
    now: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO uploads (id, repo, owner, created, updated) VALUES ($1, $2, $3, $4, $4)",
        &[id.into(), repo.into(), owner.into(), now.into()],
    )?;
    Ok(())
}

pub fn get<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<Option<Upload>, C::Error> {
    let row = conn.query_opt(
        "SELECT repo, updated FROM uploads WHERE id = $1",
        &[id.into()],
    )?;
    Ok(row.as_ref().map(Upload::from_row).transpose()?)
}

pub fn touch<C: Sql + ?Sized>(conn: &C, id: &str, now: i64) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE uploads SET updated = $2 WHERE id = $1",
        &[id.into(), now.into()],
    )?;
    Ok(())
}

pub fn delete<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<bool, C::Error> {
    let deleted = conn.execute("DELETE FROM uploads WHERE id = $1", &[id.into()])?;
    Ok(deleted > 0)
}

/// Up to `limit` sessions last touched at or before `before`.
/// Deletes session `id` if it still was not touched after `before` (an append may
/// have made it young since it was listed); whether it did.
pub fn delete_if_expired<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    before: i64,
) -> Result<bool, C::Error> {
    let deleted = conn.execute(
        "DELETE FROM uploads WHERE id = $1 AND updated <= $2",
        &[id.into(), before.into()],
    )?;
    Ok(deleted > 0)
}

pub fn expired<C: Sql + ?Sized>(
    conn: &C,
    before: i64,
    limit: usize,
) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT id FROM uploads WHERE updated <= $1 LIMIT $2",
        &[before.into(), (limit as i64).into()],
    )?;
    Ok(rows.iter().map(|r| r.get("id")).collect::<Result<_, _>>()?)
}

/// How many sessions `owner` has open that were touched after `after`.
pub fn open_by_owner<C: Sql + ?Sized>(conn: &C, owner: &str, after: i64) -> Result<u64, C::Error> {
    let row = conn.query_one(
        "SELECT COUNT(*) AS n FROM uploads WHERE owner = $1 AND updated > $2",
        &[owner.into(), after.into()],
    )?;
    Ok(row.get("n")?)
}

pub fn all_ids<C: Sql + ?Sized>(conn: &C) -> Result<std::collections::HashSet<String>, C::Error> {
    let rows = conn.query("SELECT id FROM uploads", &[])?;
    Ok(rows.iter().map(|r| r.get("id")).collect::<Result<_, _>>()?)
}

/// One stored piece of a session's bytes (object storage only): `size` bytes from
/// byte `start` of the upload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: u64,
    pub size: u64,
}

impl FromRow for Segment {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Segment {
            start: r.get("start")?,
            size: r.get("size")?,
        })
    }
}

/// How many bytes the recorded segments of session `id` hold.
pub fn segments_size<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<u64, C::Error> {
    // PostgreSQL's SUM of a BIGINT is a NUMERIC: cast back so both backends answer
    // an integer.
    let row = conn.query_one(
        "SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) AS size FROM upload_segments WHERE upload = $1",
        &[id.into()],
    )?;
    Ok(row.get("size")?)
}

/// The recorded segments of session `id`, in order.
pub fn segments<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<Vec<Segment>, C::Error> {
    let rows = conn.query(
        "SELECT start, size FROM upload_segments WHERE upload = $1 ORDER BY start",
        &[id.into()],
    )?;
    Ok(from_rows(&rows)?)
}

/// Records a segment of session `id` when it starts where the recorded ones end;
/// returns false otherwise (another replica appended meanwhile: the caller's bytes
/// do not continue the session).
pub fn add_segment<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    segment: Segment,
    now: i64,
) -> Result<bool, C::Error> {
    if segments_size(conn, id)? != segment.start || get(conn, id)?.is_none() {
        return Ok(false);
    }
    conn.execute(
        "INSERT INTO upload_segments (upload, start, size) VALUES ($1, $2, $3)",
        &[
            id.into(),
            (segment.start as i64).into(),
            (segment.size as i64).into(),
        ],
    )?;
    touch(conn, id, now)?;
    Ok(true)
}
