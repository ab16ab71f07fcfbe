//! `sensitive-input-stored` (warning): a sensitive input assigned to an argument the
//! provider keeps in the state (`aws_secretsmanager_secret_version.secret_string`,
//! `aws_db_instance.password`, …). `sensitive = true` hides the value from plans and
//! logs; the state file still holds it in plain text, and the runner refuses an
//! apply that leaves one there (`[policy] secrets-in-state`). The finding shows the
//! two ways to keep it out.

use std::collections::BTreeMap;

use hcl_edit::structure::Body;
use hcl_edit::Span;
use stackpack_interface::ModuleInterface;

use super::{Finding, Lint, Severity};

/// Arguments the provider stores in the state, by resource type: a curated list of
/// the ones a secret is most often given to. Where the provider has a write-only
/// twin (`*_wo`, Terraform >= 1.11 with AWS provider >= 5.87), it is named.
pub const STORED_ARGUMENTS: &[(&str, &str, Option<&str>)] = &[
    (
        "aws_secretsmanager_secret_version",
        "secret_string",
        Some("secret_string_wo"),
    ),
    ("aws_secretsmanager_secret_version", "secret_binary", None),
    ("aws_db_instance", "password", Some("password_wo")),
    (
        "aws_rds_cluster",
        "master_password",
        Some("master_password_wo"),
    ),
    ("aws_docdb_cluster", "master_password", None),
    ("aws_redshift_cluster", "master_password", None),
    ("aws_elasticache_user", "passwords", None),
    ("aws_ssm_parameter", "value", Some("value_wo")),
    ("aws_iam_user_login_profile", "password", None),
    ("aws_mq_broker", "password", None),
    ("kubernetes_secret", "data", None),
    ("kubernetes_secret_v1", "data", None),
    ("random_password", "override_special", None),
    ("tls_private_key", "private_key_pem", None),
];

/// Every sensitive input of `dir` given to a stored argument in one of its own
/// `.tf` files.
pub fn stored_secrets(
    dir: &str,
    module: &ModuleInterface,
    texts: &BTreeMap<String, String>,
    bodies: &BTreeMap<&str, std::rc::Rc<Body>>,
    out: &mut Vec<Finding>,
) {
    let sensitive: Vec<&str> = module
        .variables
        .iter()
        .filter(|v| v.sensitive && !v.ephemeral)
        .map(|v| v.name.as_str())
        .collect();
    if sensitive.is_empty() {
        return;
    }
    let prefix = format!("{dir}/");
    for (rel, text) in texts {
        let own = rel
            .strip_prefix(&prefix)
            .is_some_and(|name| !name.contains('/') && name.ends_with(".tf"));
        if !own {
            continue;
        }
        let Some(body) = bodies.get(rel.as_str()) else {
            continue;
        };
        in_file(rel, text, body, &sensitive, out);
    }
}

/// The 1-based line of a span's start in `text`.
fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> usize {
    span.map_or(0, |s| {
        text[..s.start.min(text.len())].matches('\n').count() + 1
    })
}

fn in_file(rel: &str, text: &str, body: &Body, sensitive: &[&str], out: &mut Vec<Finding>) {
    for block in body.blocks().filter(|b| b.ident.as_str() == "resource") {
        let labels: Vec<&str> = block.labels.iter().map(|l| l.as_str()).collect();
        let [kind, name] = labels[..] else {
            continue;
        };
        for (_, argument, write_only) in STORED_ARGUMENTS.iter().filter(|(k, ..)| *k == kind) {
            let Some(attr) = block.body.get_attribute(argument) else {
                continue;
            };
            let value = attr.value.to_string();
            for input in sensitive
                .iter()
                .filter(|input| crate::impact::references(&value, input))
            {
                let write_only = match write_only {
                    Some(wo) => format!("the write-only argument `{wo}` (with `{wo}_version`), where the engine and provider support it"),
                    None => "a write-only `*_wo` argument, once the provider offers one".to_string(),
                };
                out.push(Finding {
                    rule: Lint::SensitiveInputStored.into(),
                    item: format!("{kind}.{name}.{argument}"),
                    file: rel.to_string(),
                    line: line_of(text, attr.span()),
                    bump: None,
                    severity: Severity::Warning,
                    change: None,
                    decisive: false,
                    message: format!(
                        "sensitive input `{input}` is given to `{kind}.{name}.{argument}`, which the provider stores in the state in plain text (the runner refuses such an apply by default); keep it out with a container-only resource whose value is set out of band (`lifecycle {{ ignore_changes = [{argument}] }}` and no value from the stack), or with {write_only}"
                    ),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Vec<Finding> {
        let module = stackpack_interface::extract_files(
            std::path::Path::new("stacks/db"),
            &[("main.tf".to_string(), text.to_string())],
        )
        .unwrap();
        let texts = BTreeMap::from([("stacks/db/main.tf".to_string(), text.to_string())]);
        let body = hcl_edit::parser::parse_body(text).unwrap();
        let bodies = BTreeMap::from([("stacks/db/main.tf", std::rc::Rc::new(body))]);
        let mut out = Vec::new();
        stored_secrets("stacks/db", &module, &texts, &bodies, &mut out);
        out
    }

    #[test]
    fn a_sensitive_input_given_to_a_stored_argument_warns_with_both_ways_out() {
        let found = findings(
            r#"variable "db_password" {
  type      = string
  sensitive = true
}

variable "name" {
  type = string
}

resource "aws_db_instance" "main" {
  identifier = var.name
  password   = var.db_password
}

resource "aws_secretsmanager_secret_version" "ok" {
  secret_id        = "x"
  secret_string_wo = var.db_password
  lifecycle {
    ignore_changes = [secret_string]
  }
}

resource "aws_ssm_parameter" "plain" {
  name  = "n"
  value = var.name
}
"#,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].item, "aws_db_instance.main.password");
        assert_eq!(found[0].line, 12);
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(found[0].message.contains("ignore_changes = [password]"));
        assert!(found[0].message.contains("`password_wo`"));
    }
}
