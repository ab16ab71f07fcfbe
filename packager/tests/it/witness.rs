//! The outcome witness: `stackpack check --witness` applies the last release (built
//! into the local layout) with each customer's inputs, plans the work tree on top,
//! and lets the plans and the interface rules together decide the bump. Real
//! Terraform throughout. One scenario runs on the AWS example against the emulated
//! AWS account (moto), with the real AWS provider from the mirror; the others run on
//! `tests/fixtures/witness-vendor`, a stack of built-in `terraform_data` resources
//! the engine plans in seconds (its account a loopback endpoint nothing listens on,
//! which no provider ever calls), since the AWS example would only make them
//! minutes longer. Each test shares one released baseline across its runs.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Run, TestRepo};
use serde_json::Value;
use stackpack_test_support::servers::Moto;

/// `repo` with its last release `<stack>@0.1.0` built from `main`, and the witness
/// configured to use this machine's Terraform (plus `extra` settings).
fn released(repo: TestRepo, stack: &str, extra: &str) -> TestRepo {
    let config = std::fs::read_to_string(repo.dir.join("stackpack.toml")).unwrap();
    // No registry: `check` reads the release from the local layout the build writes.
    let config = config.replace("registry = \"127.0.0.1:5000/acme\"\n", "");
    repo.write(
        "stackpack.toml",
        &format!(
            "{config}\n[witness]\nengine = {:?}\nparallel = 3\n{extra}",
            stackpack_test_support::terraform().display().to_string()
        ),
    );
    repo.commit("witness settings");
    let built = TestRepo::built(&repo.build(&["--stack", stack]));
    assert_eq!(built, [(stack.to_string(), "0.1.0".to_string())]);
    repo
}

/// The emulated account and the released example; `None` (skipped) without python3.
fn emulated() -> Option<(Moto, TestRepo)> {
    stackpack_test_support::have("python3")
        .then(|| (Moto::start(), released(TestRepo::new(), "data-plane", "")))
}

/// The small fixture released: `service@0.1.0`, customers globex, initech and
/// umbrella (who sets `zones = ["a", "b"]`), its account an endpoint nothing
/// listens on (only built-in resources: nothing calls it).
fn small_released() -> TestRepo {
    released(
        TestRepo::fixture("witness-vendor"),
        "service",
        "endpoint = \"http://127.0.0.1:9\"\n",
    )
}

/// `stackpack check --witness` with the emulator's endpoint given as CI gives it.
fn witness(repo: &TestRepo, moto: &Moto, extra: &[&str]) -> Run {
    run_with(
        repo,
        &[("STACKPACK_WITNESS_ENDPOINT", moto.url.as_str())],
        "stacks/data-plane",
        extra,
    )
}

/// `stackpack check --witness` of the small fixture's stack.
fn small_witness(repo: &TestRepo, extra: &[&str]) -> Run {
    run_with(repo, &[], "stacks/service", extra)
}

fn run_with(repo: &TestRepo, env: &[(&str, &str)], stack: &str, extra: &[&str]) -> Run {
    let mut args = vec!["check", "--witness", "--no-lint", "--path", stack];
    args.extend_from_slice(extra);
    Run::from(
        Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args(&args)
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .output()
            .expect("stackpack runs"),
    )
}

fn edit(repo: &TestRepo, path: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(repo.dir.join(path)).unwrap();
    assert!(text.contains(from), "`{from}` not in {path}");
    repo.write(path, &text.replacen(from, to, 1));
}

/// The one stack's witness in `check --json`.
fn stack(json: &Value) -> &Value {
    let stacks = json["witness"].as_array().expect("a witness section");
    assert_eq!(stacks.len(), 1, "{json}");
    &stacks[0]
}

/// `customer -> ["<action> <address> [attributes]"]`, customers sorted.
fn changes(stack: &Value) -> Vec<(String, Vec<String>)> {
    stack["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert!(c["error"].is_null(), "{c}");
            let changes = c["changes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let attributes: Vec<&str> = r["attributes"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    format!(
                        "{} {} {attributes:?}",
                        r["action"].as_str().unwrap(),
                        r["address"].as_str().unwrap()
                    )
                })
                .collect();
            (c["customer"].as_str().unwrap().to_string(), changes)
        })
        .collect()
}

fn assert_bumps(stack: &Value, expected: &[(&str, &str)]) {
    let bumps = bumps(stack);
    let bumps: Vec<(&str, &str)> = bumps
        .iter()
        .map(|(c, b)| (c.as_str(), b.as_str()))
        .collect();
    assert_eq!(bumps, expected, "{stack}");
}

fn bumps(stack: &Value) -> Vec<(String, String)> {
    stack["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["customer"].as_str().unwrap().into(),
                c["bump"].as_str().unwrap_or("failed").into(),
            )
        })
        .collect()
}

fn unit_required(json: &Value) -> &str {
    json["units"][0]["required"].as_str().unwrap()
}

#[test]
fn a_resource_body_change_is_patch_by_the_rules_and_major_by_the_witness_naming_each_resource() {
    let Some((moto, repo)) = emulated() else {
        return;
    };
    // A tag on the VPC, and an instance type set in a module's locals: the interface
    // is untouched, what the customers run is not.
    edit(
        &repo,
        "modules/network/vpc.tf",
        "    Name = var.name\n",
        "    Name = var.name\n    Tier = \"data\"\n",
    );
    edit(
        &repo,
        "modules/gpu-pool/main.tf",
        "\"g6.12xlarge\"",
        "\"g6.24xlarge\"",
    );

    let json = witness(&repo, &moto, &["--json"]).ok().json();
    let stack = stack(&json);
    assert_eq!(stack["rules"], "patch", "{stack}");
    assert_eq!(stack["witness"], "major");
    assert_eq!(unit_required(&json), "major");
    let vpc = "update module.network.aws_vpc.this [\"tags\", \"tags_all\"]".to_string();
    let changes = changes(stack);
    let by = |name: &str| changes.iter().find(|(c, _)| c == name).unwrap().1.clone();
    // Only globex offers `l4` GPUs: only its launch template changes its instance type.
    assert!(by("globex").contains(&vpc), "{changes:?}");
    assert!(
        by("globex").iter().any(|c| c
            .starts_with("update module.gpu_pool.aws_launch_template.pool[\"l4\"]")
            && c.contains("instance_type")),
        "{changes:?}"
    );
    assert_eq!(by("initech"), vec![vpc.clone()]);
    assert_eq!(by("umbrella"), vec![vpc]);

    // Releasing it as a patch is refused, naming each customer and resource.
    let refused = witness(&repo, &moto, &["--bump", "patch"]).code(1);
    for line in [
        "customers' plans change under this release: it requires a major version, not patch",
        "customer `umbrella`: `module.network.aws_vpc.this` update (`tags`, `tags_all`)",
        "customer `globex`: `module.gpu_pool.aws_launch_template.pool[\"l4\"]` update (",
        "hint: release it as a major version with `--bump major`",
    ] {
        assert!(
            refused.stderr.contains(line),
            "missing `{line}`:\n{}",
            refused.stderr
        );
    }
    // The table: customer × stack → add / change / replace / destroy, with times.
    assert!(
        refused
            .stdout
            .contains("customer  stack       add  change  replace  destroy  bump"),
        "{}",
        refused.stdout
    );
    assert!(
        refused.stdout.contains(
            "stacks/data-plane: rules patch, witness major → major (after 0.1.0, 3 of 3 customers"
        ),
        "{}",
        refused.stdout
    );
    assert!(
        refused
            .stderr
            .contains("witness: `umbrella` data-plane: 0 to add, 1 to change"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_default_change_is_major_only_for_the_customers_who_do_not_set_it() {
    let repo = small_released();
    // umbrella sets `zones = ["a", "b"]`; globex and initech take the default.
    edit(
        &repo,
        "stacks/service/main.tf",
        "default     = [\"a\", \"b\", \"c\"]",
        "default     = [\"a\", \"b\"]",
    );
    let json = small_witness(&repo, &["--json"]).ok().json();
    let stack = stack(&json);
    assert_eq!(stack["rules"], "major");
    assert_bumps(
        stack,
        &[
            ("globex", "major"),
            ("initech", "major"),
            ("umbrella", "patch"),
        ],
    );
    for (customer, changes) in changes(stack) {
        if customer == "umbrella" {
            assert!(changes.is_empty(), "{changes:?}");
        } else {
            // The third zone goes, and with it the cluster spread over the zones.
            assert!(
                changes.contains(&"destroy terraform_data.zone[2] []".to_string()),
                "{customer}: {changes:?}"
            );
            assert!(
                changes
                    .contains(&"replace terraform_data.cluster [\"triggers_replace\"]".to_string()),
                "{customer}: {changes:?}"
            );
        }
    }
    let markdown = small_witness(&repo, &["--format", "markdown"]).ok().stdout;
    assert!(
        markdown.contains("| `service` | 0.1.0 | 3 of 3 | major | major | **major** |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| umbrella | service | 0 | 0 | 0 | 0 | patch |"),
        "{markdown}"
    );
}

#[test]
fn a_moved_rename_plans_nothing_and_a_gated_resource_left_off_plans_nothing() {
    let repo = small_released();

    // A rename with a `moved` block: every plan is empty, so patch.
    edit(
        &repo,
        "stacks/service/main.tf",
        "resource \"terraform_data\" \"queue\" {",
        "moved {\n  from = terraform_data.queue\n  to   = terraform_data.jobs\n}\n\nresource \"terraform_data\" \"jobs\" {",
    );
    let json = small_witness(&repo, &["--json"]).ok().json();
    let renamed = stack(&json);
    assert_eq!(
        bumps(renamed)
            .iter()
            .map(|b| b.1.as_str())
            .collect::<Vec<_>>(),
        ["patch"; 3]
    );
    assert!(
        changes(renamed).iter().all(|(_, c)| c.is_empty()),
        "{renamed}"
    );
    assert_eq!(unit_required(&json), "patch");

    // A new kind of resource behind a new input, off by default: no customer's plan
    // changes but umbrella's, which turns it on; the rules say minor, and so it stays.
    git_restore(&repo.dir);
    repo.append(
        "stacks/service/main.tf",
        "\nvariable \"audit\" {\n  type        = bool\n  default     = false\n  description = \"Also keep an audit trail.\"\n}\n\nresource \"terraform_data\" \"audit\" {\n  count = var.audit ? 1 : 0\n  input = \"${var.name}-audit\"\n}\n",
    );
    repo.append("customers/umbrella/service.tfvars", "audit = true\n");
    let json = small_witness(&repo, &["--json"]).ok().json();
    let gated = stack(&json);
    assert_eq!(gated["rules"], "minor", "{gated}");
    assert_bumps(
        gated,
        &[
            ("globex", "patch"),
            ("initech", "patch"),
            ("umbrella", "minor"),
        ],
    );
    let umbrella = &gated["customers"][2];
    assert_eq!(umbrella["newInputs"], serde_json::json!(["audit"]));
    assert_eq!(changes(gated)[2].1, ["create terraform_data.audit[0] []"]);
    assert_eq!(unit_required(&json), "minor");
}

fn git_restore(dir: &Path) {
    common::git(dir, &["checkout", "-q", "--", "."]);
}

#[test]
fn a_witness_pointed_at_an_account_it_was_not_given_refuses_to_start() {
    let repo = TestRepo::new();
    let config = std::fs::read_to_string(repo.dir.join("stackpack.toml"))
        .unwrap()
        .replace("registry = \"127.0.0.1:5000/acme\"\n", "");
    repo.write(
        "stackpack.toml",
        &format!("{config}\n[witness]\nendpoint = \"http://192.0.2.10:4566\"\nallowed-endpoints = [\"http://192.0.2.99:4566\"]\n"),
    );
    let run = run_with(&repo, &[], "stacks/data-plane", &[]).code(1);
    assert!(
        run.stderr.contains("the witness was pointed at `http://192.0.2.10:4566`, which is not on this machine and not listed in `[witness] allowed-endpoints`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: the witness runs only in an account it was given"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "nothing witnessed: {}", run.stdout);

    // No endpoint and no sandbox account: real credentials in the environment are
    // never taken as the account.
    repo.write(
        "stackpack.toml",
        &format!("{config}\n[witness]\nparallel = 2\n"),
    );
    let run = run_with(
        &repo,
        &[
            ("AWS_ACCESS_KEY_ID", "AKIAREALLOOKING"),
            ("STACKPACK_WITNESS_ENDPOINT", ""),
        ],
        "stacks/data-plane",
        &[],
    )
    .code(1);
    assert!(
        run.stderr.contains("the witness has no account to run in: `[witness]` names neither `endpoint` nor `account-id`; the credentials in this environment (`AWS_ACCESS_KEY_ID`) were not given to it, and it will not use them"),
        "{}",
        run.stderr
    );
}

#[test]
fn publish_with_the_witness_on_refuses_a_patch_that_changes_plans_and_records_what_it_saw() {
    let registry = common::servers::Distribution::require();
    let repo = TestRepo::fixture("witness-vendor");
    // One customer of three (a sample), at the endpoint written in the settings.
    repo.append(
        "stackpack.toml",
        &format!(
            "\n[witness]\npublish = true\nendpoint = \"http://127.0.0.1:9\"\nengine = {:?}\nsample = 1\n",
            stackpack_test_support::terraform().display().to_string()
        ),
    );
    repo.commit("witness on publish");
    let address = format!("{}/acme", registry.host());
    let publish = |extra: &[&str]| {
        let mut args = vec![
            "publish",
            "--json",
            "--insecure",
            "--registry",
            &address,
            "--key",
            repo.key.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        repo.run(&args)
    };
    publish(&[]).ok();
    edit(
        &repo,
        "stacks/service/main.tf",
        "input = \"${var.name}-jobs\"",
        "input = \"${var.name}-work\"",
    );
    repo.commit("rename the queue's contents");

    let refused = publish(&[]).code(1);
    for line in [
        "error: `stacks/service`: customers' plans change under this release: it requires a major version, not patch",
        "customer `globex`: `terraform_data.queue` update (",
        "hint: release it as a major version with `--bump major`",
    ] {
        assert!(refused.stderr.contains(line), "missing `{line}`:\n{}", refused.stderr);
    }

    publish(&["--bump", "major"]).ok();
    let layout = stackpack_bundle::layout::ImageLayout::open(repo.layout()).unwrap();
    let version = semver::Version::new(1, 0, 0);
    let descriptor = layout
        .find_bundle("service", &version)
        .unwrap()
        .expect("service@1.0.0");
    let manifest: Value =
        serde_json::from_slice(&layout.read_blob(&descriptor.digest, 1 << 20).unwrap()).unwrap();
    let digest = manifest["config"]["digest"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let config: Value =
        serde_json::from_slice(&layout.read_blob(&digest, 1 << 20).unwrap()).unwrap();
    let summary = &config["witness"];
    assert_eq!(summary["release"], "0.1.0", "{summary}");
    assert_eq!(summary["customersTotal"], 3);
    assert_eq!(
        (
            summary["rules"].as_str(),
            summary["witness"].as_str(),
            summary["accepted"].as_str()
        ),
        (Some("patch"), Some("major"), Some("major"))
    );
    assert_eq!(summary["customers"][0]["customer"], "globex");
    assert_eq!(summary["customers"].as_array().unwrap().len(), 1);
    let resources = summary["customers"][0]["resources"].as_array().unwrap();
    assert!(
        resources.contains(&Value::from("update terraform_data.queue")),
        "{summary}"
    );
}
