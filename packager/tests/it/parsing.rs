//! Parsing realistic module files (in the style of the most used public modules: deep
//! `object` types with `optional` defaults, heredocs, `can(regex(...))` and
//! `alltrue([for ...])` validations, provider-defined functions, 0.11 syntax, JSON
//! syntax), and a cross-check of what we extract against the Python `python-hcl2`
//! parser.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use stackpack_interface::{extract_module, DefaultValue, ModuleInterface};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn default_of(m: &ModuleInterface, name: &str) -> Option<Value> {
    m.variable(name).and_then(|v| v.effective_default())
}

#[test]
fn reads_a_vpc_style_module() {
    let m = extract_module(&fixture("vpc")).unwrap();
    assert_eq!(m.files, vec!["main.tf", "variables.tf"]);
    assert_eq!(m.variables.len(), 23);
    let cidr = m.variable("cidr").unwrap();
    assert_eq!(cidr.type_expr.to_string(), "string");
    assert_eq!(cidr.location.to_string(), "variables.tf:17");
    assert_eq!(cidr.validations[0].condition, "can(cidrhost(var.cidr, 0))");
    assert_eq!(cidr.validations[0].location.to_string(), "variables.tf:22");
    let public = m.variable("public_subnets").unwrap();
    assert!(public.validations[0]
        .condition
        .starts_with("alltrue([for s in var.public_subnets"));
    assert_eq!(
        default_of(&m, "default_network_acl_ingress").unwrap()[1],
        json!({"rule_no": "101", "action": "allow", "from_port": "0", "to_port": "0", "protocol": "-1", "ipv6_cidr_block": "::/0"}),
        "converted to list(map(string)), as the engine does"
    );
    let policy = default_of(&m, "vpc_flow_log_iam_policy").unwrap();
    assert!(
        policy.as_str().unwrap().starts_with("{\n  \"Version\""),
        "indented heredoc is dedented: {policy}"
    );
    assert_eq!(
        m.variable("flow_log_log_format").unwrap().default,
        DefaultValue::Value(Value::Null)
    );

    let kinds: Vec<&str> = m.resources.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        vec![
            "aws_vpc",
            "aws_vpc_ipv4_cidr_block_association",
            "aws_subnet",
            "aws_nat_gateway",
            "data.aws_iam_policy_document"
        ]
    );
    assert_eq!(m.resources[0].location.to_string(), "main.tf:13");
    assert!(m.output("vpc_account").is_some());
    assert_eq!(m.required_version.as_ref().unwrap().0, ">= 1.8");
    assert_eq!(
        m.required_providers["aws"].version.as_deref(),
        Some(">= 5.46")
    );
    assert_eq!(
        m.required_providers["aws"].source.as_deref(),
        Some("hashicorp/aws")
    );

    let schema = m.to_schema();
    assert_eq!(schema.inputs.len(), 23);
    assert_eq!(schema.resource_kinds.len(), 5);
    assert!(!schema.input("create_vpc").unwrap().required);
}

#[test]
fn reads_an_eks_style_module_with_deep_objects() {
    let m = extract_module(&fixture("eks")).unwrap();
    let groups = m.variable("eks_managed_node_groups").unwrap();
    assert_eq!(
        groups.type_expr.to_string(),
        "map(object({block_device_mappings = optional(list(tuple([string, number])), []), capacity_type = optional(string, \"ON_DEMAND\"), \
create = optional(bool, true), desired_size = optional(number, 1), instance_types = optional(list(string), [\"m6i.large\"]), \
labels = optional(map(string)), max_size = optional(number, 3), min_size = optional(number, 1), \
taints = optional(map(object({effect = string, key = string, value = optional(string)})), {}), \
update_config = optional(object({max_unavailable_percentage = optional(number, 33)}), {})}))"
    );
    // Optional attribute defaults are filled in, as the engine does for a default.
    assert_eq!(
        default_of(&m, "cluster_upgrade_policy"),
        Some(json!({"support_type": "STANDARD"}))
    );
    assert_eq!(
        default_of(&m, "cluster_compute_config"),
        Some(
            json!({"enabled": false, "node_pools": ["general-purpose", "system"], "node_role_arn": null})
        )
    );
    assert!(!m.variable("cluster_upgrade_policy").unwrap().nullable);
    let admin = m.variable("cluster_admin_password").unwrap();
    assert!(admin.sensitive && admin.ephemeral && admin.is_required());
    let kms = m.variable("kms_key_administrators").unwrap();
    assert!(kms.validations[0]
        .condition
        .contains("provider::aws::arn_parse(arn).service"));
    assert_eq!(
        default_of(&m, "node_user_data"),
        Some(json!("#!/bin/bash\nset -o xtrace\n/etc/eks/bootstrap.sh\n"))
    );
    assert_eq!(m.variable("access_entries").unwrap().validations.len(), 1);
}

#[test]
fn reads_old_syntax_and_json_syntax() {
    let m = extract_module(&fixture("legacy")).unwrap();
    assert_eq!(
        m.variable("subnets").unwrap().type_expr.to_string(),
        "list(any)"
    );
    assert_eq!(
        m.variable("tags").unwrap().type_expr.to_string(),
        "map(any)"
    );
    assert_eq!(
        m.variable("region").unwrap().type_expr.to_string(),
        "string"
    );
    let create = m.variable("create").unwrap();
    assert!(!create.type_declared);
    assert_eq!(create.type_expr.to_string(), "any");
    assert_eq!(
        m.required_providers["aws"].version.as_deref(),
        Some("~> 2.70")
    );
    // JSON syntax: types as strings (with or without `${}`), lines found in the text.
    let prefix = m.variable("bucket_prefix").unwrap();
    assert_eq!(prefix.location.to_string(), "extra.tf.json:3");
    assert_eq!(
        prefix.description.as_deref(),
        Some("Prefix of the log bucket")
    );
    assert_eq!(
        m.variable("retention").unwrap().type_expr.to_string(),
        "number"
    );
    let logs = m.resources.iter().find(|r| r.name == "logs").unwrap();
    assert_eq!(logs.location.to_string(), "extra.tf.json:15");
    assert!(logs.count.is_some(), "`${{...}}` in JSON is an expression");
    assert_eq!(m.outputs.len(), 2);
}

#[test]
fn parse_errors_name_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("ok.tf"), "variable \"a\" {}\n").unwrap();
    std::fs::write(
        tmp.path().join("broken.tf"),
        "variable \"a\" {\n  type = string\n  default = [1,\n}\n",
    )
    .unwrap();
    let error = extract_module(tmp.path()).unwrap_err().to_string();
    assert!(error.contains("broken.tf:4:"), "{error}");
}

const PY_SUMMARY: &str = r#"
import json, sys
import hcl2

def norm(v):
    if isinstance(v, str):
        if v.startswith('"<<') or v.startswith('<<'):
            return "__heredoc__"
        if v.startswith("${"):
            return "__expr__"
        if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
            return json.loads(v)
        return v
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {norm(k) if k.startswith('"') else k: norm(x) for k, x in v.items() if k != "__is_block__"}
    return v

out = {"variables": {}, "outputs": {}, "resources": []}
for path in sys.argv[1:]:
    with open(path) as f:
        d = hcl2.load(f)
    for block in d.get("variable", []):
        for name, body in block.items():
            body = body or {}
            out["variables"][norm(name)] = {
                "default": norm(body["default"]) if "default" in body else "__required__",
                "sensitive": bool(body.get("sensitive", False)),
                "nullable": bool(body.get("nullable", True)),
                "validations": len(body.get("validation", [])),
                "description": norm(body.get("description")) if body.get("description") is not None else None,
            }
    for block in d.get("output", []):
        for name, body in block.items():
            out["outputs"][norm(name)] = bool(body.get("sensitive", False))
    for kind in ("resource", "data"):
        for block in d.get(kind, []):
            for rtype, named in block.items():
                for name in named:
                    t = norm(rtype)
                    out["resources"].append(("data." + t) if kind == "data" else t)
print(json.dumps(out))
"#;

fn contains_marker(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with("__") && s.ends_with("__"),
        Value::Array(a) => a.iter().any(contains_marker),
        Value::Object(m) => m.values().any(contains_marker),
        _ => false,
    }
}

fn python_has_hcl2() -> bool {
    let ok = || {
        Command::new("python3")
            .args(["-c", "import hcl2"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok() {
        return true;
    }
    // A fresh machine: install the parser once.
    let _ = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "python-hcl2"])
        .output();
    ok()
}

#[test]
fn agrees_with_python_hcl2() {
    if !python_has_hcl2() {
        eprintln!("skipped: python3 with `python-hcl2` is not available");
        return;
    }
    let mut compared_defaults = 0;
    for name in ["vpc", "eks", "legacy"] {
        let dir = fixture(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "tf"))
            .collect();
        files.sort();
        let output = Command::new("python3")
            .arg("-c")
            .arg(PY_SUMMARY)
            .args(&files)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "python-hcl2 failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let py: Value = serde_json::from_slice(&output.stdout).unwrap();

        let ours = extract_module(&dir).unwrap();
        // JSON-syntax files are not read by python-hcl2.
        let native: Vec<_> = ours
            .variables
            .iter()
            .filter(|v| v.location.file.ends_with(".tf"))
            .collect();
        let py_vars = py["variables"].as_object().unwrap();
        let mut our_names: Vec<&str> = native.iter().map(|v| v.name.as_str()).collect();
        let mut py_names: Vec<&str> = py_vars.keys().map(String::as_str).collect();
        our_names.sort();
        py_names.sort();
        assert_eq!(our_names, py_names, "{name}: variable names");
        for v in native {
            let p = &py_vars[&v.name];
            assert_eq!(
                p["sensitive"],
                json!(v.sensitive),
                "{name}.{}: sensitive",
                v.name
            );
            assert_eq!(
                p["nullable"],
                json!(v.nullable),
                "{name}.{}: nullable",
                v.name
            );
            assert_eq!(
                p["validations"],
                json!(v.validations.len()),
                "{name}.{}: validations",
                v.name
            );
            assert_eq!(
                p["description"],
                json!(v.description),
                "{name}.{}: description",
                v.name
            );
            match (&p["default"], &v.default) {
                (Value::String(s), DefaultValue::Required) if s == "__required__" => {}
                (pv, DefaultValue::Value(ov)) if !contains_marker(pv) => {
                    assert_eq!(pv, ov, "{name}.{}: default", v.name);
                    compared_defaults += 1;
                }
                (pv, ov) => assert!(
                    contains_marker(pv),
                    "{name}.{}: python {pv} vs ours {ov:?}",
                    v.name
                ),
            }
        }
        let mut our_outputs: Vec<(&str, bool)> = ours
            .outputs
            .iter()
            .filter(|o| o.location.file.ends_with(".tf"))
            .map(|o| (o.name.as_str(), o.sensitive))
            .collect();
        our_outputs.sort();
        let mut py_outputs: Vec<(&str, bool)> = py["outputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_bool().unwrap()))
            .collect();
        py_outputs.sort();
        assert_eq!(our_outputs, py_outputs, "{name}: outputs");
        let mut our_kinds: Vec<&str> = ours
            .resources
            .iter()
            .filter(|r| r.location.file.ends_with(".tf"))
            .map(|r| r.kind.as_str())
            .collect();
        let mut py_kinds: Vec<&str> = py["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        our_kinds.sort();
        py_kinds.sort();
        assert_eq!(our_kinds, py_kinds, "{name}: resource kinds");
    }
    assert!(
        compared_defaults > 30,
        "compared {compared_defaults} defaults"
    );
}

/// Copies a fixture module to `<tmp>/<side>/modules/m`, editing one file.
fn fixture_copy(tmp: &Path, side: &str, name: &str, edit: impl Fn(&str, String) -> String) {
    let dir = tmp.join(side).join("modules/m");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(entry.path()).unwrap();
        std::fs::write(dir.join(&file), edit(&file, text)).unwrap();
    }
}

/// The kind of "minor" release real maintainers ship: harmless changes a text diff
/// would flag, mixed with a changed default and a narrowed provider constraint that
/// break callers. The checker must tell them apart.
#[test]
fn a_realistic_minor_release_of_a_vpc_module() {
    use stackpack_packager::check::{compare_dirs, RuleConfig};
    use stackpack_schema::version::Bump;

    let tmp = tempfile::tempdir().unwrap();
    fixture_copy(tmp.path(), "old", "vpc", |_, t| t);
    fixture_copy(tmp.path(), "new", "vpc", |file, t| {
        match file {
        "variables.tf" => t
            // Harmless: a description edit, and the same default written differently.
            .replace("Controls if VPC should be created (it affects almost all resources)", "Whether to create the VPC.")
            .replace("  default     = 600\n", "  default     = \"600\"\n")
            // Breaking: a changed default.
            .replace(
                "variable \"enable_dns_hostnames\" {\n  description = \"Should be true to enable DNS hostnames in the VPC\"\n  type        = bool\n  default     = true",
                "variable \"enable_dns_hostnames\" {\n  description = \"Should be true to enable DNS hostnames in the VPC\"\n  type        = bool\n  default     = false",
            )
            // Widened: a map of strings becomes any.
            .replace("variable \"nat_gateway_tags\" {\n  description = \"Additional tags for the NAT gateways\"\n  type        = map(string)", "variable \"nat_gateway_tags\" {\n  description = \"Additional tags for the NAT gateways\"\n  type        = any")
            // A new gated feature.
            + "\nvariable \"enable_flow_log\" {\n  description = \"Whether to record flow logs.\"\n  type        = bool\n  default     = false\n}\n",
        "main.tf" => t
            .replace("version = \">= 5.46\"", "version = \">= 5.79\"")
            .replace("required_version = \">= 1.8\"", "required_version = \">= 1.5.7\"")
            + "\nresource \"aws_flow_log\" \"this\" {\n  count = local.create_vpc && var.enable_flow_log ? 1 : 0\n\n  vpc_id = local.vpc_id\n}\n",
        _ => t,
    }
    });
    let report = compare_dirs(
        &tmp.path().join("old"),
        &tmp.path().join("new"),
        "modules/m",
        &RuleConfig::default(),
    )
    .unwrap();
    let got: Vec<String> = report
        .findings
        .iter()
        .map(|f| format!("{} {} {} {}", f.bump.unwrap(), f.rule, f.item, f.location()))
        .collect();
    assert_eq!(
        got,
        vec![
            "patch engine-constraint-widened required_version modules/m/main.tf:90",
            "major provider-constraint-narrowed aws modules/m/main.tf:93",
            "minor resource-kind-added-gated aws_flow_log modules/m/main.tf:100",
            "major default-changed enable_dns_hostnames modules/m/variables.tf:51",
            "minor type-widened nat_gateway_tags modules/m/variables.tf:104",
            "minor input-added-with-default enable_flow_log modules/m/variables.tf:180",
        ]
    );
    assert_eq!(report.bump, Bump::Major);
}

#[test]
fn reads_every_kind_of_block_real_modules_hold() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("main.tf"),
        r#"terraform {
  required_version = ">= 1.10"
  backend "s3" {}
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5.0" }
    random = "~> 3.0"
  }
}

provider "aws" {
  alias  = "west"
  region = "us-west-2"
}

ephemeral "aws_secretsmanager_secret_version" "db" {
  secret_id = "x"
}

import {
  to = aws_s3_bucket.logs
  id = "logs"
}

resource "aws_s3_bucket" "logs" {
  provider = aws.west
  for_each = { for k, v in var.buckets : k => v if v.enabled }
  bucket   = "%{ if each.value.prefix != "" }${each.value.prefix}-%{ endif }${each.key}"

  dynamic "lifecycle_rule" {
    for_each = each.value.rules
    content {
      id = lifecycle_rule.value.id
    }
  }

  lifecycle {
    ignore_changes = all
    precondition {
      condition     = length(var.buckets) < 100
      error_message = "Too many buckets."
    }
  }
  depends_on = [aws_iam_role.this]
}

resource "aws_iam_role" "this" {
  count              = 1
  assume_role_policy = jsonencode({ Statement = [for s in ["a"] : { Sid = s }] })
  tags               = { for t in aws_s3_bucket.logs[*].id : t => t }
}

moved {
  from = aws_iam_role.old
  to   = aws_iam_role.this[0]
}

removed {
  from = aws_sqs_queue.legacy
  lifecycle {
    destroy = false
  }
}

check "health" {
  data "http" "ping" {
    url = "https://example.invalid"
  }
  assert {
    condition     = data.http.ping.status_code == 200
    error_message = "Down."
  }
}

variable "buckets" {
  type = map(object({
    enabled = optional(bool, true)
    prefix  = optional(string, "")
    rules   = optional(list(object({ id = string })), [])
  }))
  default = {}
}

output "ids" {
  value     = [for b in aws_s3_bucket.logs : b.id]
  sensitive = true
}
"#,
    )
    .unwrap();
    let m = extract_module(tmp.path()).unwrap();
    let kinds: Vec<&str> = m.resources.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        vec!["aws_s3_bucket", "aws_iam_role"],
        "ephemeral, import and check-scoped data are not managed"
    );
    assert_eq!(
        m.required_providers["random"].version.as_deref(),
        Some("~> 3.0")
    );
    assert_eq!(
        m.required_providers["aws"].version.as_deref(),
        Some("~> 5.0")
    );
    assert!(!m.required_providers.contains_key("west"));
    assert_eq!(m.moved[0].from, "aws_iam_role.old");
    assert_eq!(m.moved[0].to, "aws_iam_role.this[0]");
    assert_eq!(m.removed[0].from, "aws_sqs_queue.legacy");
    assert_eq!(
        m.conditions.len(),
        2,
        "the precondition and the check assertion"
    );
    assert!(m.output("ids").unwrap().sensitive);
    assert_eq!(m.required_version.as_ref().unwrap().0, ">= 1.10");
}

// ---------------------------------------------------------------------------------
// Differential: our reading of variables against Terraform 1.15's own, offline.
//
// Terraform prints what it read without any provider or network: `plan` of a module
// that declares no resources, then `show -json` gives each variable's name,
// description, `sensitive` and default converted to its type; `console` gives the
// types (`type({...})`, the console-only function) and, with every input set to
// `null`, which inputs are `nullable`.

use stackpack_interface::TypeExpr;

/// Hundreds of variables: every type shape crossed with defaults and flags.
fn generated_variables() -> String {
    let shapes: [(&str, &str); 12] = [
        ("string", "\"v\""),
        ("number", "\"7\""),
        ("bool", "\"true\""),
        ("list(string)", "[\"a\", \"b\"]"),
        ("set(number)", "[3, 1, 3]"),
        ("map(bool)", "{ x = true, y = \"false\" }"),
        ("tuple([string, number])", "[\"a\", \"2\"]"),
        (
            "object({ a = string, b = optional(number, 5) })",
            "{ a = \"x\" }",
        ),
        (
            "map(object({ on = optional(bool, false), tags = optional(map(string), {}) }))",
            "{ one = {}, two = { on = true } }",
        ),
        (
            "list(object({ name = string, port = optional(number) }))",
            "[{ name = \"n\" }]",
        ),
        (
            "object({ inner = optional(object({ x = optional(string, \"d\") }), {}) })",
            "{}",
        ),
        ("any", "{ k = [1, 2] }"),
    ];
    let mut out = String::new();
    for (i, (ty, default)) in shapes.iter().enumerate() {
        for variant in 0..24 {
            let name = format!("gen_{i}_{variant}");
            let mut body = format!("  type = {ty}\n");
            match variant % 4 {
                0 => body.push_str(&format!("  default = {default}\n")),
                1 => body.push_str("  default = null\n"),
                2 => {}
                _ => body.push_str(&format!(
                    "  default = {default}\n  description = \"Shape {i}, variant {variant}.\"\n"
                )),
            }
            if variant % 3 == 0 {
                body.push_str("  sensitive = true\n");
            }
            if (variant / 4) % 2 == 1 && variant % 4 != 1 {
                body.push_str("  nullable = false\n");
            }
            out.push_str(&format!("variable \"{name}\" {{\n{body}}}\n\n"));
        }
    }
    out
}

/// A value of type `t`, for the required inputs a plan needs.
fn sample(t: &TypeExpr) -> Value {
    match t {
        TypeExpr::Number => json!(1),
        TypeExpr::Bool => json!(true),
        TypeExpr::List(_) | TypeExpr::Set(_) => json!([]),
        TypeExpr::Map(_) => json!({}),
        TypeExpr::Tuple(items) => Value::Array(items.iter().map(sample).collect()),
        TypeExpr::Object(attrs) => Value::Object(
            attrs
                .iter()
                .filter(|(_, a)| !a.optional)
                .map(|(n, a)| (n.clone(), sample(&a.ty)))
                .collect(),
        ),
        _ => json!("s"),
    }
}

/// The type as Terraform's `type()` prints a value of it, without white space;
/// `None` for `any`, whose value's type depends on the value.
fn concrete(t: &TypeExpr) -> Option<String> {
    Some(match t {
        TypeExpr::String => "string".into(),
        TypeExpr::Number => "number".into(),
        TypeExpr::Bool => "bool".into(),
        TypeExpr::List(t) => format!("list({})", concrete(t)?),
        TypeExpr::Set(t) => format!("set({})", concrete(t)?),
        TypeExpr::Map(t) => format!("map({})", concrete(t)?),
        TypeExpr::Tuple(items) => format!(
            "tuple([{}])",
            items
                .iter()
                .map(concrete)
                .collect::<Option<Vec<_>>>()?
                .join(",")
        ),
        TypeExpr::Object(attrs) => format!(
            "object({{{}}})",
            attrs
                .iter()
                .map(|(n, a)| Some(format!("{n}:{}", concrete(&a.ty)?)))
                .collect::<Option<Vec<_>>>()?
                .join(",")
        ),
        _ => return None,
    })
}

fn terraform(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(stackpack_test_support::terraform())
        .current_dir(dir)
        .args(args)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .output()
        .expect("terraform runs");
    stackpack_test_support::Run::from(output).ok().stdout
}

/// `terraform console` evaluates one expression from standard input.
fn console(dir: &Path, var_file: &str, expression: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(stackpack_test_support::terraform())
        .current_dir(dir)
        .args(["console", &format!("-var-file={var_file}")])
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_CLI_CONFIG_FILE", "/dev/null")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("terraform console runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{expression}\n").as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The console reports what it refuses on stderr and still exits 0.
    assert!(
        output.status.success() && !stderr.contains("Error"),
        "terraform console: {stderr}"
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A module holding every variable form (the fixture and generated ones), what we
/// read of it, and what Terraform read: `init` and `plan` run once, with a sample
/// value for each required input (`required.tfvars.json`) and a second file setting
/// the inputs to `null` (`nulls.tfvars.json`) for the console to evaluate.
struct Reading {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    ours: ModuleInterface,
    theirs: serde_json::Map<String, Value>,
}

fn read_by_both() -> Reading {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    for entry in std::fs::read_dir(fixture("terraform-reading")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.join("generated.tf"), generated_variables()).unwrap();
    let ours = extract_module(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(ours.variables.len() > 300, "{}", ours.variables.len());

    // Every required input gets a value of its type; every input gets `null` in the
    // second file (a sample where `null` is refused and there is no default).
    let required: serde_json::Map<String, Value> = ours
        .variables
        .iter()
        .filter(|v| v.is_required())
        .map(|v| (v.name.clone(), sample(&v.type_expr)))
        .collect();
    // Inputs with a validation are left out of the `null` probe: their conditions
    // would refuse `null` before nullability shows.
    let nulls: serde_json::Map<String, Value> = ours
        .variables
        .iter()
        .filter(|v| v.validations.is_empty())
        .map(|v| {
            let value = if v.is_required() && !v.nullable {
                sample(&v.type_expr)
            } else {
                Value::Null
            };
            (v.name.clone(), value)
        })
        .collect();
    std::fs::write(
        dir.join("required.tfvars.json"),
        Value::Object(required).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("nulls.tfvars.json"),
        Value::Object(nulls).to_string(),
    )
    .unwrap();

    terraform(&dir, &["init", "-backend=false", "-input=false"]);
    terraform(
        &dir,
        &[
            "plan",
            "-input=false",
            "-lock=false",
            "-var-file=required.tfvars.json",
            "-out=plan",
        ],
    );
    let shown: Value = serde_json::from_str(&terraform(&dir, &["show", "-json", "plan"])).unwrap();
    let theirs = shown["configuration"]["root_module"]["variables"]
        .as_object()
        .expect("show -json lists the variables")
        .clone();
    Reading {
        _tmp: tmp,
        dir,
        ours,
        theirs,
    }
}

/// Differences in names, defaults, sensitivity and descriptions, from `show -json`.
fn names_defaults_sensitivity_and_descriptions(reading: &Reading) -> Vec<String> {
    let (ours, theirs) = (&reading.ours, &reading.theirs);
    let mut differences = Vec::new();
    let our_names: Vec<&str> = ours.variables.iter().map(|v| v.name.as_str()).collect();
    let mut their_names: Vec<&str> = theirs.keys().map(String::as_str).collect();
    their_names.sort();
    assert_eq!(our_names, their_names, "the names read");

    for v in &ours.variables {
        let t = &theirs[&v.name];
        // Terraform leaves out `default` only when there is none.
        let their_default = t.get("default").cloned();
        let our_default = v.effective_default();
        if our_default != their_default {
            differences.push(format!(
                "{}: default ours {our_default:?}, Terraform's {their_default:?}",
                v.name
            ));
        }
        let their_sensitive = t.get("sensitive") == Some(&json!(true));
        if v.sensitive != their_sensitive {
            differences.push(format!("{}: sensitive ours {}", v.name, v.sensitive));
        }
        let their_description = t.get("description").and_then(Value::as_str);
        if v.description.as_deref().map(str::trim) != their_description.map(str::trim) {
            differences.push(format!(
                "{}: description ours {:?}, Terraform's {their_description:?}",
                v.name, v.description
            ));
        }
    }
    differences
}

/// Differences in types, from one `type()` of an object holding every input of a
/// concrete type.
fn types(reading: &Reading) -> Vec<String> {
    let typed: Vec<(&str, String)> = reading
        .ours
        .variables
        .iter()
        .filter_map(|v| Some((v.name.as_str(), concrete(&v.type_expr)?)))
        .collect();
    assert!(typed.len() > 250, "{}", typed.len());
    let expression = format!(
        "type({{{}}})",
        typed
            .iter()
            .map(|(n, _)| format!("{n} = var.{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let printed: String = console(&reading.dir, "required.tfvars.json", &expression)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .replace(",}", "}")
        .replace(",)", ")")
        .replace(",]", "]");
    let ours_printed = format!("object({{{}}})", {
        let mut sorted = typed.clone();
        sorted.sort();
        sorted
            .iter()
            .map(|(n, t)| format!("{n}:{t}"))
            .collect::<Vec<_>>()
            .join(",")
    });
    if printed == ours_printed {
        Vec::new()
    } else {
        vec![format!(
            "types: ours\n{ours_printed}\nTerraform's\n{printed}"
        )]
    }
}

/// Ephemeral inputs print as `(ephemeral value)`: one we did not read as ephemeral
/// would turn the whole object of [`nullability`] into that, so this checks them
/// first, one by one.
fn ephemeral_inputs(reading: &Reading) -> Vec<String> {
    let mut differences = Vec::new();
    for v in reading.ours.variables.iter().filter(|v| v.ephemeral) {
        let printed = console(
            &reading.dir,
            "required.tfvars.json",
            &format!("var.{}", v.name),
        );
        if printed.trim() != "(ephemeral value)" {
            differences.push(format!(
                "{}: ephemeral ours, Terraform printed {printed}",
                v.name
            ));
        }
    }
    differences
}

/// With every input set to `null`, a nullable one stays `null` and one with
/// `nullable = false` takes its default.
fn nullability(reading: &Reading) -> Vec<String> {
    let ours = &reading.ours;
    let all = ours
        .variables
        .iter()
        .filter(|v| !v.ephemeral)
        .map(|v| format!("{0} = var.{0}", v.name))
        .collect::<Vec<_>>()
        .join(", ");
    let printed = console(
        &reading.dir,
        "nulls.tfvars.json",
        &format!("nonsensitive(jsonencode({{{all}}}))"),
    );
    let values: Value = serde_json::from_str::<String>(printed.trim())
        .ok()
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_else(|| panic!("console printed no JSON string: {printed}"));
    let mut differences = Vec::new();
    for v in ours
        .variables
        .iter()
        .filter(|v| !v.is_required() && v.validations.is_empty() && !v.ephemeral)
    {
        let expected = if v.nullable {
            Value::Null
        } else {
            v.effective_default().unwrap_or(Value::Null)
        };
        if values[&v.name] != expected {
            differences.push(format!(
                "{}: nullable ours {}, Terraform gave {} for null",
                v.name, v.nullable, values[&v.name]
            ));
        }
    }
    differences
}

/// One Terraform run serves the four checks: `init` and `plan` over 300 inputs are
/// the expensive part, and each check only reads the result.
#[test]
fn variables_are_read_as_terraform_reads_them() {
    let reading = read_by_both();
    let mut differences = names_defaults_sensitivity_and_descriptions(&reading);
    differences.extend(types(&reading));
    differences.extend(ephemeral_inputs(&reading));
    differences.extend(nullability(&reading));
    assert!(
        differences.is_empty(),
        "{} difference(s):\n{}",
        differences.len(),
        differences.join("\n")
    );
}
