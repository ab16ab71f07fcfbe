//! Plain database functions over SQLite (WAL). Each takes a `&Connection` (or a
//! transaction, which derefs to one) and does one thing; the controllers decide
//! which run together in one transaction.

pub mod alerts;
pub mod backup;
pub mod blobs;
pub mod copy;
pub mod customers;
pub mod fleet;
pub mod forecasts;
pub mod leases;
pub mod ledger;
pub mod locks;
pub mod manifests;
pub mod migrations;
pub mod pg;
pub mod pg_async;
pub mod pg_pool;
pub mod release_index;
pub mod rollouts;
pub mod sessions;
pub mod settings;
pub mod sql;
pub mod support_bundles;
pub mod tokens;
pub mod uploads;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::Error;
use crate::metrics::Metrics;
use sql::{Conn, SqlError};

/// The Rust half of the SQLite steps that fill new columns from existing rows
/// (their SQL is in `registry/migrations/sqlite/`): run right after step
/// `version`'s file, in its transaction. PostgreSQL's schema starts at today's
/// shape, so it has none.
fn fill_after(version: u32, tx: &Transaction) -> rusqlite::Result<()> {
    match version {
        2 => normalise_receipt_times(tx),
        4 => ledger::refresh_cell_flags(tx, None),
        5 => {
            ledger::fill_precedence_keys(tx)?;
            ledger::refresh_cells(tx, None)
        }
        18 => ledger::refresh_cells(tx, None),
        _ => Ok(()),
    }
}

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = migrations::SQLITE.len() as u32;

/// Rewrites stored receipt times as UTC and fills `finished_ns` (migration to v2).
fn normalise_receipt_times(tx: &Transaction) -> rusqlite::Result<()> {
    let rows: Vec<(String, String, String)> = tx
        .prepare("SELECT id, started_at, finished_at FROM receipts")?
        .query_map([], |r| {
            Ok((r.get("id")?, r.get("started_at")?, r.get("finished_at")?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = tx.prepare(
        "UPDATE receipts SET started_at = ?2, finished_at = ?3, finished_ns = ?4 WHERE id = ?1",
    )?;
    for (id, started, finished) in rows {
        // Stored times were checked as RFC 3339 on the way in; one that still does not
        // parse keeps its text and sorts first rather than stopping the upgrade.
        let (started, _) = utc_time(&started).unwrap_or((started, 0));
        let (finished, ns) = utc_time(&finished).unwrap_or((finished, 0));
        update.execute(rusqlite::params![id, started, finished, ns])?;
    }
    Ok(())
}

/// An RFC 3339 time (any offset, `t`/`z` in either case, any fraction) as UTC text
/// and as nanoseconds since the epoch, so that times compare as times.
pub fn utc_time(value: &str) -> Option<(String, i64)> {
    use time::format_description::well_known::Rfc3339;
    let parsed = time::OffsetDateTime::parse(value, &Rfc3339).ok()?;
    let utc = parsed.to_offset(time::UtcOffset::UTC);
    let nanos = i64::try_from(utc.unix_timestamp_nanos()).ok()?;
    Some((utc.format(&Rfc3339).ok()?, nanos))
}

/// Why a data folder's database cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the database is at schema version {found}, newer than this build's {known}: a newer `stackpack-registry` wrote it")]
    Newer { found: u32, known: u32 },
    /// PostgreSQL refused, could not be reached, or holds a newer schema; `target`
    /// names host, port and database, never the password.
    #[error("{target}: {error}")]
    Postgres {
        target: pg_pool::PgTarget,
        error: sql::PgError,
    },
    #[error("{0}")]
    BadUrl(#[from] pg_pool::BadUrl),
    /// A PostgreSQL database no registry has used yet (no `schema_version` table):
    /// only `serve` and `init` create one there.
    #[error("there is no registry in {0}: it has no registry schema")]
    NoRegistry(pg_pool::PgTarget),
}

/// One writer and two pools of readers: SQLite in WAL mode lets readers run beside
/// the writer and never wait for it.
///
/// - [`Db::read_any`] is for quick, indexed lookups on the hot path (a manifest, a
///   blob's size, a token). It runs inline: WAL readers take no lock a writer
///   holds, and its pool is never held by a slow query.
/// - [`Db::scan_any`] is for queries that may take a while (the ledger's fleet-wide
///   answers, the catalog, gc's listings). Like [`Db::write_keyed`], it runs off the
///   async workers, on a pool of its own.
///
/// Support's ledger queries ([`Db::support_any`]) have a pool of their own, one
/// connection per two cores: however many support clients loop on the fleet, they
/// take turns on it, and the other cores stay free for `/v2/`.
pub struct Db {
    store: Store,
    /// Where each call's time goes (`/metrics`): waiting for a connection included,
    /// since that is what a request waits for.
    metrics: Arc<Metrics>,
}

/// The connections of whichever backend keeps the metadata; the same shapes on
/// both (one writer, readers, scanners, support's).
enum Store {
    Sqlite(SqliteStore),
    Postgres(PgStore),
}

struct SqliteStore {
    writer: Mutex<Connection>,
    readers: Pool,
    scanners: Pool,
    supporters: Pool,
}

struct PgStore {
    writer: pg_pool::PgPool,
    readers: pg_pool::PgPool,
    /// The pull's one statement, on the server's runtime ([`Db::query_opt_hot`]).
    hot: pg_async::PgPipelines,
    scanners: pg_pool::PgPool,
    supporters: pg_pool::PgPool,
}

/// Which database keeps the metadata and the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The kinds of database call [`Db`] runs, as `/metrics` labels them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Read,
    Scan,
    Support,
    Write,
}

impl Call {
    pub fn as_str(self) -> &'static str {
        match self {
            Call::Read => "read",
            Call::Scan => "scan",
            Call::Support => "support",
            Call::Write => "write",
        }
    }
}

/// A few reader connections, handed out round robin.
struct Pool {
    connections: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

impl Pool {
    fn open(path: &Path, size: usize) -> rusqlite::Result<Pool> {
        Ok(Pool {
            connections: (0..size.max(1))
                .map(|_| connect(path, false).map(Mutex::new))
                .collect::<rusqlite::Result<_>>()?,
            next: AtomicUsize::new(0),
        })
    }

    fn run<T, E: Into<Error>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, Error> {
        let conn = pick(&self.connections, &self.next);
        f(&conn).map_err(Into::into)
    }
}

/// How long a statement waits for another connection's write lock (this process's
/// or another replica's) before it fails as busy.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn connect(path: &Path, create: bool) -> rusqlite::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_WAIT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: a write is on disk (the WAL synced) before we answer 201; NORMAL could
    // lose the last acknowledged pushes on a power loss.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// How many of support's queries may run at once: one per two cores, at least one.
pub fn support_connections() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// How long a process waits for another that is migrating the same database (its
/// steps hold the write lock): several replicas started at once on an old database
/// all come up, one migrating, the others waiting and then finding it current.
const MIGRATION_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Brings the database up to [`SCHEMA_VERSION`], one step per transaction. Each step
/// reads the version inside its own immediate transaction, so of two processes
/// migrating at once, the second waits for the first's step and then sees it done.
/// Returns the version the database was at when this process got to it.
fn migrate(conn: &mut Connection) -> Result<u32, OpenError> {
    conn.busy_timeout(MIGRATION_WAIT)?;
    let migrated = migrate_steps(conn);
    conn.busy_timeout(BUSY_WAIT)?;
    migrated
}

fn migrate_steps(conn: &mut Connection) -> Result<u32, OpenError> {
    let mut found = None;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get("user_version"))?;
        let found = *found.get_or_insert(version);
        if version > SCHEMA_VERSION {
            return Err(OpenError::Newer {
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        let Some(step) = migrations::SQLITE.get(version as usize) else {
            return Ok(found);
        };
        tx.execute_batch(step.sql)?;
        fill_after(step.version, &tx)?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
    }
}

/// Brings the existing database at `path` to [`SCHEMA_VERSION`]; returns the
/// version it was at when this process got the write lock (another process may
/// have migrated it meanwhile: then this one found it current).
pub fn migrate_file(path: &Path) -> Result<u32, OpenError> {
    migrate(&mut connect(path, false)?)
}

/// The schema version of the database at `path`, read without changing anything.
pub fn stored_version(path: &Path) -> rusqlite::Result<u32> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(BUSY_WAIT)?;
    conn.query_row("PRAGMA user_version", [], |r| r.get("user_version"))
}

/// Runs blocking database work without stalling the async worker it is called from:
/// on the multi-threaded runtime the worker hands its other tasks to another thread
/// first, so `/healthz` and pulls keep answering while a writer waits for SQLite's
/// lock (held by `gc` in another process, say). Elsewhere it simply runs.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// [`blocking`] for PostgreSQL's sync client, which blocks on a runtime of its own:
/// on a current-thread runtime (no worker to hand the others to) that cannot run,
/// so the call is refused by name there rather than panicking.
fn blocking_pg<T>(f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if let Ok(handle) = Handle::try_current() {
        if handle.runtime_flavor() == RuntimeFlavor::CurrentThread {
            return Err(Error::internal(
                "a PostgreSQL database is used from a current-thread tokio runtime, where its \
                 blocking client cannot run: use the multi-threaded runtime",
            ));
        }
    }
    blocking(f)
}

/// One of `slots`, handed out round robin: the first free one from `next` on, or,
/// when all are busy, the one `next` points at once it is free.
fn pick<'a, T>(slots: &'a [Mutex<T>], next: &AtomicUsize) -> std::sync::MutexGuard<'a, T> {
    let count = slots.len();
    let start = next.fetch_add(1, Ordering::Relaxed);
    (0..count)
        .find_map(|offset| slots[(start + offset) % count].try_lock().ok())
        .unwrap_or_else(|| {
            slots[start % count]
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        })
}

impl Db {
    /// Opens the database at `path`, creating it if needed, and migrates it forward.
    pub fn open(path: &Path, readers: usize) -> Result<Db, OpenError> {
        Db::open_with(path, readers, true)
    }

    /// Opens an existing database (a missing file is an error) and migrates it forward.
    pub fn open_existing(path: &Path, readers: usize) -> Result<Db, OpenError> {
        Db::open_with(path, readers, false)
    }

    fn open_with(path: &Path, readers: usize, create: bool) -> Result<Db, OpenError> {
        let mut writer = connect(path, create)?;
        migrate(&mut writer)?;
        Ok(Db {
            store: Store::Sqlite(SqliteStore {
                writer: Mutex::new(writer),
                readers: Pool::open(path, readers)?,
                scanners: Pool::open(path, 2)?,
                supporters: Pool::open(path, support_connections())?,
            }),
            metrics: Arc::default(),
        })
    }

    /// Opens the PostgreSQL database at `url` (`postgres://user[:password]@host[:port]/database`;
    /// the password from the URL or `PGPASSWORD`) and migrates it forward
    /// ([`pg::migrate`]); one a newer build migrated is refused.
    pub fn open_url(url: &str, readers: usize) -> Result<Db, OpenError> {
        Db::open_postgres(&pg_pool::PgTarget::parse(url)?, readers)
    }

    /// [`Db::open_url`] for a URL already read.
    pub fn open_postgres(target: &pg_pool::PgTarget, readers: usize) -> Result<Db, OpenError> {
        Db::open_postgres_with(target, readers, true)
    }

    /// Opens a PostgreSQL database a registry already uses and migrates it forward;
    /// one with no registry schema is [`OpenError::NoRegistry`] and nothing is
    /// created in it, as [`Db::open_existing`] leaves a missing file alone.
    pub fn open_postgres_existing(
        target: &pg_pool::PgTarget,
        readers: usize,
    ) -> Result<Db, OpenError> {
        Db::open_postgres_with(target, readers, false)
    }

    fn open_postgres_with(
        target: &pg_pool::PgTarget,
        readers: usize,
        create: bool,
    ) -> Result<Db, OpenError> {
        let failed = |error| OpenError::Postgres {
            target: target.clone(),
            error,
        };
        let epoch = Arc::default();
        let open = || {
            let mut client = target.connect()?;
            let found = create || pg::has_registry(&mut client)?;
            if found {
                pg::migrate(&mut client)?;
            }
            // Closed on a thread of its own, as `PgPool`'s clients are.
            std::thread::spawn(move || drop(client)).join().ok();
            if !found {
                return Ok(None);
            }
            Ok(Some(PgStore {
                // Keyed writes (receipts) run side by side, one per connection.
                writer: pg_pool::PgPool::open(target, readers, &epoch)?,
                readers: pg_pool::PgPool::open(target, readers, &epoch)?,
                // Few, so each carries many requests' statements at once: one
                // per four readers (one by default) measured fastest on two cores.
                hot: pg_async::PgPipelines::new(target.clone(), readers.div_ceil(4)),
                scanners: pg_pool::PgPool::open(target, 2, &epoch)?,
                supporters: pg_pool::PgPool::open(target, support_connections(), &epoch)?,
            }))
        };
        let store = blocking(|| open().map_err(failed))?
            .ok_or_else(|| OpenError::NoRegistry(target.clone()))?;
        Ok(Db {
            store: Store::Postgres(store),
            metrics: Arc::default(),
        })
    }

    /// The same database, timing its calls into `metrics` (the registry's own, which
    /// `/metrics` renders) rather than into a set nobody reads.
    pub fn reporting_to(self, metrics: Arc<Metrics>) -> Db {
        Db { metrics, ..self }
    }

    pub fn backend(&self) -> Backend {
        match self.store {
            Store::Sqlite(_) => Backend::Sqlite,
            Store::Postgres(_) => Backend::Postgres,
        }
    }

    fn timed<T>(&self, call: Call, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let value = f();
        self.observe(call, started);
        value
    }

    /// Records in `/metrics` how long a `call` begun at `started` took.
    fn observe(&self, call: Call, started: Instant) {
        self.metrics
            .observe_database(self.backend().as_str(), call.as_str(), started.elapsed());
    }

    /// Runs a quick, indexed lookup `f` on a reader connection (inline on SQLite).
    pub fn read_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(s) => self.timed(Call::Read, || s.readers.run(|c| f(&Conn::Sqlite(c)))),
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Read, || Ok(p.readers.read(f)?)))
            }
        }
    }

    /// Runs the one quick, indexed statement `sql` of a hot path (an authenticated
    /// pull's) and answers its row, if any: on SQLite inline as [`Db::read_any`];
    /// on PostgreSQL on the calling task, pipelined on a shared connection
    /// ([`pg_async`]), with no thread handed off and no client held meanwhile.
    pub async fn query_opt_hot(
        &self,
        sql: &'static str,
        params: &[sql::Param<'_>],
    ) -> Result<Option<sql::Row>, Error> {
        match &self.store {
            Store::Sqlite(_) => self.read_any(|c| sql::Sql::query_opt(c, sql, params)),
            Store::Postgres(p) => {
                let started = Instant::now();
                let answer = p.hot.query_opt(sql, params).await;
                self.observe(Call::Read, started);
                Ok(answer.map_err(SqlError::from)?)
            }
        }
    }

    /// Runs a query `f` that may take a while, off the async workers.
    pub fn scan_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(s) => {
                blocking(|| self.timed(Call::Scan, || s.scanners.run(|c| f(&Conn::Sqlite(c)))))
            }
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Scan, || Ok(p.scanners.read(f)?)))
            }
        }
    }

    /// Runs one of support's ledger queries `f`, off the async workers, on the
    /// support pool: at most [`support_connections`] run at once.
    pub fn support_any<T>(&self, f: impl FnOnce(&Conn) -> Result<T, SqlError>) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(s) => {
                blocking(|| self.timed(Call::Support, || s.supporters.run(|c| f(&Conn::Sqlite(c)))))
            }
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Support, || Ok(p.supporters.read(f)?)))
            }
        }
    }

    /// Runs `f` in one write transaction, all of it or none of it, holding each of
    /// `locks` (see [`locks`]; what it protects, taken in one order, and nothing
    /// wider): receipts for different customers do not wait on each other on
    /// PostgreSQL, nor a push on gc. `f` may run more than once (a transaction the
    /// database broke off for a deadlock runs again), each time from the start and
    /// in a new transaction. On SQLite, one writer at a time (`BEGIN IMMEDIATE`).
    pub fn write_keyed<T>(
        &self,
        locks: &[locks::Lock<'_>],
        mut f: impl FnMut(&Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match &self.store {
            Store::Sqlite(_) => self.write(|tx| f(&Conn::Sqlite(tx))),
            Store::Postgres(p) => {
                blocking_pg(|| self.timed(Call::Write, || p.writer.write_keyed(locks, f)))
            }
        }
    }

    /// SQLite's connections, for the SQLite-only calls; on PostgreSQL a
    /// [`SqlError::NotOnPostgres`] naming `what`.
    fn sqlite(&self, what: &'static str) -> Result<&SqliteStore, Error> {
        match &self.store {
            Store::Sqlite(s) => Ok(s),
            Store::Postgres(_) => Err(SqlError::NotOnPostgres(what).into()),
        }
    }

    /// SQLite's write: one immediate write transaction on the one writer.
    fn write<T>(&self, f: impl FnOnce(&Transaction) -> Result<T, Error>) -> Result<T, Error> {
        let s = self.sqlite("a write through a SQLite transaction")?;
        blocking(|| {
            self.timed(Call::Write, || {
                let mut conn = s
                    .writer
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let value = f(&tx)?;
                tx.commit()?;
                Ok(value)
            })
        })
    }

    /// `PRAGMA integrity_check`: `ok` when the file is sound (SQLite only).
    pub fn integrity_check(&self) -> Result<String, Error> {
        self.scan_any(|c| {
            let c = c.sqlite("PRAGMA integrity_check")?;
            Ok(c.query_row("PRAGMA integrity_check", [], |r| r.get("integrity_check"))?)
        })
    }
}

/// The plan SQLite picks for `sql` with `values`, one line per step (`SCAN f`,
/// `SEARCH f USING INDEX …`, `USE TEMP B-TREE FOR ORDER BY`), for the tests that
/// hold statements to their indexes.
pub(crate) fn query_plan(
    conn: &Connection,
    sql: &str,
    values: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
    sql::bind_numbered(&mut statement, values)?;
    let mut rows = statement.raw_query();
    let mut plan = Vec::new();
    while let Some(row) = rows.next()? {
        plan.push(row.get("detail")?);
    }
    Ok(plan)
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
