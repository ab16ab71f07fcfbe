//! End to end on the example repository: a temporary git repository copied from
//! `examples/acme-infra`, real commits, and `check::required_bump` against the commit
//! before each change. Then the lints on the same repository.

use std::path::Path;

use stackpack_packager::check::{
    self, lint, required_bump, LintOptions, RuleConfig, Severity, Unit, UnitKind,
};
use stackpack_schema::version::Bump;

use crate::acme;

use acme::{git, Repo};

#[test]
fn adding_an_input_with_a_default_is_minor() {
    let repo = Repo::new();
    repo.edit("stacks/data-plane/variables.tf", |t| {
        t + "\nvariable \"enable_flow_logs\" {\n  type        = bool\n  default     = false\n  description = \"Record VPC flow logs.\"\n}\n"
    });
    let before = repo.commit("add enable_flow_logs");
    let (bump, findings) = repo.bump("stacks/data-plane", &before);
    assert_eq!(bump, Bump::Minor, "{findings:?}");
    assert_eq!(
        findings,
        vec!["input-added-with-default enable_flow_logs stacks/data-plane/variables.tf:48"]
    );
    // The other stack did not change at all.
    assert_eq!(repo.bump("stacks/control-plane", &before).0, Bump::Patch);
}

#[test]
fn a_vendor_repository_inside_a_larger_git_repository() {
    let repo = Repo::nested();
    let first = git(&repo.root, &["rev-parse", "HEAD"]);
    repo.edit("stacks/control-plane/variables.tf", |t| {
        t.replace("\"10.100.0.0/16\"", "\"10.200.0.0/16\"")
    });
    assert_eq!(
        check::changed_files(&repo.root, &first).unwrap(),
        vec!["stacks/control-plane/variables.tf"]
    );
    let (bump, findings) = repo.bump("stacks/control-plane", &first);
    assert_eq!(bump, Bump::Major);
    assert_eq!(
        findings,
        vec!["default-changed vpc_cidr stacks/control-plane/variables.tf:16"]
    );
}

#[test]
fn changing_a_default_is_major() {
    let repo = Repo::new();
    repo.edit("stacks/control-plane/variables.tf", |t| {
        t.replace("\"10.100.0.0/16\"", "\"10.200.0.0/16\"")
    });
    let before = repo.commit("move the control plane range");
    let (bump, findings) = repo.bump("stacks/control-plane", &before);
    assert_eq!(bump, Bump::Major);
    assert_eq!(
        findings,
        vec!["default-changed vpc_cidr stacks/control-plane/variables.tf:16"]
    );

    // A module default that no stack sets is a major change for both stacks.
    repo.edit("modules/cluster/variables.tf", |t| {
        t.replace("default     = 3", "default     = 5")
    });
    let before = repo.commit("bigger system node group");
    for stack in ["stacks/data-plane", "stacks/control-plane"] {
        let (bump, findings) = repo.bump(stack, &before);
        assert_eq!(bump, Bump::Major, "{stack}");
        assert_eq!(
            findings,
            vec!["module-default-changed module.cluster.system_node_count modules/cluster/variables.tf:26"],
            "{stack}"
        );
    }
    // Checked on its own, the module itself needs a major release too.
    assert_eq!(repo.bump("modules/cluster", &before).0, Bump::Major);
}

#[test]
fn renaming_with_a_deprecated_alias_is_minor() {
    let repo = Repo::new();
    repo.edit("stacks/data-plane/variables.tf", |t| {
        t.replace(
            "variable \"gpu_families\" {\n  type        = list(string)\n  default     = []\n  description = \"GPU families to offer.\"\n}",
            r#"variable "gpu_families" {
  type        = list(string)
  default     = null
  description = "Deprecated: use `gpu_types`."
  deprecated  = "Renamed to gpu_types."
}

# stackpack:renamed-from = "gpu_families"
variable "gpu_types" {
  type        = list(string)
  default     = []
  description = "GPU families to offer."

  validation {
    condition     = var.gpu_families == null || length(var.gpu_types) == 0
    error_message = "Set gpu_types or gpu_families, not both."
  }
}"#,
        )
    });
    repo.edit("stacks/data-plane/main.tf", |t| {
        t.replace(
            "gpu_families = var.gpu_families",
            "gpu_families = coalesce(var.gpu_families, var.gpu_types)",
        )
    });
    let before = repo.commit("rename gpu_families to gpu_types");
    let (bump, findings) = repo.bump("stacks/data-plane", &before);
    assert_eq!(bump, Bump::Minor, "{findings:?}");
    assert_eq!(
        findings,
        vec!["input-renamed-with-alias gpu_types stacks/data-plane/variables.tf:45"]
    );

    // The next major release must drop the alias: keeping it past one major warns.
    repo.edit("stacks/data-plane/variables.tf", |t| {
        t.replace(
            "default     = [\"a\", \"b\", \"c\"]",
            "default     = [\"a\", \"b\"]",
        )
    });
    let before = repo.commit("two zones by default");
    let report = required_bump(&repo.root, "stacks/data-plane", &before).unwrap();
    assert_eq!(report.bump, Bump::Major);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains("`gpu_families`"));

    // Without the alias, the rename is a removal.
    let repo = Repo::new();
    repo.edit("stacks/data-plane/variables.tf", |t| {
        t.replace("variable \"gpu_families\"", "variable \"gpu_types\"")
    });
    repo.edit("stacks/data-plane/main.tf", |t| {
        t.replace("var.gpu_families", "var.gpu_types")
    });
    let before = repo.commit("rename without alias");
    let (bump, findings) = repo.bump("stacks/data-plane", &before);
    assert_eq!(bump, Bump::Major);
    assert!(
        findings
            .contains(&"input-removed gpu_families stacks/data-plane/variables.tf:37".to_string()),
        "{findings:?}"
    );
}

#[test]
fn a_new_resource_kind_in_a_module_is_major_for_every_stack_using_it() {
    let repo = Repo::new();
    repo.edit("modules/network/main.tf", |t| {
        t + "\nresource \"terraform_data\" \"flow_logs\" {\n  input = var.cidr\n}\n"
    });
    let before = repo.commit("network records flow logs");
    for stack in ["stacks/data-plane", "stacks/control-plane"] {
        let (bump, findings) = repo.bump(stack, &before);
        assert_eq!(bump, Bump::Major, "{stack}");
        assert_eq!(
            findings,
            vec!["resource-kind-added-by-default terraform_data modules/network/main.tf:11"],
            "{stack}"
        );
    }

    // Gated behind a new input that is off by default: minor.
    let repo = Repo::new();
    repo.edit("modules/network/variables.tf", |t| {
        t + "\nvariable \"flow_logs\" {\n  type        = bool\n  default     = false\n  description = \"Record flow logs.\"\n}\n"
    });
    repo.edit("modules/network/main.tf", |t| {
        t + "\nresource \"terraform_data\" \"flow_logs\" {\n  count = var.flow_logs ? 1 : 0\n  input = var.cidr\n}\n"
    });
    let before = repo.commit("optional flow logs");
    let (bump, findings) = repo.bump("stacks/data-plane", &before);
    assert_eq!(bump, Bump::Minor, "{findings:?}");
    assert_eq!(
        findings,
        vec!["resource-kind-added-gated terraform_data modules/network/main.tf:11"]
    );

    // A stack that turns it on, from its own default, makes it major for its callers.
    repo.edit("stacks/control-plane/main.tf", |t| {
        t.replace(
            "  cidr               = var.vpc_cidr\n",
            "  cidr               = var.vpc_cidr\n  flow_logs          = true\n",
        )
    });
    let snapshot = check::Snapshot::at(&repo.root, &before).unwrap();
    let report = check::compare_snapshot_with(
        &snapshot,
        &repo.root,
        "stacks/control-plane",
        &RuleConfig::default(),
        &mut check::Cache::default(),
    )
    .unwrap();
    assert_eq!(report.bump, Bump::Major, "{:?}", report.findings);
}

#[test]
fn many_units_and_their_renderings() {
    let repo = Repo::new();
    let first = git(&repo.root, &["rev-parse", "HEAD"]);
    repo.edit("modules/cluster/variables.tf", |t| {
        t.replace("default     = 3", "default     = 5")
    });
    repo.commit("bigger system node group");
    let changed = check::changed_files(&repo.root, &first).unwrap();
    assert_eq!(changed, vec!["modules/cluster/variables.tf"]);
    assert!(check::unit_changed(&repo.root, "stacks/data-plane", &changed).unwrap());
    assert!(!check::unit_changed(&repo.root, "modules/network", &changed).unwrap());
    let units = vec![
        Unit {
            path: "stacks/data-plane".into(),
            kind: UnitKind::Stack,
            against: Some(first.clone()),
        },
        Unit {
            path: "modules/cluster".into(),
            kind: UnitKind::Module,
            against: Some(first.clone()),
        },
    ];
    let reports = check::check_units(
        &repo.root,
        &units,
        Some(Bump::Minor),
        &RuleConfig::default(),
    )
    .unwrap();
    assert!(reports
        .iter()
        .all(|r| r.refused && r.required == Bump::Major));
    let output = check::render::CheckOutput {
        against: Some(first),
        units: reports,
        lints: vec![],
        customers: vec![],
        allowed_breaking: vec![],
        releases: vec![],
        ok: false,
    };
    let github = check::render::github(&output);
    assert!(
        github.contains("::error file=modules/cluster/variables.tf,line=26,title=module-default-changed (major)::"),
        "{github}"
    );
    let human = check::render::human(&output);
    assert!(
        human.contains("stack   stacks/data-plane  major     minor (too small)"),
        "{human}"
    );
    let json: serde_json::Value = serde_json::from_str(&check::render::json(&output)).unwrap();
    assert_eq!(
        json["units"][0]["findings"][0]["rule"],
        "module-default-changed"
    );
    assert_eq!(json["units"][0]["required"], "major");
}

fn lint_options(root: &Path) -> LintOptions {
    LintOptions::discover(
        root,
        vec!["production".into(), "staging".into(), "sandbox".into()],
        RuleConfig::default(),
    )
}

#[test]
fn the_example_repository_passes_the_lints() {
    let repo = Repo::new();
    let findings = lint(&repo.root, &lint_options(&repo.root)).unwrap();
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn lints_find_names_secrets_defaults_and_missing_docs() {
    let repo = Repo::new();
    repo.edit("modules/network/main.tf", |t| {
        t + "\nlocals {\n  label = \"globex-vpc\" # a customer's name\n  env   = \"staging\"\n}\n"
    });
    repo.edit("customers/globex/data-plane.tfvars", |t| {
        t + "db_password          = \"s3cr3t-value\"\n"
    });
    repo.edit("modules/model-bucket/variables.tf", |t| {
        t + "\nvariable \"api_token\" {\n  type      = string\n  sensitive = true\n  default   = \"placeholder\"\n}\n"
    });
    repo.edit("stacks/data-plane/keys.pem", |_| {
        "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n".into()
    });
    let findings = lint(&repo.root, &lint_options(&repo.root)).unwrap();
    let got: Vec<String> = findings
        .iter()
        .map(|f| format!("{} {} {}", f.rule, f.item, f.location()))
        .collect();
    assert_eq!(
        got,
        vec![
            "no-secret-literals a literal password or token customers/globex/data-plane.tfvars:8",
            "input-description-missing api_token modules/model-bucket/variables.tf:27",
            "no-secret-literals api_token modules/model-bucket/variables.tf:27",
            "sensitive-input-default api_token modules/model-bucket/variables.tf:27",
            "no-environment-names globex modules/network/main.tf:12",
            "no-environment-names staging modules/network/main.tf:13",
            "no-secret-literals a private key stacks/data-plane/keys.pem:1",
        ],
        "{findings:#?}"
    );
    // A missing description warns by default; the rest refuse.
    assert!(findings.iter().all(|f| f.bump.is_none()
        && f.severity
            == if f.rule.id() == "input-description-missing" {
                Severity::Warning
            } else {
                Severity::Error
            }));
    // The secret itself is never printed.
    assert!(findings.iter().all(|f| !f.message.contains("s3cr3t")));

    // Inline ignores need a reason; with one, they silence their line and the next.
    repo.edit("modules/network/main.tf", |t| {
        t.replace("  env   = \"staging\"\n", "  # stackpack:ignore no-environment-names reason: the upstream API's literal\n  env   = \"staging\"\n")
            .replace("  label = \"globex-vpc\" # a customer's name\n", "  label = \"globex-vpc\" # stackpack:ignore no-environment-names\n")
    });
    let table: toml::Table =
        toml::from_str("input-description-missing = \"error\"\nno-secret-literals = \"off\"")
            .unwrap();
    let mut options = lint_options(&repo.root);
    options.rules = RuleConfig::from_table(&table).unwrap();
    let findings = lint(&repo.root, &options).unwrap();
    let got: Vec<String> = findings
        .iter()
        .map(|f| format!("{} {} {} {}", f.severity, f.rule, f.item, f.location()))
        .collect();
    assert_eq!(
        got,
        vec![
            "error input-description-missing api_token modules/model-bucket/variables.tf:27",
            "error sensitive-input-default api_token modules/model-bucket/variables.tf:27",
            "error ignore-without-reason no-environment-names modules/network/main.tf:12",
            "error no-environment-names globex modules/network/main.tf:12",
        ]
    );
}

#[test]
fn the_interface_recorded_in_a_bundle_config() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/acme-infra");
    let tree = check::Tree::load(&root, "stacks/data-plane").unwrap();
    // The stack and the four modules it vendors.
    assert_eq!(tree.modules.len(), 5);
    let schema = tree.to_schema();
    // Seven of the customer's, and the emulator endpoint real customers leave unset.
    assert_eq!(schema.inputs.len(), 9);
    assert!(!schema.input("aws_endpoint").unwrap().required);
    assert_eq!(
        schema.input("availability_zones").unwrap().default,
        Some(serde_json::json!(["a", "b", "c"]))
    );
    assert_eq!(
        schema
            .input("availability_zones")
            .unwrap()
            .type_constraint
            .to_string(),
        "list(string)"
    );
    assert!(schema.input("customer_id").unwrap().required);
    assert_eq!(schema.input("customer_id").unwrap().validations.len(), 1);
    assert_eq!(schema.outputs.len(), 7);
    assert_eq!(schema.required_version.as_deref(), Some(">= 1.5.0"));
    for kind in [
        "aws_vpc",
        "aws_eks_cluster",
        "aws_eks_node_group",
        "aws_s3_bucket",
    ] {
        assert!(
            schema.resource_kinds.iter().any(|k| k == kind),
            "{kind} missing from {:?}",
            schema.resource_kinds
        );
    }
}
