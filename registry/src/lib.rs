//! `stackpack-registry`: an OCI registry with the release ledger.
//!
//! A short tour:
//!
//! - [`controllers`] holds the HTTP handlers, one file per action
//!   (`controllers/<resource>/<action>.rs`), and the router. The OCI distribution
//!   API lives under `/v2/`, the ledger under `/api/v1/`, health at `/healthz` and
//!   `/metrics`.
//! - [`db`] holds plain functions over SQLite (WAL): blobs, manifests and tags,
//!   upload sessions, tokens, and the ledger (releases, customers, receipts).
//! - [`storage`] keeps blob files, content-addressed, written under a temporary name,
//!   checked against their digest and renamed into place.
//! - [`auth`] resolves bearer tokens (stored hashed) into roles and decides who may
//!   do what; [`error`] is the one error type, rendered as the spec's JSON body.
//! - [`receipts`] checks and records runners' signed receipts; [`gc`] collects
//!   expired uploads and unreferenced blobs.
//!
//! Everything a request needs is in [`state::AppState`]; [`serve`] runs the server
//! until SIGINT or SIGTERM, letting requests in flight finish.

pub mod api;
pub mod auth;
pub mod config;
pub mod controllers;
pub mod db;
pub mod error;
pub mod gc;
pub mod metrics;
pub mod names;
pub mod receipts;
pub mod state;
pub mod storage;

use std::sync::Arc;

use config::Config;
use state::AppState;

/// The database file inside the data folder.
pub const DB_FILE: &str = "registry.db";

/// Opens the data folder: database (created and migrated if new) and blob store.
pub fn open(config: Config) -> Result<AppState, error::Error> {
    std::fs::create_dir_all(&config.data)?;
    let storage = storage::Storage::open(&config.data)?;
    let db = db::Db::open(&config.data.join(DB_FILE), 4)?;
    Ok(AppState::new(config, db, storage))
}

/// Serves on `listener` until SIGINT or SIGTERM; requests in flight finish first.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let app = controllers::router(Arc::new(state));
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
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
