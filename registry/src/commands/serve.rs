//! `stackpack-registry serve`: the only command that creates a registry.

use std::time::Duration;

use anyhow::Context as _;
use stackpack_registry::config::Config;

use crate::cli::ServeArgs;
use crate::commands::UsageError;

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
    config
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::env::var_os("NO_COLOR").is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

pub fn run(args: &ServeArgs) -> anyhow::Result<()> {
    init_logs();
    let data = &args.data;
    let state = stackpack_registry::open(config(args))
        .with_context(|| format!("cannot open the data folder `{}`", data.display()))?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the runtime")?;
    runtime.block_on(async move {
        let listen = &args.listen;
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
            UsageError(
                format!("cannot listen on `{listen}`: {e}"),
                Some("pick a free address with `--listen 127.0.0.1:5000`".into()),
            )
        })?;
        let address = listener.local_addr()?;
        println!("listening on http://{address}");
        tracing::info!(%address, data = %data.display(), "stackpack-registry serving");
        stackpack_registry::serve(state, listener).await?;
        Ok::<_, anyhow::Error>(())
    })
}
