//! `desired.toml`: what a team declares should run, in a pull request; the runner
//! converges to it.
//!
//! ```toml
//! [releases.environment]
//! version = "1.3.0"           # or: channel = "stable"
//! inputs = "customers/globex" # one <stack>.tfvars per stack
//! ```
//!
//! Relative paths are relative to the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::home::{line_of, location_of};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    releases: BTreeMap<String, toml::Spanned<Entry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(default)]
    version: Option<toml::Spanned<String>>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    inputs: Option<toml::Spanned<PathBuf>>,
}

/// Which version a release should run at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wanted {
    Version(semver::Version),
    /// The newest version the channel's trusted statements approve.
    Channel(String),
}

/// One release the file names.
#[derive(Clone, Debug)]
pub struct DesiredRelease {
    pub release: String,
    pub wanted: Wanted,
    /// The inputs folder, made absolute (None: `[sync] inputs`).
    pub inputs: Option<PathBuf>,
    /// `file:line` of its table, for messages.
    pub at: String,
}

/// Reads and checks `path`: every release has a valid name, exactly one of
/// `version` and `channel`, and an inputs folder that exists.
pub fn read(path: &Path) -> Result<Vec<DesiredRelease>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::usage(format!(
            "cannot read the desired-state file `{}`: {e}",
            path.display()
        ))
        .hint("set `desired` under `[sync]` in `runner.toml` to the file in your git checkout, or pass `--desired FILE`")
    })?;
    let file: File = toml::from_str(&text).map_err(|e| {
        Error::refused(format!(
            "the desired-state file is not valid: {}",
            e.message()
        ))
        .at(location_of(path, &text, e.span()))
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (release, entry) in file.releases {
        let span = entry.span();
        let at = format!("{}:{}", path.display(), line_of(&text, span.start));
        let entry = entry.into_inner();
        stackpack_schema::reference::validate_name(&release)
            .map_err(|e| Error::refused(format!("release `{release}`: {e}")).at(at.clone()))?;
        let wanted = match (entry.version, entry.channel) {
            (Some(version), None) => {
                let at = location_of(path, &text, Some(version.span()));
                let version = semver::Version::parse(version.get_ref()).map_err(|e| {
                    Error::refused(format!(
                        "release `{release}`: `{}` is not a version: {e}",
                        version.get_ref()
                    ))
                    .at(at)
                })?;
                Wanted::Version(version)
            }
            (None, Some(channel)) => Wanted::Channel(channel),
            _ => {
                return Err(Error::refused(format!(
                    "release `{release}` must name exactly one of `version` and `channel`"
                ))
                .at(at)
                .hint("`version = \"1.3.0\"` pins a version; `channel = \"stable\"` follows the vendor's channel"))
            }
        };
        let inputs = match entry.inputs {
            Some(dir) => {
                let line = location_of(path, &text, Some(dir.span()));
                let dir = base.join(dir.get_ref());
                if !dir.is_dir() {
                    return Err(Error::usage(format!(
                        "release `{release}`: the inputs folder `{}` does not exist",
                        dir.display()
                    ))
                    .at(line)
                    .hint("the folder holds one `STACK.tfvars` per stack; paths are relative to the desired-state file"));
                }
                Some(std::path::absolute(&dir).unwrap_or(dir))
            }
            None => None,
        };
        out.push(DesiredRelease {
            release,
            wanted,
            inputs,
            at,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_desired_state_file_names_its_releases_and_says_where_it_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("customers/globex")).unwrap();
        let path = dir.path().join("desired.toml");
        std::fs::write(
            &path,
            "[releases.environment]\nversion = \"1.3.0\"\ninputs = \"customers/globex\"\n\n[releases.data]\nchannel = \"stable\"\n",
        )
        .unwrap();
        let read = read(&path).unwrap();
        assert_eq!(read.len(), 2);
        let env = read.iter().find(|r| r.release == "environment").unwrap();
        assert_eq!(env.wanted, Wanted::Version(semver::Version::new(1, 3, 0)));
        assert!(env.inputs.as_ref().unwrap().ends_with("customers/globex"));

        std::fs::write(
            &path,
            "[releases.environment]\nversion = \"1.3.0\"\ninputs = \"customers/nobody\"\n",
        )
        .unwrap();
        let error = super::read(&path).unwrap_err();
        assert!(
            error.message.contains("customers/nobody"),
            "{}",
            error.message
        );
        assert!(error.location.unwrap().ends_with("desired.toml:3"));

        std::fs::write(&path, "[releases.environment]\nverison = \"1.3.0\"\n").unwrap();
        let error = super::read(&path).unwrap_err();
        assert!(error.location.unwrap().contains("desired.toml:2"));
    }
}
