//! What a saved plan would do, from `terraform show -json PLAN`: each managed
//! resource's action and, for updates and replacements, the attributes it changes.
//! Reads (data sources) and no-ops, moves included, change nothing a customer owns.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

/// What the plan does to one resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Create,
    Update,
    Replace,
    Destroy,
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Destroy => "destroy",
        })
    }
}

/// One resource the plan changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceChange {
    pub address: String,
    /// The resource kind (`aws_vpc`).
    pub kind: String,
    pub action: Action,
    /// Top-level attributes an update or replacement changes, sorted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
}

/// Counts per action, as the table shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
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
        if resource["mode"].as_str() == Some("data") {
            continue;
        }
        let change = &resource["change"];
        let actions: Vec<&str> = change["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let action = match actions.as_slice() {
            ["create"] => Action::Create,
            ["update"] => Action::Update,
            ["delete"] => Action::Destroy,
            ["delete", "create"] | ["create", "delete"] => Action::Replace,
            // `no-op` (a `moved` block's rename among them), `read`, `forget`.
            _ => continue,
        };
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
