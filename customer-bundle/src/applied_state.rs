//! The state an apply left, read from `state pull` (the state as the engine stores
//! it, format 4 since Terraform 0.12 and in every OpenTofu) into what the runner
//! checks afterwards: the outputs, each resource instance's attributes (for secrets
//! left in the state) and the `check` blocks' results (smoke checks); and, before a
//! plan is made for review, which state it is made against.
//!
//! Why not `show -json`: it renders the state through every provider's schema, so
//! it starts each provider once more per apply (the AWS provider's schema alone
//! costs more than the whole `state pull`), while the stored state already holds
//! every value the runner reads, in the same JSON.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// What the runner reads of a state after an apply.
#[derive(Debug, Default, PartialEq)]
pub struct AppliedState {
    /// Which state this is: `LINEAGE/SERIAL`, or `empty` before the first apply (a
    /// reviewed plan is applied only to the state it was made against).
    pub fingerprint: String,
    /// The root module's outputs as `output -json` gives them: `{NAME: {value,
    /// type, sensitive}}`, `sensitive` always present.
    pub outputs: Value,
    /// Every resource instance (deposed ones too), by its address.
    pub instances: Vec<Instance>,
    /// The checkable objects' results (none before Terraform 1.5).
    pub checks: Vec<CheckResult>,
}

/// One resource instance of the state.
#[derive(Debug, PartialEq)]
pub struct Instance {
    /// `module.db["a"].aws_db_instance.this[0]`, as plans and `show -json` name it.
    pub address: String,
    /// Its attributes, as the provider returned them.
    pub attributes: Value,
}

/// The result of one checkable object's conditions.
#[derive(Debug, PartialEq)]
pub struct CheckResult {
    /// `check`, `resource`, `output` or `var`.
    pub kind: String,
    /// Its configuration address: `check.health`, `module.web.check.up`.
    pub address: String,
    /// `pass`, `fail`, `error` or `unknown`.
    pub status: String,
    /// The failed conditions' messages, over every instance of the object.
    pub messages: Vec<String>,
}

impl AppliedState {
    /// Reads `state pull`'s output; nothing at all is the state of a stack never
    /// applied (or destroyed and gone).
    pub fn parse(text: &str) -> Result<AppliedState, serde_json::Error> {
        if text.trim().is_empty() {
            return Ok(AppliedState {
                fingerprint: "empty".into(),
                outputs: Value::Object(Default::default()),
                ..AppliedState::default()
            });
        }
        let raw: Raw = serde_json::from_str(text)?;
        let fingerprint = format!(
            "{}/{}",
            raw.lineage.as_str().unwrap_or_default(),
            raw.serial
        );
        let outputs = raw
            .outputs
            .into_iter()
            .map(|(name, o)| {
                let output = serde_json::json!({
                    "value": o.value,
                    "type": o.type_,
                    "sensitive": o.sensitive,
                });
                (name, output)
            })
            .collect();
        let instances = raw
            .resources
            .into_iter()
            .flat_map(|resource| {
                let base = resource.address();
                resource.instances.into_iter().map(move |i| Instance {
                    address: format!("{base}{}", index(i.index_key.as_ref())),
                    attributes: unwrap_dynamic(i.attributes),
                })
            })
            .collect();
        let checks = raw
            .check_results
            .unwrap_or_default()
            .into_iter()
            .map(|c| CheckResult {
                kind: c.object_kind,
                address: c.config_addr,
                status: c.status,
                messages: c
                    .objects
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|o| o.failure_messages)
                    .collect(),
            })
            .collect();
        Ok(AppliedState {
            fingerprint,
            outputs: Value::Object(outputs),
            instances,
            checks,
        })
    }
}

/// `[0]` or `["key"]` after an instance's resource address; nothing for a
/// resource without `count` or `for_each`.
fn index(key: Option<&Value>) -> String {
    match key {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(key)) => format!("[{}]", Value::String(key.clone())),
        Some(other) => format!("[{other}]"),
    }
}

/// The attributes with each value of a dynamically typed attribute (`terraform_data`'s
/// `input`, a manifest's `object`) as `show -json` gives it: the stored state keeps
/// such a value as `{"value": V, "type": T}` (the type cannot come from the schema),
/// and only `V` is the attribute's value. What is inside `V` is typed by `T` and is
/// never wrapped again. An object with exactly these two keys whose `type` does not
/// read as a type is left as it is.
fn unwrap_dynamic(value: Value) -> Value {
    match value {
        Value::Object(mut map) => {
            if map.len() == 2 && map.get("type").is_some_and(is_type) {
                if let Some(inner) = map.remove("value") {
                    return inner;
                }
            }
            Value::Object(
                map.into_iter()
                    .map(|(key, v)| (key, unwrap_dynamic(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(unwrap_dynamic).collect()),
        other => other,
    }
}

/// Whether `value` is a type in the engine's JSON form: `"string"`, `["list",
/// "number"]`, `["object", {"a": "bool"}]`.
fn is_type(value: &Value) -> bool {
    match value {
        Value::String(name) => matches!(name.as_str(), "string" | "number" | "bool" | "dynamic"),
        Value::Array(parts) => match (parts.first().and_then(Value::as_str), parts.get(1)) {
            (Some("list" | "set" | "map"), Some(element)) => parts.len() == 2 && is_type(element),
            (Some("object"), Some(Value::Object(attributes))) => attributes.values().all(is_type),
            (Some("tuple"), Some(Value::Array(elements))) => elements.iter().all(is_type),
            _ => false,
        },
        _ => false,
    }
}

/// The stored state, format 4: only the fields read here.
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    lineage: Value,
    #[serde(default)]
    serial: Value,
    #[serde(default)]
    outputs: BTreeMap<String, RawOutput>,
    #[serde(default)]
    resources: Vec<RawResource>,
    #[serde(default)]
    check_results: Option<Vec<RawCheck>>,
}

#[derive(Deserialize)]
struct RawOutput {
    #[serde(default)]
    value: Value,
    #[serde(rename = "type", default)]
    type_: Value,
    #[serde(default)]
    sensitive: bool,
}

#[derive(Deserialize)]
struct RawResource {
    /// The module instance, `module.a["x"].module.b`; absent in the root.
    #[serde(default)]
    module: String,
    mode: String,
    #[serde(rename = "type")]
    type_: String,
    name: String,
    #[serde(default)]
    instances: Vec<RawInstance>,
}

impl RawResource {
    fn address(&self) -> String {
        let mut address = String::new();
        if !self.module.is_empty() {
            address.push_str(&self.module);
            address.push('.');
        }
        if self.mode == "data" {
            address.push_str("data.");
        }
        address.push_str(&self.type_);
        address.push('.');
        address.push_str(&self.name);
        address
    }
}

#[derive(Deserialize)]
struct RawInstance {
    #[serde(default)]
    index_key: Option<Value>,
    #[serde(default)]
    attributes: Value,
}

#[derive(Deserialize)]
struct RawCheck {
    object_kind: String,
    config_addr: String,
    status: String,
    #[serde(default)]
    objects: Option<Vec<RawCheckObject>>,
}

#[derive(Deserialize)]
struct RawCheckObject {
    #[serde(default)]
    failure_messages: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stored_state_reads_as_outputs_addressed_instances_and_check_results() {
        let text = json!({
            "version": 4, "serial": 3, "lineage": "l",
            "outputs": {
                "dsn": {"value": "postgres://db", "type": "string", "sensitive": true},
                "ids": {"value": ["a"], "type": ["list", "string"]}
            },
            "resources": [
                {"mode": "managed", "type": "terraform_data", "name": "a",
                 "instances": [{"attributes": {"id": "1",
                    "input": {"value": {"password": "p", "n": [1]}, "type": ["object", {"password": "string", "n": ["list", "number"]}]},
                    "tags": {"type": "a", "value": "b"}}}]},
                {"module": "module.db[\"eu\"]", "mode": "managed", "type": "aws_db_instance", "name": "this",
                 "instances": [{"index_key": 0, "attributes": {"password": "p"}},
                               {"index_key": 1, "deposed": "00abcd", "attributes": {"password": "q"}}]},
                {"mode": "data", "type": "aws_region", "name": "here",
                 "instances": [{"index_key": "k", "attributes": {"name": "eu-west-1"}}]}
            ],
            "check_results": [
                {"object_kind": "check", "config_addr": "check.web", "status": "fail",
                 "objects": [{"object_addr": "check.web", "status": "fail", "failure_messages": ["the site is down"]}]},
                {"object_kind": "check", "config_addr": "check.ok", "status": "pass", "objects": null}
            ]
        })
        .to_string();
        let state = AppliedState::parse(&text).unwrap();
        assert_eq!(state.fingerprint, "l/3");
        assert_eq!(
            state.outputs,
            json!({
                "dsn": {"value": "postgres://db", "type": "string", "sensitive": true},
                "ids": {"value": ["a"], "type": ["list", "string"], "sensitive": false}
            })
        );
        let addresses: Vec<&str> = state.instances.iter().map(|i| i.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "terraform_data.a",
                "module.db[\"eu\"].aws_db_instance.this[0]",
                "module.db[\"eu\"].aws_db_instance.this[1]",
                "data.aws_region.here[\"k\"]",
            ]
        );
        assert_eq!(state.instances[1].attributes, json!({"password": "p"}));
        // A dynamic attribute reads as its value; a map that only looks like one
        // (its `type` is no type) stays as it is.
        assert_eq!(
            state.instances[0].attributes,
            json!({"id": "1", "input": {"password": "p", "n": [1]}, "tags": {"type": "a", "value": "b"}})
        );
        assert_eq!(state.checks.len(), 2);
        assert_eq!(state.checks[0].address, "check.web");
        assert_eq!(state.checks[0].messages, ["the site is down"]);
        assert!(state.checks[1].messages.is_empty());
    }

    #[test]
    fn no_state_at_all_is_an_empty_one_with_no_outputs() {
        let state = AppliedState::parse("\n").unwrap();
        assert_eq!(state.fingerprint, "empty");
        assert_eq!(state.outputs, json!({}));
        assert!(state.instances.is_empty() && state.checks.is_empty());
    }
}
