//! Smoke checks after an apply: the stack's Terraform `check {}` blocks (Terraform
//! ≥ 1.5 records their results in the state; a failed one is only a warning to the
//! engine) and the assertions on outputs its `stack.toml` declares:
//!
//! ```toml
//! [[smoke]]
//! name = "model bucket belongs to the customer"
//! condition = 'startswith(output.model_bucket, "globex-")'
//! error-message = "the model bucket is not named for the customer"
//! ```
//!
//! `condition` is a Terraform expression over `output.<name>` (each output's value),
//! evaluated with the same functions as input validations. A condition that cannot
//! be evaluated (an unknown function, an output that does not exist) fails: a check
//! that cannot run must not pass silently.

use std::path::Path;

use serde::Deserialize;

use super::error::{Error, Result};
use crate::applied_state::CheckResult;

/// One assertion on outputs.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Assertion {
    pub name: String,
    pub condition: String,
    #[serde(default)]
    pub error_message: Option<String>,
}

#[derive(Deserialize)]
struct StackToml {
    #[serde(default)]
    smoke: Vec<Assertion>,
}

/// One failed check: which, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// `check.<name>` for a `check` block, `smoke "<name>"` for an assertion.
    pub check: String,
    pub message: String,
}

/// The assertions of the stack whose folder is `dir` (none without `stack.toml`).
pub fn assertions(dir: &Path) -> Result<Vec<Assertion>> {
    let path = dir.join("stack.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(super::error::io("read", &path, e)),
    };
    let parsed: StackToml = toml::from_str(&text).map_err(|e| {
        Error::refused(format!(
            "the bundle's `stack.toml` has invalid `[[smoke]]` entries: {}",
            e.message()
        ))
        .hint("each `[[smoke]]` takes `name`, `condition` and `error-message`; ask the vendor")
    })?;
    Ok(parsed.smoke)
}

/// Evaluates the assertions on `outputs` (`output -json`).
pub fn check_outputs(assertions: &[Assertion], outputs: &serde_json::Value) -> Vec<Failure> {
    let values: serde_json::Map<String, serde_json::Value> = outputs
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, output)| (name.clone(), output["value"].clone()))
        .collect();
    let vars = Default::default();
    let locals = Default::default();
    let mut failures = Vec::new();
    for assertion in assertions {
        let verdict = hcl_edit::parser::parse_expr(&assertion.condition)
            .ok()
            .and_then(|expr| {
                stackpack_interface::eval::Evaluator::new(&vars, &locals)
                    .bind("output", serde_json::Value::Object(values.clone()))
                    .eval(&expr)
            });
        let message = match verdict {
            Some(serde_json::Value::Bool(true)) => continue,
            Some(serde_json::Value::Bool(false)) => assertion
                .error_message
                .clone()
                .unwrap_or_else(|| format!("`{}` is false", assertion.condition)),
            _ => format!(
                "`{}` could not be evaluated on the outputs",
                assertion.condition
            ),
        };
        failures.push(Failure {
            check: format!("smoke \"{}\"", assertion.name),
            message,
        });
    }
    failures
}

/// The failed `check` blocks in the state after an apply.
pub fn check_blocks(checks: &[CheckResult]) -> Vec<Failure> {
    checks
        .iter()
        .filter(|check| check.kind == "check" && check.status == "fail")
        .map(|check| Failure {
            check: check.address.clone(),
            message: if check.messages.is_empty() {
                "failed".into()
            } else {
                check.messages.join("; ")
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_assertions_pass_fail_and_fail_when_they_cannot_run() {
        let assertions: StackToml = toml::from_str(
            r#"
[[smoke]]
name = "bucket"
condition = 'startswith(output.bucket, "globex-")'
error-message = "wrong bucket"

[[smoke]]
name = "subnets"
condition = "length(output.subnets) == 3"

[[smoke]]
name = "missing"
condition = "output.nothing == 1"
"#,
        )
        .unwrap();
        let outputs = json!({
            "bucket": {"value": "globex-models", "sensitive": false},
            "subnets": {"value": ["a", "b"], "sensitive": false},
        });
        let failures = check_outputs(&assertions.smoke, &outputs);
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert_eq!(failures[0].check, "smoke \"subnets\"");
        assert!(failures[1].message.contains("could not be evaluated"));
    }

    #[test]
    fn failed_check_blocks_are_read_from_the_state() {
        let result = |kind: &str, address: &str, status: &str, messages: &[&str]| CheckResult {
            kind: kind.into(),
            address: address.into(),
            status: status.into(),
            messages: messages.iter().map(|m| m.to_string()).collect(),
        };
        let checks = [
            result("check", "check.ok", "pass", &[]),
            result("check", "check.web", "fail", &["the site is down"]),
            result("check", "check.db", "fail", &[]),
            result("var", "var.x", "fail", &["bad"]),
        ];
        assert_eq!(
            check_blocks(&checks),
            vec![
                Failure {
                    check: "check.web".into(),
                    message: "the site is down".into()
                },
                Failure {
                    check: "check.db".into(),
                    message: "failed".into()
                }
            ]
        );
    }
}
