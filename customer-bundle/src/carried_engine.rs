//! The engine a release carries: when `runner.toml` names no engine path, a run of
//! the release uses it. It is installed from the store into
//! `<home>/engines/<name>-<version>-<digest>/<name>` and its digest checked against
//! the signed release before every run. Runs that are not part of a release
//! (`drift`, `unlock`, a stack's own rollback) use the engine last installed this
//! way when none is on `PATH`: an airgapped account may have no other.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use stackpack_bundle::carried_engine::install;
use stackpack_schema::bundle::EngineName;
use stackpack_schema::digest::Digest;
use stackpack_schema::release::{this_platform, EnginePlatform, ReleaseEngine};

use crate::error::{Error, Result};
use crate::home::Home;

/// An engine binary to run, as the release signed it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Carried {
    pub name: EngineName,
    pub version: String,
    pub path: PathBuf,
    pub digest: Digest,
    pub size: u64,
}

/// The record of the engine last installed from a release.
const LAST: &str = "engines/last.json";

/// The carried engine this run uses, if any (see the module's documentation).
pub fn for_run(home: &Home, carried: Option<&ReleaseEngine>) -> Result<Option<Carried>> {
    if home.config.engine.path.is_some() {
        return Ok(None);
    }
    match carried {
        Some(engine) => Ok(Some(installed(home, engine)?)),
        None => {
            let Some(found) = last(home)? else {
                return Ok(None);
            };
            // Checked (or, when deleted, installed again from the store) before it
            // runs.
            let binary = EnginePlatform {
                platform: this_platform(),
                digest: found.digest.clone(),
                size: found.size,
            };
            install(&home.store()?, &binary, &found.path)?;
            Ok(Some(found))
        }
    }
}

/// Installs this platform's binary of `engine` (once) and records it as the last.
fn installed(home: &Home, engine: &ReleaseEngine) -> Result<Carried> {
    let platform = this_platform();
    let binary = engine.for_platform(&platform).ok_or_else(|| {
        Error::refused(format!(
            "the release carries engine `{}` {} for {} only, and this machine is `{platform}`",
            engine.name,
            engine.version,
            engine.platform_names()
        ))
        .hint("ask your vendor for a release built for this platform, or set `path` under `[engine]` in `runner.toml` to an engine of your own")
    })?;
    let name = engine.name.as_str();
    let path = home
        .root
        .join("engines")
        .join(format!(
            "{name}-{}-{}",
            engine.version,
            &binary.digest.hex()[..12]
        ))
        .join(name);
    install(&home.store()?, binary, &path)?;
    let carried = Carried {
        name: engine.name,
        version: engine.version.to_string(),
        path,
        digest: binary.digest.clone(),
        size: binary.size,
    };
    let record = serde_json::to_string_pretty(&carried).expect("serialises");
    crate::files::create_folder(&home.root.join("engines"))?;
    crate::files::write_private(&home.root.join(LAST), &record)?;
    Ok(carried)
}

/// The engine last installed from a release, for a run outside one, when
/// `runner.toml`'s engine is not on `PATH`.
fn last(home: &Home) -> Result<Option<Carried>> {
    let path = home.root.join(LAST);
    if !path.is_file() || crate::files::find_on_path(home.config.engine.name.as_str()).is_some() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).map_err(|e| crate::error::io("read", &path, e))?;
    let carried: Carried = serde_json::from_slice(&bytes).map_err(|e| {
        Error::refused(format!("`{}` is unreadable: {e}", path.display()))
            .hint("delete it: the next run of a release that carries an engine writes it again")
    })?;
    Ok(Some(carried))
}
