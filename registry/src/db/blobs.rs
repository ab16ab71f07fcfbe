//! Blobs and which repositories may see them. Written against [`Sql`], so the same
//! functions run on SQLite and PostgreSQL.

use super::sql::Sql;

/// The blob's size, if `repo` links it.
pub fn size_in_repo<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
) -> Result<Option<u64>, C::Error> {
    let row = conn.query_opt(
        "SELECT b.size FROM repo_blobs r JOIN blobs b ON b.digest = r.digest
         WHERE r.repo = $1 AND r.digest = $2",
        &[repo.into(), digest.into()],
    )?;
    Ok(row.map(|r| r.get("size")).transpose()?)
}

/// The blob's size, if it is stored at all.
pub fn size<C: Sql + ?Sized>(conn: &C, digest: &str) -> Result<Option<u64>, C::Error> {
    let row = conn.query_opt("SELECT size FROM blobs WHERE digest = $1", &[digest.into()])?;
    Ok(row.map(|r| r.get("size")).transpose()?)
}

/// Records a whole, verified blob and links it into `repo`.
pub fn insert_and_link<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
    size: u64,
    now: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO blobs (digest, size, created) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING",
        &[digest.into(), (size as i64).into(), now.into()],
    )?;
    link(conn, repo, digest)
}

pub fn link<C: Sql + ?Sized>(conn: &C, repo: &str, digest: &str) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO repo_blobs (repo, digest) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[repo.into(), digest.into()],
    )?;
    Ok(())
}

/// Removes `repo`'s link; the bytes stay until `gc`. True when a link was removed.
pub fn unlink<C: Sql + ?Sized>(conn: &C, repo: &str, digest: &str) -> Result<bool, C::Error> {
    let removed = conn.execute(
        "DELETE FROM repo_blobs WHERE repo = $1 AND digest = $2",
        &[repo.into(), digest.into()],
    )?;
    Ok(removed > 0)
}

/// True when some manifest in `repo` references the blob.
pub fn referenced_in_repo<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
) -> Result<bool, C::Error> {
    let row = conn.query_opt(
        "SELECT 1 FROM manifest_refs WHERE repo = $1 AND child = $2 AND kind = 'blob' LIMIT 1",
        &[repo.into(), digest.into()],
    )?;
    Ok(row.is_some())
}

/// Up to `limit` blobs that no manifest references and that were recorded at or
/// before `before`.
pub fn unreferenced<C: Sql + ?Sized>(
    conn: &C,
    before: i64,
    limit: usize,
) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT digest FROM blobs b WHERE created <= $1 AND NOT EXISTS (
             SELECT 1 FROM manifest_refs m WHERE m.child = b.digest AND m.kind = 'blob')
         LIMIT $2",
        &[before.into(), (limit as i64).into()],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("digest"))
        .collect::<Result<_, _>>()?)
}

/// Those of `digests` that are still unreferenced and created by `before`, in
/// their order: [`unreferenced`] read again, once the caller holds each.
pub fn still_unreferenced<C: Sql + ?Sized>(
    conn: &C,
    digests: &[String],
    before: i64,
) -> Result<Vec<String>, C::Error> {
    let mut still = Vec::with_capacity(digests.len());
    for digest in digests {
        let row = conn.query_opt(
            "SELECT digest FROM blobs b WHERE digest = $1 AND created <= $2 AND NOT EXISTS (
                 SELECT 1 FROM manifest_refs m WHERE m.child = b.digest AND m.kind = 'blob')",
            &[digest.into(), before.into()],
        )?;
        if row.is_some() {
            still.push(digest.clone());
        }
    }
    Ok(still)
}

/// Deletes the rows (and repository links) of `digests`.
pub fn delete_rows<C: Sql + ?Sized>(conn: &C, digests: &[String]) -> Result<(), C::Error> {
    for digest in digests {
        conn.execute("DELETE FROM repo_blobs WHERE digest = $1", &[digest.into()])?;
        conn.execute("DELETE FROM blobs WHERE digest = $1", &[digest.into()])?;
    }
    Ok(())
}

/// Every blob digest recorded.
pub fn all<C: Sql + ?Sized>(conn: &C) -> Result<std::collections::HashSet<String>, C::Error> {
    let rows = conn.query("SELECT digest FROM blobs", &[])?;
    Ok(rows
        .iter()
        .map(|r| r.get("digest"))
        .collect::<Result<_, _>>()?)
}
