//! `desired.toml`: what a team declares should run, in a pull request; the runner
//! converges to it.
//!
//! ```toml
//! [releases.environment]
//! version = "1.3.0"           # or: channel = "stable"
//! inputs = "customers/globex" # one <stack>.tfvars per stack
//!
//! [stacks.dns]                # a single stack: a release of one
//! version = "0.4.0"           # or: channel = "stable"
//! inputs = "customers/globex/dns.tfvars" # default: <inputs folder>/dns.tfvars
//! ```
//!
//! Relative paths are relative to the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use stackpack_schema::rollout::ApprovedKind;

use crate::error::{Error, Result};
use crate::home::{line_of, location_of};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    releases: BTreeMap<String, toml::Spanned<Entry>>,
    #[serde(default)]
    stacks: BTreeMap<String, toml::Spanned<Entry>>,
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
    /// A release, or a single stack (`[stacks.<name>]`).
    pub kind: ApprovedKind,
    /// The release's name, or the stack's.
    pub release: String,
    pub wanted: Wanted,
    /// The inputs folder (a single stack: its file), made absolute (None: `[sync]
    /// inputs`).
    pub inputs: Option<PathBuf>,
    /// `file:line` of its table, for messages.
    pub at: String,
}

/// Reads and checks `path`: every release (and stack) has a valid name, exactly
/// one of `version` and `channel`, and an inputs folder (a stack: file) that
/// exists.
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
    let entries = file
        .releases
        .into_iter()
        .map(|(n, e)| (ApprovedKind::Release, n, e))
        .chain(
            file.stacks
                .into_iter()
                .map(|(n, e)| (ApprovedKind::Stack, n, e)),
        );
    for (kind, release, entry) in entries {
        let what = kind.as_str();
        let span = entry.span();
        let at = format!("{}:{}", path.display(), line_of(&text, span.start));
        let entry = entry.into_inner();
        stackpack_schema::reference::validate_name(&release)
            .map_err(|e| Error::refused(format!("{what} `{release}`: {e}")).at(at.clone()))?;
        let wanted = match (entry.version, entry.channel) {
            (Some(version), None) => {
                let at = location_of(path, &text, Some(version.span()));
                let version = semver::Version::parse(version.get_ref()).map_err(|e| {
                    Error::refused(format!(
                        "{what} `{release}`: `{}` is not a version: {e}",
                        version.get_ref()
                    ))
                    .at(at)
                })?;
                Wanted::Version(version)
            }
            (None, Some(channel)) => Wanted::Channel(channel),
            _ => {
                return Err(Error::refused(format!(
                    "{what} `{release}` must name exactly one of `version` and `channel`"
                ))
                .at(at)
                .hint("`version = \"1.3.0\"` pins a version; `channel = \"stable\"` follows the vendor's channel"))
            }
        };
        let inputs = match entry.inputs {
            Some(dir) => {
                let line = location_of(path, &text, Some(dir.span()));
                let dir = base.join(dir.get_ref());
                if let Some((thing, hint)) = super::deployable::of(kind).missing_inputs(&dir) {
                    return Err(Error::usage(format!(
                        "{what} `{release}`: the inputs {thing} `{}` does not exist",
                        dir.display()
                    ))
                    .at(line)
                    .hint(hint));
                }
                Some(std::path::absolute(&dir).unwrap_or(dir))
            }
            None => None,
        };
        out.push(DesiredRelease {
            kind,
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

        std::fs::write(dir.path().join("customers/globex/dns.tfvars"), "").unwrap();
        std::fs::write(
            &path,
            "[stacks.dns]\nversion = \"0.4.0\"\ninputs = \"customers/globex/dns.tfvars\"\n\n[stacks.mail]\nchannel = \"stable\"\n",
        )
        .unwrap();
        let read = super::read(&path).unwrap();
        let dns = read.iter().find(|r| r.release == "dns").unwrap();
        assert_eq!(dns.kind, ApprovedKind::Stack);
        assert!(dns.inputs.as_ref().unwrap().ends_with("dns.tfvars"));
        let mail = read.iter().find(|r| r.release == "mail").unwrap();
        assert_eq!(mail.wanted, Wanted::Channel("stable".into()));
        assert_eq!(mail.inputs, None);
        // A single stack's inputs are a file, not a folder.
        std::fs::write(
            &path,
            "[stacks.dns]\nversion = \"0.4.0\"\ninputs = \"customers/globex\"\n",
        )
        .unwrap();
        let error = super::read(&path).unwrap_err();
        assert!(
            error.message.contains("stack `dns`: the inputs file"),
            "{}",
            error.message
        );

        std::fs::write(&path, "[releases.environment]\nverison = \"1.3.0\"\n").unwrap();
        let error = super::read(&path).unwrap_err();
        assert!(error.location.unwrap().contains("desired.toml:2"));
    }
}
