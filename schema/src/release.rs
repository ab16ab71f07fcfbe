//! Releases: a customer's whole environment as one signed version.
//!
//! A release is an OCI image index (`artifactType` [`RELEASE_ARTIFACT`]) in
//! `<namespace>/releases/<name>`, tagged with its version. Its first entry is the
//! *description*: an image manifest (`artifactType`
//! [`RELEASE_DESCRIPTION_ARTIFACT`]) whose config blob is a [`ReleaseDescription`]:
//! the stacks in dependency order with their wiring, and the services. The other
//! entries pin every stack bundle (and its signature) and every service by digest,
//! copied into the release's repository so that `skopeo copy --all` or
//! `oras copy -r` carries the whole release. The index is signed like a bundle: a
//! signature manifest whose `subject` is the index.
//!
//! [`RELEASE_ARTIFACT`]: crate::media_type::RELEASE_ARTIFACT
//! [`RELEASE_DESCRIPTION_ARTIFACT`]: crate::media_type::RELEASE_DESCRIPTION_ARTIFACT

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use semver::Version;
use serde::{Deserialize, Serialize};

use crate::bundle::Source;
use crate::digest::Digest;
use crate::version::Bump;

/// The description format this build writes and reads; a newer one is refused with
/// a hint to upgrade.
pub const RELEASE_FORMAT: u32 = 1;

/// The release description: the config blob of the release index's first entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseDescription {
    /// [`RELEASE_FORMAT`].
    pub format: u32,
    pub name: String,
    pub version: Version,
    pub source: Source,
    /// RFC 3339, UTC: the source commit's time, so a release is reproducible.
    pub created: String,
    /// Every stack, in an order that applies each after the stacks it depends on.
    pub stacks: Vec<ReleaseStack>,
    /// The services that run on the environment, each pinned by digest.
    #[serde(default)]
    pub services: Vec<ReleaseService>,
    /// Why this version follows the last: each part's change and its bump.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<ReleaseChange>,
    /// The engine the release carries (`[releases.<name>] engine`), which a runner
    /// whose `runner.toml` names no engine path runs; none when the customer brings
    /// their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<ReleaseEngine>,
}

/// The engine inside a release: one binary per platform, each pinned by digest in
/// the signed description (so the signature covers every binary), stored as the
/// layers of one image manifest the release index pins.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseEngine {
    pub name: crate::bundle::EngineName,
    pub version: Version,
    /// The engine manifest's digest (an index entry of the release).
    pub digest: Digest,
    pub platforms: Vec<EnginePlatform>,
}

impl ReleaseEngine {
    /// The binary for `platform` (`linux_amd64`), if the release carries one.
    pub fn for_platform(&self, platform: &str) -> Option<&EnginePlatform> {
        self.platforms.iter().find(|p| p.platform == platform)
    }

    /// `linux_amd64, linux_arm64`: for messages.
    pub fn platform_names(&self) -> String {
        self.platforms
            .iter()
            .map(|p| format!("`{}`", p.platform))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One platform's engine binary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnginePlatform {
    /// As Terraform names platforms: `linux_amd64`, `linux_arm64`.
    pub platform: String,
    /// The binary's SHA-256 (the layer's digest).
    pub digest: Digest,
    pub size: u64,
}

/// This machine's platform, as Terraform names them (`linux_amd64`).
pub fn this_platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    format!("{}_{arch}", std::env::consts::OS)
}

impl ReleaseDescription {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("release description serialisation cannot fail")
    }

    pub fn stack(&self, name: &str) -> Option<&ReleaseStack> {
        self.stacks.iter().find(|s| s.name == name)
    }

    pub fn service(&self, name: &str) -> Option<&ReleaseService> {
        self.services.iter().find(|s| s.name == name)
    }

    /// The stacks in reverse dependency order: each before the stacks it depends on
    /// (how rollback and destroy go).
    pub fn reverse_order(&self) -> impl Iterator<Item = &ReleaseStack> {
        self.stacks.iter().rev()
    }

    /// The stacks that depend on `name`, directly.
    pub fn dependents<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a ReleaseStack> {
        self.stacks
            .iter()
            .filter(move |s| s.depends_on.iter().any(|d| d == name))
    }
}

/// One stack of a release.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseStack {
    pub name: String,
    pub version: Version,
    /// The bundle manifest's digest.
    pub digest: Digest,
    /// Stacks applied before this one (`depends-on` in its `stack.toml`, plus every
    /// stack a wiring reads from).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// Inputs set from an upstream stack's output: input name → `stack.output`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs_from: BTreeMap<String, Wire>,
}

/// An upstream output wired to an input: `network.vpc_id`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Wire {
    pub stack: String,
    pub output: String,
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.stack, self.output)
    }
}

/// Why a wiring could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not `STACK.OUTPUT`")]
pub struct WireError(pub String);

impl FromStr for Wire {
    type Err = WireError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (stack, output) = text.split_once('.').ok_or_else(|| WireError(text.into()))?;
        let valid = |part: &str| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        if !valid(stack) || !valid(output) {
            return Err(WireError(text.into()));
        }
        Ok(Wire {
            stack: stack.into(),
            output: output.into(),
        })
    }
}

impl Serialize for Wire {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Wire {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A service that runs on the environment: an OCI artifact (a container image, a
/// Helm chart) pinned by digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseService {
    pub name: String,
    /// Where the vendor took it from, as written in `stackpack.toml` (a tag is
    /// resolved to [`Self::digest`] at publish; credentials are never recorded).
    pub reference: String,
    /// The manifest's media type (an image manifest or an index).
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
}

/// What changed in one part of a release since the last stable version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseChange {
    /// The stack or service name, or the release's own name for a change of its
    /// graph.
    pub part: String,
    pub kind: ReleaseChangeKind,
    pub bump: Bump,
    /// One line for people: the versions or digests, the wiring broken.
    pub detail: String,
}

/// The kinds of change a release version records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseChangeKind {
    StackAdded,
    StackRemoved,
    StackChanged,
    ServiceAdded,
    ServiceRemoved,
    ServiceChanged,
    WiringChanged,
    WiringBroken,
    EngineAdded,
    EngineRemoved,
    EngineChanged,
}

/// Why stacks cannot be put in an apply order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("stack `{stack}` depends on `{missing}`, which is not in the release")]
    Missing { stack: String, missing: String },
    #[error("the stacks depend on each other in a cycle: {}", .0.join(" → "))]
    Cycle(Vec<String>),
}

/// Orders `stacks` (name → the names it depends on) so each comes after its
/// dependencies; ties are broken by name, so the order is always the same.
pub fn apply_order(stacks: &BTreeMap<String, BTreeSet<String>>) -> Result<Vec<String>, GraphError> {
    for (stack, dependencies) in stacks {
        if let Some(missing) = dependencies.iter().find(|d| !stacks.contains_key(*d)) {
            return Err(GraphError::Missing {
                stack: stack.clone(),
                missing: missing.clone(),
            });
        }
    }
    let mut order: Vec<String> = Vec::with_capacity(stacks.len());
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    while order.len() < stacks.len() {
        let ready = stacks.iter().find(|(name, dependencies)| {
            !placed.contains(name.as_str())
                && dependencies.iter().all(|d| placed.contains(d.as_str()))
        });
        match ready {
            Some((name, _)) => {
                placed.insert(name);
                order.push(name.clone());
            }
            None => return Err(GraphError::Cycle(find_cycle(stacks, &placed))),
        }
    }
    Ok(order)
}

/// One cycle among the stacks not yet placed, closed (`a → b → a`).
fn find_cycle(stacks: &BTreeMap<String, BTreeSet<String>>, placed: &BTreeSet<&str>) -> Vec<String> {
    // Every unplaced stack has an unplaced dependency, so walking from any of them
    // along unplaced dependencies must revisit a stack.
    let start = stacks
        .keys()
        .find(|name| !placed.contains(name.as_str()))
        .expect("a cycle leaves a stack unplaced");
    let mut path: Vec<String> = vec![start.clone()];
    loop {
        let last = path.last().expect("path is never empty");
        let next = stacks[last]
            .iter()
            .find(|d| !placed.contains(d.as_str()))
            .expect("an unplaced stack has an unplaced dependency")
            .clone();
        if let Some(at) = path.iter().position(|p| *p == next) {
            let mut cycle = path.split_off(at);
            cycle.push(next);
            return cycle;
        }
        path.push(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(name, deps)| {
                (
                    name.to_string(),
                    deps.iter().map(|d| d.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn apply_order_puts_dependencies_first_and_breaks_ties_by_name() {
        let order = apply_order(&graph(&[
            ("gpu-pools", &["cluster"]),
            ("cluster", &["network"]),
            ("model-storage", &["network"]),
            ("network", &[]),
        ]))
        .unwrap();
        assert_eq!(order, ["network", "cluster", "gpu-pools", "model-storage"]);
    }

    #[test]
    fn apply_order_names_the_cycle() {
        let error = apply_order(&graph(&[
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a"]),
            ("d", &[]),
        ]))
        .unwrap_err();
        assert_eq!(
            error,
            GraphError::Cycle(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        assert_eq!(
            error.to_string(),
            "the stacks depend on each other in a cycle: a → b → c → a"
        );
    }

    #[test]
    fn apply_order_names_a_missing_dependency() {
        let error = apply_order(&graph(&[("cluster", &["network"])])).unwrap_err();
        assert_eq!(
            error,
            GraphError::Missing {
                stack: "cluster".into(),
                missing: "network".into()
            }
        );
    }

    #[test]
    fn wire_reads_stack_dot_output_and_refuses_anything_else() {
        let wire: Wire = "network.vpc_id".parse().unwrap();
        assert_eq!(wire.stack, "network");
        assert_eq!(wire.output, "vpc_id");
        assert_eq!(wire.to_string(), "network.vpc_id");
        for bad in ["vpc_id", ".vpc_id", "network.", "network.vpc id", "a.b.c"] {
            assert!(bad.parse::<Wire>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn description_round_trips_through_json() {
        let description = ReleaseDescription {
            format: RELEASE_FORMAT,
            name: "data-plane".into(),
            version: Version::new(1, 2, 0),
            source: Source {
                repository: "https://git.acme.example/infra".into(),
                commit: "abc".into(),
                branch: "main".into(),
            },
            created: "2026-01-01T00:00:00Z".into(),
            stacks: vec![ReleaseStack {
                name: "cluster".into(),
                version: Version::new(0, 3, 1),
                digest: Digest::of(b"x"),
                depends_on: vec!["network".into()],
                inputs_from: [("vpc_id".to_string(), "network.vpc_id".parse().unwrap())].into(),
            }],
            services: vec![],
            changes: vec![ReleaseChange {
                part: "cluster".into(),
                kind: ReleaseChangeKind::StackChanged,
                bump: Bump::Minor,
                detail: "0.3.0 → 0.3.1".into(),
            }],
            engine: None,
        };
        let bytes = description.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(r#""vpc_id":"network.vpc_id""#), "{text}");
        let back: ReleaseDescription = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, description);
    }
}
