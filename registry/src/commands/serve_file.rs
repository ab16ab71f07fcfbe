//! `serve --config FILE`: the same options as the command line, in TOML, so that
//! every replica of one registry reads one file (the same blob store, the same
//! webhooks) instead of each being handed its own flags.
//!
//! ```toml
//! data = "/srv/stackpack-registry"
//! database = "postgres://registry@db.acme.internal:5432/registry"
//! listen = "0.0.0.0:5000"
//! blobs = "s3://acme-registry/blobs"
//! s3-region = "eu-west-1"
//! public-url = "https://registry.acme.example"
//! silent-after = "2d"
//!
//! [[alert]]
//! webhook = "https://hooks.slack.com/services/T000/B000/XXXX"
//! on = ["failed", "drifted", "silent"]
//! ```
//!
//! An unknown name is refused (a typo must not pass for a default), and a value of
//! the wrong type names its key and line.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use stackpack_registry::config::{ConfiguredAlert, TagPolicy};

use crate::commands::{Error, Result};

/// Everything `serve` takes, each optional: the command line wins over the file,
/// the file over the default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServeFile {
    pub data: Option<PathBuf>,
    pub database: Option<String>,
    pub blobs: Option<String>,
    pub s3_endpoint: Option<String>,
    pub s3_region: Option<String>,
    pub listen: Option<String>,
    pub anonymous_pull: Option<bool>,
    pub prerelease_tags: Option<TagPolicy>,
    pub other_tags: Option<TagPolicy>,
    pub max_manifest_bytes: Option<u64>,
    pub max_blob_bytes: Option<u64>,
    pub upload_lifetime_secs: Option<u64>,
    pub max_upload_sessions_per_token: Option<u64>,
    pub min_free_bytes: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub public_url: Option<String>,
    pub rollout_tick_secs: Option<u64>,
    pub database_connections: Option<u16>,
    #[serde(default, rename = "alert")]
    pub alerts: Vec<FileAlert>,
    pub silent_after: Option<String>,
    pub alert_tick_ms: Option<u64>,
    pub alert_timeout_secs: Option<u64>,
}

/// One `[[alert]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileAlert {
    pub webhook: String,
    pub on: Vec<String>,
}

impl ServeFile {
    /// Reads and checks `path`; none given is an empty file.
    pub fn read(path: Option<&Path>) -> Result<ServeFile> {
        let Some(path) = path else {
            return Ok(ServeFile::default());
        };
        let at = || format!("registry configuration `{}`", path.display());
        let text = std::fs::read_to_string(path).map_err(|error| {
            Error::usage(format!("cannot read `{}`: {error}", path.display()))
                .caused_by(error)
                .hint("check `--config`")
        })?;
        toml::from_str(&text).map_err(|error| {
            Error::usage(format!(
                "`{}` is not a registry configuration: {}",
                path.display(),
                error.message()
            ))
            .at(match error.span() {
                Some(span) => format!("{} line {}", at(), line_of(&text, span.start)),
                None => at(),
            })
            .hint("use the long option names of `stackpack-registry serve --help`, as in `blobs = \"s3://bucket/registry\"`")
        })
    }

    /// The file's webhooks, checked as `--alert` checks its own.
    pub fn alerts(&self, path: Option<&Path>) -> Result<Vec<ConfiguredAlert>> {
        self.alerts
            .iter()
            .map(|alert| {
                format!("{}={}", alert.on.join(","), alert.webhook)
                    .parse::<ConfiguredAlert>()
                    .map_err(|message| {
                        let file = path.map(|p| p.display().to_string()).unwrap_or_default();
                        Error::usage(message)
                            .at(format!("`[[alert]]` in registry configuration `{file}`"))
                            .hint("as in `webhook = \"https://hooks.example/x\"` and `on = [\"failed\", \"drifted\"]`")
                    })
            })
            .collect()
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}
