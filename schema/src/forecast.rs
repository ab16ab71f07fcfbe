//! Forecasts: each customer's plan from the version it really runs to the candidate.
//!
//! `stackpack forecast R@V` asks the registry which customers a rollout would reach
//! and what each runs ([`ForecastTargets`]), plans every customer's real path in an
//! emulated account and sends the registry a [`ReleaseForecast`]
//! (`PUT /api/v1/forecasts/{release}/{version}`). `promote` reads it back before it
//! signs; the registry holds each receipt's real plan against the customer's
//! forecast and halts the rollout on a [`ForecastMiss`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use semver::Version;
use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::plan::{Action, ChangeDifference, PlannedChange, ResourceChange};
use crate::rollout::{Approve, ApprovedKind};

/// The forecast document's format.
pub const FORECAST_FORMAT: u32 = 1;

/// What a forecast says of a customer (or one of its stacks), least to most severe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForecastOutcome {
    /// The plan is empty.
    NoChange,
    /// Creations and in-place updates only.
    InPlace,
    /// At least one resource is replaced.
    Replace,
    /// At least one resource is destroyed.
    Destroy,
    /// The forecast could not finish (an engine or emulator failure): nothing is known.
    NotForecast,
    /// Not attempted (no inputs file in the repository): nothing is known.
    Skipped,
}

impl ForecastOutcome {
    pub const ALL: [ForecastOutcome; 6] = [
        ForecastOutcome::NoChange,
        ForecastOutcome::InPlace,
        ForecastOutcome::Replace,
        ForecastOutcome::Destroy,
        ForecastOutcome::NotForecast,
        ForecastOutcome::Skipped,
    ];

    /// The outcome of a plan that makes `changes`.
    pub fn of<'a>(changes: impl IntoIterator<Item = &'a Action>) -> ForecastOutcome {
        changes
            .into_iter()
            .map(|action| match action {
                Action::Create | Action::Update => ForecastOutcome::InPlace,
                Action::Replace => ForecastOutcome::Replace,
                Action::Destroy => ForecastOutcome::Destroy,
            })
            .max()
            .unwrap_or(ForecastOutcome::NoChange)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ForecastOutcome::NoChange => "no-change",
            ForecastOutcome::InPlace => "in-place",
            ForecastOutcome::Replace => "replace",
            ForecastOutcome::Destroy => "destroy",
            ForecastOutcome::NotForecast => "not-forecast",
            ForecastOutcome::Skipped => "skipped",
        }
    }

    /// In words, for tables and pages (`in place`, `not forecast`).
    pub fn words(self) -> &'static str {
        match self {
            ForecastOutcome::NoChange => "no change",
            ForecastOutcome::InPlace => "in place",
            ForecastOutcome::Replace => "replace",
            ForecastOutcome::Destroy => "destroy",
            ForecastOutcome::NotForecast => "not forecast",
            ForecastOutcome::Skipped => "skipped",
        }
    }

    /// Replacing or destroying.
    pub fn is_destructive(self) -> bool {
        matches!(self, ForecastOutcome::Replace | ForecastOutcome::Destroy)
    }

    /// True when a plan was made (whatever it says).
    pub fn is_known(self) -> bool {
        !matches!(
            self,
            ForecastOutcome::NotForecast | ForecastOutcome::Skipped
        )
    }
}

impl fmt::Display for ForecastOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ForecastOutcome {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ForecastOutcome::ALL
            .into_iter()
            .find(|o| o.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a forecast outcome"))
    }
}

/// One stack of one customer's forecast: from the version it runs to the candidate's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackForecast {
    pub stack: String,
    /// The version the customer runs; `None`: not installed, so planned from nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Version>,
    /// The running bundle's manifest digest, as the ledger records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_digest: Option<Digest>,
    pub to: Version,
    /// The candidate bundle's manifest digest.
    pub to_digest: Digest,
    pub outcome: ForecastOutcome,
    /// Every resource the candidate's plan changes, with the attributes that cause it.
    #[serde(default)]
    pub changes: Vec<ResourceChange>,
    /// [`crate::plan::changes_digest`] of `changes`: what a receipt's is compared with.
    pub changes_digest: Digest,
    /// Addresses the candidate bundle's own policies deny in this plan: stateful
    /// resources replaced or destroyed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stateful: Vec<String>,
}

impl StackForecast {
    pub fn planned(&self) -> Vec<PlannedChange> {
        self.changes.iter().map(PlannedChange::from).collect()
    }
}

/// One customer's forecast.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerForecast {
    pub customer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<String>,
    /// The release version the customer runs now, when it runs the release as one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<Version>,
    /// Required versions the customer passes through on the way, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<Version>,
    /// The most severe of its stacks' outcomes.
    pub outcome: ForecastOutcome,
    /// The candidate's stacks, in apply order (empty when skipped or not forecast
    /// before the first stack).
    #[serde(default)]
    pub stacks: Vec<StackForecast>,
    /// The inputs the customer sets (names only, never values): what tells groups of
    /// customers apart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs_set: Vec<String>,
    /// Why it was skipped or not forecast.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Taken from the forecast cache (the same running bundles, candidate and inputs).
    #[serde(default)]
    pub cached: bool,
    /// From the start to the forecast known (cleaning the account afterwards is not
    /// counted: the wall time of a whole run is).
    pub seconds: f64,
}

impl CustomerForecast {
    pub fn stack(&self, name: &str) -> Option<&StackForecast> {
        self.stacks.iter().find(|s| s.stack == name)
    }

    /// `stack: address` of every stateful resource replaced or destroyed.
    pub fn stateful(&self) -> Vec<String> {
        self.stacks
            .iter()
            .flat_map(|s| s.stateful.iter().map(move |a| format!("{}: {a}", s.stack)))
            .collect()
    }

    /// Every change of every stack, `stack: action address`, for grouping.
    fn signature(&self) -> Vec<PlannedChange> {
        self.stacks
            .iter()
            .flat_map(|s| {
                s.changes.iter().map(move |c| PlannedChange {
                    address: format!("{}: {}", s.stack, c.address),
                    action: c.action,
                })
            })
            .collect()
    }
}

/// A forecast of one release version for the customers a rollout would reach.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseForecast {
    /// [`FORECAST_FORMAT`].
    pub format: u32,
    #[serde(default)]
    pub kind: ApprovedKind,
    pub release: String,
    pub version: Version,
    /// The release index's digest (for a stack, its bundle manifest's).
    pub digest: Digest,
    /// The channel whose customers were forecast; `None`: every customer the ledger knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// Where the plans ran (`emulator `http://127.0.0.1:5000``).
    pub account: String,
    pub customers: Vec<CustomerForecast>,
}

impl ReleaseForecast {
    pub fn customer(&self, id: &str) -> Option<&CustomerForecast> {
        self.customers.iter().find(|c| c.customer == id)
    }

    /// Customers grouped by what happens to them, the largest group first within
    /// each outcome, most severe outcome first.
    pub fn groups(&self) -> Vec<ForecastGroup> {
        let mut by: BTreeMap<(ForecastOutcome, Vec<PlannedChange>), Vec<&CustomerForecast>> =
            BTreeMap::new();
        for customer in &self.customers {
            by.entry((customer.outcome, customer.signature()))
                .or_default()
                .push(customer);
        }
        let mut groups: Vec<ForecastGroup> = by
            .into_iter()
            .map(|((outcome, changes), members)| {
                let inside: BTreeSet<&str> = members.iter().map(|c| c.customer.as_str()).collect();
                ForecastGroup {
                    outcome,
                    customers: members.iter().map(|c| c.customer.clone()).collect(),
                    changes: changes
                        .into_iter()
                        .filter(|c| {
                            c.action != Action::Create || outcome == ForecastOutcome::InPlace
                        })
                        .collect(),
                    inputs: distinguishing_inputs(&self.customers, &inside),
                    reason: members
                        .iter()
                        .find_map(|c| c.reason.clone())
                        .filter(|_| !outcome.is_known()),
                }
            })
            .collect();
        groups.sort_by(|a, b| {
            b.outcome
                .cmp(&a.outcome)
                .then(b.customers.len().cmp(&a.customers.len()))
        });
        groups
    }

    /// One line for people: `47 customers: in place; 3: replace `x` (they set `y`); 180: no change`.
    pub fn summary(&self) -> String {
        let groups = self.groups();
        if groups.is_empty() {
            return "no customer to forecast".to_string();
        }
        groups
            .iter()
            .enumerate()
            .map(|(i, group)| {
                let n = group.customers.len();
                let who = if i == 0 {
                    format!("{n} customer{}", if n == 1 { "" } else { "s" })
                } else {
                    n.to_string()
                };
                format!("{who}: {}", group.describe())
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Customers a forecast treats alike.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForecastGroup {
    pub outcome: ForecastOutcome,
    pub customers: Vec<String>,
    /// The changes they share (`stack: address`); creations are left out of a
    /// destructive group's line, where they are not the news.
    pub changes: Vec<PlannedChange>,
    /// Inputs every customer of the group sets and no other customer does: the
    /// likely cause when the group is a minority.
    pub inputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ForecastGroup {
    /// `replace `aws_eks_node_group.system` (they set `node_disk_gb`)`.
    pub fn describe(&self) -> String {
        let mut text = match self.outcome {
            ForecastOutcome::Replace | ForecastOutcome::Destroy => {
                let shown: Vec<String> = self
                    .changes
                    .iter()
                    .filter(|c| c.action.is_destructive())
                    .take(3)
                    .map(|c| c.to_string())
                    .collect();
                let more = self
                    .changes
                    .iter()
                    .filter(|c| c.action.is_destructive())
                    .count();
                let mut line = shown.join(", ");
                if more > shown.len() {
                    line.push_str(&format!(" and {} more", more - shown.len()));
                }
                line
            }
            ForecastOutcome::NotForecast | ForecastOutcome::Skipped => match &self.reason {
                // A summary is one line: an engine error's first line says what failed.
                Some(reason) => format!(
                    "{} ({})",
                    self.outcome.words(),
                    reason.lines().next().unwrap_or_default().trim_end()
                ),
                None => self.outcome.words().to_string(),
            },
            outcome => outcome.words().to_string(),
        };
        if !self.inputs.is_empty()
            && self.outcome.is_known()
            && self.outcome != ForecastOutcome::NoChange
        {
            let inputs: Vec<String> = self
                .inputs
                .iter()
                .take(3)
                .map(|i| format!("`{i}`"))
                .collect();
            text.push_str(&format!(" (they set {})", inputs.join(", ")));
        }
        text
    }
}

/// Inputs set by every customer in `inside` and by none outside it.
fn distinguishing_inputs(all: &[CustomerForecast], inside: &BTreeSet<&str>) -> Vec<String> {
    if inside.len() == all.len() {
        return Vec::new();
    }
    let mut common: Option<BTreeSet<&str>> = None;
    let mut outside: BTreeSet<&str> = BTreeSet::new();
    for customer in all {
        let set: BTreeSet<&str> = customer.inputs_set.iter().map(String::as_str).collect();
        if inside.contains(customer.customer.as_str()) {
            common = Some(match common {
                None => set,
                Some(c) => c.intersection(&set).copied().collect(),
            });
        } else {
            outside.extend(set);
        }
    }
    common
        .unwrap_or_default()
        .difference(&outside)
        .map(|s| s.to_string())
        .collect()
}

/// What one customer runs of a stack, from the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningStack {
    pub stack: String,
    pub version: Version,
    /// The bundle manifest's digest the receipt names.
    pub digest: Digest,
}

/// One customer a rollout would reach, as the registry sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForecastTarget {
    pub customer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<String>,
    /// The runner's approval policy, as its last sync reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Approve>,
    /// The release version it runs as one, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<Version>,
    /// What it runs of each stack (the last apply that succeeded), by stack name.
    #[serde(default)]
    pub stacks: Vec<RunningStack>,
    /// Required versions of the release (for the customer's channel) between what it
    /// runs and the candidate, in order: the path it will really take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub through: Vec<Version>,
}

/// `GET /api/v1/forecast-targets?release=R&version=V[&channel=C]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForecastTargets {
    pub release: String,
    pub version: Version,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    pub customers: Vec<ForecastTarget>,
}

/// `GET /api/v1/forecasts/{release}/{version}`: the stored forecast, its one-line
/// summary and the real plans that missed it so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForecastView {
    pub forecast: ReleaseForecast,
    /// [`ReleaseForecast::summary`].
    pub summary: String,
    #[serde(default)]
    pub misses: Vec<ForecastMiss>,
}

/// A real plan that differed from its forecast, as the registry records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForecastMiss {
    pub customer: String,
    pub release: String,
    pub version: Version,
    pub stack: String,
    pub receipt_id: String,
    pub differences: Vec<ChangeDifference>,
    /// Addresses among the differences the runner's refresh found changed outside
    /// the engine: the customer's hand, not a wrong forecast.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drifted: Vec<String>,
    /// RFC 3339, UTC, on the registry's clock.
    pub at: String,
}

impl ForecastMiss {
    /// True when every difference is on a resource that had drifted.
    pub fn explained_by_drift(&self) -> bool {
        !self.differences.is_empty()
            && self
                .differences
                .iter()
                .all(|d| self.drifted.contains(&d.address))
    }

    /// `globex: replace `x`, forecast said update in place (changed by hand before the upgrade)`.
    pub fn describe(&self) -> String {
        let shown: Vec<String> = self
            .differences
            .iter()
            .take(3)
            .map(|d| {
                let mut line = d.to_string();
                if self.drifted.contains(&d.address) {
                    line.push_str(" (changed outside the runner before the upgrade)");
                }
                line
            })
            .collect();
        let mut text = format!("{}: {}", self.customer, shown.join("; "));
        if self.differences.len() > shown.len() {
            text.push_str(&format!(
                " and {} more",
                self.differences.len() - shown.len()
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(changes: &[(&str, Action)]) -> StackForecast {
        let changes: Vec<ResourceChange> = changes
            .iter()
            .map(|(address, action)| ResourceChange {
                address: address.to_string(),
                kind: address.split('.').next().unwrap().to_string(),
                action: *action,
                attributes: vec![],
            })
            .collect();
        let planned: Vec<PlannedChange> = changes.iter().map(PlannedChange::from).collect();
        StackForecast {
            stack: "cluster".into(),
            from: Some(Version::new(1, 0, 0)),
            from_digest: None,
            to: Version::new(1, 1, 0),
            to_digest: Digest::of(b"to"),
            outcome: ForecastOutcome::of(changes.iter().map(|c| &c.action)),
            changes,
            changes_digest: crate::plan::changes_digest(&planned),
            stateful: vec![],
        }
    }

    fn customer(id: &str, inputs: &[&str], changes: &[(&str, Action)]) -> CustomerForecast {
        let stack = stack(changes);
        CustomerForecast {
            customer: id.into(),
            wave: None,
            running: None,
            through: vec![],
            outcome: stack.outcome,
            stacks: vec![stack],
            inputs_set: inputs.iter().map(|s| s.to_string()).collect(),
            reason: None,
            cached: false,
            seconds: 1.0,
        }
    }

    #[test]
    fn the_summary_groups_customers_and_names_the_inputs_only_a_minority_sets() {
        let node = [("aws_eks_node_group.system", Action::Replace)];
        let forecast = ReleaseForecast {
            format: FORECAST_FORMAT,
            kind: ApprovedKind::Release,
            release: "platform".into(),
            version: Version::new(1, 1, 0),
            digest: Digest::of(b"index"),
            channel: Some("stable".into()),
            created_at: "2026-12-02T00:00:00Z".into(),
            account: "emulator".into(),
            customers: vec![
                customer("a", &["name"], &[("aws_vpc.main", Action::Update)]),
                customer("b", &["name"], &[("aws_vpc.main", Action::Update)]),
                customer("c", &["name", "node_disk_gb"], &node),
                customer("d", &["name"], &[]),
            ],
        };
        assert_eq!(
            forecast.summary(),
            "1 customer: replace `cluster: aws_eks_node_group.system` (they set `node_disk_gb`); 2: in place; 1: no change"
        );
        let round_trip: ReleaseForecast =
            serde_json::from_slice(&serde_json::to_vec(&forecast).unwrap()).unwrap();
        assert_eq!(round_trip, forecast);
    }

    #[test]
    fn a_miss_is_the_customers_hand_only_when_every_difference_had_drifted() {
        let miss = ForecastMiss {
            customer: "globex".into(),
            release: "platform".into(),
            version: Version::new(1, 1, 0),
            stack: "network".into(),
            receipt_id: "r".into(),
            differences: crate::plan::differences(
                &[],
                &[PlannedChange {
                    address: "aws_vpc.main".into(),
                    action: Action::Update,
                }],
            ),
            drifted: vec!["aws_vpc.main".into()],
            at: String::new(),
        };
        assert!(miss.explained_by_drift());
        assert_eq!(
            miss.describe(),
            "globex: update `aws_vpc.main`, forecast said no change (changed outside the runner before the upgrade)"
        );
        let wrong = ForecastMiss {
            drifted: vec![],
            ..miss
        };
        assert!(!wrong.explained_by_drift());
    }
}
