//! The forecast cache: a customer's forecast depends only on the bundles it runs, the
//! candidate's bundles, its inputs, the versions it passes through and the engine.
//! Customers alike in all of these are forecast once per run, and a second forecast
//! of the same pair is read from `.stackpack/forecast-cache/<key>.json`.

use std::path::{Path, PathBuf};

use serde::Serialize;
use stackpack_schema::digest::Digest;
use stackpack_schema::forecast::CustomerForecast;

/// What a forecast depends on; its digest is the cache key.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheKey<'a> {
    /// `(stack, bundle digest)` of what the customer runs, in apply order.
    pub running: Vec<(&'a str, &'a Digest)>,
    /// `(stack, bundle digest)` of every step along the path, the candidate last.
    pub path: Vec<Vec<(&'a str, &'a Digest)>>,
    /// `(stack, digest of the inputs file's bytes)`.
    pub inputs: Vec<(&'a str, Digest)>,
    /// The engine's path and `version` line.
    pub engine: &'a str,
    /// Where it runs (`emulator `…``): a sandbox account may differ from an emulator.
    pub account: &'a str,
}

impl CacheKey<'_> {
    pub fn digest(&self) -> Digest {
        Digest::of(&stackpack_schema::signature::canonical_json(self))
    }
}

/// The cache folder of the repository at `root`.
pub fn folder(root: &Path) -> PathBuf {
    root.join(".stackpack").join("forecast-cache")
}

fn file(folder: &Path, key: &Digest) -> PathBuf {
    folder.join(format!("{}.json", key.hex()))
}

/// The forecast stored under `key`, if any and readable.
pub fn read(folder: &Path, key: &Digest) -> Option<CustomerForecast> {
    let bytes = std::fs::read(file(folder, key)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Stores a forecast under `key`; only what is known is kept (an engine failure may
/// pass). A cache that cannot be written only costs time: the error is dropped.
pub fn write(folder: &Path, key: &Digest, forecast: &CustomerForecast) {
    if !forecast.outcome.is_known() {
        return;
    }
    if std::fs::create_dir_all(folder).is_err() {
        return;
    }
    let target = file(folder, key);
    let temporary = target.with_extension(format!("json.{}", std::process::id()));
    let bytes = serde_json::to_vec_pretty(forecast).expect("a forecast serialises");
    if std::fs::write(&temporary, bytes).is_ok() {
        let _ = std::fs::rename(&temporary, &target);
    }
}

/// The engine's identity for the key: its path and the first line of `version`.
pub fn engine_identity(path: &Path) -> String {
    let version = std::process::Command::new(path)
        .arg("version")
        .env("CHECKPOINT_DISABLE", "1")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_default();
    format!("{} {version}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_changes_with_every_thing_a_forecast_reads_and_only_with_those() {
        let base = Digest::of(b"base 1.0.0");
        let app = Digest::of(b"app 1.1.0");
        let key = |inputs: &[u8], engine: &str, through: bool| {
            let mut path = vec![vec![("base", &base), ("app", &app)]];
            if through {
                path.insert(0, vec![("app", &base)]);
            }
            CacheKey {
                running: vec![("base", &base)],
                path,
                inputs: vec![("base", Digest::of(inputs))],
                engine,
                account: "emulator `http://127.0.0.1:5000`",
            }
            .digest()
        };
        let first = key(b"name = \"acme\"", "terraform 1.9.0", false);
        assert_eq!(first, key(b"name = \"acme\"", "terraform 1.9.0", false));
        assert_ne!(first, key(b"name = \"globex\"", "terraform 1.9.0", false));
        assert_ne!(first, key(b"name = \"acme\"", "terraform 1.10.0", false));
        assert_ne!(first, key(b"name = \"acme\"", "terraform 1.9.0", true));
    }
}
