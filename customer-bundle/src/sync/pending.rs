//! Pending approvals: a plan a sync pass held, saved exactly as planned, in
//! `<home>/pending/<id>/` (0700; the reviewed plans hold the inputs' values):
//! `meta.json`, `review.md`, and one reviewed plan per stack (`<stack>.plan.json`,
//! as `plan --out` writes it). `stackpack-runner approve ID` applies exactly those.
//!
//! The id is a digest over the release's digest and, per stack, its bundle, its
//! inputs, the state it was planned against and the changes the plan makes: the
//! same plan on the next pass keeps its id (no loop asking for the same change
//! again); a changed plan, bundle or state makes a new one.

use std::path::{Path, PathBuf};

use semver::Version;
use serde::{Deserialize, Serialize};
use stackpack_schema::digest::Digest;
use stackpack_schema::receipt::PlanSummary;
use stackpack_schema::rollout::{Approve, PendingApproval};

use stackpack_schema::plan::{Action, PlannedChange};

use crate::engine::PlanDetails;
use crate::error::{io, Error, Result};
use crate::files;
use crate::home::Home;

const META: &str = "meta.json";
pub const REVIEW: &str = "review.md";
/// How many characters of the digest an id shows.
const ID_LEN: usize = 16;

/// One held stack plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingStack {
    pub stack: String,
    pub version: Version,
    /// The reviewed plan's file name in the pending folder.
    pub plan: String,
    pub summary: PlanSummary,
    /// Resources the plan replaces or destroys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destructive: Vec<String>,
    /// Every resource change, by address.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "planned_changes"
    )]
    pub changes: Vec<PlannedChange>,
}

/// `changes` as this runner writes them, or as runners before the schema's plan
/// actions did (`[address, "add" | "change" | "replace" | "destroy"]` pairs): a plan
/// held before an upgrade is still approvable after it.
fn planned_changes<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Vec<PlannedChange>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Now(PlannedChange),
        Before(String, String),
    }
    Vec::<Written>::deserialize(deserializer)?
        .into_iter()
        .map(|written| match written {
            Written::Now(change) => Ok(change),
            Written::Before(address, action) => {
                let action = match action.as_str() {
                    "add" => Action::Create,
                    "change" => Action::Update,
                    other => other.parse().map_err(serde::de::Error::custom)?,
                };
                Ok(PlannedChange { address, action })
            }
        })
        .collect()
}

/// Why a pass holds a plan for a person instead of applying it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "by")]
pub enum HoldReason {
    /// The home's approval policy: `manual`, or `auto-unless-destructive` on a plan
    /// that replaces or destroys resources.
    Policy { approve: Approve },
    /// The registry's assignment asks for a person (its forecast replaces or
    /// destroys resources here), in its words; whatever the policy says.
    Registry { words: String },
}

impl HoldReason {
    /// Why a plan with changes waits, if it does: the registry's hold first, else
    /// the policy (`destructive`: the plan replaces or destroys a resource).
    pub fn of(approve: Approve, destructive: bool, hold: Option<&str>) -> Option<HoldReason> {
        if let Some(words) = hold {
            return Some(HoldReason::Registry {
                words: words.to_string(),
            });
        }
        let held = match approve {
            Approve::Auto => false,
            Approve::AutoUnlessDestructive => destructive,
            Approve::Manual => true,
        };
        held.then_some(HoldReason::Policy { approve })
    }
}

impl std::fmt::Display for HoldReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HoldReason::Policy { approve } => write!(f, "`approve = \"{approve}\"`"),
            HoldReason::Registry { words } => {
                write!(f, "the registry asks for a person: {words}")
            }
        }
    }
}

/// `meta.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub id: String,
    /// A release, or a single stack (its `digest` is the bundle manifest's, its
    /// `inputs` the stack's file).
    #[serde(default)]
    pub kind: stackpack_schema::rollout::ApprovedKind,
    pub release: String,
    pub version: Version,
    /// The release index's digest.
    pub digest: Digest,
    /// The inputs folder the plans were made with.
    pub inputs: PathBuf,
    /// RFC 3339, UTC: when this plan was first held.
    pub since: String,
    pub stacks: Vec<PendingStack>,
    /// Stacks whose upstream changes first: planned on the pass after approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<String>,
    /// Why it waits (absent from plans held before runners said so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<HoldReason>,
}

/// What a stack's plan is made of, for the id.
pub struct Fingerprint<'a> {
    pub stack: &'a str,
    pub bundle: &'a Digest,
    pub inputs_hash: &'a Digest,
    pub state: &'a str,
    pub plan: &'a PlanDetails,
}

/// The id of a plan: stable across passes for the same change against the same
/// state (the engine's plan file itself carries a timestamp, so its bytes are not).
pub fn id(release_digest: &Digest, stacks: &[Fingerprint]) -> String {
    let mut parts = vec![serde_json::json!(release_digest.to_string())];
    for s in stacks {
        let plan: serde_json::Value = serde_json::from_str(&s.plan.json).unwrap_or_default();
        parts.push(serde_json::json!({
            "stack": s.stack,
            "bundle": s.bundle.to_string(),
            "inputs": s.inputs_hash.to_string(),
            "state": s.state,
            "resourceChanges": plan["resource_changes"],
            "outputChanges": plan["output_changes"],
        }));
    }
    let digest = Digest::of(&stackpack_schema::signature::canonical_json(&parts));
    digest.hex()[..ID_LEN].to_string()
}

/// Addresses a plan replaces or destroys.
pub fn destructive(plan: &PlanDetails) -> Vec<String> {
    plan.changes
        .iter()
        .filter(|c| c.action.is_destructive())
        .map(|c| c.address.clone())
        .collect()
}

impl Pending {
    pub fn summary(&self) -> PlanSummary {
        let mut total = PlanSummary::default();
        for s in &self.stacks {
            total.add += s.summary.add;
            total.change += s.summary.change;
            total.destroy += s.summary.destroy;
        }
        total
    }

    /// As the registry sees it: counts and addresses, never the plan.
    pub fn report(&self) -> PendingApproval {
        let total = self.summary();
        PendingApproval {
            id: self.id.clone(),
            since: self.since.clone(),
            add: total.add,
            change: total.change,
            destroy: total.destroy,
            destructive: self
                .stacks
                .iter()
                .flat_map(|s| s.destructive.iter().map(|a| format!("{}: {a}", s.stack)))
                .take(40)
                .collect(),
        }
    }

    /// The review a person reads before `approve`.
    pub fn review(&self) -> String {
        let mut md = format!(
            "# Pending approval `{}`\n\nRelease `{}@{}` (`{}`), held since {}.\n\n",
            self.id, self.release, self.version, self.digest, self.since
        );
        if let Some(reason) = &self.reason {
            md.push_str(&format!("Held because {reason}.\n\n"));
        }
        md.push_str("| Stack | Version | Add | Change | Destroy |\n|---|---|---|---|---|\n");
        for s in &self.stacks {
            md.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                s.stack, s.version, s.summary.add, s.summary.change, s.summary.destroy
            ));
        }
        for s in &self.stacks {
            if s.changes.is_empty() {
                continue;
            }
            md.push_str(&format!("\n## `{}`\n\n", s.stack));
            for change in &s.changes {
                let mark = if change.action.is_destructive() {
                    " **(destructive)**"
                } else {
                    ""
                };
                md.push_str(&format!("- {change}{mark}\n"));
            }
        }
        if !self.waiting.is_empty() {
            md.push_str(&format!(
                "\nWaiting on an upstream stack, planned on the pass after approval: {}.\n",
                self.waiting
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        md.push_str(&format!(
            "\nApprove exactly this plan with `stackpack-runner approve {}`.\n",
            self.id
        ));
        md
    }

    pub fn plan_path(&self, home: &Home, stack: &PendingStack) -> PathBuf {
        home.pending_dir().join(&self.id).join(&stack.plan)
    }
}

/// A fresh folder under `<home>/pending/` a pass plans into; renamed to its id when
/// the plan is held.
pub fn staging(home: &Home) -> Result<tempfile::TempDir> {
    let dir = home.pending_dir();
    files::create_folder(&dir)?;
    tempfile::Builder::new()
        .prefix(".planning-")
        .tempdir_in(&dir)
        .map_err(|e| io("create a folder in", &dir, e))
}

/// Keeps `staged` (the reviewed plans) as pending approval `pending.id`.
pub fn hold(home: &Home, staged: tempfile::TempDir, pending: &Pending) -> Result<()> {
    let dir = staged.keep();
    files::write_private(
        &dir.join(META),
        &(serde_json::to_string_pretty(pending).expect("serialises") + "\n"),
    )?;
    files::write_private(&dir.join(REVIEW), &pending.review())?;
    let target = home.pending_dir().join(&pending.id);
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| io("remove", &target, e))?;
    }
    std::fs::rename(&dir, &target).map_err(|e| io("move into", &target, e))
}

/// Rewrites the record of pending approval `pending.id` in place (the same plan,
/// held for another reason).
pub fn rewrite(home: &Home, pending: &Pending) -> Result<()> {
    let dir = dir(home, &pending.id);
    files::write_private(
        &dir.join(META),
        &(serde_json::to_string_pretty(pending).expect("serialises") + "\n"),
    )?;
    files::write_private(&dir.join(REVIEW), &pending.review())
}

/// Every pending approval, oldest first.
pub fn list(home: &Home) -> Result<Vec<Pending>> {
    let dir = home.pending_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(io("read", &dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path().join(META);
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let pending: Pending = serde_json::from_str(&text).map_err(|e| {
            Error::refused(format!(
                "pending approval `{}` is unreadable: {e}",
                path.display()
            ))
            .hint("remove its folder; the next `sync` pass plans again")
        })?;
        out.push(pending);
    }
    out.sort_by(|a, b| a.since.cmp(&b.since).then(a.id.cmp(&b.id)));
    Ok(out)
}

/// The pending approval of `release`, if any.
pub fn of_release(home: &Home, release: &str) -> Result<Option<Pending>> {
    Ok(list(home)?.into_iter().find(|p| p.release == release))
}

/// The pending approval `id` (or a unique prefix of at least 4 characters).
pub fn find(home: &Home, id: &str) -> Result<Pending> {
    let all = list(home)?;
    let matching: Vec<&Pending> = all
        .iter()
        .filter(|p| id.len() >= 4 && p.id.starts_with(id))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(Error::refused(format!("no pending approval has id `{id}`"))
            .at(format!("`{}`", home.pending_dir().display()))
            .hint(
                "list them with `stackpack-runner pending`; a plan that changed since has a new id",
            )),
        _ => Err(
            Error::usage(format!("`{id}` matches several pending approvals"))
                .hint("give more of the id"),
        ),
    }
}

pub fn remove(home: &Home, id: &str) -> Result<()> {
    let dir = home.pending_dir().join(id);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove", &dir, e)),
    }
}

/// The pending folder of `id`.
pub fn dir(home: &Home, id: &str) -> PathBuf {
    home.pending_dir().join(id)
}

pub fn exists(path: &Path) -> bool {
    path.join(META).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registry_hold_holds_whatever_the_policy_and_the_policy_holds_as_before() {
        let words = "forecast replaces `terraform_data.marker`";
        for approve in Approve::ALL {
            for destructive in [false, true] {
                assert_eq!(
                    HoldReason::of(approve, destructive, Some(words)),
                    Some(HoldReason::Registry {
                        words: words.into()
                    }),
                    "{approve}, destructive: {destructive}"
                );
            }
        }
        assert_eq!(HoldReason::of(Approve::Auto, true, None), None);
        assert_eq!(
            HoldReason::of(Approve::AutoUnlessDestructive, false, None),
            None
        );
        assert_eq!(
            HoldReason::of(Approve::AutoUnlessDestructive, true, None),
            Some(HoldReason::Policy {
                approve: Approve::AutoUnlessDestructive
            })
        );
        assert_eq!(
            HoldReason::of(Approve::Manual, false, None)
                .unwrap()
                .to_string(),
            "`approve = \"manual\"`"
        );
    }

    #[test]
    fn a_plan_held_by_an_older_runner_with_its_own_action_words_is_still_read() {
        let before = serde_json::json!({
            "stack": "gpu-pools", "version": "1.0.0", "plan": "gpu-pools.plan.json",
            "summary": {"add": 1, "change": 1, "destroy": 1},
            "changes": [["terraform_data.a", "add"], ["terraform_data.b", "change"],
                        ["terraform_data.c", "replace"]],
        });
        let stack: PendingStack = serde_json::from_value(before).unwrap();
        assert_eq!(
            stack.changes.iter().map(|c| c.action).collect::<Vec<_>>(),
            [Action::Create, Action::Update, Action::Replace]
        );
        let written = serde_json::to_value(&stack).unwrap();
        assert_eq!(
            written["changes"][0],
            serde_json::json!({"address": "terraform_data.a", "action": "create"})
        );
        let again: PendingStack = serde_json::from_value(written).unwrap();
        assert_eq!(again.changes, stack.changes);
    }
}
