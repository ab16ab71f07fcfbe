//! Facts about the registry itself, one value per name (`registry_settings`).

use rusqlite::{params, Connection, OptionalExtension};

/// Where the blobs live: `data-folder` or `s3://bucket/prefix`.
pub const BLOBS: &str = "blobs";

pub fn get(conn: &Connection, name: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT value FROM registry_settings WHERE name = ?1",
        params![name],
        |r| r.get(0),
    )
    .optional()
}

pub fn set(conn: &Connection, name: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO registry_settings (name, value) VALUES (?1, ?2)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        params![name, value],
    )?;
    Ok(())
}

/// Whether any blob is recorded.
pub fn any_blob(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT EXISTS (SELECT 1 FROM blobs)", [], |r| r.get(0))
}
