//! PostgreSQL's own migrations and connection (issue 27). One set of migrations per
//! backend: these are written for PostgreSQL (`BIGINT`, `BYTEA`, no `WITHOUT
//! ROWID`) and numbered on their own; the version lives in `schema_version`, since
//! PostgreSQL has no `PRAGMA user_version`. Only the tables of the modules already
//! behind [`super::sql::Sql`] are here so far (see `POSTGRES.md`).

use super::sql::PgError;

/// PostgreSQL version 1: API tokens (`db/tokens.rs`), with every column SQLite's
/// V1..V15 gave them.
const PG1: &str = r#"
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    hash BYTEA NOT NULL UNIQUE,
    role TEXT NOT NULL,
    customer TEXT,
    created TEXT NOT NULL,
    expires_at TEXT,
    revoked_at TEXT,
    last_used TEXT,
    name TEXT
);
CREATE UNIQUE INDEX tokens_name ON tokens(name) WHERE name IS NOT NULL;
"#;

/// PostgreSQL version 2: what replicas share besides the ledger: support page
/// sessions (`db/sessions.rs`) and leases (`db/leases.rs`, `gc`'s), as SQLite's V15.
const PG2: &str = r#"
CREATE TABLE ui_sessions (
    id_hash BYTEA PRIMARY KEY,
    token_hash BYTEA NOT NULL,
    expires_ns BIGINT NOT NULL
);
CREATE INDEX ui_sessions_expires ON ui_sessions(expires_ns);
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until_ns BIGINT NOT NULL
);
"#;

/// The schema, one step per version.
const MIGRATIONS: &[&str] = &[PG1, PG2];

/// The PostgreSQL schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Any number, the same in every replica: the advisory lock migrations hold, so of
/// several replicas started at once on one database, one migrates and the others
/// wait for it and then find the schema current.
const MIGRATION_LOCK: i64 = 0x5354_4b50_4d49_4752; // "STKPMIGR"

/// Connects to `url` (`postgres://user@host:port/database`), without TLS.
pub fn connect(url: &str) -> Result<postgres::Client, PgError> {
    Ok(postgres::Client::connect(url, postgres::NoTls)?)
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
            .get(0);
        let version = u32::try_from(stored).unwrap_or(u32::MAX);
        let found = *found.get_or_insert(version);
        if version > SCHEMA_VERSION {
            return Err(PgError::Newer {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        let Some(step) = MIGRATIONS.get(version as usize) else {
            return Ok(found);
        };
        tx.batch_execute(step)?;
        tx.execute(
            "UPDATE schema_version SET version = $1",
            &[&(i64::from(version) + 1)],
        )?;
        tx.commit()?;
    }
}
