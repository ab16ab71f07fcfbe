//! The lints held against code shaped like the most used public modules
//! (`tests/fixtures/community/`, with their licences): laid into `modules/` of a
//! repository with the example's settings, none is refused for a non-problem, and
//! the real problems the same lints exist for are still found.

use std::path::{Path, PathBuf};

use stackpack_packager::check::{lint, Finding, LintOptions, RuleConfig, Severity};
use stackpack_test_support::copy_dir;

/// The example repository's `environments`.
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "sandbox"];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/community")
}

/// A repository holding the corpus's modules named in `modules` under `modules/`,
/// and the example's customers.
fn repo_with(modules: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for module in modules {
        copy_dir(
            &corpus().join(module),
            &tmp.path().join("modules").join(module),
        );
    }
    for customer in ["globex", "initech", "umbrella"] {
        std::fs::create_dir_all(tmp.path().join("customers").join(customer)).unwrap();
    }
    tmp
}

fn lints(root: &Path, rules: RuleConfig) -> Vec<Finding> {
    let options = LintOptions::discover(
        root,
        ENVIRONMENTS.iter().map(|e| e.to_string()).collect(),
        rules,
    );
    lint(root, &options).unwrap()
}

fn shown(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| format!("{} {} {} {}", f.severity, f.rule, f.item, f.location()))
        .collect()
}

fn errors(findings: &[Finding]) -> Vec<String> {
    let errors: Vec<Finding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .cloned()
        .collect();
    shown(&errors)
}

fn corpus_modules() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_gke_module_with_gvisor_sandboxes_is_not_refused_for_naming_the_sandbox_environment() {
    let repo = repo_with(&["gke"]);
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(errors(&findings), Vec::<String>::new(), "{findings:#?}");
}

#[test]
fn an_rds_module_passes_with_production_in_prose_and_passwords_in_its_readme_and_examples_as_warnings(
) {
    let repo = repo_with(&["rds"]);
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(errors(&findings), Vec::<String>::new(), "{findings:#?}");
    assert_eq!(
        shown(&findings),
        [
            "warning no-secret-literals a literal password or token modules/rds/README.md:18",
            "warning no-secret-literals a literal password or token modules/rds/UPGRADE-4.0.md:11",
            "warning no-secret-literals a literal password or token modules/rds/examples/complete/main.tf:25",
        ]
    );
    // The value itself is never printed, not even from documentation.
    assert!(findings
        .iter()
        .all(|f| !f.message.contains("YourPwdShouldBeLongAndSecure")));
    // A repository that wants documentation held to the same bar says so.
    let strict: toml::Table = toml::from_str("no-secret-literals = \"error\"").unwrap();
    let findings = lints(repo.path(), RuleConfig::from_table(&strict).unwrap());
    assert_eq!(errors(&findings).len(), 3, "{findings:#?}");
}

#[test]
fn an_aks_module_whose_secret_defaults_to_empty_is_not_refused() {
    let repo = repo_with(&["aks"]);
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(shown(&findings), Vec::<String>::new(), "{findings:#?}");
}

#[test]
fn untyped_inputs_of_old_modules_warn_unless_the_repository_makes_them_errors() {
    let repo = repo_with(&["vpc-v1", "security-group-v2"]);
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(errors(&findings), Vec::<String>::new(), "{findings:#?}");
    let untyped: Vec<&str> = findings
        .iter()
        .filter(|f| f.rule.id() == "input-type-missing")
        .map(|f| f.item.as_str())
        .collect();
    // Every input of `vpc-v1`, and all but `rules` (`type = "map"`) of the group's.
    assert_eq!(untyped.len(), 9 + 7, "{untyped:?}");
    assert!(findings
        .iter()
        .all(|f| f.severity == Severity::Warning && f.rule.id() == "input-type-missing"));
    let strict: toml::Table =
        toml::from_str("input-type-missing = \"error\"\ninput-description-missing = \"error\"")
            .unwrap();
    let findings = lints(repo.path(), RuleConfig::from_table(&strict).unwrap());
    assert_eq!(errors(&findings).len(), 16, "{findings:#?}");
}

/// The precision measurement the README quotes: every lint over every module of the
/// corpus at once, with the example's settings. Each error-level finding would be a
/// false alarm (these modules are published, and valid), so there must be none.
#[test]
fn every_lint_over_the_community_corpus_raises_no_error() {
    let modules = corpus_modules();
    assert_eq!(
        modules,
        ["aks", "gke", "rds", "security-group-v2", "vpc-v1"],
        "the README's figures name these"
    );
    let names: Vec<&str> = modules.iter().map(String::as_str).collect();
    let repo = repo_with(&names);
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(errors(&findings), Vec::<String>::new(), "{findings:#?}");
    // Warnings: three passwords in documentation and examples, sixteen untyped inputs.
    assert_eq!(findings.len(), 19, "{findings:#?}");
}

#[test]
fn real_problems_in_the_same_modules_are_still_refused() {
    let repo = repo_with(&["gke", "aks", "rds"]);
    let root = repo.path();
    let append = |file: &str, text: &str| {
        let path = root.join(file);
        let before = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, before + text).unwrap();
    };
    // An environment in a tag, in a name built from literals, a customer in a
    // resource's name; a secret default; a password in code the engine reads.
    append(
        "modules/gke/main.tf",
        "\nresource \"google_compute_network\" \"umbrella\" {\n  name = \"${var.name}-staging\"\n  labels = {\n    environment = \"production\"\n  }\n}\n",
    );
    append(
        "modules/aks/variables.tf",
        "\nvariable \"admin_password\" {\n  type      = string\n  default   = \"Sup3rSecretValue\"\n  sensitive = true\n  description = \"x\"\n}\n",
    );
    append(
        "modules/rds/modules/db_instance/main.tf",
        "\nresource \"aws_db_instance\" \"replica\" {\n  password = \"Sup3rSecretValue\"\n}\n",
    );
    let findings = lints(root, RuleConfig::default());
    assert_eq!(
        errors(&findings),
        [
            "error no-secret-literals admin_password modules/aks/variables.tf:45",
            "error sensitive-input-default admin_password modules/aks/variables.tf:45",
            "error no-environment-names umbrella modules/gke/main.tf:39",
            "error no-environment-names staging modules/gke/main.tf:40",
            "error no-environment-names production modules/gke/main.tf:42",
            "error no-secret-literals a literal password or token modules/rds/modules/db_instance/main.tf:53",
        ],
        "{findings:#?}"
    );
}

/// terraform-aws-vpc's `examples/complete-vpc` tags its VPC `Environment =
/// "staging"`: a caller's use, in a folder no module or stack calls, which the
/// engine never reads when the module is used. A warning; the same tag in the
/// module's own code refuses.
#[test]
fn an_environment_in_an_example_no_one_calls_warns_and_in_the_module_refuses() {
    let repo = repo_with(&["vpc-v1"]);
    let example = "module \"vpc\" {\n  source = \"../../\"\n\n  name = \"complete-example\"\n  cidr = \"10.10.0.0/16\"\n\n  tags = {\n    Owner       = \"user\"\n    Environment = \"staging\"\n  }\n}\n";
    let dir = repo.path().join("modules/vpc-v1/examples/complete-vpc");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("main.tf"), example).unwrap();
    let findings = lints(repo.path(), RuleConfig::default());
    let named: Vec<String> = shown(&findings)
        .into_iter()
        .filter(|f| f.contains("no-environment-names"))
        .collect();
    assert_eq!(
        named,
        ["warning no-environment-names staging modules/vpc-v1/examples/complete-vpc/main.tf:9"]
    );
    let main = repo.path().join("modules/vpc-v1/main.tf");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        text.replace(
            "var.vpc_tags, var.tags",
            "var.vpc_tags, var.tags, map(\"Environment\", \"staging\")",
        ),
    )
    .unwrap();
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(
        errors(&findings),
        ["error no-environment-names staging modules/vpc-v1/main.tf:18"]
    );
}

/// terraform-google-kubernetes-engine's `examples/acm-terraform-blog-part1` ships a
/// demo's Kubernetes manifest with `MYSQL_ROOT_PASSWORD: "wp_user"` beside the
/// example's own `terraform/` folder: part of an example, never read by the engine
/// when the module is used. A warning; the same line in the module's own templates
/// refuses.
#[test]
fn a_demo_secret_in_an_example_folder_warns_and_in_the_module_refuses() {
    let repo = repo_with(&["gke"]);
    let manifest =
        "apiVersion: v1\nkind: Secret\nstringData:\n  MYSQL_ROOT_PASSWORD: \"wp_user\"\n";
    for (folder, file) in [
        ("examples/acm-blog/config-root", "wordpress-bundle.yaml"),
        ("templates", "bundle.yaml"),
    ] {
        let dir = repo.path().join("modules/gke").join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), manifest).unwrap();
    }
    std::fs::create_dir_all(repo.path().join("modules/gke/examples/acm-blog/terraform")).unwrap();
    std::fs::write(
        repo.path()
            .join("modules/gke/examples/acm-blog/terraform/main.tf"),
        "module \"gke\" {\n  source = \"../../../\"\n}\n",
    )
    .unwrap();
    let findings = lints(repo.path(), RuleConfig::default());
    assert_eq!(
        shown(&findings),
        [
            "warning no-secret-literals a literal password or token modules/gke/examples/acm-blog/config-root/wordpress-bundle.yaml:4",
            "error no-secret-literals a literal password or token modules/gke/templates/bundle.yaml:4",
        ]
    );
}
