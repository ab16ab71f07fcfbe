//! `stackpack-registry`: an OCI registry with the release ledger.
//!
//! A short tour:
//!
//! - [`controllers`] holds the HTTP handlers, one file per action
//!   (`controllers/<resource>/<action>.rs`), the request context, the router, the
//!   metrics middleware and body helpers. The OCI distribution API lives under
//!   `/v2/`, the ledger under `/api/v1/`, health at `/healthz` and `/metrics`.
//! - [`db`] holds plain functions over SQLite (WAL, `synchronous=FULL`): blobs,
//!   manifests and tags, upload sessions, tokens, and the ledger (releases,
//!   customers, receipts); its schema is versioned (`user_version`) and migrated
//!   forward on open. Database work runs off the async workers.
//! - [`storage`] keeps blob bytes behind one trait, in the data folder (the default)
//!   or in an S3 bucket: content-addressed, staged, checked against their digest and
//!   made visible whole, inside the transaction that records them.
//! - [`auth`] resolves bearer tokens (stored hashed) into roles and decides who may
//!   do what; [`error`] is the one error type, rendered as the spec's JSON body.
//! - [`receipts`] checks and records runners' signed receipts; [`gc`] collects
//!   expired uploads and unreferenced blobs, safely beside a running server.
//! - [`conn`] closes connections that go quiet.
//!
//! Everything a request needs is in [`state::AppState`]; [`open`] creates or opens a
//! data folder, [`open_existing`] only opens one; [`serve`] runs the server until
//! SIGINT or SIGTERM, letting requests in flight finish, and sweeps expired uploads.

pub mod age;
pub mod alert_event;
pub mod alerts;
pub mod api;
pub mod auth;
pub mod chart;
pub mod config;
pub mod conn;
pub mod controllers;
pub mod db;
pub mod error;
pub mod forecast;
pub mod gc;
pub mod lease;
pub mod metrics;
pub mod names;
pub mod reason;
pub mod receipt_keys;
pub mod receipts;
pub mod rollout;
pub mod state;
pub mod storage;
pub mod timestamp;
pub mod version_key;

use std::sync::Arc;
use std::time::Duration;

use config::Config;
use state::AppState;

/// The database file inside the data folder.
pub const DB_FILE: &str = "registry.db";

/// Why a data folder cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// No registry lives there (a mistyped `--data`, say): nothing was created.
    #[error("there is no registry in `{}`: `{}` does not exist", .0.display(), .0.join(DB_FILE).display())]
    Missing(std::path::PathBuf),
    #[error("cannot prepare the data folder: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot open the database: {0}")]
    Db(#[from] db::OpenError),
    #[error("{0}")]
    Blobs(#[from] storage::OpenError),
    #[error("cannot record the configured alerts: {0}")]
    Alerts(String),
    #[error("this registry's blobs live in `{recorded}`, not in `{given}`")]
    BlobsElsewhere { recorded: String, given: String },
    #[error("cannot read where this registry's blobs live: {0}")]
    Settings(String),
}

/// Refuses a blob store other than the one the database's rows point into, and
/// records it on first use. A registry from before blob stores had a choice kept
/// them in its data folder. `serve` checks at start; so does every command that
/// reads or deletes blobs (`gc`), while those that only read or write rows do not
/// need to be told where blobs live.
pub fn check_blob_location(db: &db::Db, location: &storage::BlobLocation) -> Result<(), OpenError> {
    let given = location.identity();
    let recorded = db
        .write_keyed(&[db::locks::Lock::Setting(db::settings::BLOBS)], |tx| {
            if let Some(recorded) = db::settings::get(tx, db::settings::BLOBS)? {
                return Ok(recorded);
            }
            let recorded = match db::settings::any_blob(tx)? {
                true => storage::BlobLocation::DataFolder.identity(),
                false => given.clone(),
            };
            db::settings::set(tx, db::settings::BLOBS, &recorded)?;
            Ok(recorded)
        })
        .map_err(|e| OpenError::Settings(e.message))?;
    match recorded == given {
        true => Ok(()),
        false => Err(OpenError::BlobsElsewhere { recorded, given }),
    }
}

/// Opens the data folder, creating it (database and blob store) if new, and migrates
/// the database forward. Only `serve` creates a registry.
pub fn open(config: Config) -> Result<AppState, OpenError> {
    let metrics = Arc::new(metrics::Metrics::default());
    let db = match &config.database {
        db::pg_pool::DatabaseLocation::Sqlite => {
            make_private(&config.data)?;
            db::Db::open(&config.data.join(DB_FILE), config.database_connections)?
        }
        db::pg_pool::DatabaseLocation::Postgres(target) => {
            make_private_folder(&config.data)?;
            db::Db::open_postgres(target, config.database_connections)?
        }
    }
    .reporting_to(metrics.clone());
    let blobs = storage::open(&config.blobs, &config.data, metrics.clone())?;
    check_blob_location(&db, &config.blobs)?;
    configure_alerts(&db, &config.alerts)?;
    Ok(AppState::new(config, db, blobs, metrics))
}

/// The configuration's webhooks replace those of the last start.
fn configure_alerts(db: &db::Db, alerts: &[config::ConfiguredAlert]) -> Result<(), OpenError> {
    let now = timestamp::Timestamp::now();
    db.write_keyed(&[db::locks::Lock::Setting(crate::alerts::SETTING)], |tx| {
        let webhooks: Vec<String> = alerts.iter().map(|a| a.webhook.clone()).collect();
        db::alerts::keep_configured(tx, &webhooks)?;
        for a in alerts {
            let events: Vec<&str> = a.events.iter().map(|e| e.as_str()).collect();
            db::alerts::add(tx, &a.webhook, &events, "config", now.as_str())?;
        }
        Ok(())
    })
    .map_err(|e| OpenError::Alerts(e.message))
}

/// The data folder holds token hashes, customers' receipts and their installation
/// keys: it is created 0700 and its database 0600 whatever the umask (SQLite gives
/// its `-wal` and `-shm` files the database's own mode), and a folder or database
/// an older build left open to others is closed on the next start.
fn make_private(data: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    make_private_folder(data)?;
    let database = data.join(DB_FILE);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&database)?;
    let journals = ["-wal", "-shm"].map(|suffix| data.join(format!("{DB_FILE}{suffix}")));
    for file in std::iter::once(database).chain(journals) {
        close_to_others(&file, 0o600)?;
    }
    Ok(())
}

/// The data folder, 0700 whatever the umask, and closed to others if an older
/// build left it open: with the metadata in PostgreSQL it still holds upload parts,
/// and blobs unless they live in S3.
fn make_private_folder(data: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data)?;
    close_to_others(data, 0o700)
}

/// Takes group and other permissions off `path` (its mode masked with `private`)
/// when it has any; a path that does not exist is left alone.
fn close_to_others(path: &std::path::Path, private: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & private))?;
    }
    Ok(())
}

/// Opens an existing registry and migrates its database forward: a data folder
/// without one is [`OpenError::Missing`], a PostgreSQL database no registry has
/// used is `OpenError::Db(db::OpenError::NoRegistry)`, and nothing is created in
/// either. With PostgreSQL the data folder is prepared as [`open`] prepares it
/// (it holds upload parts, and blobs unless they live in S3).
pub fn open_existing(config: Config) -> Result<AppState, OpenError> {
    let metrics = Arc::new(metrics::Metrics::default());
    let db = open_existing_db(&config)?.reporting_to(metrics.clone());
    if let db::pg_pool::DatabaseLocation::Postgres(_) = &config.database {
        make_private_folder(&config.data)?;
    }
    let blobs = storage::open(&config.blobs, &config.data, metrics.clone())?;
    Ok(AppState::new(config, db, blobs, metrics))
}

/// [`open_existing`] for a command that only reads and writes rows: the database
/// alone, with no blob store ([`storage::unopened::Unopened`]). With PostgreSQL
/// the data folder is neither needed nor touched, so `config.data` may be empty.
pub fn open_existing_rows(config: Config) -> Result<AppState, OpenError> {
    let metrics = Arc::new(metrics::Metrics::default());
    let db = open_existing_db(&config)?.reporting_to(metrics.clone());
    let blobs: Arc<dyn storage::BlobStore> = Arc::new(storage::unopened::Unopened);
    Ok(AppState::new(config, db, blobs, metrics))
}

/// An existing registry's database, migrated forward; nothing is created.
fn open_existing_db(config: &Config) -> Result<db::Db, OpenError> {
    Ok(match &config.database {
        db::pg_pool::DatabaseLocation::Sqlite => {
            if !config.data.join(DB_FILE).is_file() {
                return Err(OpenError::Missing(config.data.clone()));
            }
            make_private(&config.data)?;
            db::Db::open_existing(&config.data.join(DB_FILE), 2)?
        }
        db::pg_pool::DatabaseLocation::Postgres(target) => {
            db::Db::open_postgres_existing(target, 2)?
        }
    })
}

/// Where a registry's database stands against this build's schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum SchemaState {
    /// At this build's version: nothing to do.
    Current { version: u32 },
    /// Older: `migrate` (or any command that opens it) brings it forward.
    Behind { found: u32, known: u32 },
    /// Written by a newer build: this one refuses it.
    Newer { found: u32, known: u32 },
}

impl SchemaState {
    /// Where a database at schema version `found` stands against `known`, the
    /// version this build writes (SQLite's and PostgreSQL's count alike).
    pub fn of(found: u32, known: u32) -> SchemaState {
        match found.cmp(&known) {
            std::cmp::Ordering::Equal => SchemaState::Current { version: found },
            std::cmp::Ordering::Less => SchemaState::Behind { found, known },
            std::cmp::Ordering::Greater => SchemaState::Newer { found, known },
        }
    }
}

/// Where the database in `data` stands, read without changing anything.
pub fn schema_state(data: &std::path::Path) -> Result<SchemaState, OpenError> {
    let path = data.join(DB_FILE);
    if !path.is_file() {
        return Err(OpenError::Missing(data.to_path_buf()));
    }
    let found = db::stored_version(&path).map_err(db::OpenError::from)?;
    Ok(SchemaState::of(found, db::SCHEMA_VERSION))
}

/// Brings the database in `data` to this build's schema and returns the version it
/// was at when this process got to it. Replicas started at once on one database may all call this: one
/// migrates, the others wait for its steps and find them done.
pub fn migrate(data: &std::path::Path) -> Result<u32, OpenError> {
    let path = data.join(DB_FILE);
    if !path.is_file() {
        return Err(OpenError::Missing(data.to_path_buf()));
    }
    make_private(data)?;
    Ok(db::migrate_file(&path)?)
}

/// Serves on `listener` until SIGINT or SIGTERM; requests in flight finish first.
/// Connections idle longer than the configured timeout are closed, and expired
/// upload sessions are swept in the background.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let idle = state.config.idle_timeout;
    let state = Arc::new(state);
    let sweeper = tokio::spawn(sweep_uploads(state.clone()));
    let scheduler = tokio::spawn(tick_rollouts(state.clone()));
    let alerter = tokio::spawn(alerts::run(state.clone()));
    let app = controllers::router(state);
    conn::serve(listener, app, idle, shutdown_signal()).await;
    sweeper.abort();
    scheduler.abort();
    alerter.abort();
    Ok(())
}

/// Deletes expired upload sessions and their files every half lifetime (between 1 s
/// and a minute), so abandoned uploads do not wait for someone to run `gc`.
async fn sweep_uploads(state: Arc<AppState>) {
    let lifetime = state.config.upload_lifetime;
    let every = (lifetime / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut interval = tokio::time::interval(every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let state = state.clone();
        // One replica sweeps at a time: the others find gc's lease held and wait
        // for their next tick.
        let swept = tokio::task::spawn_blocking(move || {
            lease::hold(&state.db, lease::GC, || {
                let mut report = gc::GcReport::default();
                gc::sweep_uploads(&state.db, state.blobs.as_ref(), lifetime, &mut report)
                    .map(|()| report)
            })
        })
        .await
        .map(|held| match held {
            Ok(Ok(swept)) => swept,
            Ok(Err(_)) => Ok(gc::GcReport::default()),
            Err(e) => Err(e),
        });
        match swept {
            Ok(Ok(report)) if report.expired_uploads + report.stray_upload_files > 0 => {
                tracing::info!(
                    expired = report.expired_uploads,
                    stray_files = report.stray_upload_files,
                    "swept expired upload sessions"
                );
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "sweeping expired uploads failed"),
            Err(e) => tracing::warn!(error = %e, "the upload sweep stopped"),
        }
    }
}

/// Moves rollouts on by the clock every `rollout_tick`: opens waves whose soak time
/// passed. A failure (or a panic) in one tick is logged, and the next tick runs.
async fn tick_rollouts(state: Arc<AppState>) {
    let mut interval =
        tokio::time::interval(state.config.rollout_tick.max(Duration::from_millis(100)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let state = state.clone();
        let ticked = tokio::task::spawn_blocking(move || {
            let now = rollout::now_ns();
            rollout::tick(&state.db, now)
        })
        .await;
        match ticked {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e.message, "moving rollouts on failed"),
            Err(e) => tracing::error!(error = %e, "the rollout scheduler's tick panicked"),
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
