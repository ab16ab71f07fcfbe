//! Blobs and which repositories may see them.

use rusqlite::{params, Connection, OptionalExtension};

/// The blob's size, if `repo` links it.
pub fn size_in_repo(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<Option<u64>> {
    conn.prepare_cached(
        "SELECT b.size FROM repo_blobs r JOIN blobs b ON b.digest = r.digest
         WHERE r.repo = ?1 AND r.digest = ?2",
    )?
    .query_row(params![repo, digest], |r| r.get(0))
    .optional()
}

/// The blob's size, if it is stored at all.
pub fn size(conn: &Connection, digest: &str) -> rusqlite::Result<Option<u64>> {
    conn.prepare_cached("SELECT size FROM blobs WHERE digest = ?1")?
        .query_row(params![digest], |r| r.get(0))
        .optional()
}

/// Records a whole, verified blob and links it into `repo`.
pub fn insert_and_link(
    conn: &Connection,
    repo: &str,
    digest: &str,
    size: u64,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO blobs (digest, size, created) VALUES (?1, ?2, ?3)")?
        .execute(params![digest, size, now])?;
    link(conn, repo, digest)
}

pub fn link(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO repo_blobs (repo, digest) VALUES (?1, ?2)")?
        .execute(params![repo, digest])?;
    Ok(())
}

/// Removes `repo`'s link; the bytes stay until `gc`. True when a link was removed.
pub fn unlink(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("DELETE FROM repo_blobs WHERE repo = ?1 AND digest = ?2")?
        .execute(params![repo, digest])?
        > 0)
}

/// True when some manifest in `repo` references the blob.
pub fn referenced_in_repo(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached(
        "SELECT 1 FROM manifest_refs WHERE repo = ?1 AND child = ?2 AND kind = 'blob' LIMIT 1",
    )?
    .exists(params![repo, digest])
}

/// Up to `limit` blobs that no manifest references and that were recorded at or
/// before `before`.
pub fn unreferenced(conn: &Connection, before: i64, limit: usize) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT digest FROM blobs b WHERE created <= ?1 AND NOT EXISTS (
             SELECT 1 FROM manifest_refs m WHERE m.child = b.digest AND m.kind = 'blob')
         LIMIT ?2",
    )?
    .query_map(params![before, limit as i64], |r| r.get(0))?
    .collect()
}

/// Deletes the rows (and repository links) of `digests`.
pub fn delete_rows(conn: &Connection, digests: &[String]) -> rusqlite::Result<()> {
    let mut links = conn.prepare_cached("DELETE FROM repo_blobs WHERE digest = ?1")?;
    let mut rows = conn.prepare_cached("DELETE FROM blobs WHERE digest = ?1")?;
    for digest in digests {
        links.execute(params![digest])?;
        rows.execute(params![digest])?;
    }
    Ok(())
}

/// Every blob digest recorded.
pub fn all(conn: &Connection) -> rusqlite::Result<std::collections::HashSet<String>> {
    conn.prepare("SELECT digest FROM blobs")?
        .query_map([], |r| r.get(0))?
        .collect()
}
