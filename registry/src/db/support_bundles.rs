//! Support bundles imported for a customer: the file whole, with its size and
//! SHA-256 (see `V12` in the schema). Written against [`Sql`], so the same
//! functions run on SQLite and PostgreSQL.

use super::sql::{Decode, FromRow, Row, Sql};

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

impl FromRow for SupportBundle {
    fn from_row(r: &Row) -> Result<SupportBundle, Decode> {
        Ok(SupportBundle {
            id: r.get("id")?,
            customer: r.get("customer")?,
            imported_at: r.get("imported_at")?,
            size: r.get("size")?,
            sha256: r.get("sha256")?,
        })
    }
}

pub fn insert<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    bytes: &[u8],
    at: &str,
) -> Result<SupportBundle, C::Error> {
    let sha256 = stackpack_schema::digest::Digest::of(bytes).to_string();
    // `RETURNING` rather than `last_insert_rowid()`: the id the database gave it,
    // on either backend.
    let row = conn.query_one(
        "INSERT INTO support_bundles (customer, imported_at, size, sha256, bytes)
         VALUES ($1, $2, $3, $4, $5)
         RETURNING id, customer, imported_at, size, sha256",
        &[
            customer.into(),
            at.into(),
            (bytes.len() as i64).into(),
            sha256.as_str().into(),
            bytes.into(),
        ],
    )?;
    Ok(SupportBundle::from_row(&row)?)
}

/// The newest bundle of `customer`.
pub fn latest<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Option<SupportBundle>, C::Error> {
    let row = conn.query_opt(
        "SELECT id, customer, imported_at, size, sha256 FROM support_bundles
         WHERE customer = $1 ORDER BY id DESC LIMIT 1",
        &[customer.into()],
    )?;
    Ok(row.as_ref().map(SupportBundle::from_row).transpose()?)
}

/// The bytes of bundle `id`, when it is `customer`'s.
pub fn bytes<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    id: i64,
) -> Result<Option<Vec<u8>>, C::Error> {
    let row = conn.query_opt(
        "SELECT bytes FROM support_bundles WHERE customer = $1 AND id = $2",
        &[customer.into(), id.into()],
    )?;
    Ok(row.map(|r| r.get("bytes")).transpose()?)
}
