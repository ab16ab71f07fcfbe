//! No secret left in state: after an apply the runner reads the state the engine
//! stored (`state pull`, [`AppliedState`]) and looks for the values of the
//! sensitive inputs it passed.
//! `sensitive = true` hides a value from plans and logs, but the state file still
//! holds it in plain text wherever a resource stored it.
//!
//! A match names the resource address and the attribute path, never the value. With
//! `[policy] secrets-in-state = "deny"` (the default) the run fails; with `"warn"` it
//! is reported and recorded.
//!
//! Values shorter than [`MIN_SECRET_LEN`] characters are not looked for: a short
//! value (`"true"`, `"8080"`, `"prod"`) turns up in unrelated attributes and would
//! make every run fail for nothing; a real secret is longer.

use serde_json::Value;
use stackpack_schema::interface::Interface;

use stackpack_schema::receipt::Receipt;

use super::applied_state::AppliedState;
use super::error::Error;
use super::inputs::Inputs;

/// The shortest value that is looked for (see the module's documentation).
pub const MIN_SECRET_LEN: usize = 8;

/// A sensitive input's value found in the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The sensitive input whose value it is.
    pub input: String,
    /// `module.db.aws_db_instance.this`, or `output.NAME` for a root output.
    pub address: String,
    /// The attribute path inside the resource: `password`, `tags.note`, `list[0]`.
    pub attribute: String,
}

/// The values of the sensitive inputs a run passes to the engine (from files and
/// `TF_VAR_` variables alike): every text leaf of each, as long as
/// [`MIN_SECRET_LEN`] or longer, with the input's name.
pub fn sensitive_values(inputs: &Inputs, interface: &Interface) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for input in interface.inputs.iter().filter(|i| i.sensitive) {
        if let Some(value) = inputs.get(&input.name) {
            let mut leaves = Vec::new();
            text_leaves(&value.value, &mut leaves);
            out.extend(
                leaves
                    .into_iter()
                    .filter(|text| text.chars().count() >= MIN_SECRET_LEN)
                    .map(|text| (input.name.clone(), text)),
            );
        }
    }
    out
}

fn text_leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| text_leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| text_leaves(v, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Where `secrets` appear in `state` (its outputs and instances): a text attribute
/// equal to a secret or containing it (a JSON document, a connection string).
pub fn find(state: &AppliedState, secrets: &[(String, String)]) -> Vec<Found> {
    let mut found = Vec::new();
    if secrets.is_empty() {
        return found;
    }
    if let Some(outputs) = state.outputs.as_object() {
        for (name, output) in outputs {
            look(
                &output["value"],
                &format!("output.{name}"),
                "",
                secrets,
                &mut found,
            );
        }
    }
    for instance in &state.instances {
        look(
            &instance.attributes,
            &instance.address,
            "",
            secrets,
            &mut found,
        );
    }
    found.sort_by(|a, b| (&a.address, &a.attribute).cmp(&(&b.address, &b.attribute)));
    found.dedup();
    found
}

fn look(
    value: &Value,
    address: &str,
    path: &str,
    secrets: &[(String, String)],
    out: &mut Vec<Found>,
) {
    let mut add = |input: &str| {
        out.push(Found {
            input: input.to_string(),
            address: address.to_string(),
            attribute: if path.is_empty() {
                "(value)".into()
            } else {
                path.to_string()
            },
        })
    };
    match value {
        Value::String(text) => {
            for (input, secret) in secrets {
                if text.contains(secret.as_str()) {
                    add(input);
                }
            }
        }
        Value::Number(n) => {
            let text = n.to_string();
            for (input, secret) in secrets {
                if text == *secret {
                    add(input);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                look(item, address, &format!("{path}[{i}]"), secrets, out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                look(item, address, &path, secrets, out);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// One line per finding, for messages and notes: where, never what.
pub fn describe(found: &Found) -> String {
    format!(
        "`{}` attribute `{}` holds the value of sensitive input `{}`",
        found.address, found.attribute, found.input
    )
}

/// The fix a vendor makes, for the hint.
pub const HINT: &str = "the stack stores a secret in state: ask the vendor to keep it out (a container-only resource with `lifecycle { ignore_changes = [...] }` and the value set out of band, or a write-only `*_wo` argument), or set `secrets-in-state = \"warn\"` under `[policy]` in `runner.toml` to accept it";

/// After an apply: the secrets the state holds, each shown as a warning when the
/// policy only warns (a denial is the caller's error, once the receipt is kept).
pub fn after_apply(
    state: &AppliedState,
    secrets: &[(String, String)],
    policy: super::home::SecretsInState,
    status: &dyn Fn(&str),
) -> Vec<Found> {
    let found = find(state, secrets);
    if policy == super::home::SecretsInState::Warn {
        for f in &found {
            status(&format!("warning: {}", describe(f)));
        }
    }
    found
}

/// The error of an apply denied for the secrets it left in the state: the receipt
/// is recorded (`failed`), each place named.
pub fn refusal(found: &[Found], receipt: &Receipt) -> Error {
    let places: String = found
        .iter()
        .map(|f| format!("\n  {}", describe(f)))
        .collect();
    Error::refused(format!(
        "applying `{}@{}` left secrets in the state (recorded as `{}` receipt `{}`, outcome `failed`):{places}",
        receipt.stack, receipt.version, receipt.kind, receipt.id
    ))
    .hint(HINT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_found_by_address_and_attribute_and_short_values_are_skipped() {
        let state = AppliedState::parse(
            &serde_json::json!({
                "outputs": {"dsn": {"value": "postgres://app:hunter2-long-secret@db/x", "type": "string", "sensitive": true}},
                "resources": [
                    {"mode": "managed", "type": "terraform_data", "name": "a",
                     "instances": [{"attributes": {"input": {"tags": ["x", "hunter2-long-secret"]}, "id": "prod"}}]},
                    {"module": "module.db", "mode": "managed", "type": "aws_db_instance", "name": "this",
                     "instances": [{"attributes": {"password": "hunter2-long-secret"}}]}
                ]
            })
            .to_string(),
        )
        .unwrap();
        let mut interface = Interface::default();
        for (name, sensitive) in [("db_password", true), ("short", true), ("plain", false)] {
            interface.inputs.push(stackpack_schema::interface::Input {
                name: name.into(),
                type_constraint: stackpack_schema::types::TypeExpr::String,
                required: true,
                default: None,
                sensitive,
                nullable: true,
                ephemeral: false,
                description: None,
                deprecated: None,
                alias_of: None,
                validations: vec![],
            });
        }
        let inputs = crate::inputs::parse(
            "db_password = \"hunter2-long-secret\"\nshort = \"prod\"\nplain = \"terraform_data.a\"\n",
            "a.tfvars",
        )
        .unwrap();
        let secrets = sensitive_values(&inputs, &interface);
        // `prod` is under the threshold; `plain` is not sensitive.
        assert_eq!(
            secrets,
            vec![("db_password".to_string(), "hunter2-long-secret".to_string())]
        );
        let found = find(&state, &secrets);
        let places: Vec<(String, String)> = found
            .iter()
            .map(|f| (f.address.clone(), f.attribute.clone()))
            .collect();
        assert_eq!(
            places,
            vec![
                ("module.db.aws_db_instance.this".into(), "password".into()),
                ("output.dsn".into(), "(value)".into()),
                ("terraform_data.a".into(), "input.tags[1]".into()),
            ]
        );
        assert!(found.iter().all(|f| f.input == "db_password"));
        assert!(!describe(&found[0]).contains("hunter2"));
    }
}
