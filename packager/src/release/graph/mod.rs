//! The release graph: the releases `stackpack.toml` declares (`[releases.<name>]`),
//! and the dependencies and wiring each `stack.toml` declares (`depends-on`,
//! `[inputs.from]`), as `check` proves them before anything is published.
//!
//! [`ReleaseGraph::load`] reads them; [`prove`] proves every release (its stacks
//! exist, their dependencies are in it, no cycle, every wiring reads an output that
//! exists into an input that exists with a type that fits, services are OCI
//! references), each problem a [`Finding`] naming `file:line`; [`wiring_breaks`]
//! compares each wired upstream output with its base, for the release's bump; and
//! [`wired_inputs`] tells the customer checks which inputs no customer may set.
//!
//! A stack listed in two releases is allowed, without a warning: a vendor may offer
//! two environments sharing a network stack, and the conflict that matters (two
//! releases claiming one stack in one customer's runner home) is the runner's to
//! refuse, where it happens.

mod breaks;
mod locate;
mod prove;
pub mod render;
pub mod service_ref;
pub mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use stackpack_schema::release::{apply_order, GraphError, Wire};
use stackpack_schema::version::Bump;

pub use breaks::{wiring_breaks, OutputChange, WiringBreak};
pub use prove::prove;
pub use service_ref::{ServiceReference, ServiceReferenceError};

use crate::check::{Finding, Severity};
use crate::config::{ReleaseSettings, RepoConfig, StackConfig};
use crate::discover::expand_globs;
use crate::error::Result;

/// One stack as the graph sees it.
#[derive(Clone, Debug)]
pub struct GraphStack {
    pub name: String,
    /// Repository-relative folder (`stacks/network`).
    pub path: String,
    pub config: StackConfig,
    /// The `stack.toml` text, for lines.
    text: String,
}

impl GraphStack {
    /// `stacks/network/stack.toml`.
    pub fn manifest(&self) -> String {
        format!("{}/stack.toml", self.path)
    }

    /// The line naming dependency `stack` (in `depends-on`, else in `[inputs.from]`).
    fn dependency_line(&self, stack: &str) -> usize {
        if self.config.depends_on.iter().any(|d| d == stack) {
            let from = locate::key_line(&self.text, 0, "depends-on");
            return locate::line_in_table(&self.text, from, &format!("\"{stack}\""));
        }
        let wired = self
            .config
            .inputs
            .from
            .iter()
            .find(|(_, w)| w.stack == stack);
        wired.map_or(0, |(input, _)| self.input_line(input))
    }

    /// The line of `[inputs.from]`'s key `input`.
    fn input_line(&self, input: &str) -> usize {
        let table = locate::table_line(&self.text, &["inputs", "from"]);
        locate::key_line(&self.text, table, input)
    }
}

/// The releases and stacks of a repository.
#[derive(Clone, Debug, Default)]
pub struct ReleaseGraph {
    pub releases: BTreeMap<String, ReleaseSettings>,
    /// Every stack (a folder of the stack globs with a `stack.toml`), by name.
    pub stacks: BTreeMap<String, GraphStack>,
    /// The `stackpack.toml` text, for lines.
    repo_text: String,
}

impl ReleaseGraph {
    /// Reads `[releases]` and every stack's `stack.toml`. A `stack.toml` that is not
    /// valid is the command's usage error, as everywhere else.
    pub fn load(root: &Path, config: &RepoConfig) -> Result<ReleaseGraph> {
        let mut stacks = BTreeMap::new();
        for path in expand_globs(root, &config.stacks) {
            let manifest = root.join(&path).join("stack.toml");
            if !manifest.is_file() {
                continue;
            }
            let display = format!("{path}/stack.toml");
            let config = StackConfig::load(&manifest, &display)?;
            let text = std::fs::read_to_string(&manifest).unwrap_or_default();
            let name = path.rsplit('/').next().unwrap_or(&path).to_string();
            stacks.insert(
                name.clone(),
                GraphStack {
                    name,
                    path,
                    config,
                    text,
                },
            );
        }
        Ok(ReleaseGraph {
            releases: config.releases.clone(),
            stacks,
            repo_text: std::fs::read_to_string(root.join("stackpack.toml")).unwrap_or_default(),
        })
    }

    /// The line of `[releases.<name>]` in `stackpack.toml`.
    fn release_line(&self, release: &str) -> usize {
        locate::table_line(&self.repo_text, &["releases", release])
    }

    /// The stacks of `release` that exist, by name.
    fn members(&self, release: &str) -> Vec<&GraphStack> {
        self.releases[release]
            .stacks
            .iter()
            .filter_map(|s| self.stacks.get(s))
            .collect()
    }

    /// The release's stacks in apply order, each after the stacks it depends on.
    pub fn apply_order(&self, release: &str) -> std::result::Result<Vec<String>, GraphError> {
        let graph: BTreeMap<String, BTreeSet<String>> = self
            .members(release)
            .into_iter()
            .map(|s| (s.name.clone(), s.config.dependencies()))
            .collect();
        apply_order(&graph)
    }

    /// The releases that list `stack`.
    pub fn releases_of<'a>(&'a self, stack: &'a str) -> impl Iterator<Item = &'a str> {
        self.releases
            .iter()
            .filter(move |(_, r)| r.stacks.iter().any(|s| s == stack))
            .map(|(name, _)| name.as_str())
    }
}

/// The inputs of `stack` set from an upstream output (input → wiring): a customer's
/// inputs file must not set them. Empty for an unknown stack.
pub fn wired_inputs(graph: &ReleaseGraph, stack: &str) -> BTreeMap<String, Wire> {
    graph
        .stacks
        .get(stack)
        .map(|s| s.config.inputs.from.clone())
        .unwrap_or_default()
}

/// What `check` found for one release.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseReport {
    pub release: String,
    /// Its stacks in apply order when the graph has one, else as listed.
    pub stacks: Vec<String>,
    /// Its services, by name.
    pub services: Vec<String>,
    /// The bump the release needs for what its wiring breaks (`major`), when the
    /// bases were known; the bumps of its stacks and services are publishing's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bump: Option<Bump>,
    pub findings: Vec<Finding>,
    /// True when an error-level finding refuses the release.
    pub refused: bool,
}

impl ReleaseReport {
    /// Adds what the wiring breaks: each a major finding.
    pub fn add_breaks(&mut self, breaks: &[WiringBreak]) {
        for b in breaks.iter().filter(|b| b.release == self.release) {
            self.findings.push(b.to_finding());
            self.bump = self.bump.max(Some(b.bump()));
        }
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

/// What `check` shows of the releases: every release proven, with the wirings its
/// change breaks since `bases` (upstream stack name → base commit; see
/// [`wiring_breaks`]) as major findings.
pub fn check_releases(
    root: &Path,
    graph: &ReleaseGraph,
    bases: &BTreeMap<String, String>,
    cache: &mut crate::check::Cache,
) -> std::result::Result<Vec<ReleaseReport>, crate::check::CheckError> {
    let mut reports = prove(graph, &mut |path| cache.get(&root.join(path)).ok());
    let breaks = wiring_breaks(root, graph, bases, cache)?;
    for report in &mut reports {
        report.add_breaks(&breaks);
    }
    Ok(reports)
}

/// The upstream stacks some wiring reads, by name: the stacks whose base
/// [`wiring_breaks`] needs.
pub fn wired_upstreams(graph: &ReleaseGraph) -> Vec<&GraphStack> {
    let upstreams: BTreeMap<&str, &GraphStack> = graph
        .stacks
        .values()
        .flat_map(|s| s.config.inputs.from.values())
        .filter_map(|w| graph.stacks.get_key_value(&w.stack))
        .map(|(name, stack)| (name.as_str(), stack))
        .collect();
    upstreams.into_values().collect()
}
