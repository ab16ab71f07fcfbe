//! Facts about the registry itself, one value per name (`registry_settings`).
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL.

use super::sql::Sql;

/// Where the blobs live: `data-folder` or `s3://bucket/prefix`.
pub const BLOBS: &str = "blobs";

pub fn get<C: Sql + ?Sized>(conn: &C, name: &str) -> Result<Option<String>, C::Error> {
    let row = conn.query_opt(
        "SELECT value FROM registry_settings WHERE name = $1",
        &[name.into()],
    )?;
    Ok(row.map(|r| r.get("value")).transpose()?)
}

pub fn set<C: Sql + ?Sized>(conn: &C, name: &str, value: &str) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO registry_settings (name, value) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        &[name.into(), value.into()],
    )?;
    Ok(())
}

/// Whether any blob is recorded.
pub fn any_blob<C: Sql + ?Sized>(conn: &C) -> Result<bool, C::Error> {
    // PostgreSQL's `EXISTS` is a boolean, SQLite's an integer: `Row` reads both
    // as a `bool`.
    let row = conn.query_one("SELECT EXISTS (SELECT 1 FROM blobs) AS found", &[])?;
    Ok(row.get("found")?)
}
