//! The classes of release a reading of real module histories found misjudged, each as
//! a module in the shape of the community module it was seen in: constraints
//! narrowed in `versions.tf` or in a used submodule, object attributes narrowed deep
//! inside collections, releases that touch only what the engine never reads, and
//! untyped inputs (`any`, as Terraform reads them).

use stackpack_packager::check::CheckReport;
use stackpack_schema::version::Bump;

use crate::rules::compare;

/// `rule item file:line bump` of every finding.
fn summary(report: &CheckReport) -> Vec<String> {
    report
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {} {}",
                f.rule,
                f.item,
                f.location(),
                f.bump.map_or("-".to_string(), |b| b.to_string())
            )
        })
        .collect()
}

fn versions_tf(aws: &str) -> String {
    format!(
        r#"terraform {{
  required_version = ">= 1.0"

  required_providers {{
    aws = {{
      source  = "hashicorp/aws"
      version = "{aws}"
    }}
  }}
}}
"#
    )
}

const ROOT_MAIN: &str = r#"module "db_instance" {
  source = "./modules/db_instance"

  identifier = var.identifier
}
"#;

const VARIABLES: &str = r#"variable "identifier" {
  description = "The name of the RDS instance"
  type        = string
}
"#;

const INSTANCE: &str = r#"variable "identifier" {
  description = "The name of the RDS instance"
  type        = string
}

resource "aws_db_instance" "this" {
  identifier     = var.identifier
  instance_class = "db.t3.micro"
}
"#;

/// The RDS module's layout: root, a used submodule with its own `versions.tf`, a
/// submodule no one calls, examples and wrappers.
fn rds(root_aws: &str, instance_aws: &str, unused_aws: &str) -> Vec<(&'static str, String)> {
    vec![
        ("versions.tf", versions_tf(root_aws)),
        ("main.tf", ROOT_MAIN.to_string()),
        ("variables.tf", VARIABLES.to_string()),
        ("modules/db_instance/versions.tf", versions_tf(instance_aws)),
        ("modules/db_instance/main.tf", INSTANCE.to_string()),
        (
            "modules/db_option_group/versions.tf",
            versions_tf(unused_aws),
        ),
        (
            "modules/db_option_group/main.tf",
            "resource \"aws_db_option_group\" \"this\" {\n  engine_name = \"mysql\"\n}\n"
                .to_string(),
        ),
    ]
}

fn borrowed<'a>(files: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    files.iter().map(|(n, t)| (*n, t.as_str())).collect()
}

#[test]
fn a_provider_constraint_narrowed_in_the_root_versions_tf_is_major() {
    let old = rds(">= 4.47", ">= 4.47", ">= 4.47");
    let new = rds(">= 4.57", ">= 4.47", ">= 4.47");
    let report = compare(&borrowed(&old), &borrowed(&new));
    assert_eq!(
        summary(&report),
        ["provider-constraint-narrowed aws modules/m/versions.tf:5 major"]
    );
    assert_eq!(report.bump, Bump::Major);
}

#[test]
fn a_provider_constraint_narrowed_in_a_used_submodule_is_major_and_in_an_unused_one_is_nothing() {
    let old = rds(">= 4.47", ">= 4.47", ">= 4.47");
    let used = rds(">= 4.47", ">= 4.57", ">= 4.47");
    let report = compare(&borrowed(&old), &borrowed(&used));
    assert_eq!(
        summary(&report),
        ["provider-constraint-narrowed aws modules/m/modules/db_instance/versions.tf:5 major"]
    );
    let unused = rds(">= 4.47", ">= 4.47", ">= 5.0");
    let report = compare(&borrowed(&old), &borrowed(&unused));
    assert_eq!(summary(&report), Vec::<String>::new());
    assert_eq!(report.bump, Bump::Patch);
}

#[test]
fn required_version_narrowed_is_major() {
    let old = rds(">= 4.47", ">= 4.47", ">= 4.47");
    let mut new = old.clone();
    new[0].1 = new[0].1.replace(
        "required_version = \">= 1.0\"",
        "required_version = \">= 1.3\"",
    );
    let report = compare(&borrowed(&old), &borrowed(&new));
    assert_eq!(
        summary(&report),
        ["engine-constraint-narrowed required_version modules/m/versions.tf:2 major"]
    );
}

#[test]
fn a_release_of_docs_examples_tests_and_ci_files_only_is_patch() {
    let old = rds(">= 4.47", ">= 4.47", ">= 4.47");
    let mut new = old.clone();
    new.extend([
        ("README.md", "# RDS\n\n```hcl\nmodule \"db\" {\n  password = \"YourPwdShouldBeLongAndSecure!\"\n}\n```\n".to_string()),
        ("UPGRADE-6.0.md", "# Upgrade\n\n`>= 5.0` of the provider is required.\n".to_string()),
        ("examples/complete/main.tf", "module \"db\" {\n  source     = \"../../\"\n  identifier = \"demo\"\n}\n\nvariable \"extra\" {}\n".to_string()),
        ("wrappers/main.tf", "module \"wrapper\" {\n  source   = \"../\"\n  for_each = var.items\n  identifier = each.value.identifier\n}\n\nvariable \"items\" {\n  type = any\n}\n".to_string()),
        ("test/fixtures/main.tf", "terraform {\n  required_version = \">= 1.9\"\n}\n".to_string()),
        (".github/workflows/ci.yml", "on: push\n".to_string()),
        (".pre-commit-config.yaml", "repos: []\n".to_string()),
    ]);
    let report = compare(&borrowed(&old), &borrowed(&new));
    assert_eq!(summary(&report), Vec::<String>::new());
    assert_eq!(report.bump, Bump::Patch);
}

fn typed(ty: &str) -> String {
    format!(
        "variable \"identifier\" {{\n  description = \"x\"\n  type        = string\n}}\n\nvariable \"pools\" {{\n  description = \"Pools.\"\n  type = {ty}\n  default = null\n}}\n"
    )
}

fn compare_types(old: &str, new: &str) -> CheckReport {
    let base = rds(">= 4.47", ">= 4.47", ">= 4.47");
    let mut before = base.clone();
    before[2].1 = typed(old);
    let mut after = base;
    after[2].1 = typed(new);
    compare(&borrowed(&before), &borrowed(&after))
}

#[test]
fn an_attribute_narrowed_deep_inside_collections_is_major() {
    let narrowed = [
        // `optional(string)` → `optional(number)` inside `list(object)`.
        (
            "list(object({ name = string, size = optional(string) }))",
            "list(object({ name = string, size = optional(number) }))",
        ),
        // Made required inside `map(object)`.
        (
            "map(object({ name = string, size = optional(number) }))",
            "map(object({ name = string, size = number }))",
        ),
        // Two levels down, inside `set(object({ rules = list(object) }))`.
        (
            "set(object({ rules = list(object({ port = optional(string) })) }))",
            "set(object({ rules = list(object({ port = optional(number) })) }))",
        ),
        // An element of a `tuple`.
        (
            "tuple([string, object({ size = optional(string) })])",
            "tuple([string, object({ size = optional(bool) })])",
        ),
    ];
    for (old, new) in narrowed {
        let report = compare_types(old, new);
        assert_eq!(
            summary(&report),
            ["type-narrowed pools modules/m/variables.tf:6 major"],
            "{old} → {new}"
        );
    }
}

#[test]
fn an_optional_attribute_added_deep_inside_collections_is_minor() {
    let widened = [
        (
            "list(object({ name = string }))",
            "list(object({ name = string, size = optional(number) }))",
        ),
        (
            "map(object({ rules = list(object({ port = number })) }))",
            "map(object({ rules = list(object({ port = number, cidr = optional(string, \"0.0.0.0/0\") })) }))",
        ),
        (
            "tuple([string, object({ a = string })])",
            "tuple([string, object({ a = string, b = optional(bool) })])",
        ),
    ];
    for (old, new) in widened {
        let report = compare_types(old, new);
        assert_eq!(
            summary(&report),
            ["type-widened pools modules/m/variables.tf:6 minor"],
            "{old} → {new}"
        );
    }
    // Only the spelling changed: attribute order, `map` for `map(any)`.
    let report = compare_types(
        "list(object({ b = optional(number), a = string }))",
        "list(object({ a = string, b = optional(number) }))",
    );
    assert_eq!(summary(&report), Vec::<String>::new());
}

/// Terraform 0.11-era inputs (terraform-aws-vpc v1.x): no `type`, so every value is
/// accepted (`any`), and the default is what callers who never set it get.
#[test]
fn untyped_inputs_compare_as_any() {
    let vpc = |extra: &str, name_default: &str| {
        format!(
            "variable \"identifier\" {{\n  description = \"x\"\n  type = string\n}}\n\nvariable \"name\" {{\n  description = \"Name to be used on all the resources as identifier\"\n  default     = \"{name_default}\"\n}}\n\nvariable \"azs\" {{\n  description = \"A list of availability zones in the region\"\n  default     = []\n}}\n{extra}"
        )
    };
    let base = rds(">= 4.47", ">= 4.47", ">= 4.47");
    let with = |text: String| {
        let mut files = base.clone();
        files[2].1 = text;
        files
    };
    let old = with(vpc("", ""));
    // A description reworded, an untyped input added with a default.
    let new = with(
        vpc(
            "\nvariable \"tags\" {\n  description = \"A map of tags to add to all resources\"\n  default     = {}\n}\n",
            "",
        )
        .replace("used on all the resources", "used on every resource"),
    );
    let report = compare(&borrowed(&old), &borrowed(&new));
    assert_eq!(
        summary(&report),
        ["input-added-with-default tags modules/m/variables.tf:16 minor"]
    );
    // Still untyped, default changed: callers who never set it get another plan.
    let report = compare(&borrowed(&old), &borrowed(&with(vpc("", "vpc"))));
    assert_eq!(
        summary(&report),
        ["default-changed name modules/m/variables.tf:6 major"]
    );
    // A type given where there was none: `any` → `list(string)` narrows.
    let typed_azs = vpc("", "").replace(
        "default     = []",
        "type        = list(string)\n  default     = []",
    );
    let report = compare(&borrowed(&old), &borrowed(&with(typed_azs)));
    assert_eq!(
        summary(&report),
        ["type-narrowed azs modules/m/variables.tf:11 major"]
    );
}

/// terraform-aws-eks v19.16.0 → v19.17.0: the root's `aws` went from `>= 4.47` to
/// `>= 4.57`, but the self-managed node group it always calls already required
/// `>= 4.57`, so Terraform already refused every older provider: nothing a caller
/// could use before is refused now. Patch, and the report says why.
#[test]
fn a_root_narrowing_that_a_used_submodule_already_required_is_patch_and_said() {
    let old = rds(">= 4.47", ">= 4.57", ">= 4.47");
    let new = rds(">= 4.57", ">= 4.57", ">= 4.47");
    let report = compare(&borrowed(&old), &borrowed(&new));
    assert_eq!(summary(&report), Vec::<String>::new());
    assert_eq!(report.bump, Bump::Patch);
    assert_eq!(
        report.warnings,
        ["`modules/m/versions.tf:5`: provider `aws` constraint narrowed from `>= 4.47` to `>= 4.57` here, but the modules of `modules/m` together already required `>= 4.47, >= 4.57`: no version allowed before is refused now (patch)"]
    );
}

/// `check --json` says why, in one read: each finding that decided the bump with its
/// rule, item, `file:line`, and the values before and after.
#[test]
fn check_json_names_every_finding_that_decided_the_bump_with_before_and_after() {
    let repo = crate::common::TestRepo::new();
    let versions = "modules/network/versions.tf";
    let text = std::fs::read_to_string(repo.dir.join(versions)).unwrap();
    repo.write(versions, &text.replace(">= 3.39, < 4.0", ">= 3.50, < 4.0"));
    repo.append(
        "modules/network/variables.tf",
        "\nvariable \"flow_logs\" {\n  description = \"Flow logs.\"\n  type        = bool\n  default     = false\n}\n",
    );
    repo.commit("newer provider, flow logs");
    let run = repo.run(&["check", "--json", "--against", "HEAD~1", "--no-lint"]);
    let json = run.json();
    let unit = json["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == "modules/network")
        .unwrap_or_else(|| panic!("{json:#}"));
    assert_eq!(unit["required"], "major", "{unit:#}");
    let decisive: Vec<&serde_json::Value> = unit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["decisive"] == true)
        .collect();
    assert_eq!(decisive.len(), 1, "{unit:#}");
    let f = decisive[0];
    assert_eq!(f["rule"], "provider-constraint-narrowed");
    assert_eq!(f["item"], "aws");
    assert_eq!(f["file"], versions);
    assert_eq!(f["line"], 3);
    assert_eq!(f["bump"], "major");
    assert_eq!(f["before"], ">= 3.39, < 4.0");
    assert_eq!(f["after"], ">= 3.50, < 4.0");
    // The minor finding is listed too, but did not decide.
    let added = unit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "input-added-with-default")
        .unwrap_or_else(|| panic!("{unit:#}"));
    assert!(added.get("decisive").is_none(), "{added:#}");
}
