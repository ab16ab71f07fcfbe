//! Support bundles imported for a customer: the file whole, with its size and
//! SHA-256 (see `V12` in the schema).

use rusqlite::{params, Connection, OptionalExtension};

/// The largest support bundle kept: a runner's bundle is a few hundred KiB; a file
/// far past that is not one.
pub const MAX_SUPPORT_BUNDLE: usize = 32 << 20;

/// One stored bundle, without its bytes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SupportBundle {
    pub id: i64,
    pub customer: String,
    pub imported_at: String,
    pub size: i64,
    pub sha256: String,
}

pub fn insert(
    conn: &Connection,
    customer: &str,
    bytes: &[u8],
    at: &str,
) -> rusqlite::Result<SupportBundle> {
    let sha256 = stackpack_schema::digest::Digest::of(bytes).to_string();
    conn.prepare_cached(
        "INSERT INTO support_bundles (customer, imported_at, size, sha256, bytes) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![customer, at, bytes.len() as i64, sha256, bytes])?;
    Ok(SupportBundle {
        id: conn.last_insert_rowid(),
        customer: customer.to_string(),
        imported_at: at.to_string(),
        size: bytes.len() as i64,
        sha256,
    })
}

/// The newest bundle of `customer`.
pub fn latest(conn: &Connection, customer: &str) -> rusqlite::Result<Option<SupportBundle>> {
    conn.prepare_cached(
        "SELECT id, customer, imported_at, size, sha256 FROM support_bundles WHERE customer = ?1 ORDER BY id DESC LIMIT 1",
    )?
    .query_row(params![customer], |r| {
        Ok(SupportBundle {
            id: r.get(0)?,
            customer: r.get(1)?,
            imported_at: r.get(2)?,
            size: r.get(3)?,
            sha256: r.get(4)?,
        })
    })
    .optional()
}

/// The bytes of bundle `id`, when it is `customer`'s.
pub fn bytes(conn: &Connection, customer: &str, id: i64) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.prepare_cached("SELECT bytes FROM support_bundles WHERE customer = ?1 AND id = ?2")?
        .query_row(params![customer, id], |r| r.get(0))
        .optional()
}
