//! [`super::Db`]'s PostgreSQL backend (issue 27): where the database is (a
//! `postgres://` URL, parsed once, its password never printed) and small pools of
//! `postgres::Client`s of the same shapes as SQLite's, each client behind a
//! `Mutex` and connected again when the server closed it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::locks::{ordered, Lock};
use super::sql::{Conn, Pg, PgError, Sql, SqlError, Statements};
use crate::error::Error;

/// Any number, the same in every replica: the registry-wide write lock of earlier
/// releases, whose rare writes (gc, the rollout tick, a person's commands) took it
/// exclusively to run alone. No write of this release takes it exclusively: each
/// holds only the keys of what it protects ([`super::locks`]). Every write still
/// takes it *shared*, which never waits for another of this release, so that a
/// replica of an earlier release left running during a rolling upgrade still runs
/// its rare writes alone. (Drop it once no such replica can be running.)
pub const WRITE_LOCK: i64 = 0x5354_4b50_5752_4954; // "STKPWRIT"

/// A PostgreSQL database to connect to, from a `postgres://user[:password]@host[:port]/database`
/// URL. The password comes from the URL or, when the URL has none, from
/// `PGPASSWORD`. `Display` and `Debug` name host, port and database only.
#[derive(Clone)]
pub struct PgTarget {
    /// Shared: every pooled client reconnects from it.
    config: Arc<postgres::Config>,
    /// The same, for the pipelined connections on the server's runtime
    /// ([`super::pg_async`]).
    pipelined: Arc<tokio_postgres::Config>,
}

/// Why a `postgres://` URL cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("the database URL is not a readable postgres:// URL: {reason} (the form is postgres://user[:password]@host[:port]/database)")]
pub struct BadUrl {
    reason: String,
}

impl PgTarget {
    /// Reads `url`; the error says what is wrong without repeating the URL.
    pub fn parse(url: &str) -> Result<PgTarget, BadUrl> {
        let mut config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
            // The cause names the part (`port`, an unknown option), not its value.
            let reason = match std::error::Error::source(&e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            };
            BadUrl { reason }
        })?;
        let mut pipelined: tokio_postgres::Config =
            url.parse().map_err(|e: tokio_postgres::Error| BadUrl {
                reason: e.to_string(),
            })?;
        if config.get_password().is_none() {
            if let Ok(password) = std::env::var("PGPASSWORD") {
                config.password(&password);
                pipelined.password(password);
            }
        }
        Ok(PgTarget {
            config: Arc::new(config),
            pipelined: Arc::new(pipelined),
        })
    }

    /// The settings of a pipelined connection ([`super::pg_async`]).
    pub(super) fn pipelined(&self) -> &tokio_postgres::Config {
        &self.pipelined
    }

    pub fn connect(&self) -> Result<postgres::Client, PgError> {
        Ok(self.config.connect(postgres::NoTls)?)
    }
}

impl std::fmt::Display for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = match self.config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(host)) => host.clone(),
            Some(postgres::config::Host::Unix(path)) => path.display().to_string(),
            None => "localhost".to_string(),
        };
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let database = self.config.get_dbname().unwrap_or("(the user's)");
        write!(f, "postgresql at {host}:{port}, database {database}")
    }
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgTarget({self})")
    }
}

/// Where the registry keeps its metadata: SQLite in the data folder (the default)
/// or a PostgreSQL database shared by replicas.
#[derive(Clone, Debug)]
pub enum DatabaseLocation {
    Sqlite,
    Postgres(PgTarget),
}

impl std::str::FromStr for DatabaseLocation {
    type Err = BadUrl;

    /// `sqlite` (the data folder's database) or a `postgres://`/`postgresql://` URL.
    fn from_str(text: &str) -> Result<Self, BadUrl> {
        if text == "sqlite" {
            Ok(DatabaseLocation::Sqlite)
        } else if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            PgTarget::parse(text).map(DatabaseLocation::Postgres)
        } else {
            Err(BadUrl {
                reason: "neither `sqlite` nor a URL starting postgres://".to_string(),
            })
        }
    }
}

/// A few clients, handed out round robin. A client found broken after a failed
/// call (the server restarted, the connection cut) is dropped and the pools'
/// shared `epoch` moves on, so every client connected before it is replaced on
/// its next use instead of failing once more: a `Db` answers again as soon as the
/// server is back.
pub(super) struct PgPool {
    target: PgTarget,
    slots: Vec<Mutex<Option<Held>>>,
    next: AtomicUsize,
    epoch: Arc<AtomicU64>,
}

/// A client, the epoch it was connected in, and the statements prepared on it.
struct Held {
    epoch: u64,
    client: postgres::Client,
    statements: Statements,
}

/// How long a client that just failed a call is given to answer an empty query
/// before it counts as broken.
const VALID_WAIT: Duration = Duration::from_secs(2);

impl PgPool {
    /// `size` clients (at least one), all connected now, so a wrong URL or
    /// password fails at start rather than on the first request. Pools sharing
    /// `epoch` replace their clients together after an outage.
    pub(super) fn open(
        target: &PgTarget,
        size: usize,
        epoch: &Arc<AtomicU64>,
    ) -> Result<PgPool, PgError> {
        let connected = epoch.load(Ordering::SeqCst);
        Ok(PgPool {
            target: target.clone(),
            slots: (0..size.max(1))
                .map(|_| {
                    target.connect().map(|client| {
                        Mutex::new(Some(Held {
                            epoch: connected,
                            client,
                            statements: Statements::default(),
                        }))
                    })
                })
                .collect::<Result<_, _>>()?,
            next: AtomicUsize::new(0),
            epoch: epoch.clone(),
        })
    }

    /// Runs `f` with a live client and its statements, and gets the client back
    /// with the answer. Must run off the async workers (the sync client blocks on
    /// a runtime of its own).
    fn with_client<T, E: From<PgError>>(
        &self,
        f: impl FnOnce(postgres::Client, &Statements) -> (postgres::Client, Result<T, E>),
    ) -> Result<T, E> {
        let mut slot = super::pick(&self.slots, &self.next);
        let epoch = self.epoch.load(Ordering::SeqCst);
        let (client, statements) = match slot.take() {
            Some(held) if held.epoch == epoch && !held.client.is_closed() => {
                (held.client, held.statements)
            }
            _ => (self.target.connect()?, Statements::default()),
        };
        let (mut client, answer) = f(client, &statements);
        if answer.is_err() && client.is_valid(VALID_WAIT).is_err() {
            // Broken: dropped here, and every client from before is replaced.
            self.epoch
                .compare_exchange(epoch, epoch + 1, Ordering::SeqCst, Ordering::SeqCst)
                .ok();
        } else {
            *slot = Some(Held {
                epoch,
                client,
                statements,
            });
        }
        answer
    }

    /// Runs the query `f` on a client, outside any transaction of its own.
    pub(super) fn read<T>(
        &self,
        f: impl FnOnce(&Conn) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        self.with_client(|client, statements| {
            let pg = Pg::cached(client, statements);
            let answer = f(&Conn::Postgres(&pg));
            (pg.into_inner(), answer)
        })
    }

    /// Runs `f` in one transaction holding [`WRITE_LOCK`] shared and each of
    /// `locks` exclusively (in one order, [`ordered`]). A transaction the database
    /// broke off for a deadlock or a serialization failure runs again, up to
    /// [`CONFLICT_TRIES`] times, after a short pause.
    pub(super) fn write_keyed<T>(
        &self,
        locks: &[Lock<'_>],
        mut f: impl FnMut(&Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let locks = ordered(locks);
        self.with_client(|mut client, statements| {
            for attempt in 1.. {
                let (answer, conflicted) = transaction(&mut client, statements, &locks, &mut f);
                if answer.is_ok() || !conflicted || attempt >= CONFLICT_TRIES {
                    return (client, answer);
                }
                std::thread::sleep(Duration::from_millis(2 * attempt as u64));
            }
            unreachable!("the loop returns")
        })
    }
}

/// How often a keyed write broken off by a deadlock runs before its error stands.
const CONFLICT_TRIES: u32 = 5;

/// Runs `f` in one transaction on `client`, holding `locks`: committed when `f`
/// succeeds, rolled back when it fails. Says too whether it failed because
/// another transaction got in the way (it may run again).
fn transaction<T>(
    client: &mut postgres::Client,
    statements: &Statements,
    locks: &[Lock<'_>],
    f: impl FnOnce(&Conn) -> Result<T, Error>,
) -> (Result<T, Error>, bool) {
    let tx = match client.transaction() {
        Ok(tx) => tx,
        Err(e) => return (Err(PgError::from(e).into()), false),
    };
    let pg = Pg::cached(tx, statements);
    let taken = pg
        .shared(WRITE_LOCK)
        .and_then(|()| locks.iter().try_for_each(|lock| pg.lock(*lock)));
    let answer = taken
        .map_err(Error::from)
        .and_then(|()| f(&Conn::Postgres(&pg)));
    let conflicted = pg.conflicted();
    match answer {
        Ok(value) => {
            let committed = pg.into_inner().commit().map_err(PgError::from);
            match committed {
                Ok(()) => (Ok(value), false),
                Err(e) => {
                    let retry = e.conflicted();
                    (Err(e.into()), retry)
                }
            }
        }
        Err(e) => {
            // A rollback that fails (the connection lost) leaves nothing
            // committed either; the closure's error is the one to report.
            let _ = pg.into_inner().rollback();
            (Err(e), conflicted)
        }
    }
}

/// A `postgres::Client` blocks on a runtime of its own when it closes, which
/// panics on an async worker (where a `Db` may be dropped): the clients are
/// closed on a thread of their own.
impl Drop for PgPool {
    fn drop(&mut self) {
        let clients: Vec<postgres::Client> = self
            .slots
            .drain(..)
            .filter_map(|slot| slot.into_inner().unwrap_or_else(|p| p.into_inner()))
            .map(|held| held.client)
            .collect();
        if !clients.is_empty() {
            let _ = std::thread::spawn(move || drop(clients)).join();
        }
    }
}
