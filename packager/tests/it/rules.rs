//! One case per interface rule: a module before and after, written to disk, and the
//! exact finding (rule, item, file:line) and bump the checker must report. Then the
//! changes that must not be flagged beyond patch.

use crate::common;

use std::path::Path;

use stackpack_packager::check::{compare_dirs, CheckReport, RuleConfig, Severity};
use stackpack_schema::version::Bump;

pub(crate) const DIR: &str = "modules/m";

fn write(base: &Path, files: &[(&str, &str)]) {
    let dir = base.join(DIR);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// Compares two versions of the module at `modules/m`, given as (path inside the
/// module, text) pairs.
pub(crate) fn compare(old: &[(&str, &str)], new: &[(&str, &str)]) -> CheckReport {
    let tmp = tempfile::tempdir().unwrap();
    write(&tmp.path().join("old"), old);
    write(&tmp.path().join("new"), new);
    compare_dirs(
        &tmp.path().join("old"),
        &tmp.path().join("new"),
        DIR,
        &RuleConfig::default(),
    )
    .unwrap()
}

const BASE: &str = r#"variable "name" {
  type        = string
  description = "Name."
}
"#;

struct Case {
    rule: &'static str,
    old: &'static str,
    new: &'static str,
    item: &'static str,
    /// `file:line`, relative to the module folder.
    at: &'static str,
    bump: Bump,
}

/// Compares the case's two versions of `variables.tf` and checks that the expected
/// finding is among those reported, with the expected overall bump.
fn assert_case(case: Case) {
    let report = compare(&[("variables.tf", case.old)], &[("variables.tf", case.new)]);
    let expected_at = format!("{DIR}/{}", case.at);
    let found = report
        .findings
        .iter()
        .any(|f| f.rule.id() == case.rule && f.item == case.item && f.location() == expected_at);
    assert!(
        found && report.bump == case.bump,
        "`{}`: expected `{}` at `{expected_at}` with bump {}, got bump {} and {:#?}",
        case.rule,
        case.item,
        case.bump,
        report.bump,
        report.findings
    );
    // Interface findings always carry a bump.
    assert!(
        report.findings.iter().all(|f| f.bump.is_some()),
        "{:#?}",
        report.findings
    );
}

#[test]
fn an_input_added_with_a_default_is_minor() {
    assert_case(Case {
        rule: "input-added-with-default",
        old: BASE,
        new: concat!(
            "variable \"name\" {\n  type        = string\n  description = \"Name.\"\n}\n",
            "\nvariable \"size\" {\n  type    = number\n  default = 3\n}\n"
        ),
        item: "size",
        at: "variables.tf:6",
        bump: Bump::Minor,
    });
}

#[test]
fn an_input_added_without_a_default_is_major() {
    assert_case(Case {
        rule: "input-added-without-default",
        old: BASE,
        new: concat!(
            "variable \"name\" {\n  type        = string\n  description = \"Name.\"\n}\n",
            "\nvariable \"size\" {\n  type = number\n}\n"
        ),
        item: "size",
        at: "variables.tf:6",
        bump: Bump::Major,
    });
}

#[test]
fn a_changed_default_is_major() {
    assert_case(Case {
        rule: "default-changed",
        old: "variable \"size\" {\n  type    = number\n  default = 3\n}\n",
        new: "variable \"size\" {\n  type    = number\n  default = 4\n}\n",
        item: "size",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn a_changed_optional_attribute_default_is_major() {
    assert_case(Case {
            rule: "default-changed",
            old: "variable \"cfg\" {\n  type = object({\n    a = optional(number, 1)\n  })\n  default = {}\n}\n",
            new: "variable \"cfg\" {\n  type = object({\n    a = optional(number, 2)\n  })\n  default = {}\n}\n",
            item: "cfg.a",
            at: "variables.tf:1",
            bump: Bump::Major,
        });
}

#[test]
fn a_removed_default_is_major() {
    assert_case(Case {
        rule: "input-default-removed",
        old: "variable \"size\" {\n  type    = number\n  default = 3\n}\n",
        new: "variable \"size\" {\n  type = number\n}\n",
        item: "size",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn an_added_default_is_minor() {
    assert_case(Case {
        rule: "input-default-added",
        old: "variable \"size\" {\n  type = number\n}\n",
        new: "variable \"size\" {\n  type    = number\n  default = 3\n}\n",
        item: "size",
        at: "variables.tf:1",
        bump: Bump::Minor,
    });
}

#[test]
fn a_removed_input_is_major() {
    assert_case(Case {
        rule: "input-removed",
        old: concat!(
            "variable \"name\" {\n  type        = string\n  description = \"Name.\"\n}\n",
            "\nvariable \"size\" {\n  type    = number\n  default = 3\n}\n"
        ),
        new: BASE,
        item: "size",
        at: "variables.tf:6",
        bump: Bump::Major,
    });
}

#[test]
fn a_rename_with_an_annotated_guarded_alias_is_minor() {
    assert_case(Case {
        rule: "input-renamed-with-alias",
        old: "variable \"cluster_size\" {\n  type    = number\n  default = 3\n}\n",
        new: r#"variable "cluster_size" {
  type       = number
  default    = null
  deprecated = "Use node_count."
}

# stackpack:renamed-from = "cluster_size"
variable "node_count" {
  type    = number
  default = 3

  validation {
    condition     = var.cluster_size == null || var.node_count == 3
    error_message = "Set node_count or cluster_size, not both."
  }
}
"#,
        item: "node_count",
        at: "variables.tf:8",
        bump: Bump::Minor,
    });
}

#[test]
fn a_rename_named_in_a_deprecation_and_guarded_by_a_check_is_minor() {
    assert_case(Case {
        rule: "input-renamed-with-alias",
        // No annotation: the deprecation message names the new input; the guard
        // is a `check` block.
        old: "variable \"cluster_size\" {\n  type    = number\n  default = 3\n}\n",
        new: r#"variable "cluster_size" {
  type       = number
  default    = 3
  deprecated = "Renamed: use `node_count` instead."
}

variable "node_count" {
  type    = number
  default = null
}

check "one_of_node_count_or_cluster_size" {
  assert {
    condition     = !(var.node_count != null && var.cluster_size != 3)
    error_message = "Set node_count or cluster_size, not both."
  }
}
"#,
        item: "node_count",
        at: "variables.tf:7",
        bump: Bump::Minor,
    });
}

#[test]
fn a_rename_whose_alias_nothing_guards_is_major() {
    assert_case(Case {
        rule: "input-renamed-unguarded",
        old: "variable \"cluster_size\" {\n  type    = number\n  default = 3\n}\n",
        new: r#"variable "cluster_size" {
  type       = number
  default    = null
  deprecated = "Use node_count."
}

# stackpack:renamed-from = "cluster_size"
variable "node_count" {
  type    = number
  default = 3
}
"#,
        item: "node_count",
        at: "variables.tf:8",
        bump: Bump::Major,
    });
}

#[test]
fn a_type_narrowed_from_any_is_major() {
    assert_case(Case {
        rule: "type-narrowed",
        old: "variable \"tags\" {\n  type    = any\n  default = {}\n}\n",
        new: "variable \"tags\" {\n  type    = map(string)\n  default = {}\n}\n",
        item: "tags",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn an_optional_attribute_made_required_narrows_the_type() {
    assert_case(Case {
        rule: "type-narrowed",
        old: "variable \"cfg\" {\n  type = object({ a = optional(string) })\n}\n",
        new: "variable \"cfg\" {\n  type = object({ a = string })\n}\n",
        item: "cfg",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn a_type_widened_to_any_is_minor() {
    assert_case(Case {
        rule: "type-widened",
        old: "variable \"tags\" {\n  type    = map(string)\n  default = {}\n}\n",
        new: "variable \"tags\" {\n  type    = any\n  default = {}\n}\n",
        item: "tags",
        at: "variables.tf:1",
        bump: Bump::Minor,
    });
}

#[test]
fn a_new_optional_attribute_widens_the_type() {
    assert_case(Case {
        rule: "type-widened",
        old: "variable \"cfg\" {\n  type = object({ a = string })\n}\n",
        new: "variable \"cfg\" {\n  type = object({ a = string, b = optional(bool, false) })\n}\n",
        item: "cfg",
        at: "variables.tf:1",
        bump: Bump::Minor,
    });
}

#[test]
fn an_input_that_stops_accepting_null_is_major() {
    assert_case(Case {
        rule: "nullable-tightened",
        old: "variable \"size\" {\n  type    = number\n  default = 3\n}\n",
        new: "variable \"size\" {\n  type     = number\n  default  = 3\n  nullable = false\n}\n",
        item: "size",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn a_new_validation_is_major() {
    assert_case(Case {
            rule: "validation-added",
            old: "variable \"size\" {\n  type    = number\n  default = 3\n}\n",
            new: "variable \"size\" {\n  type    = number\n  default = 3\n\n  validation {\n    condition     = var.size <= 10\n    error_message = \"At most 10.\"\n  }\n}\n",
            item: "size",
            at: "variables.tf:5",
            bump: Bump::Major,
        });
}

#[test]
fn a_tightened_validation_is_major() {
    assert_case(Case {
            rule: "validation-added",
            // Tightened: the condition changed.
            old: "variable \"size\" {\n  type = number\n  validation {\n    condition     = var.size <= 10\n    error_message = \"At most 10.\"\n  }\n}\n",
            new: "variable \"size\" {\n  type = number\n  validation {\n    condition     = var.size <= 8\n    error_message = \"At most 8.\"\n  }\n}\n",
            item: "size",
            at: "variables.tf:3",
            bump: Bump::Major,
        });
}

#[test]
fn a_removed_output_is_major() {
    assert_case(Case {
        rule: "output-removed",
        old: "output \"id\" {\n  value = \"x\"\n}\n\noutput \"arn\" {\n  value = \"y\"\n}\n",
        new: "output \"id\" {\n  value = \"x\"\n}\n",
        item: "arn",
        at: "variables.tf:5",
        bump: Bump::Major,
    });
}

#[test]
fn an_output_made_sensitive_is_major() {
    assert_case(Case {
        rule: "output-sensitivity-changed",
        old: "output \"id\" {\n  value = \"x\"\n}\n",
        new: "output \"id\" {\n  value     = \"x\"\n  sensitive = true\n}\n",
        item: "id",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn an_added_output_is_minor() {
    assert_case(Case {
        rule: "output-added",
        old: "output \"id\" {\n  value = \"x\"\n}\n",
        new: "output \"id\" {\n  value = \"x\"\n}\n\noutput \"arn\" {\n  value = \"y\"\n}\n",
        item: "arn",
        at: "variables.tf:5",
        bump: Bump::Minor,
    });
}

#[test]
fn a_new_resource_kind_created_by_default_is_major() {
    assert_case(Case {
            rule: "resource-kind-added-by-default",
            old: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n",
            new: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n\nresource \"aws_route53_record\" \"this\" {\n  name = \"b\"\n}\n",
            item: "aws_route53_record",
            at: "variables.tf:5",
            bump: Bump::Major,
        });
}

#[test]
fn a_new_resource_kind_switched_on_through_a_local_is_major() {
    assert_case(Case {
            rule: "resource-kind-added-by-default",
            // On by default through a local and an existing input's default.
            old: "variable \"zones\" {\n  type    = list(string)\n  default = [\"a\"]\n}\n",
            new: "variable \"zones\" {\n  type    = list(string)\n  default = [\"a\"]\n}\n\nlocals {\n  dns = length(var.zones) > 0\n}\n\nresource \"aws_route53_zone\" \"this\" {\n  count = local.dns ? 1 : 0\n  name  = \"x\"\n}\n",
            item: "aws_route53_zone",
            at: "variables.tf:10",
            bump: Bump::Major,
        });
}

#[test]
fn a_new_resource_kind_behind_a_gate_that_is_off_is_minor() {
    assert_case(Case {
            rule: "resource-kind-added-gated",
            old: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n",
            new: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n\nvariable \"create_dns\" {\n  type    = bool\n  default = false\n}\n\nresource \"aws_route53_record\" \"this\" {\n  for_each = var.create_dns ? toset([\"a\"]) : toset([])\n  name     = each.key\n}\n",
            item: "aws_route53_record",
            at: "variables.tf:10",
            bump: Bump::Minor,
        });
}

#[test]
fn a_removed_resource_kind_is_major() {
    assert_case(Case {
            rule: "resource-kind-removed",
            old: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n\nresource \"aws_route53_record\" \"this\" {\n  name = \"b\"\n}\n",
            new: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n",
            item: "aws_route53_record",
            at: "variables.tf:5",
            bump: Bump::Major,
        });
}

#[test]
fn a_removed_resource_address_is_major() {
    assert_case(Case {
        rule: "resource-address-removed",
        old: "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n",
        new: "resource \"aws_s3_bucket\" \"main\" {\n  bucket = \"b\"\n}\n",
        item: "aws_s3_bucket.this",
        at: "variables.tf:1",
        bump: Bump::Major,
    });
}

#[test]
fn a_narrowed_engine_constraint_is_major() {
    assert_case(Case {
        rule: "engine-constraint-narrowed",
        old: "terraform {\n  required_version = \">= 1.0\"\n}\n",
        new: "terraform {\n  required_version = \">= 1.5.0\"\n}\n",
        item: "required_version",
        at: "variables.tf:2",
        bump: Bump::Major,
    });
}

#[test]
fn a_widened_engine_constraint_is_patch() {
    assert_case(Case {
        rule: "engine-constraint-widened",
        old: "terraform {\n  required_version = \"~> 1.5\"\n}\n",
        new: "terraform {\n  required_version = \">= 1.3, < 2.0\"\n}\n",
        item: "required_version",
        at: "variables.tf:2",
        bump: Bump::Patch,
    });
}

#[test]
fn a_narrowed_provider_constraint_is_major() {
    assert_case(Case {
            rule: "provider-constraint-narrowed",
            old: "terraform {\n  required_providers {\n    aws = {\n      source  = \"hashicorp/aws\"\n      version = \"~> 5.0\"\n    }\n  }\n}\n",
            new: "terraform {\n  required_providers {\n    aws = {\n      source  = \"hashicorp/aws\"\n      version = \">= 5.46, < 6.0\"\n    }\n  }\n}\n",
            item: "aws",
            at: "variables.tf:3",
            bump: Bump::Major,
        });
}

#[test]
fn a_widened_provider_constraint_is_patch() {
    assert_case(Case {
            rule: "provider-constraint-widened",
            old: "terraform {\n  required_providers {\n    aws = {\n      source  = \"hashicorp/aws\"\n      version = \">= 5.46, < 6.0\"\n    }\n  }\n}\n",
            new: "terraform {\n  required_providers {\n    aws = {\n      source  = \"hashicorp/aws\"\n      version = \">= 5.0, < 7.0\"\n    }\n  }\n}\n",
            item: "aws",
            at: "variables.tf:3",
            bump: Bump::Patch,
        });
}

#[test]
fn harmless_changes_are_patch() {
    let old = r#"variable "size" {
  type        = number
  default     = 3
  description = "How many."
}

variable "zones" {
  type    = set(string)
  default = ["b", "a"]
}

variable "kind" {
  type    = "list"
  default = []
}

terraform {
  required_version = "~> 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}

output "id" {
  value = var.size
}
"#;
    // Description edit, reordering, formatting, comments, the same default written
    // differently, the same type and constraints spelled differently.
    let new = r#"# Outputs first now.
output "id" {
  value = var.size # the size
}

terraform {
  required_version = ">= 1.5.0, < 2.0.0"
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0, < 6.0" }
  }
}

variable "kind" {
  type    = list(any)
  default = [ ]
}

/* zones, sorted */
variable "zones" {
  type    = set(string)
  default = ["a", "b", "a"]
}

variable "size" {
  description = "How many nodes to run."
  default     = "3"
  type        = number
}
"#;
    let report = compare(&[("main.tf", old)], &[("main.tf", new)]);
    assert_eq!(report.bump, Bump::Patch, "{:#?}", report.findings);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);

    // Moving a declaration to another file is also nothing.
    let report = compare(&[("main.tf", old)], &[("a.tf", new)]);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
}

#[test]
fn a_moved_block_keeps_a_renamed_resource() {
    let old = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let new = "resource \"aws_s3_bucket\" \"main\" {\n  bucket = \"b\"\n}\n\nmoved {\n  from = aws_s3_bucket.this\n  to   = aws_s3_bucket.main\n}\n";
    let report = compare(&[("main.tf", old)], &[("main.tf", new)]);
    assert_eq!(report.bump, Bump::Patch, "{:#?}", report.findings);
}

#[test]
fn rule_levels_are_configurable() {
    let table: toml::Table =
        toml::from_str("default-changed = \"minor\"\noutput-added = \"off\"").unwrap();
    let rules = RuleConfig::from_table(&table).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join("old"),
        &[("v.tf", "variable \"a\" {\n  default = 1\n}\n")],
    );
    write(
        &tmp.path().join("new"),
        &[(
            "v.tf",
            "variable \"a\" {\n  default = 2\n}\noutput \"o\" {\n  value = 1\n}\n",
        )],
    );
    let report = compare_dirs(
        &tmp.path().join("old"),
        &tmp.path().join("new"),
        DIR,
        &rules,
    )
    .unwrap();
    assert_eq!(report.bump, Bump::Minor);
    assert_eq!(report.findings.len(), 1);

    let bad: toml::Table = toml::from_str("default-changed = \"error\"").unwrap();
    assert!(RuleConfig::from_table(&bad)
        .unwrap_err()
        .contains("default-changed"));
    let unknown: toml::Table = toml::from_str("no-such-rule = \"off\"").unwrap();
    assert!(RuleConfig::from_table(&unknown).is_err());
}

#[test]
fn a_stack_feels_the_defaults_of_the_modules_it_uses() {
    let tmp = tempfile::tempdir().unwrap();
    let module_old = "variable \"size\" {\n  type    = number\n  default = 3\n}\nvariable \"name\" {\n  type    = string\n  default = \"a\"\n}\n";
    let module_new = "variable \"size\" {\n  type    = number\n  default = 4\n}\nvariable \"name\" {\n  type    = string\n  default = \"b\"\n}\n";
    let stack = "module \"m\" {\n  source = \"../../modules/m\"\n  name   = \"fixed\"\n}\n";
    for (side, module) in [("old", module_old), ("new", module_new)] {
        write(&tmp.path().join(side), &[("variables.tf", module)]);
        let s = tmp.path().join(side).join("stacks/s");
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("main.tf"), stack).unwrap();
    }
    let report = compare_dirs(
        &tmp.path().join("old"),
        &tmp.path().join("new"),
        "stacks/s",
        &RuleConfig::default(),
    )
    .unwrap();
    assert_eq!(report.bump, Bump::Major);
    let rules: Vec<(&str, &str, String)> = report
        .findings
        .iter()
        .map(|f| (f.rule.id(), f.item.as_str(), f.location()))
        .collect();
    // `size` is not set by the stack: its callers feel the change. `name` is set.
    assert_eq!(
        rules,
        vec![(
            "module-default-changed",
            "module.m.size",
            "modules/m/variables.tf:1".to_string()
        )]
    );
}

/// A stack `stacks/s` calling `modules/m`, before and after.
fn compare_stack(
    module_old: &str,
    module_new: &str,
    stack_old: &str,
    stack_new: &str,
) -> CheckReport {
    let tmp = tempfile::tempdir().unwrap();
    for (side, module, stack) in [
        ("old", module_old, stack_old),
        ("new", module_new, stack_new),
    ] {
        write(&tmp.path().join(side), &[("variables.tf", module)]);
        let s = tmp.path().join(side).join("stacks/s");
        std::fs::create_dir_all(&s).unwrap();
        std::fs::write(s.join("main.tf"), stack).unwrap();
    }
    compare_dirs(
        &tmp.path().join("old"),
        &tmp.path().join("new"),
        "stacks/s",
        &RuleConfig::default(),
    )
    .unwrap()
}

fn summary(report: &CheckReport) -> Vec<(String, String, String)> {
    report
        .findings
        .iter()
        .map(|f| (f.rule.to_string(), f.item.clone(), f.location()))
        .collect()
}

#[test]
fn module_changes_seen_through_the_calls_of_a_stack() {
    let stack = r#"variable "size" {
  type        = number
  default     = 2
  description = "Size."
}

module "m" {
  source = "../../modules/m"
  size   = var.size
}
"#;
    // A required input the stack does not set.
    let report = compare_stack(
        "variable \"size\" {\n  type = number\n}\n",
        "variable \"size\" {\n  type = number\n}\n\nvariable \"zone\" {\n  type = string\n}\n",
        stack,
        stack,
    );
    assert_eq!(report.bump, Bump::Major);
    assert_eq!(
        summary(&report),
        vec![(
            "module-input-required".into(),
            "module.m.zone".into(),
            "modules/m/variables.tf:5".into()
        )]
    );

    // A validation added on an input the stack passes through from its callers.
    let report = compare_stack(
        "variable \"size\" {\n  type = number\n}\n",
        "variable \"size\" {\n  type = number\n  validation {\n    condition     = var.size < 5\n    error_message = \"Small.\"\n  }\n}\n",
        stack,
        stack,
    );
    assert_eq!(report.bump, Bump::Major);
    assert_eq!(
        summary(&report),
        vec![(
            "module-input-narrowed".into(),
            "module.m.size".into(),
            "modules/m/variables.tf:1".into()
        )]
    );

    // The same validation on a value the stack fixes itself is its own business.
    let fixed = stack.replace("size   = var.size", "size   = 2");
    let report = compare_stack(
        "variable \"size\" {\n  type = number\n}\n",
        "variable \"size\" {\n  type = number\n  validation {\n    condition     = var.size < 5\n    error_message = \"Small.\"\n  }\n}\n",
        &fixed,
        &fixed,
    );
    assert_eq!(report.bump, Bump::Patch, "{:?}", summary(&report));

    // A resource gated by a module input: off by the module's default, but this stack
    // turns it on from its own default, so its callers get it.
    let module_old = "variable \"size\" {\n  type = number\n}\n";
    let module_new = "variable \"size\" {\n  type = number\n}\n\nresource \"aws_instance\" \"extra\" {\n  count = var.size > 1 ? 1 : 0\n}\n";
    let report = compare_stack(module_old, module_new, stack, stack);
    assert_eq!(
        summary(&report),
        vec![(
            "resource-kind-added-by-default".into(),
            "aws_instance".into(),
            "modules/m/variables.tf:5".into()
        )]
    );
    let small = stack.replace("default     = 2", "default     = 1");
    let report = compare_stack(module_old, module_new, &small, &small);
    assert_only(
        &report,
        "resource-kind-added-gated",
        "aws_instance",
        "variables.tf:5",
        Bump::Minor,
    );
}

#[test]
fn a_vendored_module_narrowing_its_constraints_narrows_the_stack() {
    let stack = "terraform {\n  required_version = \">= 1.3\"\n}\n\nmodule \"m\" {\n  source = \"../../modules/m\"\n}\n";
    let module = |engine: &str, aws: &str| {
        format!(
            "terraform {{\n  required_version = \"{engine}\"\n  required_providers {{\n    aws = {{\n      source  = \"hashicorp/aws\"\n      version = \"{aws}\"\n    }}\n  }}\n}}\n"
        )
    };
    // The provider: the stack says nothing, the module narrows.
    let report = compare_stack(
        &module(">= 1.0", ">= 5.0"),
        &module(">= 1.0", ">= 5.46"),
        stack,
        stack,
    );
    assert_only(
        &report,
        "provider-constraint-narrowed",
        "aws",
        "variables.tf:4",
        Bump::Major,
    );
    // The engine: the module now needs more than the stack's own `>= 1.3`.
    let report = compare_stack(
        &module(">= 1.0", ">= 5.0"),
        &module(">= 1.5", ">= 5.0"),
        stack,
        stack,
    );
    assert_eq!(
        summary(&report),
        vec![(
            "engine-constraint-narrowed".into(),
            "required_version".into(),
            "modules/m/variables.tf:2".into()
        )]
    );
    // Still within what the stack already requires: no change for its callers.
    let report = compare_stack(
        &module(">= 1.0", ">= 5.0"),
        &module(">= 1.2", ">= 5.0"),
        stack,
        stack,
    );
    assert_eq!(report.bump, Bump::Patch, "{:?}", summary(&report));
}

#[test]
fn a_resource_renamed_inside_a_vendored_module_is_destroyed_for_the_stack() {
    let stack = "module \"m\" {\n  source = \"../../modules/m\"\n}\n";
    let old = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let renamed = "resource \"aws_s3_bucket\" \"main\" {\n  bucket = \"b\"\n}\n";
    let report = compare_stack(old, renamed, stack, stack);
    assert_eq!(
        summary(&report),
        vec![(
            "resource-address-removed".into(),
            "aws_s3_bucket.this".into(),
            "modules/m/variables.tf:1".into()
        )]
    );
    let moved = format!(
        "{renamed}\nmoved {{\n  from = aws_s3_bucket.this\n  to   = aws_s3_bucket.main\n}}\n"
    );
    assert_eq!(compare_stack(old, &moved, stack, stack).bump, Bump::Patch);
}

// ---------------------------------------------------------------------------------
// Issue 17: what real releases do. Each case names its rule, file:line and bump.

/// The one finding of `rule` in `report`, as (item, file:line, bump).
fn only(report: &CheckReport, rule: &str) -> Vec<(String, String, Option<Bump>)> {
    report
        .findings
        .iter()
        .filter(|f| f.rule.id() == rule)
        .map(|f| (f.item.clone(), f.location(), f.bump))
        .collect()
}

/// The findings of `rule` are exactly one, on `item` at `file:line` (relative to
/// the module folder), needing `bump`.
fn assert_one(report: &CheckReport, rule: &str, item: &str, at: &str, bump: Bump) {
    assert_eq!(
        only(report, rule),
        vec![(item.to_string(), format!("{DIR}/{at}"), Some(bump))],
        "{:#?}",
        report.findings
    );
}

/// `report` holds exactly this one finding, and needs its bump.
fn assert_only(report: &CheckReport, rule: &str, item: &str, at: &str, bump: Bump) {
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    assert_one(report, rule, item, at, bump);
    assert_eq!(report.bump, bump);
}

#[test]
fn a_data_source_added_is_a_patch_with_a_note_on_permissions() {
    let old = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let new = format!("{old}\ndata \"aws_caller_identity\" \"current\" {{}}\n");
    let report = compare(&[("main.tf", old)], &[("main.tf", &new)]);
    assert_only(
        &report,
        "data-source-added",
        "data.aws_caller_identity",
        "main.tf:5",
        Bump::Patch,
    );
    assert!(
        report.findings[0].message.contains("permission"),
        "{}",
        report.findings[0].message
    );
}

#[test]
fn a_data_source_removed_or_renamed_destroys_nothing() {
    let old = "data \"aws_ami\" \"base\" {\n  most_recent = true\n}\n\ndata \"aws_region\" \"current\" {}\n";
    // One data source dropped, the other renamed with no `moved` block.
    let new = "data \"aws_ami\" \"ubuntu\" {\n  most_recent = true\n}\n";
    let report = compare(&[("main.tf", old)], &[("main.tf", new)]);
    assert_only(
        &report,
        "data-source-removed",
        "data.aws_region",
        "main.tf:5",
        Bump::Patch,
    );
}

#[test]
fn a_new_optional_attribute_with_a_default_is_an_added_optional_input_not_a_changed_default() {
    let old = "variable \"settings\" {\n  type = object({\n    a = string\n  })\n  default = { a = \"x\" }\n}\n";
    let new = "variable \"settings\" {\n  type = object({\n    a = string\n    b = optional(number, 1)\n  })\n  default = { a = \"x\" }\n}\n";
    let report = compare(&[("variables.tf", old)], &[("variables.tf", new)]);
    assert_only(
        &report,
        "type-widened",
        "settings",
        "variables.tf:1",
        Bump::Minor,
    );

    // The same seen by a stack that does not set the input.
    let stack = "module \"m\" {\n  source = \"../../modules/m\"\n}\n";
    let report = compare_stack(old, new, stack, stack);
    assert_eq!(only(&report, "module-default-changed"), vec![]);
    assert_eq!(report.bump, Bump::Patch, "{:?}", summary(&report));

    // A default that really changed still is one.
    let changed = new.replace("default = { a = \"x\" }", "default = { a = \"y\" }");
    let report = compare(&[("variables.tf", old)], &[("variables.tf", &changed)]);
    assert_one(
        &report,
        "default-changed",
        "settings",
        "variables.tf:1",
        Bump::Major,
    );
}

/// A module gated by `create_x`, called by a stack whose own input decides it.
fn gated_module(argument: &str) -> CheckReport {
    let module_old = "variable \"create_x\" {\n  type    = bool\n  default = true\n}\n";
    let module_new = format!(
        "{module_old}\nresource \"aws_kms_key\" \"x\" {{\n  count = var.create_x ? 1 : 0\n}}\n"
    );
    let stack = format!(
        "variable \"create_x\" {{\n  type    = bool\n  default = false\n}}\n\nvariable \"mode\" {{\n  type    = string\n  default = \"basic\"\n}}\n\nmodule \"m\" {{\n  source   = \"../../modules/m\"\n  create_x = {argument}\n}}\n"
    );
    compare_stack(module_old, &module_new, &stack, &stack)
}

#[test]
fn a_gate_passed_through_a_module_call_is_evaluated_in_the_callers_scope() {
    for argument in [
        "var.create_x",
        "\"${var.create_x}\"",
        "var.create_x && var.mode == \"full\"",
        "var.mode == \"full\" ? true : var.create_x",
    ] {
        let report = gated_module(argument);
        assert_eq!(
            summary(&report),
            vec![(
                "resource-kind-added-gated".into(),
                "aws_kms_key".into(),
                "modules/m/variables.tf:6".into()
            )],
            "argument `{argument}`"
        );
        assert_eq!(report.bump, Bump::Minor, "argument `{argument}`");
    }
    // The caller's defaults turn it on: created by default.
    let report = gated_module("var.mode == \"basic\"");
    assert_eq!(report.bump, Bump::Major, "{:?}", summary(&report));
    assert!(!report.findings[0]
        .message
        .contains("could not be evaluated"));
}

#[test]
fn a_vendored_module_dropping_an_input_the_stack_passes_is_an_error_of_the_stack() {
    let module_old = "variable \"size\" {\n  type    = number\n  default = 1\n}\n\nvariable \"zone\" {\n  type    = string\n  default = \"a\"\n}\n";
    let module_new = "variable \"size\" {\n  type    = number\n  default = 1\n}\n";
    let stack =
        "module \"m\" {\n  source = \"../../modules/m\"\n  size   = 2\n  zone   = \"b\"\n}\n";
    let report = compare_stack(module_old, module_new, stack, stack);
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| (f.rule.id(), f.item.as_str(), f.location(), f.bump))
        .collect();
    assert_eq!(
        errors,
        vec![(
            "module-argument-undeclared",
            "module.m.zone",
            "stacks/s/main.tf:1".to_string(),
            None
        )]
    );
    assert!(report.findings[0].message.contains("no longer declares"));
}

#[test]
fn a_resource_renamed_with_a_moved_block_is_a_patch_and_without_one_is_major() {
    let old = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let renamed = "resource \"aws_s3_bucket\" \"main\" {\n  bucket = \"b\"\n}\n";
    let report = compare(&[("main.tf", old)], &[("main.tf", renamed)]);
    assert_one(
        &report,
        "resource-address-removed",
        "aws_s3_bucket.this",
        "main.tf:1",
        Bump::Major,
    );
    let moved = format!(
        "{renamed}\nmoved {{\n  from = aws_s3_bucket.this\n  to   = aws_s3_bucket.main\n}}\n"
    );
    let report = compare(&[("main.tf", old)], &[("main.tf", &moved)]);
    assert!(report.findings.is_empty(), "{:?}", summary(&report));
    assert_eq!(report.bump, Bump::Patch);
}

#[test]
fn a_resource_moved_into_a_submodule_without_a_moved_block_is_destroyed() {
    let tmp = tempfile::tempdir().unwrap();
    let bucket = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let call = "module \"store\" {\n  source = \"./store\"\n}\n";
    write(&tmp.path().join("old"), &[("main.tf", bucket)]);
    write(&tmp.path().join("new"), &[("main.tf", call)]);
    let store = tmp.path().join("new").join(DIR).join("store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("main.tf"), bucket).unwrap();
    let check = |tmp: &Path| {
        compare_dirs(
            &tmp.join("old"),
            &tmp.join("new"),
            DIR,
            &RuleConfig::default(),
        )
        .unwrap()
    };
    let report = check(tmp.path());
    assert_one(
        &report,
        "resource-address-removed",
        "aws_s3_bucket.this",
        "main.tf:1",
        Bump::Major,
    );
    std::fs::write(
        tmp.path().join("new").join(DIR).join("main.tf"),
        format!("{call}\nmoved {{\n  from = aws_s3_bucket.this\n  to   = module.store.aws_s3_bucket.this\n}}\n"),
    )
    .unwrap();
    assert_eq!(check(tmp.path()).bump, Bump::Patch);
}

#[test]
fn a_removed_block_destroys_or_forgets_and_either_is_major() {
    let old = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n\nresource \"aws_s3_bucket\" \"logs\" {\n  bucket = \"l\"\n}\n";
    let kept = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let destroyed = format!("{kept}\nremoved {{\n  from = aws_s3_bucket.logs\n}}\n");
    let report = compare(&[("main.tf", old)], &[("main.tf", &destroyed)]);
    assert_one(
        &report,
        "resource-address-removed",
        "aws_s3_bucket.logs",
        "main.tf:5",
        Bump::Major,
    );
    let forgotten = format!(
        "{kept}\nremoved {{\n  from = aws_s3_bucket.logs\n\n  lifecycle {{\n    destroy = false\n  }}\n}}\n"
    );
    let report = compare(&[("main.tf", old)], &[("main.tf", &forgotten)]);
    assert_only(
        &report,
        "resource-forgotten",
        "aws_s3_bucket.logs",
        "main.tf:5",
        Bump::Major,
    );
}

#[test]
fn an_engine_constraint_where_there_was_none_is_major() {
    assert_case(Case {
        rule: "engine-constraint-narrowed",
        old: "variable \"x\" {\n  type = string\n}\n",
        new: "variable \"x\" {\n  type = string\n}\n\nterraform {\n  required_version = \">= 1.3\"\n}\n",
        item: "required_version",
        at: "variables.tf:6",
        bump: Bump::Major,
    });
}

#[test]
fn a_provider_constraint_where_there_was_none_is_major() {
    // The release used `aws` through its resources alone: every version was allowed.
    let old = "resource \"aws_s3_bucket\" \"this\" {\n  bucket = \"b\"\n}\n";
    let new = format!(
        "terraform {{\n  required_providers {{\n    aws = {{\n      source  = \"hashicorp/aws\"\n      version = \"~> 5.0\"\n    }}\n  }}\n}}\n\n{old}"
    );
    let report = compare(&[("main.tf", old)], &[("main.tf", &new)]);
    assert_only(
        &report,
        "provider-constraint-narrowed",
        "aws",
        "main.tf:3",
        Bump::Major,
    );
    // A provider the release did not use at all is new, not narrowed.
    let report = compare(
        &[("main.tf", old)],
        &[(
            "main.tf",
            &format!(
                "terraform {{\n  required_providers {{\n    random = \"~> 3.0\"\n  }}\n}}\n\n{old}"
            ),
        )],
    );
    assert_eq!(only(&report, "provider-constraint-narrowed"), vec![]);
}

/// Compares two versions of `variables.tf`: exactly one finding, with this rule,
/// item and `file:line`, and this bump.
fn assert_single(old: &str, new: &str, rule: &str, item: &str, at: &str, bump: Bump) {
    let report = compare(&[("variables.tf", old)], &[("variables.tf", new)]);
    assert_eq!(
        summary(&report),
        vec![(rule.to_string(), item.to_string(), format!("{DIR}/{at}"))],
        "{old} → {new}"
    );
    assert_eq!(report.bump, bump, "{old} → {new}");
}

#[test]
fn sensitive_and_ephemeral_changes_on_an_input_are_flagged() {
    let input = |flags: &str| format!("variable \"token\" {{\n  type = string\n{flags}}}\n");
    let cases = [
        (
            "",
            "  sensitive = true\n",
            "input-sensitive-added",
            Bump::Minor,
        ),
        (
            "  sensitive = true\n",
            "",
            "input-sensitive-removed",
            Bump::Major,
        ),
        (
            "",
            "  ephemeral = true\n",
            "input-ephemeral-changed",
            Bump::Major,
        ),
        (
            "  ephemeral = true\n",
            "",
            "input-ephemeral-changed",
            Bump::Major,
        ),
    ];
    for (before, after, rule, bump) in cases {
        assert_single(
            &input(before),
            &input(after),
            rule,
            "token",
            "variables.tf:1",
            bump,
        );
    }
}

#[test]
fn a_validation_that_only_relaxes_is_minor_and_anything_unproven_stays_major() {
    let input = |condition: &str| {
        format!(
            "variable \"n\" {{\n  type = number\n  validation {{\n    condition     = {condition}\n    error_message = \"Bad.\"\n  }}\n}}\n"
        )
    };
    let cases = [
        (
            "var.n < 10",
            "var.n < 20",
            "validation-relaxed",
            Bump::Minor,
        ),
        (
            "var.n >= 3",
            "var.n >= 1",
            "validation-relaxed",
            Bump::Minor,
        ),
        (
            "var.n > 0 && var.n < 10",
            "var.n > 0",
            "validation-relaxed",
            Bump::Minor,
        ),
        (
            "var.n < 10",
            "var.n < 10 || var.n == 99",
            "validation-relaxed",
            Bump::Minor,
        ),
        (
            "contains([1, 2], var.n)",
            "contains([1, 2, 3], var.n)",
            "validation-relaxed",
            Bump::Minor,
        ),
        ("var.n < 10", "var.n < 5", "validation-added", Bump::Major),
        ("var.n < 10", "var.n <= 10", "validation-added", Bump::Major),
        (
            "var.n > 0",
            "var.n > 0 && var.n < 10",
            "validation-added",
            Bump::Major,
        ),
        (
            "contains([1, 2], var.n)",
            "contains([1, 3], var.n)",
            "validation-added",
            Bump::Major,
        ),
    ];
    for (before, after, rule, bump) in cases {
        assert_single(
            &input(before),
            &input(after),
            rule,
            "n",
            "variables.tf:3",
            bump,
        );
    }
}

#[test]
fn an_unreadable_file_in_the_last_release_is_compared_leniently_and_said() {
    let broken = "locals {\n  tags = {\n    a = 1\n  \n";
    let old = [
        ("variables.tf", "variable \"a\" {\n  type = string\n}\n"),
        ("broken.tf", broken),
    ];
    let new = [
        ("variables.tf", "variable \"a\" {\n  type = string\n}\n\nvariable \"b\" {\n  type    = string\n  default = \"x\"\n}\n"),
        ("broken.tf", "locals {\n  tags = {}\n}\n"),
    ];
    let report = compare(&old, &new);
    assert_only(
        &report,
        "input-added-with-default",
        "b",
        "variables.tf:5",
        Bump::Minor,
    );
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("`modules/m/broken.tf:")
                && w.contains("of the last release cannot be read")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn an_unreadable_file_is_an_error_when_it_changed_and_a_warning_when_it_did_not() {
    let broken = "variable \"a\" {\n  type = string\n}\n\nvariable \"b\" {\n  default = {\n";
    let old = [("variables.tf", "variable \"a\" {\n  type = string\n}\n")];
    let report = compare(&old, &[("variables.tf", broken)]);
    let errors: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| (f.rule.id(), f.file.as_str(), f.bump))
        .collect();
    assert_eq!(
        errors,
        vec![("unreadable-file", "modules/m/variables.tf", None)],
        "{:#?}",
        report.findings
    );
    assert!(report.findings[0].line >= 6, "{:#?}", report.findings);

    // Broken the same way in the release and now: left out of both sides.
    let same = [("variables.tf", old[0].1), ("extra.tf", broken)];
    let report = compare(&same, &same);
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert_eq!(report.bump, Bump::Patch);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("`modules/m/extra.tf:") && w.contains("as in the last release")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn a_minor_release_of_a_large_multi_file_module_with_submodules() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/platform");
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    for side in [&old, &new] {
        common::copy_dir(&fixture.join("v1"), side);
    }
    common::copy_dir(&fixture.join("v2"), &new);
    let report = compare_dirs(&old, &new, "modules/platform", &RuleConfig::default()).unwrap();
    let found: Vec<(String, String, String, Option<Bump>)> = report
        .findings
        .iter()
        .map(|f| (f.rule.to_string(), f.item.clone(), f.location(), f.bump))
        .collect();
    let expected = [
        (
            "output-added",
            "role_name",
            "modules/platform/iam.tf.json:15",
            Bump::Minor,
        ),
        (
            "data-source-added",
            "data.aws_availability_zones",
            "modules/platform/network/main.tf:27",
            Bump::Patch,
        ),
        (
            "resource-kind-added-gated",
            "aws_launch_template",
            "modules/platform/nodes/main.tf:46",
            Bump::Minor,
        ),
        (
            "type-widened",
            "vpc",
            "modules/platform/variables.tf:12",
            Bump::Minor,
        ),
        (
            "input-added-with-default",
            "enable_ipv6_dns",
            "modules/platform/variables.tf:60",
            Bump::Minor,
        ),
    ]
    .map(|(rule, item, at, bump)| {
        (
            rule.to_string(),
            item.to_string(),
            at.to_string(),
            Some(bump),
        )
    });
    assert_eq!(found, expected, "{:#?}", report.findings);
    assert_eq!(report.bump, Bump::Minor);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// An HCL1-era line HCL2 refuses (two arguments on one line of a block), as real
/// modules from that time hold.
const HCL1_ERA: &str = "variable \"zones\" {\n  type = list(string)\n}\n\nvariable \"legacy\" { default = {} type = \"map\" }\n";

#[test]
fn a_broken_module_blocks_only_the_stacks_that_use_it_in_every_command() {
    let repo = common::TestRepo::new();
    let first = repo.build(&[]);
    assert_eq!(common::TestRepo::built(&first).len(), 6, "{first}");
    // `gpu-pool` is used by `data-plane` and `gpu-pools` only; `control-plane` gains
    // an output.
    repo.write("modules/gpu-pool/legacy.tf", HCL1_ERA);
    repo.append(
        "stacks/control-plane/main.tf",
        "\noutput \"stack_name\" {\n  value = \"control-plane\"\n}\n",
    );
    repo.commit("a broken module, and an unrelated change");
    let at = "modules/gpu-pool/legacy.tf:5";

    // The unrelated stack still builds, versioned by its own change.
    let built = repo.build(&["--stack", "control-plane"]);
    assert_eq!(
        common::TestRepo::built(&built),
        vec![("control-plane".to_string(), "0.2.0".to_string())]
    );

    // A stack that uses the module is refused, naming the file and line, by
    // `version` and `build` alike (and so `publish`, which plans the same way).
    for command in [
        vec!["version"],
        vec!["build", "--key", repo.key.to_str().unwrap()],
    ] {
        let run = repo.run(&command);
        assert_eq!(run.code, 1, "{command:?}: {}", run.stderr);
        // The first refused stack stops the command.
        assert!(
            run.stderr.contains("data-plane") && run.stderr.contains(at),
            "{command:?}: {}",
            run.stderr
        );
    }

    // `check` reports every unit: the broken one as an error (never `patch`), the
    // others as usual; exit 1.
    let run = repo.run(&["check", "--against", "HEAD~1", "--no-lint", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let output: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let unit = |path: &str| {
        output["units"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["path"] == path)
            .unwrap_or_else(|| panic!("no unit `{path}` in {output}"))
            .clone()
    };
    let control = unit("stacks/control-plane");
    assert_eq!(control["required"], "minor", "{control}");
    assert_eq!(control["refused"], false, "{control}");
    for path in ["stacks/data-plane", "stacks/gpu-pools", "modules/gpu-pool"] {
        let broken = unit(path);
        assert_eq!(broken["refused"], true, "{broken}");
        let findings = broken["findings"].as_array().unwrap();
        assert_eq!(findings.len(), 1, "{broken}");
        assert_eq!(findings[0]["rule"], "unreadable-file");
        assert_eq!(findings[0]["severity"], "error");
        assert_eq!(
            format!(
                "{}:{}",
                findings[0]["file"].as_str().unwrap(),
                findings[0]["line"]
            ),
            at
        );
    }
    let human = repo.run(&["check", "--against", "HEAD~1", "--no-lint"]);
    assert_eq!(human.code, 1);
    for path in ["stacks/data-plane", "stacks/gpu-pools"] {
        let row: Vec<&str> = human
            .stdout
            .lines()
            .find(|l| l.starts_with("stack ") && l.split_whitespace().nth(1) == Some(path))
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(row, ["stack", path, "error", "-"], "{}", human.stdout);
    }
    let github = repo.run(&[
        "check",
        "--against",
        "HEAD~1",
        "--no-lint",
        "--format",
        "github",
    ]);
    assert!(
        github
            .stdout
            .lines()
            .any(|l| l.starts_with("::error file=modules/gpu-pool/legacy.tf,line=5,")),
        "{}",
        github.stdout
    );
}

#[test]
fn publish_refuses_the_stack_a_broken_module_blocks_and_still_publishes_the_others() {
    let registry = common::servers::Distribution::require();
    let repo = common::TestRepo::new();
    let target = format!("{}/acme", registry.host());
    let publish = |extra: &[&str]| {
        let mut args = vec![
            "publish",
            "--json",
            "--insecure",
            "--registry",
            &target,
            "--key",
            repo.key.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        repo.run(&args)
    };
    publish(&[]).ok();
    repo.write("modules/gpu-pool/legacy.tf", HCL1_ERA);
    repo.append(
        "stacks/control-plane/main.tf",
        "\noutput \"stack_name\" {\n  value = \"control-plane\"\n}\n",
    );
    repo.commit("a broken module, and an unrelated change");

    let refused = publish(&[]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("data-plane")
            && refused.stderr.contains("modules/gpu-pool/legacy.tf:5"),
        "{}",
        refused.stderr
    );
    let control = publish(&["--stack", "control-plane"]).ok().json();
    let versions: Vec<(&str, &str)> = control["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["published"] == true)
        .map(|s| (s["stack"].as_str().unwrap(), s["version"].as_str().unwrap()))
        .collect();
    assert_eq!(versions, vec![("control-plane", "0.2.0")], "{control}");
}
