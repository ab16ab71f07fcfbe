//! Policies on the plan: Rego, evaluated in-process with `regorus` (no OPA binary,
//! so an airgapped account needs nothing else), in conftest's layout: every file's
//! `package main`, rules named `deny`, `deny_*`, `warn` or `warn_*` whose values are
//! messages. A message is a string, or an object with `msg` and, to name the
//! resource, `address`.
//!
//! The input is `terraform show -json` of the saved plan. `data.stackpack` holds what
//! the operator said for this run: `allow_replace`, the addresses named with
//! `--allow-replace`. Policy files are the vendor's (`policies/*.rego` in the stack's
//! folder, so in the signed bundle) and the customer's own (`[policy] policies` in
//! `runner.toml`). Rego v1 syntax is read first; a file that is not
//! valid v1 is read as v0 (`deny[msg] { … }`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One policy file, read.
#[derive(Clone, Debug)]
pub struct PolicyFile {
    /// Whose: `vendor` or `customer`.
    pub owner: &'static str,
    /// Where, as shown to people: the path inside the bundle, or on disk.
    pub name: String,
    pub text: String,
}

/// One `deny` or `warn` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// The rule that gave it: `deny`, `deny_required_tags`, `warn`, ….
    pub rule: String,
    /// The resource it is about, when the policy named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    pub message: String,
}

/// Every result of every policy on one plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// How many policy files were evaluated.
    pub files: usize,
    pub denied: Vec<PolicyResult>,
    pub warnings: Vec<PolicyResult>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.denied.is_empty()
    }

    /// The error that refuses an apply: every denial, address, rule and message.
    pub fn refusal(&self, reference: &str) -> Option<Error> {
        if self.passed() {
            return None;
        }
        let mut message = format!(
            "policy refused the plan for `{reference}`: {} denial(s)",
            self.denied.len()
        );
        for result in &self.denied {
            message.push_str(&format!("\n  {}", line(result)));
        }
        let replace = self
            .denied
            .iter()
            .any(|r| r.rule.contains("replace") || r.message.contains("--allow-replace"));
        Some(
            Error::refused(message).hint(if replace {
                "change the inputs or the version so the plan fits the policies; to replace a stateful resource on purpose, name it with `--allow-replace ADDRESS`"
            } else {
                "change the inputs or the version so the plan fits the policies; nothing was applied"
            }),
        )
    }
}

/// `address: message (rule)`, one result on one line.
pub fn line(result: &PolicyResult) -> String {
    match &result.address {
        Some(address) => format!("`{address}`: {} ({})", result.message, result.rule),
        None => format!("{} ({})", result.message, result.rule),
    }
}

/// Reads every `*.rego` file of `dir` (not recursively), sorted by name; none when
/// the folder does not exist.
pub fn read_folder(dir: &Path, owner: &'static str, shown_as: &str) -> Result<Vec<PolicyFile>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(crate::error::io("read", dir, e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rego"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(&path).map_err(|e| crate::error::io("read", &path, e))?;
            let file = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(PolicyFile {
                owner,
                name: format!("{shown_as}/{file}"),
                text,
            })
        })
        .collect()
}

/// Evaluates every policy file on `plan` (the `show -json` document).
pub fn evaluate(files: &[PolicyFile], plan: &str, allow_replace: &[String]) -> Result<Verdict> {
    let mut engine = regorus::Engine::new();
    // As OPA and conftest: a built-in's error makes its expression undefined (a
    // `null` where a list was expected skips that resource) instead of failing all.
    engine.set_strict_builtin_errors(false);
    for file in files {
        engine.set_rego_v0(false);
        if let Err(v1) = engine.add_policy(file.name.clone(), file.text.clone()) {
            engine.set_rego_v0(true);
            if engine
                .add_policy(file.name.clone(), file.text.clone())
                .is_err()
            {
                return Err(Error::refused(format!(
                    "the {} policy `{}` is not valid Rego: {}",
                    file.owner,
                    file.name,
                    first_line(&v1.to_string())
                ))
                .at(format!("policy `{}`", file.name))
                .hint("policies are Rego with `package main` and `deny`/`warn` rules, as conftest reads them"));
            }
        }
    }
    let mut verdict = Verdict {
        files: files.len(),
        ..Verdict::default()
    };
    if files.is_empty() {
        return Ok(verdict);
    }
    engine.set_input_json(plan).map_err(|e| {
        Error::refused(format!(
            "cannot give the plan to the policies: {}",
            first_line(&e.to_string())
        ))
    })?;
    let data = serde_json::json!({ "stackpack": { "allow_replace": allow_replace } });
    engine
        .add_data_json(&data.to_string())
        .map_err(|e| Error::refused(format!("cannot give data to the policies: {e}")))?;
    let results = engine.eval_query("data.main".into(), false).map_err(|e| {
        Error::refused(format!(
            "a policy failed on this plan: {}",
            e.to_string().trim()
        ))
        .hint("the policy's own error is above; fix the policy or ask its author")
    })?;
    let main = results
        .result
        .first()
        .and_then(|r| r.expressions.first())
        .map(|e| serde_json::to_value(&e.value).unwrap_or_default())
        .unwrap_or_default();
    let Some(rules) = main.as_object() else {
        return Ok(verdict);
    };
    for (rule, value) in rules {
        let denies = rule == "deny" || rule.starts_with("deny_");
        let warns = rule == "warn" || rule.starts_with("warn_");
        if !denies && !warns {
            continue;
        }
        let messages: Vec<&serde_json::Value> = match value {
            serde_json::Value::Array(items) => items.iter().collect(),
            serde_json::Value::Object(map) => map
                .keys()
                .count()
                .eq(&0)
                .then(Vec::new)
                .unwrap_or_else(|| vec![value]),
            other => vec![other],
        };
        for message in messages {
            let result = to_result(rule, message);
            if denies {
                verdict.denied.push(result);
            } else {
                verdict.warnings.push(result);
            }
        }
    }
    verdict
        .denied
        .sort_by(|a, b| (&a.address, &a.rule).cmp(&(&b.address, &b.rule)));
    verdict
        .warnings
        .sort_by(|a, b| (&a.address, &a.rule).cmp(&(&b.address, &b.rule)));
    Ok(verdict)
}

fn to_result(rule: &str, message: &serde_json::Value) -> PolicyResult {
    let (text, address) = match message {
        serde_json::Value::String(s) => (s.clone(), None),
        serde_json::Value::Object(map) => (
            map.get("msg")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| message.to_string()),
            map.get("address")
                .or_else(|| map.get("resource"))
                .and_then(|a| a.as_str())
                .map(str::to_string),
        ),
        other => (other.to_string(), None),
    };
    PolicyResult {
        rule: rule.to_string(),
        address,
        message: text,
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> PolicyFile {
        PolicyFile {
            owner: "vendor",
            name: "policies/test.rego".into(),
            text: text.into(),
        }
    }

    const PLAN: &str = r#"{"resource_changes":[
        {"address":"aws_security_group_rule.self","type":"aws_security_group_rule","change":{"actions":["create"],"after":{"type":"ingress","cidr_blocks":null,"from_port":0,"to_port":0,"tags_all":null}}},
        {"address":"aws_s3_bucket.models","type":"aws_s3_bucket","change":{"actions":["delete","create"]}},
        {"address":"aws_vpc.this","type":"aws_vpc","change":{"actions":["create"]}}]}"#;

    #[test]
    fn v1_and_v0_rules_both_deny_and_warn_with_addresses() {
        let v1 = file(
            "package main\nimport rego.v1\n\ndeny_replace contains {\"msg\": \"stateful resource replaced\", \"address\": rc.address} if {\n  some rc in input.resource_changes\n  \"delete\" in rc.change.actions\n  not rc.address in data.stackpack.allow_replace\n}\n",
        );
        let v0 = file(
            "package main\n\nwarn[msg] {\n  rc := input.resource_changes[_]\n  rc.change.actions[_] == \"create\"\n  msg := sprintf(\"%s is new\", [rc.address])\n}\n",
        );
        let verdict = evaluate(&[v1.clone(), v0.clone()], PLAN, &[]).unwrap();
        assert_eq!(verdict.denied.len(), 1, "{verdict:?}");
        assert_eq!(verdict.denied[0].rule, "deny_replace");
        assert_eq!(
            verdict.denied[0].address.as_deref(),
            Some("aws_s3_bucket.models")
        );
        assert_eq!(verdict.warnings.len(), 3, "{verdict:?}");
        assert!(verdict
            .warnings
            .iter()
            .any(|w| w.message == "aws_vpc.this is new"));
        let allowed = evaluate(&[v1, v0], PLAN, &["aws_s3_bucket.models".into()]).unwrap();
        assert!(allowed.passed(), "{allowed:?}");
    }

    #[test]
    fn the_example_policies_read_a_plan_with_nulls_where_lists_may_be() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/acme-infra/stacks/data-plane/policies");
        let files = read_folder(&dir, "vendor", "policies").unwrap();
        assert_eq!(files.len(), 5);
        let verdict = evaluate(&files, PLAN, &[]).unwrap();
        assert_eq!(verdict.denied.len(), 1, "{verdict:?}");
        assert_eq!(verdict.denied[0].rule, "deny_stateful_replace");
    }

    #[test]
    fn a_policy_that_is_not_rego_is_refused_naming_it() {
        let error = evaluate(&[file("package main\ndeny contains if {")], PLAN, &[]).unwrap_err();
        assert!(
            error
                .message
                .contains("`policies/test.rego` is not valid Rego"),
            "{}",
            error.message
        );
    }
}
