//! Manifests (image manifests and indexes), what they reference, and tags.

use rusqlite::{params, Connection, OptionalExtension};
use stackpack_schema::Digest;

/// A stored manifest's metadata and bytes.
pub struct StoredManifest {
    pub digest: Digest,
    pub media_type: String,
    pub content: Vec<u8>,
}

/// A row for the referrers API.
pub struct Referrer {
    pub digest: Digest,
    pub media_type: String,
    pub artifact_type: Option<String>,
    pub size: u64,
    pub annotations: Option<String>,
}

pub struct NewManifest<'a> {
    pub repo: &'a str,
    pub digest: &'a str,
    pub media_type: &'a str,
    pub artifact_type: Option<&'a str>,
    pub subject: Option<&'a str>,
    pub annotations: Option<&'a str>,
    pub content: &'a [u8],
    /// Blob digests (config, layers) this manifest needs.
    pub blobs: &'a [String],
    /// Manifest digests (an index's entries) this manifest needs.
    pub manifests: &'a [String],
}

pub fn exists(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM manifests WHERE repo = ?1 AND digest = ?2")?
        .exists(params![repo, digest])
}

/// Stores a manifest and its references. Storing the same digest again is a no-op.
pub fn insert(conn: &Connection, m: &NewManifest<'_>, now: i64) -> rusqlite::Result<()> {
    let inserted = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO manifests
             (repo, digest, media_type, artifact_type, size, subject, annotations, content, created)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            m.repo,
            m.digest,
            m.media_type,
            m.artifact_type,
            m.content.len() as u64,
            m.subject,
            m.annotations,
            m.content,
            now
        ])?;
    if inserted == 0 {
        return Ok(());
    }
    let mut refs = conn.prepare_cached(
        "INSERT OR IGNORE INTO manifest_refs (repo, manifest, child, kind) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for blob in m.blobs {
        refs.execute(params![m.repo, m.digest, blob, "blob"])?;
    }
    for child in m.manifests {
        refs.execute(params![m.repo, m.digest, child, "manifest"])?;
    }
    Ok(())
}

pub fn get_by_digest(
    conn: &Connection,
    repo: &str,
    digest: &str,
) -> rusqlite::Result<Option<StoredManifest>> {
    conn.prepare_cached(
        "SELECT digest, media_type, content FROM manifests WHERE repo = ?1 AND digest = ?2",
    )?
    .query_row(params![repo, digest], |r| {
        Ok(StoredManifest {
            digest: super::parsed(r, 0)?,
            media_type: r.get(1)?,
            content: r.get(2)?,
        })
    })
    .optional()
}

pub fn get_by_tag(
    conn: &Connection,
    repo: &str,
    tag: &str,
) -> rusqlite::Result<Option<StoredManifest>> {
    conn.prepare_cached(
        "SELECT m.digest, m.media_type, m.content FROM tags t
         JOIN manifests m ON m.repo = t.repo AND m.digest = t.digest
         WHERE t.repo = ?1 AND t.tag = ?2",
    )?
    .query_row(params![repo, tag], |r| {
        Ok(StoredManifest {
            digest: super::parsed(r, 0)?,
            media_type: r.get(1)?,
            content: r.get(2)?,
        })
    })
    .optional()
}

pub fn tag_digest(conn: &Connection, repo: &str, tag: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT digest FROM tags WHERE repo = ?1 AND tag = ?2")?
        .query_row(params![repo, tag], |r| r.get(0))
        .optional()
}

pub fn set_tag(
    conn: &Connection,
    repo: &str,
    tag: &str,
    digest: &str,
    now: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO tags (repo, tag, digest, updated) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (repo, tag) DO UPDATE SET digest = excluded.digest, updated = excluded.updated",
    )?
    .execute(params![repo, tag, digest, now])?;
    Ok(())
}

pub fn delete_tag(conn: &Connection, repo: &str, tag: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("DELETE FROM tags WHERE repo = ?1 AND tag = ?2")?
        .execute(params![repo, tag])?
        > 0)
}

/// Deletes a manifest, its references and the tags on it. True when it existed.
pub fn delete(conn: &Connection, repo: &str, digest: &str) -> rusqlite::Result<bool> {
    let deleted = conn
        .prepare_cached("DELETE FROM manifests WHERE repo = ?1 AND digest = ?2")?
        .execute(params![repo, digest])?;
    conn.prepare_cached("DELETE FROM manifest_refs WHERE repo = ?1 AND manifest = ?2")?
        .execute(params![repo, digest])?;
    conn.prepare_cached("DELETE FROM tags WHERE repo = ?1 AND digest = ?2")?
        .execute(params![repo, digest])?;
    Ok(deleted > 0)
}

/// Tags on `digest` or on any index that lists it, directly or through other
/// indexes: deleting `digest` would break what each of them points at.
pub fn tags_depending_on(
    conn: &Connection,
    repo: &str,
    digest: &str,
) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "WITH RECURSIVE parents(digest) AS (
             SELECT ?2
             UNION
             SELECT r.manifest FROM manifest_refs r JOIN parents p ON r.child = p.digest
             WHERE r.repo = ?1 AND r.kind = 'manifest')
         SELECT t.tag FROM tags t JOIN parents p ON t.digest = p.digest WHERE t.repo = ?1
         ORDER BY t.tag",
    )?
    .query_map(params![repo, digest], |r| r.get(0))?
    .collect()
}

/// True when the repository has any manifest, tag or blob.
pub fn repo_exists(conn: &Connection, repo: &str) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM manifests WHERE repo = ?1 LIMIT 1")?
        .exists(params![repo])?
        || conn
            .prepare_cached("SELECT 1 FROM repo_blobs WHERE repo = ?1 LIMIT 1")?
            .exists(params![repo])?)
}

/// Tags in lexical order after `last`, at most `limit` (+1 to tell whether more follow).
pub fn list_tags(
    conn: &Connection,
    repo: &str,
    last: Option<&str>,
    limit: Option<u64>,
) -> rusqlite::Result<Vec<String>> {
    let limit = limit.map(|n| n as i64).unwrap_or(-1);
    conn.prepare_cached("SELECT tag FROM tags WHERE repo = ?1 AND tag > ?2 ORDER BY tag LIMIT ?3")?
        .query_map(params![repo, last.unwrap_or(""), limit], |r| r.get(0))?
        .collect()
}

/// Repository names in order after `last`.
pub fn list_repositories(
    conn: &Connection,
    last: Option<&str>,
    limit: Option<u64>,
) -> rusqlite::Result<Vec<String>> {
    let limit = limit.map(|n| n as i64).unwrap_or(-1);
    conn.prepare_cached(
        "SELECT DISTINCT repo FROM manifests WHERE repo > ?1 ORDER BY repo LIMIT ?2",
    )?
    .query_map(params![last.unwrap_or(""), limit], |r| r.get(0))?
    .collect()
}

/// Manifests in `repo` whose `subject` is `digest`, optionally of one artifact type.
pub fn referrers(
    conn: &Connection,
    repo: &str,
    subject: &str,
    artifact_type: Option<&str>,
) -> rusqlite::Result<Vec<Referrer>> {
    conn.prepare_cached(
        "SELECT digest, media_type, artifact_type, size, annotations FROM manifests
         WHERE repo = ?1 AND subject = ?2 AND (?3 IS NULL OR artifact_type = ?3)
         ORDER BY created, digest",
    )?
    .query_map(params![repo, subject, artifact_type], |r| {
        Ok(Referrer {
            digest: super::parsed(r, 0)?,
            media_type: r.get(1)?,
            artifact_type: r.get(2)?,
            size: r.get(3)?,
            annotations: r.get(4)?,
        })
    })?
    .collect()
}
