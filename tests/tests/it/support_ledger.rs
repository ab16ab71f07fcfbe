//! Support's questions, answered from a ledger seeded only through the real paths:
//! `stackpack publish` pushes several versions (stable and a prerelease) to our
//! registry on 127.0.0.1; real runners pull, apply with real Terraform, upgrade,
//! fail, roll back, find drift and `report`; one airgapped customer imports an
//! exported tar and hands its receipts over as a file; one registered customer never
//! reports. Every query is asked through `stackpack-registry fleet --url` (as support
//! does from a laptop) and through the HTTP API, and both must agree.
//!
//! The stack is built from Terraform's own `terraform_data` resources, so no provider
//! and no network is needed: what is under test is the ledger, not a cloud.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use stackpack_test_support::servers::OurRegistry;
use stackpack_test_support::vendor::FixtureVendor;
use stackpack_test_support::{binary, git, terraform, Run};

const NAMESPACE: &str = "fleet";

/// The fleet fixture's vendor, publishing to our registry.
struct Vendor(FixtureVendor);

impl std::ops::Deref for Vendor {
    type Target = FixtureVendor;

    fn deref(&self) -> &FixtureVendor {
        &self.0
    }
}

impl Vendor {
    fn new() -> Vendor {
        Vendor(FixtureVendor::new("fleet-vendor"))
    }

    /// `stackpack publish` of what changed; the version it gave the stack.
    fn publish(&self, registry: &OurRegistry) -> String {
        let report = run(Command::new(binary("stackpack"))
            .current_dir(&self.repo)
            .args(["publish", "--json", "--insecure", "--registry"])
            .arg(format!("{}/{NAMESPACE}", registry.host()))
            .arg("--key")
            .arg(&self.key)
            .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token()))
        .ok()
        .json();
        let stack = report["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stack"] == "app" && s["published"] == true)
            .unwrap_or_else(|| panic!("app was not published: {report}"));
        stack["version"].as_str().unwrap().to_string()
    }
}

/// One customer's runner home, with the real Terraform.
struct Customer {
    home: PathBuf,
    inputs: PathBuf,
    token: String,
}

impl Customer {
    fn new(
        vendor: &Vendor,
        registry: &OurRegistry,
        id: &'static str,
        prereleases: bool,
    ) -> Customer {
        let home = vendor.temp.path().join(format!("home-{id}"));
        let inputs = vendor.temp.path().join(format!("{id}.tfvars"));
        std::fs::write(&inputs, format!("name = \"{id}\"\n")).unwrap();
        let customer = Customer {
            home,
            inputs,
            token: registry.token("customer", Some(id)),
        };
        let engine = terraform();
        let mut init = vec![
            "init",
            "--customer",
            id,
            "--engine-path",
            engine.to_str().unwrap(),
        ];
        if prereleases {
            init.push("--allow-prereleases");
        }
        customer.run(&init).ok();
        customer
            .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
            .ok();
        customer
    }

    fn run(&self, args: &[&str]) -> Run {
        run(Command::new(binary("stackpack-runner"))
            .args(args)
            .env("STACKPACK_RUNNER_HOME", &self.home)
            .env("STACKPACK_REGISTRY_TOKEN", &self.token)
            .env("CHECKPOINT_DISABLE", "1"))
    }

    fn pull_and_apply(&self, registry: &OurRegistry, version: &str) -> Run {
        self.run(&[
            "pull",
            "--insecure",
            &format!("{}/{NAMESPACE}/stacks/app:{version}", registry.host()),
        ])
        .ok();
        self.run(&[
            "apply",
            &format!("app@{version}"),
            "--inputs",
            self.inputs.to_str().unwrap(),
            "--yes",
            "--json",
        ])
    }

    fn report(&self, registry: &OurRegistry) {
        self.run(&["report", "--insecure", "--registry", &registry.host()])
            .ok();
    }
}

fn run(command: &mut Command) -> Run {
    Run::from(
        command
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap(),
    )
}

/// Support's view of the registry: the CLI from anywhere, and the HTTP API.
struct Support<'a> {
    registry: &'a OurRegistry,
    token: String,
}

impl Support<'_> {
    /// `stackpack-registry ARGS --url … --token … --json`.
    fn cli(&self, args: &[&str]) -> Value {
        run(Command::new(binary("stackpack-registry")).args(args).args([
            "--url",
            &self.registry.url(),
            "--token",
            &self.token,
            "--json",
        ]))
        .ok()
        .json()
    }

    fn api(&self, path_and_query: &str) -> Value {
        let output = Command::new("curl")
            .args(["-sS", "--fail-with-body", "-H"])
            .arg(format!("Authorization: Bearer {}", self.token))
            .arg(format!("{}{path_and_query}", self.registry.url()))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "GET {path_and_query}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The fleet rows a query keeps, as `customer stack version`, asked both ways;
    /// the CLI and the API must give the same rows.
    fn fleet(&self, cli: &[&str], api: &str) -> Vec<String> {
        let mut args = vec!["fleet"];
        args.extend_from_slice(cli);
        let from_cli = rows(&self.cli(&args));
        let from_api = rows(&self.api(&format!("/api/v1/fleet{api}")));
        assert_eq!(
            from_cli, from_api,
            "fleet {cli:?} against /api/v1/fleet{api}"
        );
        from_cli
    }
}

/// Fleet rows from an answer: a list of rows, or a page (`rows`) of them.
fn rows(answer: &Value) -> Vec<String> {
    let list = answer
        .as_array()
        .or_else(|| answer["rows"].as_array())
        .unwrap_or_else(|| panic!("not a list of fleet rows: {answer}"));
    list.iter()
        .map(|row| {
            format!(
                "{} {} {}",
                row["customer"].as_str().unwrap(),
                row["stack"].as_str().unwrap_or("-"),
                row["version"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

fn row<'a>(fleet: &'a Value, customer: &str) -> &'a Value {
    fleet
        .as_array()
        .or_else(|| fleet["rows"].as_array())
        .unwrap()
        .iter()
        .find(|r| r["customer"] == customer)
        .unwrap_or_else(|| panic!("no row for `{customer}`: {fleet}"))
}

/// Makes the recorded state of `terraform_data.app` say something else, as a change
/// made outside the runner would: the next plan wants to put it back.
fn change_state_by_hand(home: &Path, from: &str, to: &str) {
    let state = home.join("state/app/terraform.tfstate");
    let text = std::fs::read_to_string(&state).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&state, text.replace(from, to)).unwrap();
}

#[test]
fn support_answers_every_question_from_a_ledger_seeded_through_the_real_paths() {
    let registry = OurRegistry::start();
    let vendor = Vendor::new();

    // Customers are registered with their environment, before any of them reports.
    for (id, environment) in [
        ("globex", "production"),
        ("hooli", "production"),
        ("umbrella", "staging"),
        ("initech", "staging"),
    ] {
        registry
            .run(&["customer", "add", id, "--environment", environment])
            .ok();
    }

    // Three stable releases: a first, a minor (an input with a default), and one whose
    // apply fails (a step that exits 1), which also changes the module.
    let first = vendor.publish(&registry);
    vendor.commit(
        "stacks/app/variables.tf",
        "variable \"name\" {",
        "variable \"tier\" {\n  type        = string\n  default     = \"standard\"\n  description = \"Service tier.\"\n}\n\nvariable \"name\" {",
        "a tier input",
    );
    let second = vendor.publish(&registry);
    vendor.commit(
        "modules/base/main.tf",
        "input = var.name\n}",
        "input = var.name\n}\n\nresource \"terraform_data\" \"migration\" {\n  input = var.name\n  provisioner \"local-exec\" {\n    command = \"echo the migration fails; exit 1\"\n  }\n}",
        "a migration step",
    );
    let third = vendor.publish(&registry);
    // A prerelease from a branch, where the migration works.
    git(&vendor.repo, &["checkout", "-q", "-b", "feature/fast-path"]);
    vendor.commit(
        "modules/base/main.tf",
        "echo the migration fails; exit 1",
        "echo the migration takes the fast path",
        "the migration takes a faster path",
    );
    let prerelease = vendor.publish(&registry);
    assert!(prerelease.contains("-feature-fast-path."), "{prerelease}");

    // globex: applies the first, upgrades to the second, fails on the third, rolls
    // back, then finds drift.
    let globex = Customer::new(&vendor, &registry, "globex", false);
    globex.pull_and_apply(&registry, &first).ok();
    globex.pull_and_apply(&registry, &second).ok();
    let failed = globex.pull_and_apply(&registry, &third).code(1);
    assert!(
        failed.stderr.contains("migration fails"),
        "{}",
        failed.stderr
    );
    // Rolling back after a failed upgrade goes to the last version that applied
    // cleanly (the failed apply left part of the third in the state).
    let rolled_back = globex
        .run(&["rollback", "app", "--yes", "--json"])
        .ok()
        .json();
    assert_eq!(rolled_back["version"], second.as_str(), "{rolled_back}");
    globex.run(&["drift", "app", "--json"]).ok();
    change_state_by_hand(&globex.home, "\"globex-globex\"", "\"globex-by-hand\"");
    globex.run(&["drift", "app", "--json"]).code(3);
    globex.report(&registry);

    // hooli runs the prerelease in production.
    let hooli = Customer::new(&vendor, &registry, "hooli", true);
    hooli.pull_and_apply(&registry, &prerelease).ok();
    hooli.report(&registry);

    // umbrella is airgapped: a tar in, a receipts file out.
    let bundles = vendor.temp.path().join("bundles.tar");
    run(Command::new(binary("stackpack"))
        .args(["export", &format!("app@{first}"), "-o"])
        .arg(&bundles)
        .args(["--insecure", "--registry"])
        .arg(format!("{}/{NAMESPACE}", registry.host()))
        .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token()))
    .ok();
    let umbrella = Customer::new(&vendor, &registry, "umbrella", false);
    umbrella.run(&["import", bundles.to_str().unwrap()]).ok();
    umbrella
        .run(&[
            "apply",
            &format!("app@{first}"),
            "--inputs",
            umbrella.inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    let receipts = vendor.temp.path().join("umbrella-receipts.json");
    umbrella
        .run(&["receipts", "export", "-o", receipts.to_str().unwrap()])
        .ok();
    registry
        .run(&[
            "receipts",
            "import",
            receipts.to_str().unwrap(),
            "--customer",
            "umbrella",
        ])
        .ok();
    // initech never reports.

    let support = Support {
        registry: &registry,
        token: registry.token("support", None),
    };

    // The matrix: customer × stack → version, last attempt, behind, drift,
    // prerelease, environment.
    let everything = support.fleet(&[], "");
    assert_eq!(
        everything,
        vec![
            format!("globex app {second}"),
            format!("hooli app {prerelease}"),
            "initech - -".to_string(),
            format!("umbrella app {first}"),
        ]
    );
    let fleet = support.cli(&["fleet"]);
    let row_of_globex = row(&fleet, "globex");
    assert_eq!(row_of_globex["environment"], "production");
    assert_eq!(row_of_globex["lastAttempt"]["kind"], "rollback");
    assert_eq!(row_of_globex["lastAttempt"]["outcome"], "succeeded");
    assert_eq!(row_of_globex["latestStable"], third.as_str());
    assert_eq!(row_of_globex["behind"], 1);
    assert_eq!(row_of_globex["drifted"], true);
    assert_eq!(row_of_globex["prerelease"], false);
    let row_of_umbrella = row(&fleet, "umbrella");
    assert_eq!(row_of_umbrella["behind"], 2);
    assert_eq!(row_of_umbrella["environment"], "staging");
    assert_eq!(row_of_umbrella["drifted"], false);
    assert_eq!(row(&fleet, "hooli")["prerelease"], true);
    assert_eq!(row(&fleet, "initech")["stale"], true);
    assert_eq!(row_of_globex["stale"], false);

    // Everything about one customer: every attempt kept, in time order.
    let history = support.cli(&["customer", "history", "globex"]);
    let kinds: Vec<String> = history
        .as_array()
        .or_else(|| history["deployments"].as_array())
        .or_else(|| history["rows"].as_array())
        .unwrap_or_else(|| panic!("{history}"))
        .iter()
        .map(|d| {
            format!(
                "{} {} {}",
                d["kind"].as_str().unwrap(),
                d["version"].as_str().unwrap(),
                d["outcome"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            format!("apply {first} succeeded"),
            format!("apply {second} succeeded"),
            format!("apply {third} failed"),
            format!("rollback {second} succeeded"),
            format!("drift {second} no-changes"),
            format!("drift {second} drifted"),
        ]
    );
    assert_eq!(
        support.fleet(&["--customer", "globex"], "?customer=globex"),
        vec![format!("globex app {second}")]
    );

    // Below a version, exactly a version, a digest.
    assert_eq!(
        support.fleet(
            &["--stack", "app", "--below", &second],
            &format!("?stack=app&below={second}")
        ),
        vec![format!("umbrella app {first}")]
    );
    assert_eq!(
        support.fleet(&["--version", &second], &format!("?version={second}")),
        vec![format!("globex app {second}")]
    );
    let digest = row_of_globex["digest"].as_str().unwrap().to_string();
    assert_eq!(
        support.fleet(&["--digest", &digest], &format!("?digest={digest}")),
        vec![format!("globex app {second}")]
    );
    // Behind the newest stable release.
    assert_eq!(
        support.fleet(&["--behind"], "?behind=true"),
        vec![
            format!("globex app {second}"),
            format!("umbrella app {first}")
        ]
    );
    // A prerelease in production.
    assert_eq!(
        support.fleet(
            &["--prerelease", "--environment", "production"],
            "?prerelease=true&environment=production"
        ),
        vec![format!("hooli app {prerelease}")]
    );
    // Drifted; the last attempt failed (none: globex rolled back after the failure).
    assert_eq!(
        support.fleet(&["--drifted"], "?drifted=true"),
        vec![format!("globex app {second}")]
    );
    assert_eq!(
        support.fleet(&["--failed"], "?failed=true"),
        Vec::<String>::new()
    );
    // Silent: everyone reported just now but initech, who never did.
    assert_eq!(
        support.fleet(
            &["--silent", "--stale-after", "1h"],
            "?silent=true&staleAfter=1h"
        ),
        vec!["initech - -".to_string()]
    );
    // Who runs a bundle carrying module `base` below the version the third release
    // vendors: the first and second releases carry the older one.
    let releases = support.api("/api/v1/releases?stack=app");
    let third_release = releases
        .as_array()
        .or_else(|| releases["rows"].as_array())
        .unwrap_or_else(|| panic!("{releases}"))
        .iter()
        .find(|r| r["version"] == third.as_str())
        .unwrap_or_else(|| panic!("no release `{third}`: {releases}"))
        .clone();
    let base_now = third_release["modules"]
        .as_array()
        .unwrap_or_else(|| panic!("{third_release}"))
        .iter()
        .find(|m| m["name"] == "base")
        .and_then(|m| m["version"].as_str())
        .unwrap_or_else(|| panic!("the third release names no version of `base`: {third_release}"))
        .to_string();
    assert_eq!(
        support.fleet(
            &["--module", "base", "--module-below", &base_now],
            &format!("?module=base&moduleBelow={base_now}")
        ),
        vec![
            format!("globex app {second}"),
            format!("umbrella app {first}")
        ]
    );

    // Adoption over time: what customers run now is the last point.
    let adoption = support.cli(&["adoption", "--stack", "app"]);
    let adoption = adoption.as_array().map(|a| &a[0]).unwrap_or(&adoption);
    let last = adoption["points"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let counts = &last["customers"];
    assert_eq!(counts[&first], 1, "{adoption}");
    assert_eq!(counts[&second], 1, "{adoption}");
    assert_eq!(counts[&prerelease], 1, "{adoption}");

    // A support token reads; it cannot push or change anything.
    let refused = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "POST",
            "-H",
        ])
        .arg(format!("Authorization: Bearer {}", support.token))
        .arg(format!(
            "{}/v2/{NAMESPACE}/stacks/app/blobs/uploads/",
            registry.url()
        ))
        .output()
        .unwrap();
    assert!(
        matches!(&refused.stdout[..], b"401" | b"403"),
        "{}",
        String::from_utf8_lossy(&refused.stdout)
    );
}
