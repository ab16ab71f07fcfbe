//! Breaking changes of a release: an upstream output that a wiring reads, removed
//! or changed in its type or sensitivity since the upstream stack's base.
//!
//! The wiring judged is the one being released (each `stack.toml` now). A wiring
//! the downstream stack dropped or moved to another output in the same change is not
//! a break: the release applies both stacks together. A wiring to an output its
//! upstream never had at the base is new, not broken (and `check` proves it exists).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use stackpack_interface::types::TypeExpr;
use stackpack_interface::ModuleInterface;
use stackpack_schema::release::{ReleaseChange, ReleaseChangeKind, Wire};
use stackpack_schema::version::Bump;

use super::types::output_type;
use super::ReleaseGraph;
use crate::check::tree::{Source, Tree};
use crate::check::{Cache, CheckError, Finding, Graph, Severity, Snapshot};

/// How a wired output differs from its base.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum OutputChange {
    Removed,
    /// Both types known (see [`super::types`]) and different. An output whose type
    /// cannot be known on either side is never judged retyped.
    Retyped {
        #[serde(serialize_with = "display")]
        from: TypeExpr,
        #[serde(serialize_with = "display")]
        to: TypeExpr,
    },
    Sensitivity {
        from: bool,
        to: bool,
    },
}

fn display<S: serde::Serializer>(value: &TypeExpr, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// One wiring a release breaks: `network.vpc_id` → input `vpc_id` of `cluster`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WiringBreak {
    pub release: String,
    /// The upstream output.
    pub wire: Wire,
    /// The downstream stack and the input the output sets.
    pub stack: String,
    pub input: String,
    pub change: OutputChange,
    /// The downstream's `stack.toml` and the line of the wiring.
    pub file: String,
    pub line: usize,
}

impl WiringBreak {
    /// Always major: the downstream stack's input no longer gets what it was built for.
    pub fn bump(&self) -> Bump {
        Bump::Major
    }

    /// One line for people, naming the upstream output and the input it breaks.
    pub fn message(&self) -> String {
        let Wire { stack: up, output } = &self.wire;
        let what = match &self.change {
            OutputChange::Removed => format!("`{up}` no longer has output `{output}`"),
            OutputChange::Retyped { from, to } => {
                format!("output `{output}` of `{up}` changed its type from `{from}` to `{to}`")
            }
            OutputChange::Sensitivity { from, to } => {
                format!("output `{output}` of `{up}` changed `sensitive` from `{from}` to `{to}`")
            }
        };
        format!(
            "{what}, which sets input `{}` of `{}` in release `{}`",
            self.input, self.stack, self.release
        )
    }

    /// The finding `check` shows (rule `wiring-broken`, major).
    pub fn to_finding(&self) -> Finding {
        Finding {
            rule: Graph::WiringBroken.into(),
            item: self.wire.to_string(),
            file: self.file.clone(),
            line: self.line,
            bump: Some(self.bump()),
            severity: Severity::Info,
            message: self.message(),
            change: None,
            decisive: false,
        }
    }

    /// The change a release description records for it.
    pub fn to_change(&self) -> ReleaseChange {
        ReleaseChange {
            part: self.release.clone(),
            kind: ReleaseChangeKind::WiringBroken,
            bump: self.bump(),
            detail: self.message(),
        }
    }
}

/// Every wiring of every release in `graph` whose upstream output was removed,
/// retyped or changed its sensitivity between the upstream stack's base and the work
/// tree under `root`.
///
/// `bases` maps an upstream stack's name to the commit its base was built from (for
/// publishing: the commit of the stack version the last stable release pins; for
/// `check`: `--against`, or the stack's last release). A stack without a base has
/// nothing to break. Each break is major; [`WiringBreak::to_change`] gives the
/// release description's record of it.
pub fn wiring_breaks(
    root: &Path,
    graph: &ReleaseGraph,
    bases: &BTreeMap<String, String>,
    cache: &mut Cache,
) -> Result<Vec<WiringBreak>, CheckError> {
    let mut snapshots: BTreeMap<&str, Snapshot> = BTreeMap::new();
    let mut out = Vec::new();
    for release in graph.releases.keys() {
        for stack in graph.members(release) {
            for (input, wire) in &stack.config.inputs.from {
                let (Some(base), Some(upstream)) =
                    (bases.get(&wire.stack), graph.stacks.get(&wire.stack))
                else {
                    continue;
                };
                if !snapshots.contains_key(base.as_str()) {
                    snapshots.insert(base, Snapshot::at(root, base)?);
                }
                let old = Tree::load_lenient(
                    Source::Snapshot(&snapshots[base.as_str()]),
                    &upstream.path,
                    cache,
                )?;
                let new = Tree::load_lenient(Source::Dir(root), &upstream.path, cache)?;
                let Some(change) = changed(old.root(), new.root(), &wire.output) else {
                    continue;
                };
                out.push(WiringBreak {
                    release: release.clone(),
                    wire: wire.clone(),
                    stack: stack.name.clone(),
                    input: input.clone(),
                    change,
                    file: stack.manifest(),
                    line: stack.input_line(input),
                });
            }
        }
    }
    Ok(out)
}

/// How output `name` changed from `old` to `new`, if it did in a way a wiring feels.
fn changed(old: &ModuleInterface, new: &ModuleInterface, name: &str) -> Option<OutputChange> {
    let before = old.output(name)?;
    let Some(after) = new.output(name) else {
        return Some(OutputChange::Removed);
    };
    if before.sensitive != after.sensitive {
        return Some(OutputChange::Sensitivity {
            from: before.sensitive,
            to: after.sensitive,
        });
    }
    match (output_type(old, before), output_type(new, after)) {
        (Some(from), Some(to)) if from != to => Some(OutputChange::Retyped { from, to }),
        _ => None,
    }
}
