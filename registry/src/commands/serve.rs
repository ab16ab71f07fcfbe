//! `stackpack-registry serve`: the only command that creates a registry.

use std::time::Duration;

use stackpack_registry::config::Config;

use crate::cli::ServeArgs;
use crate::commands::{cannot_open, Error, Result};

fn config(args: &ServeArgs) -> Config {
    let mut config = Config::new(&args.data);
    config.anonymous_pull = args.anonymous_pull;
    config.prerelease_tags = args.prerelease_tags;
    config.other_tags = args.other_tags;
    config.max_manifest_bytes = args.max_manifest_bytes;
    config.max_blob_bytes = args.max_blob_bytes;
    config.upload_lifetime = Duration::from_secs(args.upload_lifetime_secs);
    config.max_sessions_per_token = args.max_upload_sessions_per_token;
    config.min_free_bytes = args.min_free_bytes;
    config.idle_timeout = Duration::from_secs(args.idle_timeout_secs.max(1));
    config.public_url = args.public_url.clone();
    config.rollout_tick = Duration::from_secs(args.rollout_tick_secs.max(1));
    config.alerts = args.alerts.clone();
    config.alert_tick = Duration::from_millis(args.alert_tick_ms.max(50));
    config.alert_timeout = Duration::from_secs(args.alert_timeout_secs.max(1));
    config
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
    let data = &args.data;
    let silent_after =
        stackpack_registry::age::parse_secs(&args.silent_after).ok_or_else(|| {
            Error::usage(stackpack_registry::age::invalid(
                "--silent-after",
                &args.silent_after,
            ))
            .hint("as in `--silent-after 24h`")
        })?;
    let mut config = config(args);
    config.silent_after = Duration::from_secs(silent_after);
    config.blobs = args
        .blob_store
        .location()
        .map_err(|e| Error::usage(e).hint("as in `--blobs s3://bucket/registry`"))?;
    let state = stackpack_registry::open(config)
        .map_err(|error| cannot_open(data, error))?;
    let runtime = tokio::runtime::Runtime::new().map_err(|error| {
        Error::refused(format!("cannot start the runtime: {error}")).caused_by(error)
    })?;
    runtime.block_on(async move {
        let listen = &args.listen;
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
