//! Manifests (image manifests and indexes), what they reference, and tags. Written
//! against [`Sql`], so the same functions run on SQLite and PostgreSQL.

use super::sql::{Decode, FromRow, Param, Row, Sql};
use super::tokens::TokenRow;
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

pub fn exists<C: Sql + ?Sized>(conn: &C, repo: &str, digest: &str) -> Result<bool, C::Error> {
    let row = conn.query_opt(
        "SELECT 1 FROM manifests WHERE repo = $1 AND digest = $2",
        &[repo.into(), digest.into()],
    )?;
    Ok(row.is_some())
}

/// Stores a manifest and its references. Storing the same digest again is a no-op.
pub fn insert<C: Sql + ?Sized>(conn: &C, m: &NewManifest<'_>, now: i64) -> Result<(), C::Error> {
    let inserted = conn.execute(
        "INSERT INTO manifests
         (repo, digest, media_type, artifact_type, size, subject, annotations, content, created)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT DO NOTHING",
        &[
            m.repo.into(),
            m.digest.into(),
            m.media_type.into(),
            m.artifact_type.into(),
            (m.content.len() as i64).into(),
            m.subject.into(),
            m.annotations.into(),
            m.content.into(),
            now.into(),
        ],
    )?;
    if inserted == 0 {
        return Ok(());
    }
    let refs = m.blobs.iter().map(|blob| (blob, "blob"));
    let refs = refs.chain(m.manifests.iter().map(|child| (child, "manifest")));
    for (child, kind) in refs {
        conn.execute(
            "INSERT INTO manifest_refs (repo, manifest, child, kind) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            &[m.repo.into(), m.digest.into(), child.into(), kind.into()],
        )?;
    }
    Ok(())
}

impl FromRow for StoredManifest {
    fn from_row(r: &Row) -> Result<StoredManifest, Decode> {
        Ok(StoredManifest {
            digest: r.parsed("digest")?,
            media_type: r.get("media_type")?,
            content: r.get("content")?,
        })
    }
}

/// Which manifest of a repository a pull names.
#[derive(Clone, Copy)]
pub enum Named<'a> {
    Tag(&'a str),
    Digest(&'a str),
}

const WITH_TOKEN_BY_TAG: &str = "SELECT t.id, t.hash, t.role, t.customer, t.expires_at,
     t.revoked_at, t.last_used, m.digest, m.media_type, m.content FROM tokens t
     LEFT JOIN tags g ON g.repo = $2 AND g.tag = $3
     LEFT JOIN manifests m ON m.repo = g.repo AND m.digest = g.digest
     WHERE t.hash = $1";

const WITH_TOKEN_BY_DIGEST: &str = "SELECT t.id, t.hash, t.role, t.customer, t.expires_at,
     t.revoked_at, t.last_used, m.digest, m.media_type, m.content FROM tokens t
     LEFT JOIN manifests m ON m.repo = $2 AND m.digest = $3
     WHERE t.hash = $1";

/// The token whose hash is `hash` and, beside it, the manifest `named` in `repo`
/// (`None` when there is none): an authenticated pull's two reads in one statement,
/// so one round trip to the database. `None` at all when no token has this hash
/// (the manifest is then never read out).
pub fn get_with_token<C: Sql + ?Sized>(
    conn: &C,
    hash: &[u8],
    repo: &str,
    named: Named<'_>,
) -> Result<Option<(TokenRow, Option<StoredManifest>)>, C::Error> {
    let (text, params) = with_token_statement(hash, repo, named);
    Ok(with_token_of(conn.query_opt(text, &params)?)?)
}

/// [`get_with_token`]'s statement and parameters, for a caller that runs it itself
/// ([`super::Db::query_opt_hot`]), then reads its row with [`with_token_of`].
pub fn with_token_statement<'a>(
    hash: &'a [u8],
    repo: &'a str,
    named: Named<'a>,
) -> (&'static str, [Param<'a>; 3]) {
    let (text, reference) = match named {
        Named::Tag(tag) => (WITH_TOKEN_BY_TAG, tag),
        Named::Digest(digest) => (WITH_TOKEN_BY_DIGEST, digest),
    };
    (text, [hash.into(), repo.into(), reference.into()])
}

/// What [`with_token_statement`]'s row says: no row, no token.
pub fn with_token_of(
    row: Option<Row>,
) -> Result<Option<(TokenRow, Option<StoredManifest>)>, Decode> {
    let Some(row) = row else {
        return Ok(None);
    };
    let token = TokenRow::from_row(&row)?;
    let manifest = match row.get::<Option<String>>("digest")? {
        Some(_) => Some(StoredManifest::from_row(&row)?),
        None => None,
    };
    Ok(Some((token, manifest)))
}

pub fn get_by_digest<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
) -> Result<Option<StoredManifest>, C::Error> {
    let row = conn.query_opt(
        "SELECT digest, media_type, content FROM manifests WHERE repo = $1 AND digest = $2",
        &[repo.into(), digest.into()],
    )?;
    Ok(row.as_ref().map(StoredManifest::from_row).transpose()?)
}

pub fn get_by_tag<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    tag: &str,
) -> Result<Option<StoredManifest>, C::Error> {
    let row = conn.query_opt(
        "SELECT m.digest, m.media_type, m.content FROM tags t
         JOIN manifests m ON m.repo = t.repo AND m.digest = t.digest
         WHERE t.repo = $1 AND t.tag = $2",
        &[repo.into(), tag.into()],
    )?;
    Ok(row.as_ref().map(StoredManifest::from_row).transpose()?)
}

pub fn tag_digest<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    tag: &str,
) -> Result<Option<String>, C::Error> {
    let row = conn.query_opt(
        "SELECT digest FROM tags WHERE repo = $1 AND tag = $2",
        &[repo.into(), tag.into()],
    )?;
    Ok(row.map(|r| r.get("digest")).transpose()?)
}

pub fn set_tag<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    tag: &str,
    digest: &str,
    now: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO tags (repo, tag, digest, updated) VALUES ($1, $2, $3, $4)
         ON CONFLICT (repo, tag) DO UPDATE SET digest = excluded.digest, updated = excluded.updated",
        &[repo.into(), tag.into(), digest.into(), now.into()],
    )?;
    Ok(())
}

pub fn delete_tag<C: Sql + ?Sized>(conn: &C, repo: &str, tag: &str) -> Result<bool, C::Error> {
    let deleted = conn.execute(
        "DELETE FROM tags WHERE repo = $1 AND tag = $2",
        &[repo.into(), tag.into()],
    )?;
    Ok(deleted > 0)
}

/// Deletes a manifest, its references and the tags on it. True when it existed.
pub fn delete<C: Sql + ?Sized>(conn: &C, repo: &str, digest: &str) -> Result<bool, C::Error> {
    let params = [repo.into(), digest.into()];
    let deleted = conn.execute(
        "DELETE FROM manifests WHERE repo = $1 AND digest = $2",
        &params,
    )?;
    conn.execute(
        "DELETE FROM manifest_refs WHERE repo = $1 AND manifest = $2",
        &params,
    )?;
    conn.execute("DELETE FROM tags WHERE repo = $1 AND digest = $2", &params)?;
    Ok(deleted > 0)
}

/// Tags on `digest` or on any index that lists it, directly or through other
/// indexes: deleting `digest` would break what each of them points at.
pub fn tags_depending_on<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
) -> Result<Vec<String>, C::Error> {
    // `CAST($2 AS TEXT)`: PostgreSQL types the recursive column from its first
    // term, and a bare parameter there has no type of its own.
    let rows = conn.query(
        "WITH RECURSIVE parents(digest) AS (
             SELECT CAST($2 AS TEXT)
             UNION
             SELECT r.manifest FROM manifest_refs r JOIN parents p ON r.child = p.digest
             WHERE r.repo = $1 AND r.kind = 'manifest')
         SELECT t.tag FROM tags t JOIN parents p ON t.digest = p.digest WHERE t.repo = $1
         ORDER BY t.tag",
        &[repo.into(), digest.into()],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("tag"))
        .collect::<Result<_, _>>()?)
}

/// True when the repository has any manifest, tag or blob.
pub fn repo_exists<C: Sql + ?Sized>(conn: &C, repo: &str) -> Result<bool, C::Error> {
    Ok(conn
        .query_opt(
            "SELECT 1 FROM manifests WHERE repo = $1 LIMIT 1",
            &[repo.into()],
        )?
        .is_some()
        || conn
            .query_opt(
                "SELECT 1 FROM repo_blobs WHERE repo = $1 LIMIT 1",
                &[repo.into()],
            )?
            .is_some())
}

/// A page's `LIMIT`: `None` is every row. `i64::MAX` rather than SQLite's `-1`,
/// which PostgreSQL refuses.
fn page_limit(limit: Option<u64>) -> i64 {
    limit.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// Tags in lexical order after `last`, at most `limit` (+1 to tell whether more follow).
pub fn list_tags<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    last: Option<&str>,
    limit: Option<u64>,
) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT tag FROM tags WHERE repo = $1 AND tag > $2 ORDER BY tag LIMIT $3",
        &[
            repo.into(),
            last.unwrap_or("").into(),
            page_limit(limit).into(),
        ],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("tag"))
        .collect::<Result<_, _>>()?)
}

/// Repository names in order after `last`.
pub fn list_repositories<C: Sql + ?Sized>(
    conn: &C,
    last: Option<&str>,
    limit: Option<u64>,
) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT DISTINCT repo FROM manifests WHERE repo > $1 ORDER BY repo LIMIT $2",
        &[last.unwrap_or("").into(), page_limit(limit).into()],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("repo"))
        .collect::<Result<_, _>>()?)
}

/// Manifests in `repo` whose `subject` is `digest`, optionally of one artifact type.
pub fn referrers<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    subject: &str,
    artifact_type: Option<&str>,
) -> Result<Vec<Referrer>, C::Error> {
    let rows = conn.query(
        "SELECT digest, media_type, artifact_type, size, annotations FROM manifests
         WHERE repo = $1 AND subject = $2 AND (CAST($3 AS TEXT) IS NULL OR artifact_type = $3)
         ORDER BY created, digest",
        &[repo.into(), subject.into(), artifact_type.into()],
    )?;
    let mut referrers = Vec::with_capacity(rows.len());
    for r in rows {
        referrers.push(Referrer {
            digest: r.parsed("digest")?,
            media_type: r.get("media_type")?,
            artifact_type: r.get("artifact_type")?,
            size: r.get("size")?,
            annotations: r.get("annotations")?,
        });
    }
    Ok(referrers)
}
