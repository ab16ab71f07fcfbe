//! Customer impact: every customer's inputs checked against the interface a build
//! would publish, by `check` and by `publish` before anything is pushed; and the lints
//! enforced by `publish` and `build`. The real `stackpack` binary on temporary git
//! repositories copied from `examples/acme-infra`.

use crate::common;

use common::customer_error_rules as rules_of;
use common::servers::Distribution;
use common::TestRepo;
use stackpack_bundle::remote::{Credentials, Remote};

const VARIABLES: &str = "stacks/data-plane/variables.tf";

fn publish(repo: &TestRepo, host: &str, extra: &[&str]) -> common::Run {
    let registry = format!("{host}/acme");
    let mut args = vec![
        "publish",
        "--json",
        "--insecure",
        "--registry",
        &registry,
        "--key",
        repo.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    repo.run(&args)
}

fn stable_tags(host: &str, stack: &str) -> Vec<String> {
    let remote = Remote::with_credentials(host, true, Credentials::Anonymous).unwrap();
    remote
        .tags(&format!("acme/stacks/{stack}"))
        .unwrap_or_default()
        .into_iter()
        // Versions only: not the signature fallback tags nor the latest statement.
        .filter(|t| !t.starts_with("sha256-") && t != "stackpack-latest")
        .collect()
}

/// Replaces `from` with `to` in a file of the repository, asserting it was there.
fn edit(repo: &TestRepo, path: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(repo.dir.join(path)).unwrap();
    assert!(text.contains(from), "`{from}` is not in `{path}`");
    repo.write(path, &text.replacen(from, to, 1));
}

/// A validation on `region` that only `umbrella` (`ap-southeast-2`) breaks.
fn regions_validation(repo: &TestRepo) {
    edit(
        repo,
        VARIABLES,
        "  description = \"Region of the data plane.\"\n",
        "  description = \"Region of the data plane.\"\n\n  validation {\n    condition     = contains([\"us-east-1\", \"eu-west-1\"], var.region)\n    error_message = \"The data plane runs in us-east-1 or eu-west-1.\"\n  }\n",
    );
}

/// `(customer, stack, breaks)` for every inputs file `check` judged.
fn customers(json: &serde_json::Value) -> Vec<(String, String, bool)> {
    json["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["customer"].as_str().unwrap().to_string(),
                c["stack"].as_str().unwrap().to_string(),
                c["breaks"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// What `check --json` says of `customer`'s inputs for `stack`.
fn customer<'a>(json: &'a serde_json::Value, customer: &str, stack: &str) -> &'a serde_json::Value {
    json["customers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["customer"] == customer && c["stack"] == stack)
        .unwrap_or_else(|| panic!("no `{customer}` inputs for `{stack}` in {json}"))
}

#[test]
fn the_example_customers_fit_the_interface_today() {
    let repo = TestRepo::new();
    let json = repo.run(&["check", "--json"]).ok().json();
    // Each customer has inputs for every stack but the control plane.
    let mut expected = Vec::new();
    for stack in [
        "cluster",
        "data-plane",
        "gpu-pools",
        "model-storage",
        "network",
    ] {
        for customer in ["globex", "initech", "umbrella"] {
            expected.push((customer.to_string(), stack.to_string(), false));
        }
    }
    assert_eq!(customers(&json), expected);
    let human = repo.run(&["check"]).ok();
    assert!(human.stdout.contains("CUSTOMER"), "{}", human.stdout);
    let line = human
        .stdout
        .lines()
        .find(|l| l.starts_with("globex ") && l.contains(" data-plane "))
        .unwrap();
    // `ok`, or `ok, N not evaluated` while the evaluator cannot judge a validation.
    assert!(
        line.contains("data-plane") && line.contains(" ok"),
        "{line}"
    );
}

#[test]
fn a_missing_required_input_breaks_every_customer_without_it() {
    let repo = TestRepo::new();
    repo.append(
        VARIABLES,
        "\nvariable \"tier\" {\n  type        = string\n  description = \"Support tier.\"\n}\n",
    );
    repo.write(
        "customers/globex/data-plane.tfvars",
        &format!(
            "{}tier = \"gold\"\n",
            std::fs::read_to_string(repo.dir.join("customers/globex/data-plane.tfvars")).unwrap()
        ),
    );
    let run = repo.run(&["check"]).code(1);
    assert!(
        run.stderr
            .contains("would break 2 customers: `initech`, `umbrella`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("required input `tier` is not set"));
    assert!(run.stderr.contains("--allow-breaking initech umbrella"));
}

#[test]
fn an_unknown_input_is_refused_with_did_you_mean() {
    let repo = TestRepo::new();
    edit(
        &repo,
        "customers/globex/data-plane.tfvars",
        "vpc_cidr    ",
        "vpc_cdir    ",
    );
    let run = repo.run(&["check"]).code(1);
    assert!(
        run.stderr.contains(
            "`customers/globex/data-plane.tfvars:4`: `vpc_cdir` is not an input of stack `data-plane`; did you mean `vpc_cidr`?"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_type_error_is_found_at_its_line() {
    let repo = TestRepo::new();
    edit(
        &repo,
        "customers/initech/data-plane.tfvars",
        "[\"h100\"]",
        "\"h100\"",
    );
    let run = repo.run(&["check", "--json"]).code(1);
    let json = run.json();
    assert_eq!(rules_of(&json, "initech"), ["type-mismatch"]);
    assert!(
        run.stderr.contains(
            "`customers/initech/data-plane.tfvars:6`: input `gpu_families` must be `list(string)`"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_validation_rule_a_customer_breaks_is_found_before_publish() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    regions_validation(&repo);
    repo.commit("only two regions");
    let check = repo.run(&["check", "--json"]).code(1);
    let json = check.json();
    assert!(rules_of(&json, "umbrella").contains(&"validation-failed".to_string()));
    assert!(!rules_of(&json, "globex").contains(&"validation-failed".to_string()));
    let run = publish(&repo, &registry.host(), &[]).code(1);
    assert!(
        run.stderr
            .contains("this release would break 1 customer: `umbrella`"),
        "{}",
        run.stderr
    );
    assert!(run
        .stderr
        .contains("`customers/umbrella/data-plane.tfvars:3`: input `region` fails its validation"));
    assert!(stable_tags(&registry.host(), "data-plane").is_empty());
}

/// A validation no static evaluator can judge: it reads the plan's own time.
fn maintenance_freeze(repo: &TestRepo) {
    repo.append(
        VARIABLES,
        "\nvariable \"maintenance_until\" {\n  type        = string\n  default     = null\n  description = \"End of the customer's maintenance freeze (RFC 3339), if any.\"\n\n  validation {\n    condition     = var.maintenance_until == null || timecmp(var.maintenance_until, plantimestamp()) > 0\n    error_message = \"The maintenance freeze must end in the future.\"\n  }\n}\n",
    );
    repo.append(
        "customers/globex/data-plane.tfvars",
        "maintenance_until = \"2030-01-01T00:00:00Z\"\n",
    );
}

#[test]
fn a_validation_that_cannot_be_evaluated_statically_is_reported_as_not_evaluated() {
    let repo = TestRepo::new();
    maintenance_freeze(&repo);
    let json = repo.run(&["check", "--json"]).ok().json();
    let globex = customer(&json, "globex", "data-plane");
    let finding = globex["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["item"] == "maintenance_until")
        .cloned()
        .expect("the validation of maintenance_until is reported");
    assert_eq!(finding["rule"], "validation-not-evaluated");
    assert_eq!(finding["severity"], "warning");
    assert_eq!(finding["line"], 8);
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("not evaluated: the validation `var.maintenance_until == null || timecmp(var.maintenance_until, plantimestamp()) > 0` of input `maintenance_until`: stackpack cannot evaluate `plantimestamp(…)`; the engine checks it at plan time"),
        "{finding}"
    );
    assert!(globex["notEvaluated"].as_u64().unwrap() >= 1);

    let human = repo.run(&["check"]).ok().stdout;
    let line = human
        .lines()
        .find(|l| l.starts_with("globex ") && l.contains(" data-plane "))
        .unwrap();
    assert!(
        line.contains(" ok, ") && line.contains(" not evaluated"),
        "{line}"
    );
    assert!(human.contains("\nnot evaluated: "), "{human}");
}

#[test]
fn a_regex_validation_a_customer_breaks_is_evaluated_and_names_the_customer() {
    let repo = TestRepo::new();
    edit(
        &repo,
        "customers/globex/data-plane.tfvars",
        "\"globex\"",
        "\"Globex_Inc\"",
    );
    let run = repo.run(&["check", "--json"]);
    let json = run.json();
    let failed: Vec<&serde_json::Value> = customer(&json, "globex", "data-plane")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["item"] == "customer_id")
        .collect();
    assert!(
        failed
            .iter()
            .any(|f| f["rule"] == "validation-failed" && f["severity"] == "error"),
        "{failed:?}"
    );
    assert_eq!(
        run.code, 1,
        "a customer whose input fails its regex breaks the release"
    );
}

#[test]
fn tfvars_json_is_checked_too() {
    let repo = TestRepo::new();
    repo.write(
        "customers/hooli/data-plane.tfvars.json",
        "{\n  \"customer_id\": \"hooli\",\n  \"account_id\": \"123412341234\",\n  \"region\": \"us-east-1\",\n  \"vpc_cidr\": \"10.90.0.0/16\",\n  \"kubernetes_version\": \"1.30\",\n  \"gpu_families\": {\"a\": 1},\n  \"control_plane_region\": \"us-east-1\"\n}\n",
    );
    let run = repo.run(&["check", "--json"]).code(1);
    assert_eq!(rules_of(&run.json(), "hooli"), ["type-mismatch"]);
    assert!(
        run.stderr
            .contains("`customers/hooli/data-plane.tfvars.json:7`"),
        "{}",
        run.stderr
    );
}

fn add_alias(repo: &TestRepo) {
    edit(
        repo,
        VARIABLES,
        "variable \"gpu_families\" {",
        "variable \"gpus\" {\n  type        = list(string)\n  default     = null\n  description = \"Old name of gpu_families.\"\n  deprecated  = \"Use gpu_families.\"\n}\n\n# stackpack:renamed-from = \"gpus\"\nvariable \"gpu_families\" {",
    );
}

#[test]
fn a_deprecated_alias_in_use_is_a_warning_naming_the_release_it_stops_working_in() {
    let repo = TestRepo::new();
    repo.build(&["--stack", "data-plane"]);
    add_alias(&repo);
    edit(
        &repo,
        "customers/globex/data-plane.tfvars",
        "gpu_families        ",
        "gpus                ",
    );
    let json = repo.run(&["check", "--json"]).ok().json();
    let finding = customer(&json, "globex", "data-plane")["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "deprecated-input")
        .cloned()
        .expect("a deprecated-input warning");
    assert_eq!(finding["severity"], "warning");
    assert_eq!(finding["line"], 6);
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("stops working in `1.0.0`; set `gpu_families` instead"),
        "{finding}"
    );
}

#[test]
fn setting_an_alias_and_its_replacement_is_refused() {
    let repo = TestRepo::new();
    add_alias(&repo);
    repo.append("customers/globex/data-plane.tfvars", "gpus = [\"a100\"]\n");
    let run = repo.run(&["check"]).code(1);
    assert!(
        run.stderr
            .contains("deprecated input `gpus` and its replacement `gpu_families` are both set"),
        "{}",
        run.stderr
    );
}

#[test]
fn github_annotations_name_the_customer_file_and_line() {
    let repo = TestRepo::new();
    regions_validation(&repo);
    let run = repo.run(&["check", "--format", "github"]).code(1);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("validation-failed"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        line.starts_with("::error file=customers/umbrella/data-plane.tfvars,line=3,"),
        "{line}"
    );
    assert!(
        line.contains("customer `umbrella`, stack `data-plane`"),
        "{line}"
    );
}

#[test]
fn a_release_that_breaks_a_customer_is_refused_naming_them() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    edit(
        &repo,
        "customers/globex/data-plane.tfvars",
        "account_id ",
        "acount_id  ",
    );
    edit(
        &repo,
        VARIABLES,
        "Region of the data plane.",
        "Region of the data plane (a patch).",
    );
    repo.commit("a patch, and a typo in a customer's inputs");
    let run = publish(&repo, &registry.host(), &[]).code(1);
    assert!(
        run.stderr
            .contains("this release would break 1 customer: `globex`"),
        "{}",
        run.stderr
    );
    assert!(run
        .stderr
        .contains("`customers/globex/data-plane.tfvars:2`: `acount_id` is not an input"));
    // Naming them is not enough for a release that is not major.
    let run = publish(&repo, &registry.host(), &["--allow-breaking", "globex"]).code(1);
    assert!(
        run.stderr
            .contains("only a major release may break customers"),
        "{}",
        run.stderr
    );
    assert!(stable_tags(&registry.host(), "data-plane").is_empty());
}

#[test]
fn allow_breaking_must_name_exactly_the_customers_affected() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    publish(&repo, &registry.host(), &["--stack", "data-plane"]).ok();
    regions_validation(&repo);
    repo.commit("only two regions");
    let extra = publish(
        &repo,
        &registry.host(),
        &["--allow-breaking", "umbrella", "globex"],
    )
    .code(1);
    assert!(
        extra
            .stderr
            .contains("it names `globex`, whom this release does not break"),
        "{}",
        extra.stderr
    );
    let missing = publish(&repo, &registry.host(), &["--allow-breaking", "initech"]).code(1);
    assert!(
        missing
            .stderr
            .contains("it leaves out `umbrella`, whom this release breaks"),
        "{}",
        missing.stderr
    );
    assert_eq!(stable_tags(&registry.host(), "data-plane"), ["0.1.0"]);

    let report = publish(&repo, &registry.host(), &["--allow-breaking", "umbrella"])
        .ok()
        .json();
    let data_plane = report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "data-plane")
        .unwrap();
    assert_eq!(
        data_plane["version"], "1.0.0",
        "a new validation is a major change"
    );
    let configs: Vec<serde_json::Value> = std::fs::read_dir(repo.layout().join("blobs/sha256"))
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path()).ok())
        .filter_map(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .filter(|v| v["stack"] == "data-plane" && v["version"] == "1.0.0")
        .collect();
    assert_eq!(configs.len(), 1);
    assert_eq!(
        configs[0]["allowedBreaking"],
        serde_json::json!(["umbrella"])
    );
}

#[test]
fn publish_refuses_an_error_level_lint_before_pushing() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    repo.append(
        "modules/network/main.tf",
        "\nlocals {\n  tier = \"production\"\n}\n",
    );
    repo.commit("an environment name inside a module");
    let run = publish(&repo, &registry.host(), &[]).code(1);
    assert!(
        run.stderr.contains("`modules/network/main.tf:12`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was built or pushed"));
    assert!(stable_tags(&registry.host(), "data-plane").is_empty());
    assert!(stable_tags(&registry.host(), "control-plane").is_empty());
}

#[test]
fn build_refuses_an_error_level_lint_too() {
    let repo = TestRepo::new();
    repo.append(
        "modules/network/main.tf",
        "\nlocals {\n  tier = \"production\"\n}\n",
    );
    repo.commit("an environment name inside a module");
    let run = repo
        .run(&["build", "--key", repo.key.to_str().unwrap()])
        .code(1);
    assert!(
        run.stderr.contains("no-environment-names"),
        "{}",
        run.stderr
    );
    assert!(!repo.layout().join("index.json").exists());
}

#[test]
fn check_accepts_allow_breaking_naming_exactly_the_affected_for_a_major_bump_only() {
    let repo = TestRepo::new();
    regions_validation(&repo);
    let json = repo
        .run(&["check", "--json", "--allow-breaking", "umbrella"])
        .ok()
        .json();
    assert_eq!(json["allowedBreaking"], serde_json::json!(["umbrella"]));
    let wrong = repo.run(&["check", "--allow-breaking", "globex"]).code(1);
    assert!(
        wrong.stderr.contains("it leaves out `umbrella`"),
        "{}",
        wrong.stderr
    );
    // Two flags that contradict each other: the command line is wrong (exit 2).
    let minor = repo
        .run(&["check", "--allow-breaking", "umbrella", "--bump", "minor"])
        .code(2);
    assert!(
        minor
            .stderr
            .contains("only a major release may break customers"),
        "{}",
        minor.stderr
    );
}

#[test]
fn an_inputs_file_named_after_no_stack_is_a_warning() {
    let repo = TestRepo::new();
    repo.write(
        "customers/globex/data-plan.tfvars",
        "region = \"us-east-1\"\n",
    );
    let json = repo.run(&["check", "--json"]).ok().json();
    let stray = json["customers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["file"] == "customers/globex/data-plan.tfvars")
        .cloned()
        .expect("the stray file is reported");
    assert_eq!(stray["breaks"], false);
    assert_eq!(stray["findings"][0]["rule"], "inputs-for-no-stack");
    assert_eq!(stray["findings"][0]["severity"], "warning");
}

#[test]
fn fifty_customers_and_a_change_that_breaks_three_names_exactly_those_three() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    // 47 more customers beside the example's 3: two of them in a region the change drops.
    for i in 0..47 {
        let region = if i % 20 == 7 {
            "ap-south-1"
        } else {
            "us-east-1"
        };
        repo.write(
            &format!("customers/c{i:02}/data-plane.tfvars"),
            &format!(
                "customer_id = \"c{i:02}\"\naccount_id = \"1234567890{i:02}\"\nregion = \"{region}\"\nvpc_cidr = \"10.{}.0.0/16\"\nkubernetes_version = \"1.30\"\ncontrol_plane_region = \"us-east-1\"\n",
                100 + i
            ),
        );
    }
    repo.commit("47 more customers");
    let json = repo.run(&["check", "--json"]).ok().json();
    let data_plane: Vec<String> = customers(&json)
        .into_iter()
        .filter(|(_, stack, _)| stack == "data-plane")
        .map(|(c, _, _)| c)
        .collect();
    assert_eq!(data_plane.len(), 50, "{data_plane:?}");
    publish(&repo, &registry.host(), &["--stack", "data-plane"]).ok();

    regions_validation(&repo);
    repo.commit("only two regions");
    let json = repo.run(&["check", "--json"]).code(1).json();
    let broken: Vec<String> = customers(&json)
        .into_iter()
        .filter(|(_, _, breaks)| *breaks)
        .map(|(c, _, _)| c)
        .collect();
    assert_eq!(broken, ["c07", "c27", "umbrella"]);

    let refused = publish(&repo, &registry.host(), &[]).code(1);
    assert!(
        refused
            .stderr
            .contains("would break 3 customers: `c07`, `c27`, `umbrella`"),
        "{}",
        refused.stderr
    );
    let report = publish(
        &repo,
        &registry.host(),
        &["--allow-breaking", "umbrella", "c07", "c27"],
    )
    .ok()
    .json();
    assert!(report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["stack"] == "data-plane" && s["version"] == "1.0.0"));
}

/// Runs `check` with `GITHUB_STEP_SUMMARY` pointing at a file; returns the run and
/// what it wrote there.
fn check_in_actions(repo: &TestRepo, args: &[&str]) -> (common::Run, String) {
    let summary = repo.temp.path().join("step-summary.md");
    let run = common::Run::from(
        std::process::Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args(args)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    );
    let text = std::fs::read_to_string(&summary).unwrap_or_default();
    (run, text)
}

#[test]
fn the_pull_request_view_shows_per_stack_the_bump_every_finding_and_every_affected_customer() {
    let repo = TestRepo::new();
    repo.build(&["--stack", "data-plane"]);
    regions_validation(&repo);
    repo.commit("only two regions");
    let (run, summary) = check_in_actions(&repo, &["check", "--format", "github"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let data_plane = run
        .stdout
        .lines()
        .find(|l| l.contains("title=stackpack check%3A stacks/data-plane::"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(
        data_plane,
        "::error title=stackpack check%3A stacks/data-plane::stack `stacks/data-plane` needs a major release; it breaks 1 customer: `umbrella`"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::warning file=stacks/data-plane/variables.tf,line=")),
        "the interface finding is annotated at its line: {}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("::error file=customers/umbrella/data-plane.tfvars,line=3,")),
        "{}",
        run.stdout
    );

    assert!(summary.starts_with("### Stackpack check\n"), "{summary}");
    assert!(
        summary.contains("#### ❌ stack `stacks/data-plane` needs a major release; it breaks 1 customer: `umbrella`\n"),
        "{summary}"
    );
    assert!(
        summary.contains("| major | `validation-added` | `stacks/data-plane/variables.tf:"),
        "{summary}"
    );
    assert!(
        summary.contains("| `umbrella` | breaks | `customers/umbrella/data-plane.tfvars:3` | input `region` fails its validation"),
        "{summary}"
    );

    // Naming exactly who breaks on a major release turns the stack's line into a notice.
    let (run, summary) = check_in_actions(
        &repo,
        &[
            "check",
            "--format",
            "github",
            "--bump",
            "major",
            "--allow-breaking",
            "umbrella",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.lines().any(|l| l == "::notice title=stackpack check%3A stacks/data-plane::stack `stacks/data-plane` needs a major release; it breaks 1 customer: `umbrella` (allowed)"),
        "{}",
        run.stdout
    );
    assert!(
        summary.contains("#### ✅ stack `stacks/data-plane`"),
        "{summary}"
    );
}

const IGNORE_DESIRED_SIZE: &str =
    "  lifecycle {\n    ignore_changes = [scaling_config[0].desired_size]\n  }\n";

fn controller_lints(repo: &TestRepo) -> Vec<serde_json::Value> {
    let json = repo.run(&["check", "--json"]).ok().json();
    json["lints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "controller-owned-field")
        .cloned()
        .collect()
}

#[test]
fn a_size_an_autoscaler_owns_is_a_warning_until_ignore_changes_covers_it() {
    let repo = TestRepo::new();
    // The example leaves the pools' size to the autoscaler.
    assert!(controller_lints(&repo).is_empty());
    edit(
        &repo,
        "modules/gpu-pool/node-groups.tf",
        IGNORE_DESIRED_SIZE,
        "",
    );
    let found = controller_lints(&repo);
    assert_eq!(found.len(), 1, "{found:?}");
    let lint = &found[0];
    assert_eq!(lint["file"], "modules/gpu-pool/node-groups.tf");
    assert_eq!(lint["line"], 55);
    assert_eq!(lint["severity"], "warning");
    assert!(
        lint["message"].as_str().unwrap().contains(
            "`aws_eks_node_group.pool` sets `scaling_config.desired_size`, which the cluster autoscaler changes outside Terraform: drift you will fight every plan; add `lifecycle { ignore_changes = [scaling_config[0].desired_size] }`"
        ),
        "{lint}"
    );
    // A warning: build lets it through, saying where.
    repo.commit("no ignore_changes");
    let build = repo
        .run(&[
            "build",
            "--stack",
            "data-plane",
            "--key",
            repo.key.to_str().unwrap(),
        ])
        .ok();
    assert!(
        build
            .stderr
            .contains("`modules/gpu-pool/node-groups.tf:55`: `aws_eks_node_group.pool` sets"),
        "{}",
        build.stderr
    );
}

#[test]
fn a_sensitive_input_that_only_reaches_the_provider_could_be_ephemeral_on_an_engine_that_has_it() {
    let repo = TestRepo::new();
    repo.append(
        VARIABLES,
        "\nvariable \"session_token\" {\n  type        = string\n  default     = null\n  sensitive   = true\n  description = \"A session token for the provider.\"\n}\n",
    );
    edit(
        &repo,
        "stacks/data-plane/provider.tf",
        "  region = var.region\n",
        "  region = var.region\n  token  = var.session_token\n",
    );
    let lints_of = |repo: &TestRepo| -> Vec<serde_json::Value> {
        let json = repo.run(&["check", "--json"]).ok().json();
        json["lints"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "sensitive-input-not-ephemeral")
            .cloned()
            .collect()
    };
    // `>= 1.5.0` allows engines without ephemeral inputs.
    assert!(lints_of(&repo).is_empty());

    edit(
        &repo,
        "stacks/data-plane/main.tf",
        "\">= 1.5.0\"",
        "\">= 1.10.0\"",
    );
    let found = lints_of(&repo);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["item"], "session_token");
    assert_eq!(found[0]["file"], VARIABLES);
    assert_eq!(found[0]["line"], 48);
    assert_eq!(found[0]["severity"], "warning");
    assert!(
        found[0]["message"].as_str().unwrap().contains("`required_version = \">= 1.10.0\"` means Terraform >= 1.10: declare it `ephemeral = true`"),
        "{}",
        found[0]
    );

    // Stored in state through an output, it cannot be ephemeral.
    repo.append(
        "stacks/data-plane/outputs.tf",
        "\noutput \"session_token\" {\n  value     = var.session_token\n  sensitive = true\n}\n",
    );
    assert!(lints_of(&repo).is_empty());
}

#[test]
fn a_path_that_names_no_stack_or_module_is_an_error_not_nothing_changed() {
    let repo = TestRepo::new();
    let run = repo.run(&["check", "--path", "stacks/nope"]).code(2);
    assert!(
        run.stderr
            .contains("`stacks/nope` is neither a stack nor a module of this repository"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("stacks/data-plane"), "{}", run.stderr);
    assert!(!run.stdout.contains("no stack or module changed"));
}
