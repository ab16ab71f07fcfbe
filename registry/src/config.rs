//! What the server is told at start: where its data lives, who may do what without a
//! token, how tags behave and how large things may be.

use std::path::PathBuf;
use std::time::Duration;

/// How tags other than stable `X.Y.Z` ones behave on a second push with another digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TagPolicy {
    /// They move to the new manifest.
    #[default]
    Mutable,
    /// They are refused with `DENIED`, like stable tags.
    Immutable,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub data: PathBuf,
    /// Where the metadata lives: SQLite in the data folder (the default) or a
    /// PostgreSQL database replicas share.
    pub database: crate::db::pg_pool::DatabaseLocation,
    /// Where blob bytes live: the data folder (the default) or an S3 bucket.
    pub blobs: crate::storage::BlobLocation,
    /// Anyone may pull without a token.
    pub anonymous_pull: bool,
    /// How semver prerelease tags (`1.4.0-feat.2`) behave.
    pub prerelease_tags: TagPolicy,
    /// How other tags (`latest`, `sha256-<hex>`) behave.
    pub other_tags: TagPolicy,
    pub max_manifest_bytes: u64,
    pub max_blob_bytes: u64,
    pub max_json_bytes: u64,
    /// An upload session not touched for this long is gone; one request may not take
    /// longer either.
    pub upload_lifetime: Duration,
    /// How many upload sessions one token (or all anonymous callers) may hold open.
    pub max_sessions_per_token: u64,
    /// Writes are refused while the data folder's disk has less free space than this.
    pub min_free_bytes: u64,
    /// A request body that sends nothing for this long is cut off.
    pub idle_timeout: Duration,
    /// The address clients use, for `WWW-Authenticate` realms; else taken from `Host`.
    pub public_url: Option<String>,
    /// How often rollouts are moved on by the clock (waves whose soak passed).
    pub rollout_tick: Duration,
    /// Webhooks from the command line (`--alert EVENTS=URL`): kept in the database
    /// beside those `alert add` made, replaced at each start.
    pub alerts: Vec<ConfiguredAlert>,
    /// A customer with no receipt for this long is announced `silent`.
    pub silent_after: Duration,
    /// How often the alert outbox is looked at.
    pub alert_tick: Duration,
    /// How long a webhook may take to answer before the delivery counts as failed.
    pub alert_timeout: Duration,
    /// Connections per pool to the database: readers on both backends, and on
    /// PostgreSQL writers too (keyed writes run side by side, one per connection;
    /// SQLite has one writer whatever this says).
    pub database_connections: usize,
}

/// One webhook the configuration names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfiguredAlert {
    pub webhook: String,
    pub events: Vec<crate::alert_event::Event>,
}

impl std::str::FromStr for ConfiguredAlert {
    type Err = String;

    /// `failed,drifted=https://hooks.example/x`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (events, webhook) = text.split_once('=').ok_or_else(|| {
            format!("`{text}` is not `EVENTS=URL`, as in `failed,drifted=https://hooks.example/x`")
        })?;
        crate::alert_event::check_webhook(webhook)?;
        Ok(ConfiguredAlert {
            webhook: webhook.to_string(),
            events: crate::alert_event::parse_events(events)?,
        })
    }
}

impl Config {
    pub fn new(data: impl Into<PathBuf>) -> Self {
        Config {
            data: data.into(),
            database: crate::db::pg_pool::DatabaseLocation::Sqlite,
            blobs: Default::default(),
            anonymous_pull: false,
            prerelease_tags: TagPolicy::Mutable,
            other_tags: TagPolicy::Mutable,
            max_manifest_bytes: 4 * 1024 * 1024,
            max_blob_bytes: 16 * 1024 * 1024 * 1024,
            max_json_bytes: 1024 * 1024,
            upload_lifetime: Duration::from_secs(3600),
            max_sessions_per_token: 256,
            min_free_bytes: 1024 * 1024 * 1024,
            idle_timeout: Duration::from_secs(60),
            public_url: None,
            rollout_tick: Duration::from_secs(5),
            alerts: Vec::new(),
            silent_after: Duration::from_secs(7 * 86_400),
            alert_tick: Duration::from_secs(1),
            alert_timeout: Duration::from_secs(10),
            database_connections: 4,
        }
    }
}
