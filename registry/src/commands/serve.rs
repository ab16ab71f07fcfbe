//! `stackpack-registry serve`: the only command that creates a registry.

use std::time::Duration;

use stackpack_registry::config::Config;

use crate::cli::ServeArgs;
use crate::commands::location::{self, Given};
use crate::commands::serve_file::ServeFile;
use crate::commands::{cannot_open_at, Error, Result};

/// The configuration from the command line over the file over the defaults.
fn config(args: &ServeArgs, file: &ServeFile) -> Result<Config> {
    let given = Given {
        data: args.data.as_deref(),
        database: args.database.as_deref(),
        blobs: Some(&args.blob_store),
    };
    let mut config = location::resolve(given, file)?;
    config.anonymous_pull = args.anonymous_pull || file.anonymous_pull.unwrap_or(false);
    if let Some(policy) = args.prerelease_tags.or(file.prerelease_tags) {
        config.prerelease_tags = policy;
    }
    if let Some(policy) = args.other_tags.or(file.other_tags) {
        config.other_tags = policy;
    }
    if let Some(bytes) = args.max_manifest_bytes.or(file.max_manifest_bytes) {
        config.max_manifest_bytes = bytes;
    }
    if let Some(bytes) = args.max_blob_bytes.or(file.max_blob_bytes) {
        config.max_blob_bytes = bytes;
    }
    if let Some(secs) = args.upload_lifetime_secs.or(file.upload_lifetime_secs) {
        config.upload_lifetime = Duration::from_secs(secs);
    }
    if let Some(n) = args
        .max_upload_sessions_per_token
        .or(file.max_upload_sessions_per_token)
    {
        config.max_sessions_per_token = n;
    }
    if let Some(bytes) = args.min_free_bytes.or(file.min_free_bytes) {
        config.min_free_bytes = bytes;
    }
    if let Some(secs) = args.idle_timeout_secs.or(file.idle_timeout_secs) {
        config.idle_timeout = Duration::from_secs(secs.max(1));
    }
    config.public_url = args.public_url.clone().or_else(|| file.public_url.clone());
    if let Some(n) = args.database_connections.or(file.database_connections) {
        // The flag's parser holds it to 1..=256 already; the file's value is held
        // to the same range here, refused rather than quietly changed.
        if !(1..=256).contains(&n) {
            return Err(Error::usage(format!(
                "`database-connections = {n}` in the configuration file is out of range"
            ))
            .hint("give 1 to 256 connections per pool (4 by default)"));
        }
        config.database_connections = usize::from(n);
    }
    if let Some(secs) = args.rollout_tick_secs.or(file.rollout_tick_secs) {
        config.rollout_tick = Duration::from_secs(secs.max(1));
    }
    config.alerts = file.alerts(args.config.as_deref())?;
    config.alerts.extend(args.alerts.iter().cloned());
    if let Some(ms) = args.alert_tick_ms.or(file.alert_tick_ms) {
        config.alert_tick = Duration::from_millis(ms.max(50));
    }
    if let Some(secs) = args.alert_timeout_secs.or(file.alert_timeout_secs) {
        config.alert_timeout = Duration::from_secs(secs.max(1));
    }
    if let Some(age) = args.silent_after.as_ref().or(file.silent_after.as_ref()) {
        let secs = stackpack_registry::age::parse_secs(age).ok_or_else(|| {
            Error::usage(stackpack_registry::age::invalid("--silent-after", age))
                .hint("as in `--silent-after 24h`")
        })?;
        config.silent_after = Duration::from_secs(secs);
    }
    Ok(config)
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = stackpack_terminal::colour();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

pub fn run(args: &ServeArgs) -> Result<()> {
    init_logs();
    let file = ServeFile::read(args.config.as_deref())?;
    let config = config(args, &file)?;
    let data = config.data.clone();
    let data = data.as_path();
    let listen = args
        .listen
        .clone()
        .or_else(|| file.listen.clone())
        .unwrap_or_else(|| "127.0.0.1:5000".to_string());
    let state =
        stackpack_registry::open(config.clone()).map_err(|error| cannot_open_at(&config, error))?;
    let runtime = tokio::runtime::Runtime::new().map_err(|error| {
        Error::refused(format!("cannot start the runtime: {error}")).caused_by(error)
    })?;
    runtime.block_on(async move {
        let listen = &listen;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|error| {
                Error::usage(format!("cannot listen on `{listen}`: {error}"))
                    .caused_by(error)
                    .hint("pick a free address with `--listen 127.0.0.1:5000`")
            })?;
        let address = listener.local_addr().map_err(|error| {
            Error::refused(format!("cannot tell the address of `{listen}`: {error}"))
                .caused_by(error)
        })?;
        println!("listening on http://{address}");
        let blobs = state.blobs.location();
        tracing::info!(%address, data = %data.display(), %blobs, "stackpack-registry serving");
        stackpack_registry::serve(state, listener)
            .await
            .map_err(|error| Error::refused(format!("serving stopped: {error}")).caused_by(error))
    })
}
