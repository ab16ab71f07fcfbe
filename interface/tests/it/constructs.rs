//! Regression tests for HCL constructs real modules use that an older parser refused
//! (one HCL parser at one version now reads them all; `cargo tree -d` holds no
//! second one). Each reads a module folder the way the packager does.

use std::path::Path;

use stackpack_interface::{extract_module, DefaultValue};

fn module(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn read(dir: &Path) -> stackpack_interface::ModuleInterface {
    extract_module(dir).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_conditional_inside_a_conditional_after_a_binary_condition_parses() {
    let dir = module(&[(
        "main.tf",
        r#"
variable "a" {
  type    = bool
  default = true
}
variable "b" {
  type    = bool
  default = true
}
variable "c" {
  type    = bool
  default = false
}
locals {
  size = var.a && var.b ? var.c ? 1 : 2 : 0
}
resource "aws_instance" "this" {
  count = var.a && var.b ? var.c ? 1 : 2 : 0
}
"#,
    )]);
    let interface = read(dir.path());
    assert_eq!(interface.variables.len(), 3);
    assert!(interface.resources.iter().any(|r| r.kind == "aws_instance"));
}

#[test]
fn a_conditional_inside_a_binary_operation_parses() {
    let dir = module(&[(
        "main.tf",
        r#"
variable "n" {
  type    = number
  default = 2
}
output "twice" {
  value = 1 + (var.n > 1 ? var.n : 1) * 2
}
output "flag" {
  value = var.n > 1 && var.n < 10 ? "small" : "large"
}
"#,
    )]);
    let interface = read(dir.path());
    assert_eq!(interface.outputs.len(), 2);
}

#[test]
fn heredocs_provider_functions_and_for_expressions_parse() {
    let dir = module(&[(
        "main.tf",
        r#"
variable "zones" {
  type    = list(string)
  default = ["a", "b"]
  description = <<-EOT
    Zones to spread over,
    one subnet each.
  EOT
}
output "names" {
  value = { for i, z in var.zones : z => "${z}-${i}" if z != "" }
}
output "arn" {
  value = provider::aws::arn_parse("arn:aws:iam::123456789012:role/x")
}
"#,
    )]);
    let interface = read(dir.path());
    let zones = interface
        .variables
        .iter()
        .find(|v| v.name == "zones")
        .unwrap();
    assert!(
        matches!(&zones.default, DefaultValue::Value(_)),
        "{:?}",
        zones.default
    );
    assert_eq!(interface.outputs.len(), 2);
}
