//! The customer's whole job, offline, with the real runner, packager and Terraform:
//! import an exported bundle, verify, check inputs, plan, apply, upgrade, refuse a
//! downgrade, roll back, status, drift after a hand edit of the state, export receipts.

use crate::common;

use std::path::PathBuf;

use common::{globex_inputs, Runner, Vendor};
use stackpack_schema::receipt::SignedReceipt;

/// The vendor's two releases of `data-plane`, a first one and a patch, each exported
/// as a tar file for the customer; and globex's inputs.
struct Releases {
    vendor: Vendor,
    v1: String,
    v2: String,
    tar1: PathBuf,
    tar2: PathBuf,
    inputs: PathBuf,
}

impl Releases {
    fn exported() -> Releases {
        let vendor = Vendor::new();
        let first = vendor.build();
        let v1 = first
            .iter()
            .find(|(s, _)| s == "data-plane")
            .unwrap()
            .1
            .clone();
        let tar1 = vendor.export_tar("first.tar");
        vendor.change(
            "stacks/data-plane/main.tf",
            "\n# a comment: a patch release\n",
        );
        let second = vendor.build();
        assert_eq!(second.len(), 1, "{second:?}");
        let v2 = second[0].1.clone();
        let tar2 = vendor.export_tar("second.tar");
        Releases {
            vendor,
            v1,
            v2,
            tar1,
            tar2,
            inputs: globex_inputs(),
        }
    }

    fn inputs(&self) -> &str {
        self.inputs.to_str().unwrap()
    }
}

fn at(version: &str) -> String {
    format!("data-plane@{version}")
}

/// The customer's whole job, in the order an operator does it; each step is named
/// after what it guards and starts from the state the one before left.
#[test]
fn import_verify_plan_apply_upgrade_rollback_status_drift_and_export() {
    let releases = Releases::exported();
    let runner = Runner::new("globex");
    import_is_refused_until_the_vendor_key_is_trusted(&releases, &runner);
    a_plan_writes_no_state(&releases, &runner);
    an_apply_needs_yes_and_signs_a_receipt_without_input_values(&releases, &runner);
    an_upgrade_applies_and_a_downgrade_needs_a_flag(&releases, &runner);
    a_rollback_goes_back_one_version_and_no_further(&releases, &runner);
    status_shows_the_running_version_and_a_newer_one_in_the_store(&releases, &runner);
    a_change_made_by_hand_in_the_account_is_drift(&runner);
    exported_receipts_record_every_step_signed_by_one_key(&runner);
}

fn import_is_refused_until_the_vendor_key_is_trusted(releases: &Releases, runner: &Runner) {
    let tar1 = releases.tar1.to_str().unwrap();
    let refused = runner.run(&["import", tar1]).code(1);
    assert!(
        refused.stderr.contains("trusts no signing key"),
        "{}",
        refused.stderr
    );
    runner
        .run(&["trust", "add", releases.vendor.public_key.to_str().unwrap()])
        .ok();
    let imported = runner.run(&["import", tar1, "--json"]).ok().json();
    let imported = imported["imported"].as_array().unwrap();
    // Every stack of the example, each built once.
    let stacks = std::fs::read_dir(
        stackpack_test_support::repository_root().join("examples/acme-infra/stacks"),
    )
    .unwrap()
    .count();
    assert_eq!(imported.len(), stacks, "{imported:?}");
    assert!(imported.iter().all(|i| i["added"] == true));
    let verified = runner
        .run(&["verify", &at(&releases.v1), "--json"])
        .ok()
        .json();
    assert_eq!(verified["verified"], true);
}

fn a_plan_writes_no_state(releases: &Releases, runner: &Runner) {
    let v1 = at(&releases.v1);
    runner
        .run(&["check-inputs", &v1, "--inputs", releases.inputs()])
        .ok();
    let plan = runner
        .run(&["plan", &v1, "--inputs", releases.inputs(), "--json"])
        .ok()
        .json();
    assert_eq!(plan["kind"], "plan");
    assert_eq!(plan["plan"]["outputChanges"], 7);
    assert!(
        runner.work_entries().is_empty(),
        "{:?}",
        runner.work_entries()
    );
    assert!(
        !runner.state_file("data-plane").exists(),
        "a plan wrote state"
    );
}

fn an_apply_needs_yes_and_signs_a_receipt_without_input_values(
    releases: &Releases,
    runner: &Runner,
) {
    let v1 = at(&releases.v1);
    // No terminal and no --yes: refused before anything runs.
    let refused = runner
        .run(&["apply", &v1, "--inputs", releases.inputs()])
        .code(1);
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);

    let applied = runner
        .run(&[
            "apply",
            &v1,
            "--inputs",
            releases.inputs(),
            "--yes",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(applied["outcome"], "succeeded");
    assert_eq!(applied["outputs"]["vpc_cidr"]["value"], "10.40.0.0/16");
    assert_eq!(applied["outputs"]["kubernetes_version"]["value"], "1.30");
    assert_eq!(
        applied["outputs"]["private_subnets"]["value"],
        serde_json::json!(["10.40.0.0/20", "10.40.16.0/20", "10.40.32.0/20"])
    );
    assert!(runner.state_file("data-plane").is_file());
    assert!(runner.work_entries().is_empty());
    let receipt: SignedReceipt = serde_json::from_value(applied["receipt"].clone()).unwrap();
    receipt.verify_integrity().unwrap();
    assert_eq!(receipt.receipt.customer, "globex");
    assert_eq!(
        receipt.receipt.engine.name,
        stackpack_schema::bundle::EngineName::Terraform
    );
    assert!(
        !receipt.receipt.engine.version.is_empty() && receipt.receipt.engine.version != "unknown"
    );
    let document = serde_json::to_string(&receipt).unwrap();
    assert!(
        !document.contains("111122223333"),
        "a receipt holds an input value"
    );
}

fn an_upgrade_applies_and_a_downgrade_needs_a_flag(releases: &Releases, runner: &Runner) {
    runner
        .run(&["import", releases.tar2.to_str().unwrap()])
        .ok();
    let upgraded = runner
        .run(&[
            "apply",
            &at(&releases.v2),
            "--inputs",
            releases.inputs(),
            "--yes",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(upgraded["previousVersion"], releases.v1.as_str());
    assert_eq!(upgraded["outputs"]["vpc_cidr"]["value"], "10.40.0.0/16");

    let refused = runner
        .run(&[
            "apply",
            &at(&releases.v1),
            "--inputs",
            releases.inputs(),
            "--yes",
        ])
        .code(1);
    assert!(refused.stderr.contains("downgrade"), "{}", refused.stderr);
}

fn a_rollback_goes_back_one_version_and_no_further(releases: &Releases, runner: &Runner) {
    let rolled = runner
        .run(&["rollback", "data-plane", "--yes", "--json"])
        .ok()
        .json();
    assert_eq!(rolled["version"], releases.v1.as_str());
    assert_eq!(rolled["kind"], "rollback");
    // Rolled back from the first version there is nowhere further back to go.
    let refused = runner.run(&["rollback", "data-plane", "--yes"]).code(1);
    assert!(
        refused.stderr.contains("no earlier version"),
        "{}",
        refused.stderr
    );
}

fn status_shows_the_running_version_and_a_newer_one_in_the_store(
    releases: &Releases,
    runner: &Runner,
) {
    let status = runner.run(&["status", "--json"]).ok().json();
    let stacks = status["stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 1);
    assert_eq!(stacks[0]["version"], releases.v1.as_str());
    assert_eq!(stacks[0]["newerInStore"], releases.v2.as_str());
    let table = runner.run(&["status"]).ok().stdout;
    assert!(table.starts_with("STACK"), "{table}");
}

/// No drift first; then a change made by hand in the account, through the AWS API
/// (the emulator's), as an operator at the console would.
fn a_change_made_by_hand_in_the_account_is_drift(runner: &Runner) {
    let clean = runner.run(&["drift", "data-plane", "--json"]).ok().json();
    assert_eq!(clean["outcome"], "no-changes");
    runner.moto().python(TAG_THE_VPC_BY_HAND).ok();
    let drifted = runner
        .run(&["drift", "data-plane", "--json"])
        .code(3)
        .json();
    assert_eq!(drifted["outcome"], "drifted");
    // The receipt names what the refresh found changed by hand: the registry tells
    // the customer's hand from a wrong forecast by it.
    let receipt: SignedReceipt = serde_json::from_value(drifted["receipt"].clone()).unwrap();
    receipt.verify_integrity().unwrap();
    assert!(
        receipt
            .receipt
            .drifted
            .iter()
            .any(|a| a.ends_with("aws_vpc.this")),
        "{:?}",
        receipt.receipt.drifted
    );
    // Issue 39 §1: the attribute names that differ, never values, in the receipt
    // and in what `drift` prints.
    let vpc = receipt
        .receipt
        .drift
        .iter()
        .find(|d| d.address.ends_with("aws_vpc.this"))
        .unwrap_or_else(|| panic!("{:?}", receipt.receipt.drift));
    assert!(
        vpc.attributes.iter().any(|a| a.starts_with("tags")),
        "{vpc:?}"
    );
    let text = runner.run(&["drift", "data-plane"]).code(3);
    let line = text
        .stdout
        .lines()
        .find(|l| l.contains("aws_vpc.this"))
        .unwrap_or_else(|| panic!("drift names no address:\n{}", text.stdout));
    assert!(line.contains("tags"), "{line}");
    assert!(
        !text.stdout.contains("hand"),
        "a value printed:\n{}",
        text.stdout
    );
    let status = runner.run(&["status", "--json"]).ok().json();
    assert_eq!(status["stacks"][0]["lastDriftCheck"]["outcome"], "drifted");
}

/// Receipts, exported for an airgapped site: one per step, in order.
fn exported_receipts_record_every_step_signed_by_one_key(runner: &Runner) {
    let file = runner.temp.path().join("receipts.json");
    runner
        .run(&["receipts", "export", "-o", file.to_str().unwrap()])
        .ok();
    let receipts: Vec<SignedReceipt> =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let kinds: Vec<String> = receipts
        .iter()
        .map(|r| format!("{}:{}", r.receipt.kind, r.receipt.outcome))
        .collect();
    assert_eq!(
        kinds,
        [
            "plan:succeeded",
            "apply:succeeded",
            "apply:succeeded",
            "rollback:succeeded",
            "drift:no-changes",
            "drift:drifted",
            "drift:drifted"
        ]
    );
    for receipt in &receipts {
        receipt.verify_integrity().unwrap();
        assert_eq!(receipt.receipt.key_id, receipts[0].receipt.key_id);
    }
}

/// Tags globex's VPC through the AWS API, outside the runner.
const TAG_THE_VPC_BY_HAND: &str = r#"
import boto3
ec2 = boto3.client("ec2", endpoint_url=ENDPOINT, region_name="us-east-1")
vpc = ec2.describe_vpcs(Filters=[{"Name": "cidr", "Values": ["10.40.0.0/16"]}])["Vpcs"][0]["VpcId"]
ec2.create_tags(Resources=[vpc], Tags=[{"Key": "changed-by", "Value": "hand"}])
"#;

/// How many VPCs with globex's range the account holds.
const COUNT_GLOBEX_VPCS: &str = r#"
import boto3
ec2 = boto3.client("ec2", endpoint_url=ENDPOINT, region_name="us-east-1")
print(len(ec2.describe_vpcs(Filters=[{"Name": "cidr", "Values": ["10.40.0.0/16"]}])["Vpcs"]))
"#;

#[test]
fn destroy_removes_the_customers_resources_only_for_the_right_customer_and_is_recorded() {
    let vendor = Vendor::new();
    let built = vendor.build();
    let version = &built.iter().find(|(s, _)| s == "data-plane").unwrap().1;
    let tar = vendor.export_tar("bundles.tar");
    let runner = Runner::new("globex");
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["import", tar.to_str().unwrap()]).ok();
    let inputs = globex_inputs();
    let reference = format!("data-plane@{version}");
    runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    assert_eq!(
        runner.moto().python(COUNT_GLOBEX_VPCS).ok().stdout.trim(),
        "1"
    );

    // Without a terminal and without the customer id, nothing happens.
    let refused = runner.run(&["destroy", "data-plane"]).code(1);
    assert!(
        refused.stderr.contains("--confirm globex"),
        "{}",
        refused.stderr
    );
    let wrong = runner
        .run(&["destroy", "data-plane", "--confirm", "initech"])
        .code(1);
    assert!(
        wrong
            .stderr
            .contains("does not name this runner's customer"),
        "{}",
        wrong.stderr
    );
    assert_eq!(
        runner.moto().python(COUNT_GLOBEX_VPCS).ok().stdout.trim(),
        "1"
    );

    let destroyed = runner
        .run(&["destroy", "data-plane", "--confirm", "globex", "--json"])
        .ok()
        .json();
    assert_eq!(destroyed["kind"], "destroy");
    assert_eq!(destroyed["outcome"], "succeeded");
    assert!(
        destroyed["plan"]["destroy"].as_u64().unwrap() > 30,
        "{destroyed}"
    );
    assert_eq!(
        runner.moto().python(COUNT_GLOBEX_VPCS).ok().stdout.trim(),
        "0"
    );
    let status = runner.run(&["status", "--json"]).ok().json();
    assert!(status["stacks"].as_array().unwrap().is_empty(), "{status}");
    // Issue 23, item 15: a destroyed stack is a row saying so, not "nothing has
    // been applied by this runner yet".
    assert_eq!(status["notDeployed"][0]["stack"], "data-plane", "{status}");
    assert_eq!(status["notDeployed"][0]["state"], "destroyed", "{status}");
    assert_eq!(status["notDeployed"][0]["resourcesInState"], 0, "{status}");
    let table = runner.run(&["status"]).ok();
    let row = table.stdout.lines().find(|l| l.starts_with("data-plane"));
    assert!(
        row.is_some_and(|row| row.contains("destroyed") && row.contains("destroy ")),
        "{}{}",
        table.stdout,
        table.stderr
    );
    assert!(
        !table.stderr.contains("nothing has been applied"),
        "{}",
        table.stderr
    );
    // Nothing left to destroy, drift-check or roll back to.
    let again = runner
        .run(&["destroy", "data-plane", "--confirm", "globex"])
        .code(1);
    assert!(
        again.stderr.contains("is not deployed by this runner"),
        "{}",
        again.stderr
    );
}
