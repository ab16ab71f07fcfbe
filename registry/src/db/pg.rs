//! PostgreSQL's migration runner and connection (issue 27). The steps are the files
//! in `registry/migrations/postgres/` ([`super::migrations::POSTGRES`]), written
//! for PostgreSQL (`BIGINT`, `BYTEA`, no `WITHOUT ROWID`) and numbered on their
//! own; the version lives in `schema_version`, since PostgreSQL has no `PRAGMA
//! user_version`. `tests/it/schema_equivalence.rs` checks they make the schema
//! SQLite's files make.

use super::sql::PgError;

/// The PostgreSQL schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = super::migrations::POSTGRES.len() as u32;

/// Any number, the same in every replica: the advisory lock migrations hold, so of
/// several replicas started at once on one database, one migrates and the others
/// wait for it and then find the schema current.
pub const MIGRATION_LOCK: i64 = 0x5354_4b50_4d49_4752; // "STKPMIGR"

/// Connects to `url` (`postgres://user@host:port/database`), without TLS.
pub fn connect(url: &str) -> Result<postgres::Client, PgError> {
    Ok(postgres::Client::connect(url, postgres::NoTls)?)
}

/// The schema version the database holds, read without changing anything (no
/// `schema_version` table yet: 0, a database no build has migrated).
pub fn stored_version(client: &mut postgres::Client) -> Result<u32, PgError> {
    if !has_registry(client)? {
        return Ok(0);
    }
    let stored: Option<i64> = client
        .query_opt("SELECT version FROM schema_version", &[])?
        .map(|row| row.get("version"));
    Ok(stored.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX)))
}

/// Whether a registry has used this database: [`migrate`] made its
/// `schema_version` table (in the schema the connection's `search_path` finds first).
pub fn has_registry(client: &mut postgres::Client) -> Result<bool, PgError> {
    Ok(client
        .query_one(
            "SELECT to_regclass('schema_version') IS NOT NULL AS found",
            &[],
        )?
        .get("found"))
}

/// Brings the database up to [`SCHEMA_VERSION`], one step per transaction, each
/// under the migration lock; refuses one a newer build has migrated. Returns the
/// version it was at when this process got the lock.
pub fn migrate(client: &mut postgres::Client) -> Result<u32, PgError> {
    let mut found = None;
    loop {
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL);
             INSERT INTO schema_version (version)
                 SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM schema_version);",
        )?;
        let stored: i64 = tx
            .query_one("SELECT version FROM schema_version", &[])?
            .get("version");
        let version = u32::try_from(stored).unwrap_or(u32::MAX);
        let found = *found.get_or_insert(version);
        if version > SCHEMA_VERSION {
            return Err(PgError::Newer {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        let Some(step) = super::migrations::POSTGRES.get(version as usize) else {
            return Ok(found);
        };
        tx.batch_execute(step.sql)?;
        tx.execute(
            "UPDATE schema_version SET version = $1",
            &[&(i64::from(version) + 1)],
        )?;
        tx.commit()?;
    }
}
