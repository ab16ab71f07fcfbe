//! What a saved plan would do, from `terraform show -json PLAN`: each managed
//! resource's action and, for updates and replacements, the attributes it changes.
//! Reads (data sources) and no-ops, moves included, change nothing a customer owns.
//!
//! The packager's witness and forecast read plans with [`changes`]; the runner
//! records the same actions in its receipts ([`PlannedChange`], with
//! [`changes_digest`]), so the registry can hold a real plan against its forecast
//! with one vocabulary on both sides.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::digest::Digest;

/// What the plan does to one resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    Replace,
    Destroy,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Destroy => "destroy",
        }
    }

    /// Replacing or destroying: what an approval policy calls destructive.
    pub fn is_destructive(self) -> bool {
        matches!(self, Action::Replace | Action::Destroy)
    }

    /// The action of a plan's `change.actions`; `None` for what changes nothing
    /// (`no-op`, a `moved` rename among them, `read`, `forget`).
    pub fn of_actions(actions: &[&str]) -> Option<Action> {
        match actions {
            ["create"] => Some(Action::Create),
            ["update"] => Some(Action::Update),
            ["delete"] => Some(Action::Destroy),
            ["delete", "create"] | ["create", "delete"] => Some(Action::Replace),
            _ => None,
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Action {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [
            Action::Create,
            Action::Update,
            Action::Replace,
            Action::Destroy,
        ]
        .into_iter()
        .find(|a| a.as_str() == text)
        .ok_or_else(|| format!("`{text}` is not a plan action"))
    }
}

/// One resource change as a receipt and a forecast record it: the address and the
/// action, nothing of the values (they may be secret).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PlannedChange {
    pub address: String,
    pub action: Action,
}

impl std::fmt::Display for PlannedChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} `{}`", self.action, self.address)
    }
}

impl From<&ResourceChange> for PlannedChange {
    fn from(change: &ResourceChange) -> PlannedChange {
        PlannedChange {
            address: change.address.clone(),
            action: change.action,
        }
    }
}

/// The digest of a plan's actions: the canonical JSON of `changes` sorted by address.
/// Equal for two plans that do the same to the same resources, whatever the values.
pub fn changes_digest(changes: &[PlannedChange]) -> Digest {
    let mut sorted = changes.to_vec();
    sorted.sort();
    Digest::of(&crate::signature::canonical_json(&sorted))
}

/// How a real plan differs from its forecast, one resource at a time.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangeDifference {
    pub address: String,
    /// What the forecast said (`None`: no change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast: Option<Action>,
    /// What the real plan does (`None`: no change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Action>,
}

impl std::fmt::Display for ChangeDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let said = |a: Option<Action>| match a {
            Some(Action::Update) => "update in place",
            Some(a) => a.as_str(),
            None => "no change",
        };
        match self.actual {
            Some(actual) => write!(
                f,
                "{actual} `{}`, forecast said {}",
                self.address,
                said(self.forecast)
            ),
            None => write!(
                f,
                "no change to `{}`, forecast said {}",
                self.address,
                said(self.forecast)
            ),
        }
    }
}

/// Every resource whose action differs between `forecast` and `actual`, by address.
pub fn differences(forecast: &[PlannedChange], actual: &[PlannedChange]) -> Vec<ChangeDifference> {
    use std::collections::BTreeMap;
    let said: BTreeMap<&str, Action> = forecast
        .iter()
        .map(|c| (c.address.as_str(), c.action))
        .collect();
    let did: BTreeMap<&str, Action> = actual
        .iter()
        .map(|c| (c.address.as_str(), c.action))
        .collect();
    said.keys()
        .chain(did.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter_map(|address| {
            let (forecast, actual) = (said.get(address).copied(), did.get(address).copied());
            (forecast != actual).then(|| ChangeDifference {
                address: address.to_string(),
                forecast,
                actual,
            })
        })
        .collect()
}

/// How many outputs a plan (`show -json`, parsed) changes: entries of
/// `output_changes` whose `actions` are not all `no-op`.
pub fn output_changes(plan: &Value) -> u64 {
    plan["output_changes"]
        .as_object()
        .into_iter()
        .flat_map(|outputs| outputs.values())
        .filter(|change| {
            !change["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|a| a.as_str() == Some("no-op"))
        })
        .count() as u64
}

/// The managed resources the engine found changed outside it while refreshing, before
/// planning (`resource_drift` in `show -json`, Terraform 0.15.4 and later), sorted.
pub fn drifted(plan_json: &str) -> Vec<String> {
    let Ok(plan) = serde_json::from_str::<Value>(plan_json) else {
        return Vec::new();
    };
    let mut out: Vec<String> = plan["resource_drift"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["mode"].as_str() != Some("data"))
        .filter(|r| {
            let actions: Vec<&str> = r["change"]["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            Action::of_actions(&actions).is_some()
        })
        .filter_map(|r| r["address"].as_str().map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// One resource the engine found changed outside it, with the names of the
/// top-level attributes that differ (never their values: a drifted password must not
/// travel in a receipt).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftedResource {
    pub address: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
}

/// The most drifted resources a receipt details, and attribute names per resource:
/// a receipt stays small whatever a customer did by hand.
pub const MAX_DRIFT_DETAILS: usize = 200;
pub const MAX_DRIFT_ATTRIBUTES: usize = 50;

/// What a plan's entry does to a managed resource; `None` for a data source or a
/// no-op.
fn managed_action(resource: &Value) -> Option<Action> {
    if resource["mode"].as_str() == Some("data") {
        return None;
    }
    let actions: Vec<&str> = resource["change"]["actions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    Action::of_actions(&actions)
}

/// What [`drifted`] finds, each with the attributes that changed (bounded by
/// [`MAX_DRIFT_DETAILS`] and [`MAX_DRIFT_ATTRIBUTES`]), sorted by address.
pub fn drift_details(plan_json: &str) -> Vec<DriftedResource> {
    let Ok(plan) = serde_json::from_str::<Value>(plan_json) else {
        return Vec::new();
    };
    let mut out: Vec<DriftedResource> = Vec::new();
    for resource in plan["resource_drift"].as_array().into_iter().flatten() {
        let (Some(_), Some(address)) = (managed_action(resource), resource["address"].as_str())
        else {
            continue;
        };
        let change = &resource["change"];
        let mut attributes = changed_attributes(change, false);
        attributes.truncate(MAX_DRIFT_ATTRIBUTES);
        out.push(DriftedResource {
            address: address.to_string(),
            attributes,
        });
    }
    out.sort_by(|a, b| a.address.cmp(&b.address));
    out.dedup_by(|a, b| a.address == b.address);
    out.truncate(MAX_DRIFT_DETAILS);
    out
}

/// One resource the plan changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceChange {
    pub address: String,
    /// The resource kind (`aws_vpc`).
    pub kind: String,
    pub action: Action,
    /// Top-level attributes an update or replacement changes, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
}

/// Counts per action, as the table shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub add: usize,
    pub change: usize,
    pub replace: usize,
    pub destroy: usize,
}

impl Counts {
    pub fn of(changes: &[ResourceChange]) -> Counts {
        let mut counts = Counts::default();
        for change in changes {
            match change.action {
                Action::Create => counts.add += 1,
                Action::Update => counts.change += 1,
                Action::Replace => counts.replace += 1,
                Action::Destroy => counts.destroy += 1,
            }
        }
        counts
    }
}

/// The resources `plan_json` (the output of `show -json` on a saved plan) changes,
/// sorted by address.
pub fn changes(plan_json: &str) -> Result<Vec<ResourceChange>, String> {
    let plan: Value = serde_json::from_str(plan_json)
        .map_err(|e| format!("`show -json` printed no plan: {e}"))?;
    let mut out = Vec::new();
    for resource in plan["resource_changes"].as_array().into_iter().flatten() {
        let Some(action) = managed_action(resource) else {
            continue;
        };
        let change = &resource["change"];
        let attributes = match action {
            Action::Update => changed_attributes(change, true),
            // Whatever is computed comes back unknown after a replacement: only what
            // forces it and what is set differently say why.
            Action::Replace => changed_attributes(change, false),
            Action::Create | Action::Destroy => Vec::new(),
        };
        out.push(ResourceChange {
            address: resource["address"].as_str().unwrap_or_default().to_string(),
            kind: resource["type"].as_str().unwrap_or_default().to_string(),
            action,
            attributes,
        });
    }
    out.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(out)
}

/// Top-level attributes whose value differs between `before` and `after`, becomes
/// unknown (when `unknown_counts`), or forces the replacement.
fn changed_attributes(change: &Value, unknown_counts: bool) -> Vec<String> {
    let empty = serde_json::Map::new();
    let before = change["before"].as_object().unwrap_or(&empty);
    let after = change["after"].as_object().unwrap_or(&empty);
    let unknown = change["after_unknown"].as_object().unwrap_or(&empty);
    let mut names = BTreeSet::new();
    for name in before.keys().chain(after.keys()) {
        let becomes_unknown = unknown.get(name).is_some_and(|u| u != &Value::Bool(false));
        let was = before.get(name).unwrap_or(&Value::Null);
        // An attribute known only after apply shows as `null` beside `after_unknown`:
        // it changes when it had a value before.
        let changed = if becomes_unknown {
            unknown_counts && !was.is_null()
        } else {
            !same(was, after.get(name).unwrap_or(&Value::Null))
        };
        if changed {
            names.insert(name.clone());
        }
    }
    for path in change["replace_paths"].as_array().into_iter().flatten() {
        if let Some(first) = path
            .as_array()
            .and_then(|p| p.first())
            .and_then(Value::as_str)
        {
            names.insert(first.to_string());
        }
    }
    names.into_iter().collect()
}

/// Equal, taking `null`, `[]` and `{}` as the same: providers write an unset
/// collection either way.
fn same(a: &Value, b: &Value) -> bool {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    a == b || empty(a) && empty(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_and_reads_are_no_change_and_a_replacement_names_what_forces_it() {
        let plan = serde_json::json!({"resource_changes": [
            {"address": "module.net.aws_vpc.main", "previous_address": "module.net.aws_vpc.this",
             "mode": "managed", "type": "aws_vpc", "change": {"actions": ["no-op"]}},
            {"address": "data.aws_region.here", "mode": "data", "type": "aws_region",
             "change": {"actions": ["read"]}},
            {"address": "aws_vpc.b", "mode": "managed", "type": "aws_vpc",
             "change": {"actions": ["delete", "create"],
                        "before": {"cidr_block": "10.0.0.0/16", "id": "vpc-1", "tags": {}},
                        "after": {"cidr_block": "10.1.0.0/16", "id": null, "tags": null},
                        "after_unknown": {"id": true},
                        "replace_paths": [["cidr_block"]]}},
            {"address": "aws_vpc.a", "mode": "managed", "type": "aws_vpc",
             "change": {"actions": ["update"],
                        "before": {"tags": {"team": "a"}, "arn": "x"},
                        "after": {"tags": {"team": "b"}, "arn": "x"},
                        "after_unknown": {}}},
        ]});
        let changes = changes(&plan.to_string()).unwrap();
        assert_eq!(
            changes,
            vec![
                ResourceChange {
                    address: "aws_vpc.a".into(),
                    kind: "aws_vpc".into(),
                    action: Action::Update,
                    attributes: vec!["tags".into()],
                },
                ResourceChange {
                    address: "aws_vpc.b".into(),
                    kind: "aws_vpc".into(),
                    action: Action::Replace,
                    attributes: vec!["cidr_block".into()],
                },
            ]
        );
        let planned: Vec<PlannedChange> = changes.iter().map(PlannedChange::from).collect();
        let mut reordered = planned.clone();
        reordered.reverse();
        assert_eq!(changes_digest(&planned), changes_digest(&reordered));
        assert_eq!(
            Counts::of(&changes),
            Counts {
                add: 0,
                change: 1,
                replace: 1,
                destroy: 0
            }
        );
    }
}

#[cfg(test)]
mod comparing {
    use super::*;

    fn change(address: &str, action: Action) -> PlannedChange {
        PlannedChange {
            address: address.into(),
            action,
        }
    }

    #[test]
    fn a_real_plan_differs_from_its_forecast_by_an_extra_a_missing_or_another_action() {
        let forecast = [change("a", Action::Update), change("b", Action::Create)];
        let actual = [change("a", Action::Replace), change("c", Action::Update)];
        let found = differences(&forecast, &actual);
        assert_eq!(found.len(), 3);
        assert_eq!(
            found[0].to_string(),
            "replace `a`, forecast said update in place"
        );
        assert_eq!(
            found[1].to_string(),
            "no change to `b`, forecast said create"
        );
        assert_eq!(found[2].to_string(), "update `c`, forecast said no change");
        assert!(differences(&forecast, &forecast).is_empty());
        assert_ne!(changes_digest(&forecast), changes_digest(&actual));
    }

    #[test]
    fn output_changes_read_each_outputs_own_actions_and_skip_no_ops() {
        let plan = serde_json::json!({"output_changes": {
            "a": {"actions": ["create"]},
            "b": {"actions": ["no-op"]},
            "c": {"actions": ["update"]},
        }});
        assert_eq!(output_changes(&plan), 2);
        assert_eq!(output_changes(&serde_json::json!({})), 0);
    }

    #[test]
    fn drift_names_the_managed_resources_changed_outside_the_engine() {
        let plan = serde_json::json!({"resource_drift": [
            {"address": "aws_vpc.main", "mode": "managed", "change": {"actions": ["update"]}},
            {"address": "data.aws_region.here", "mode": "data", "change": {"actions": ["update"]}},
            {"address": "aws_subnet.a", "mode": "managed", "change": {"actions": ["delete"]}},
        ]});
        assert_eq!(drifted(&plan.to_string()), ["aws_subnet.a", "aws_vpc.main"]);
        assert!(drifted("{}").is_empty());
    }

    #[test]
    fn drift_details_name_the_changed_attributes_and_never_their_values() {
        let plan = serde_json::json!({"resource_drift": [
            {"address": "aws_db_instance.main", "mode": "managed", "change": {"actions": ["update"],
             "before": {"password": "hunter2", "size": 10, "name": "db"},
             "after": {"password": "s3cret!", "size": 20, "name": "db"}}},
            {"address": "data.aws_region.here", "mode": "data", "change": {"actions": ["update"]}},
            {"address": "aws_subnet.a", "mode": "managed", "change": {"actions": ["delete"]}},
        ]});
        let details = drift_details(&plan.to_string());
        assert_eq!(
            details,
            [
                DriftedResource {
                    address: "aws_db_instance.main".into(),
                    attributes: vec!["password".into(), "size".into()],
                },
                DriftedResource {
                    address: "aws_subnet.a".into(),
                    attributes: vec![],
                },
            ]
        );
        let text = serde_json::to_string(&details).unwrap();
        assert!(
            !text.contains("hunter2") && !text.contains("s3cret"),
            "{text}"
        );
    }
}
