//! The runner's own evaluation of `validation` rules must agree with the engine's:
//! a differential test against real Terraform 1.15 on a scratch configuration that
//! holds only variables (the example's rules and rules using the functions real
//! validations use), for passing and failing values alike.

use std::path::Path;
use std::process::Command;

use stackpack_runner::inputs;
use stackpack_test_support::terraform;

const VARIABLES: &str = r#"
variable "customer_id" {
  type    = string
  default = "globex"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}$", var.customer_id))
    error_message = "The customer_id must be 2 to 31 lowercase letters, digits or dashes, starting with a letter."
  }
}

variable "aws_endpoint" {
  type    = string
  default = ""
  validation {
    condition     = can(regex("^(https?://[^[:space:]]+)?$", var.aws_endpoint))
    error_message = "The aws_endpoint must be an http:// or https:// URL, or empty."
  }
}

variable "vpc_cidr" {
  type    = string
  default = "10.40.0.0/16"
  validation {
    condition     = can(cidrhost(var.vpc_cidr, 0)) && startswith(var.vpc_cidr, "10.")
    error_message = "The VPC range must be a private 10.x CIDR."
  }
}

variable "zones" {
  type    = list(string)
  default = ["a", "b"]
  validation {
    condition     = length(var.zones) > 0 && alltrue([for z in var.zones : contains(["a", "b", "c"], z)])
    error_message = "Zones are a, b or c."
  }
}

variable "name" {
  type    = string
  default = "pool-1"
  validation {
    condition     = length(regexall("[0-9]", var.name)) <= 2 && !endswith(var.name, "-") && substr(var.name, 0, 1) != "x"
    error_message = "Bad name."
  }
}

variable "size" {
  type    = number
  default = 4
  validation {
    condition     = var.size >= 1 && var.size <= 8 && floor(var.size) == var.size
    error_message = "Size is a whole number from 1 to 8."
  }
}

variable "subnet" {
  type    = string
  default = "10.0.32.0/20"
  validation {
    condition     = cidrsubnet("10.0.0.0/16", 4, 2) == var.subnet || strcontains(var.subnet, "/24")
    error_message = "Not the third /20, nor a /24."
  }
}
"#;

const CASES: &[&str] = &[
    "",
    "customer_id = \"Globex_Inc\"",
    "customer_id = \"g\"",
    "customer_id = \"initech-2\"",
    "aws_endpoint = \"http://127.0.0.1:5000\"",
    "aws_endpoint = \"ftp://x\"",
    "aws_endpoint = \"http://a b\"",
    "vpc_cidr = \"10.0.0.0/33\"",
    "vpc_cidr = \"192.168.0.0/16\"",
    "vpc_cidr = \"10.1.0.0/24\"",
    "zones = []",
    "zones = [\"a\", \"d\"]",
    "zones = [\"c\"]",
    "name = \"a1b2c3\"",
    "name = \"pool-\"",
    "name = \"xpool\"",
    "name = \"pool-12\"",
    "size = 0",
    "size = 2.5",
    "size = 8",
    "subnet = \"10.0.32.0/20\"",
    "subnet = \"10.0.48.0/20\"",
    "subnet = \"10.9.9.0/24\"",
];

fn engine_accepts(dir: &Path, case: &str) -> bool {
    std::fs::write(dir.join("case.tfvars"), format!("{case}\n")).unwrap();
    let output = Command::new(terraform())
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .args(["plan", "-input=false", "-no-color", "-var-file=case.tfvars"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        assert!(
            stderr.contains("Invalid value for variable"),
            "Terraform failed for another reason on `{case}`: {stderr}"
        );
    }
    output.status.success()
}

#[test]
fn validation_verdicts_agree_with_terraform_1_15() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    std::fs::write(dir.join("variables.tf"), VARIABLES).unwrap();
    let init = Command::new(terraform())
        .current_dir(dir)
        .env("CHECKPOINT_DISABLE", "1")
        .args(["init", "-input=false", "-no-color"])
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let module = stackpack_interface::extract_module(dir).unwrap();
    let mut disagreements = Vec::new();
    let mut refused = 0;
    for case in CASES {
        let parsed = inputs::parse(case, "case.tfvars").unwrap();
        let ours = inputs::validate(&parsed, &module, "scratch");
        let engine = engine_accepts(dir, case);
        if !engine {
            refused += 1;
        }
        if ours.is_empty() != engine {
            disagreements.push(format!(
                "`{case}`: engine accepts {engine}, runner finds {ours:?}"
            ));
        }
        if let Some(finding) = ours.first() {
            assert_eq!(finding.location, "case.tfvars:1", "{finding:?}");
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    // Both kinds of case were really tried.
    assert!(
        refused > 5 && refused < CASES.len() - 5,
        "{refused} refused"
    );
}
