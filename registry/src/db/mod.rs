//! Plain database functions over SQLite (WAL). Each takes a `&Connection` (or a
//! transaction, which derefs to one) and does one thing; the controllers decide
//! which run together in one transaction.

pub mod blobs;
pub mod ledger;
pub mod manifests;
pub mod tokens;
pub mod uploads;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::Error;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS blobs (
    digest TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS repo_blobs (
    repo TEXT NOT NULL,
    digest TEXT NOT NULL REFERENCES blobs(digest),
    PRIMARY KEY (repo, digest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS repo_blobs_digest ON repo_blobs(digest);
CREATE TABLE IF NOT EXISTS manifests (
    repo TEXT NOT NULL,
    digest TEXT NOT NULL,
    media_type TEXT NOT NULL,
    artifact_type TEXT,
    size INTEGER NOT NULL,
    subject TEXT,
    annotations TEXT,
    content BLOB NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (repo, digest)
);
CREATE INDEX IF NOT EXISTS manifests_subject ON manifests(repo, subject) WHERE subject IS NOT NULL;
CREATE TABLE IF NOT EXISTS manifest_refs (
    repo TEXT NOT NULL,
    manifest TEXT NOT NULL,
    child TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('blob', 'manifest')),
    PRIMARY KEY (repo, manifest, child, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS manifest_refs_child ON manifest_refs(child, kind);
CREATE TABLE IF NOT EXISTS tags (
    repo TEXT NOT NULL,
    tag TEXT NOT NULL,
    digest TEXT NOT NULL,
    updated INTEGER NOT NULL,
    PRIMARY KEY (repo, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_digest ON tags(repo, digest);
CREATE TABLE IF NOT EXISTS uploads (
    id TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    hash BLOB NOT NULL UNIQUE,
    role TEXT NOT NULL,
    customer TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    repository TEXT NOT NULL,
    digest TEXT NOT NULL,
    source_repository TEXT,
    source_commit TEXT,
    source_branch TEXT,
    created TEXT,
    published_at TEXT NOT NULL,
    prerelease INTEGER NOT NULL,
    PRIMARY KEY (stack, version)
);
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY,
    name TEXT,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS installation_keys (
    customer TEXT NOT NULL,
    key_id TEXT NOT NULL,
    public_key TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    PRIMARY KEY (customer, key_id)
);
CREATE TABLE IF NOT EXISTS receipts (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    key_id TEXT NOT NULL,
    document TEXT NOT NULL,
    received_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_customer ON receipts(customer, stack, finished_at);
"#;

/// One writer, a few readers: SQLite in WAL mode lets readers run beside the writer.
pub struct Db {
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // NORMAL in WAL mode survives a crash of the process (the kernel has the pages);
    // only a power loss may lose the last transactions, never corrupt the file.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

impl Db {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path, readers: usize) -> rusqlite::Result<Db> {
        let writer = connect(path)?;
        writer.execute_batch(SCHEMA)?;
        let readers = (0..readers.max(1))
            .map(|_| connect(path).map(Mutex::new))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Db {
            writer: Mutex::new(writer),
            readers,
            next: AtomicUsize::new(0),
        })
    }

    /// Runs `f` on a reader connection.
    pub fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, Error> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for offset in 0..self.readers.len() {
            if let Ok(conn) = self.readers[(start + offset) % self.readers.len()].try_lock() {
                return Ok(f(&conn)?);
            }
        }
        let conn = self.readers[start % self.readers.len()]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(f(&conn)?)
    }

    /// Runs `f` in one immediate write transaction: all of it or none of it.
    pub fn write<T>(&self, f: impl FnOnce(&Transaction) -> Result<T, Error>) -> Result<T, Error> {
        let mut conn = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    /// `PRAGMA integrity_check`: `ok` when the file is sound.
    pub fn integrity_check(&self) -> Result<String, Error> {
        self.read(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
    }
}

/// Seconds since the Unix epoch.
pub fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Now as RFC 3339, UTC, to the second.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .expect("zero nanoseconds is valid");
    now.format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}
