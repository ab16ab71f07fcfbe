//! Engine state kept in a bucket of the customer's own account (`--backend s3`),
//! against the S3 emulator (moto) standing in for that account: the runner checks or
//! creates the bucket (versioning, default encryption, public access blocked), keeps
//! no state of its own, and a home lost and made again finds every stack's state.
//! A state lock held elsewhere stops a second runner clearly, and `unlock` breaks a
//! stuck one only with its id, never while its run is alive here. Real Terraform,
//! the small `terraform_data` stacks.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde_json::Value;

use crate::common::release::ReleaseVendor;
use crate::common::{Moto, Run, Runner};
use stackpack_test_support::cut_relay::CutRelay;

const BUCKET: &str = "globex-tf-state";
const STATE_KEY: &str = "stackpack/globex/network.tfstate";

/// A runner on the emulated account, state in `BUCKET`, trusting the vendor and
/// holding its stacks; returns it with `network@V` and what `init --json` said.
fn runner_on(
    moto: &Arc<Moto>,
    vendor: &ReleaseVendor,
    version: &str,
    extra: &[&str],
) -> (Runner, String, Value) {
    let mut args = vec![
        "--backend",
        "s3",
        "--bucket",
        BUCKET,
        "--s3-endpoint",
        &moto.url,
        "--json",
    ];
    args.extend_from_slice(extra);
    let (runner, init) = Runner::on_account("globex", moto.clone(), &args);
    let init = init.ok().json();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.export_tar("stacks.tar").to_str().unwrap()])
        .ok();
    (runner, format!("network@{version}"), init)
}

fn inputs(runner: &Runner, cidr: &str) -> PathBuf {
    let path = runner.temp.path().join("network.tfvars");
    std::fs::write(&path, format!("cidr = \"{cidr}\"\n")).unwrap();
    path
}

fn apply(runner: &Runner, reference: &str, inputs: &Path) -> Value {
    let run = runner
        .run(&[
            "apply",
            reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
            "--json",
        ])
        .ok()
        .json();
    run["receipt"]["receipt"].clone()
}

/// Every file under `dir` whose name ends with `.tfstate`.
fn state_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(".tfstate") {
                found.push(path);
            }
        }
    }
    found
}

/// The bucket's versions of the network stack's state, newest first, as boto3
/// lists them: `(version id, the resource's input)`.
fn state_versions(moto: &Moto) -> Vec<(String, String)> {
    let listed = moto
        .python(&format!(
            r#"
import boto3, json
s3 = boto3.client("s3", endpoint_url=ENDPOINT)
out = []
for v in s3.list_object_versions(Bucket="{BUCKET}", Prefix="{STATE_KEY}")["Versions"]:
    if v["Key"] != "{STATE_KEY}":
        continue
    body = json.load(s3.get_object(Bucket="{BUCKET}", Key="{STATE_KEY}", VersionId=v["VersionId"])["Body"])
    out.append([v["VersionId"], body["resources"][0]["instances"][0]["attributes"]["input"]["value"]])
print(json.dumps(out))
"#
        ))
        .ok();
    serde_json::from_str(listed.stdout.trim()).unwrap()
}

#[test]
fn state_in_the_customers_bucket_outlives_the_runner_home_and_an_earlier_version_restores() {
    let moto = Arc::new(Moto::start());
    let vendor = ReleaseVendor::new();
    let version = vendor.build_version_of("network");

    // The first machine makes the bucket, applies, and keeps no state of its own.
    let (first, reference, made) = runner_on(&moto, &vendor, &version, &["--create-bucket"]);
    assert_eq!(
        made["bucket"]["configured"],
        serde_json::json!([
            "created",
            "versioning",
            "default encryption",
            "public access block"
        ])
    );
    assert_eq!(made["bucket"]["stacksWithState"], serde_json::json!([]));
    let receipt = apply(&first, &reference, &inputs(&first, "10.1.0.0/16"));
    assert_eq!(receipt["outcome"], "succeeded");
    assert!(
        state_files(&first.home).is_empty(),
        "{:?}",
        state_files(&first.home)
    );
    assert!(!first.home.join("state").exists());
    assert_eq!(state_versions(&moto).len(), 1);
    // Beside the state: what runs, and the inputs it ran with.
    let record = moto
        .python(&format!(
            "import boto3\nprint(boto3.client(\"s3\", endpoint_url=ENDPOINT).get_object(Bucket=\"{BUCKET}\", Key=\"stackpack/globex/network.stackpack.json\")[\"Body\"].read().decode())\n"
        ))
        .ok();
    let record: Value = serde_json::from_str(record.stdout.trim()).unwrap();
    assert_eq!(record["version"], version.as_str(), "{record}");
    assert_eq!(record["kind"], "apply", "{record}");
    assert_eq!(record["receiptId"], receipt["id"], "{record}");
    assert_eq!(record["inputs"]["cidr"], "10.1.0.0/16", "{record}");

    // The machine is lost with its home; a new one initialised on the same bucket
    // finds the stack's state and takes it over without creating anything again.
    std::fs::remove_dir_all(&first.home).unwrap();
    let (second, reference, found) = runner_on(&moto, &vendor, &version, &[]);
    assert_eq!(
        found["bucket"]["stacksWithState"],
        serde_json::json!(["network"])
    );
    let toml = std::fs::read_to_string(second.home.join("runner.toml")).unwrap();
    assert!(toml.contains("[backend.s3]"), "{toml}");
    // The record beside the state says what runs: `status` and `drift` go on at
    // once, with the inputs the last apply used (no take-over apply needed).
    assert_eq!(
        found["bucket"]["deploymentsFound"][0]["stack"], "network",
        "{found}"
    );
    assert_eq!(
        found["bucket"]["deploymentsFound"][0]["version"],
        version.as_str()
    );
    let status = second.run(&["status", "--json"]).ok().json();
    assert_eq!(status["stacks"][0]["stack"], "network", "{status}");
    assert_eq!(status["stacks"][0]["version"], version.as_str());
    let drift = second.run(&["drift", "network", "--json"]).ok().json();
    assert_eq!(drift["outcome"], "no-changes", "{drift}");

    let same = inputs(&second, "10.1.0.0/16");
    let taken_over = apply(&second, &reference, &same);
    // Nothing to create: the state was found (without it, the plan would add one).
    assert_eq!(
        taken_over["plan"],
        serde_json::json!({"add": 0, "change": 0, "destroy": 0}),
        "{taken_over}"
    );
    let status = second.run(&["status", "--json"]).ok().json();
    assert_eq!(status["stacks"][0]["stack"], "network", "{status}");
    assert_eq!(status["stacks"][0]["version"], version.as_str());
    second.run(&["drift", "network", "--json"]).ok();
    // The next apply continues from that state: an update, not a second resource.
    let moved = apply(&second, &reference, &inputs(&second, "10.2.0.0/16"));
    assert_eq!(moved["plan"]["change"], 1, "{moved}");
    assert_eq!(moved["plan"]["add"], 0, "{moved}");

    // Restoring an earlier state, as docs/runner.md says: copy that version over
    // the current one. The state then says the old range again, so planning the
    // new range shows one change where it showed none.
    let versions = state_versions(&moto);
    assert_eq!(versions[0].1, "vpc-10.2.0.0/16", "{versions:?}");
    let earlier = versions
        .iter()
        .find(|(_, input)| input == "vpc-10.1.0.0/16")
        .unwrap()
        .0
        .clone();
    moto.python(&format!(
        r#"
import boto3
s3 = boto3.client("s3", endpoint_url=ENDPOINT)
s3.copy_object(Bucket="{BUCKET}", Key="{STATE_KEY}", CopySource={{"Bucket": "{BUCKET}", "Key": "{STATE_KEY}", "VersionId": "{earlier}"}})
"#
    ))
    .ok();
    let new_range = second.temp.path().join("network.tfvars");
    let plan = second
        .run(&[
            "plan",
            &reference,
            "--inputs",
            new_range.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(plan["receipt"]["receipt"]["plan"]["change"], 1, "{plan}");
}

/// A lock record as Terraform writes it beside the state, left by a run on a
/// machine that is gone.
const STUCK_LOCK: &str = r#"{"ID":"5f1c2a0e-7d3b-4e8f-9a61-2b4c6d8e0f13","Operation":"OperationTypeApply","Info":"","Who":"ops@lost-host","Version":"1.15.5","Created":"2026-12-02T03:14:15.000000Z","Path":"globex-tf-state/stackpack/globex/network.tfstate"}"#;
const STUCK_ID: &str = "5f1c2a0e-7d3b-4e8f-9a61-2b4c6d8e0f13";

fn lock_exists(moto: &Moto) -> bool {
    let run = moto
        .python(&format!(
            r#"
import boto3
s3 = boto3.client("s3", endpoint_url=ENDPOINT)
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="{BUCKET}").get("Contents", [])]
print("{STATE_KEY}.tflock" in keys)
"#
        ))
        .ok();
    run.stdout.trim() == "True"
}

#[test]
fn a_held_state_lock_stops_a_second_runner_and_unlock_breaks_it_only_with_its_id() {
    let moto = Arc::new(Moto::start());
    let vendor = ReleaseVendor::new();
    let version = vendor.build_version_of("network");
    let (runner, reference, _) = runner_on(&moto, &vendor, &version, &["--create-bucket"]);
    let network = inputs(&runner, "10.1.0.0/16");
    apply(&runner, &reference, &network);
    moto.python(&format!(
        "import boto3\nboto3.client(\"s3\", endpoint_url=ENDPOINT).put_object(Bucket=\"{BUCKET}\", Key=\"{STATE_KEY}.tflock\", Body={STUCK_LOCK:?})\n"
    ))
    .ok();

    // Another runner holds the state: this one does not start, and says how to go on.
    let blocked = runner
        .run(&["plan", &reference, "--inputs", network.to_str().unwrap()])
        .code(1);
    assert!(
        blocked
            .stderr
            .contains(&format!("is locked by another run (lock `{STUCK_ID}`)")),
        "{}",
        blocked.stderr
    );
    assert!(
        blocked.stderr.contains(&format!(
            "stackpack-runner unlock network --lock-id {STUCK_ID}"
        )),
        "{}",
        blocked.stderr
    );

    // While a run holds the stack on this machine, the lock is not stuck.
    // (This test's process holds the runner's own lock file, as a live run does.)
    let refused = {
        use std::os::fd::AsRawFd;
        let held = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(runner.home.join("locks/network.lock"))
            .unwrap();
        // SAFETY: flock on a descriptor this test owns.
        assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX) }, 0);
        runner
            .run(&["unlock", "network", "--lock-id", STUCK_ID])
            .code(1)
    };
    assert!(
        refused.stderr.contains("alive on this machine"),
        "{}",
        refused.stderr
    );
    assert!(lock_exists(&moto));

    // The holder is shown; a wrong id, or none without a terminal, unlocks nothing.
    let wrong = runner
        .run(&["unlock", "network", "--lock-id", "not-the-id"])
        .code(1);
    assert!(wrong.stderr.contains("ops@lost-host"), "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("OperationTypeApply"),
        "{}",
        wrong.stderr
    );
    assert!(
        wrong
            .stderr
            .contains("lock id `not-the-id` is not the id of the lock held"),
        "{}",
        wrong.stderr
    );
    let untyped = runner.run(&["unlock", "network"]).code(1);
    assert!(
        untyped.stderr.contains(&format!("--lock-id {STUCK_ID}")),
        "{}",
        untyped.stderr
    );
    assert!(lock_exists(&moto));

    let unlocked = runner
        .run(&["unlock", "network", "--lock-id", STUCK_ID, "--json"])
        .ok()
        .json();
    assert_eq!(unlocked["unlocked"], true);
    assert!(!lock_exists(&moto));
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = &receipts["receipts"].as_array().unwrap().last().unwrap()["receipt"]["receipt"];
    assert_eq!(last["kind"], "unlock", "{last}");
    assert_eq!(last["outcome"], "succeeded");
    assert_eq!(last["id"], unlocked["receiptId"]);
    assert_eq!(last["version"], version.as_str());

    // The stack runs again; a second unlock finds nothing to do.
    runner
        .run(&["plan", &reference, "--inputs", network.to_str().unwrap()])
        .ok();
    let again = runner
        .run(&["unlock", "network", "--lock-id", STUCK_ID])
        .ok();
    assert!(again.stdout.contains("is not locked"), "{}", again.stdout);
}

#[test]
fn a_bucket_without_versioning_is_refused_with_the_fix_and_create_bucket_turns_it_on() {
    let moto = Arc::new(Moto::start());
    moto.python(&format!(
        "import boto3\nboto3.client(\"s3\", endpoint_url=ENDPOINT).create_bucket(Bucket=\"{BUCKET}\")\n"
    ))
    .ok();
    let args = [
        "--backend",
        "s3",
        "--bucket",
        BUCKET,
        "--s3-endpoint",
        moto.url.as_str(),
    ];
    let (runner, refused) = Runner::on_account("globex", moto.clone(), &args);
    let refused = refused.code(1);
    assert!(
        refused.stderr.contains("versioning is off"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&format!(
            "aws s3api put-bucket-versioning --bucket {BUCKET} --versioning-configuration Status=Enabled"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        !runner.home.join("runner.toml").exists(),
        "a refused bucket leaves no home"
    );

    let missing = Runner::on_account(
        "globex",
        moto.clone(),
        &[
            "--backend",
            "s3",
            "--bucket",
            "globex-no-such-bucket",
            "--s3-endpoint",
            &moto.url,
        ],
    )
    .1
    .code(1);
    assert!(
        missing
            .stderr
            .contains("bucket `globex-no-such-bucket` does not exist"),
        "{}",
        missing.stderr
    );
    assert!(
        missing.stderr.contains("--create-bucket"),
        "{}",
        missing.stderr
    );

    let mut fixing = args.to_vec();
    fixing.extend(["--create-bucket", "--json"]);
    let fixed = Runner::on_account("globex", moto.clone(), &fixing)
        .1
        .ok()
        .json();
    let configured = fixed["bucket"]["configured"].as_array().unwrap();
    assert!(configured.contains(&Value::from("versioning")), "{fixed}");
    assert!(!configured.contains(&Value::from("created")), "{fixed}");
    let versioning = moto
        .python(&format!(
            "import boto3\nprint(boto3.client(\"s3\", endpoint_url=ENDPOINT).get_bucket_versioning(Bucket=\"{BUCKET}\")[\"Status\"])\n"
        ))
        .ok();
    assert_eq!(versioning.stdout.trim(), "Enabled");
}

/// A bucket made in another region than the runner is told: refused at `init`,
/// naming both regions and the flag that fixes it, before the engine signs a
/// request AWS would refuse mid-plan.
#[test]
fn a_bucket_in_another_region_is_refused_naming_its_region() {
    let moto = Arc::new(Moto::start());
    moto.python(&format!(
        "import boto3\nboto3.client(\"s3\", endpoint_url=ENDPOINT, region_name=\"eu-west-1\").create_bucket(Bucket=\"{BUCKET}\", CreateBucketConfiguration={{\"LocationConstraint\": \"eu-west-1\"}})\n"
    ))
    .ok();
    let mut args = vec![
        "--backend",
        "s3",
        "--bucket",
        BUCKET,
        "--s3-endpoint",
        moto.url.as_str(),
    ];
    args.extend(["--region", "us-east-1"]);
    let (runner, refused) = Runner::on_account("globex", moto.clone(), &args);
    let refused = refused.code(1);
    assert!(
        refused.stderr.contains(&format!(
            "bucket `{BUCKET}` is in region `eu-west-1`, not `us-east-1`"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--region eu-west-1"),
        "{}",
        refused.stderr
    );
    assert!(
        !runner.home.join("runner.toml").exists(),
        "a refused bucket leaves no home"
    );
}

#[test]
fn credentials_the_account_refuses_are_named_and_the_secret_never_printed() {
    // An emulator that checks credentials as AWS does: it knows no access key.
    let moto = Arc::new(Moto::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]));
    let secret = "wJalrXUtnFEMI-never-print-this-secret";
    let temp = tempfile::tempdir().unwrap();
    let run = Run::from(
        Command::new(env!("CARGO_BIN_EXE_stackpack-runner"))
            .args([
                "init",
                "--customer",
                "globex",
                "--backend",
                "s3",
                "--bucket",
                BUCKET,
            ])
            .args(["--s3-endpoint", &moto.url, "--create-bucket"])
            .env("STACKPACK_RUNNER_HOME", temp.path().join("home"))
            .env("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEWRONG1234")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    )
    .code(1);
    assert!(
        run.stderr
            .contains("the credentials (access key `AKIA…1234`) were refused"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("AWS_SECRET_ACCESS_KEY"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(secret) && !run.stdout.contains(secret));
    assert!(!run.stderr.contains("AKIAEXAMPLEWRONG1234"));
}

#[test]
fn a_second_runner_on_the_same_bucket_stops_on_the_state_lock_while_the_first_applies_or_waits_with_wait(
) {
    let moto = Arc::new(Moto::start());
    let vendor = ReleaseVendor::new();
    let scratch = tempfile::tempdir().unwrap();
    let applying = scratch.path().join("applying");
    // A resource that takes a while to create, and says when it started.
    vendor.change(
        "network",
        &format!(
            "\nresource \"terraform_data\" \"slow\" {{\n  provisioner \"local-exec\" {{\n    command = \"touch {} && sleep 12\"\n  }}\n}}\n",
            applying.display()
        ),
    );
    let version = vendor.build_version_of("network");
    let (first, reference, _) = runner_on(&moto, &vendor, &version, &["--create-bucket"]);
    // Another machine of the same customer: its own home, the same bucket.
    let (second, _, _) = runner_on(&moto, &vendor, &version, &[]);
    let network = inputs(&first, "10.1.0.0/16");
    let child = start_slow_apply(&first, &reference, &network, &applying);
    let network = network.to_str().unwrap();

    let blocked = second
        .run(&["plan", &reference, "--inputs", network])
        .code(1);
    assert!(
        blocked.stderr.contains("is locked by another run (lock `"),
        "{}",
        blocked.stderr
    );
    assert!(
        blocked.stderr.contains("Error acquiring the state lock"),
        "{}",
        blocked.stderr
    );
    // The holder, from the lock's own record: the first runner's apply.
    let holder = second.run(&["unlock", "network"]).code(1);
    assert!(
        holder.stderr.contains("OperationTypeApply"),
        "{}",
        holder.stderr
    );
    assert!(holder.stderr.contains("--lock-id "), "{}", holder.stderr);

    // With `--wait`, the second runner waits for the lock instead, and goes on.
    let waited = second
        .run(&[
            "plan", &reference, "--inputs", network, "--wait", "120", "--json",
        ])
        .ok()
        .json();
    assert_eq!(
        waited["receipt"]["receipt"]["outcome"], "no-changes",
        "{waited}"
    );
    Run::from(child.wait_with_output().unwrap()).ok();
}

#[test]
fn the_s3_endpoint_lost_mid_apply_fails_the_run_truthfully_and_names_the_lock_left_behind() {
    let moto = Arc::new(Moto::start());
    // The runner reaches the bucket through a relay the test cuts during the apply.
    let relay = CutRelay::start(&moto.url);
    let vendor = ReleaseVendor::new();
    let scratch = tempfile::tempdir().unwrap();
    let applying = scratch.path().join("applying");
    vendor.change(
        "network",
        &format!(
            "\nresource \"terraform_data\" \"slow\" {{\n  provisioner \"local-exec\" {{\n    command = \"touch {} && sleep 6\"\n  }}\n}}\n",
            applying.display()
        ),
    );
    let version = vendor.build_version_of("network");
    let args = [
        "--backend",
        "s3",
        "--bucket",
        BUCKET,
        "--s3-endpoint",
        relay.url.as_str(),
        "--create-bucket",
    ];
    let (runner, init) = Runner::on_account("globex", moto.clone(), &args);
    init.ok();
    runner.trust_and_import(&vendor.public_key, &vendor.export_tar("stacks.tar"));
    let reference = format!("network@{version}");
    let network = inputs(&runner, "10.1.0.0/16");
    let child = start_slow_apply(&runner, &reference, &network, &applying);
    relay.cut();
    let failed = Run::from(child.wait_with_output().unwrap()).code(1);

    // The engine's own words, then the runner's: the state could not be saved.
    assert!(
        failed.stderr.contains("Failed to save state")
            || failed.stderr.contains("Failed to persist state"),
        "{}",
        failed.stderr
    );
    // The receipt says the apply failed, with the engine's error.
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = &receipts["receipts"].as_array().unwrap().last().unwrap()["receipt"]["receipt"];
    assert_eq!(last["kind"], "apply", "{last}");
    assert_eq!(last["outcome"], "failed", "{last}");
    // The lock this run took is still in the bucket: the hint names its id.
    let held = moto
        .python(&format!(
            "import boto3, json\nprint(json.load(boto3.client(\"s3\", endpoint_url=ENDPOINT).get_object(Bucket=\"{BUCKET}\", Key=\"{STATE_KEY}.tflock\")[\"Body\"])[\"ID\"])\n"
        ))
        .ok();
    let lock_id = held.stdout.trim();
    assert!(!lock_id.is_empty());
    // What the engine did is only in the kept work folder; the hint says so, and
    // the runbook's order: push that state, then break the lock the run left.
    let errored = failed
        .stderr
        .split('`')
        .find(|part| part.ends_with("/errored.tfstate"))
        .unwrap_or_else(|| panic!("no errored.tfstate named:\n{}", failed.stderr));
    let errored = PathBuf::from(errored);
    assert!(errored.exists(), "{}", errored.display());
    assert!(
        failed
            .stderr
            .contains("state push -lock=false errored.tfstate"),
        "{}",
        failed.stderr
    );
    assert!(
        failed.stderr.contains("stackpack-runner unlock network"),
        "{}",
        failed.stderr
    );

    // The endpoint is back: the runbook, step by step.
    let _back = relay.restore(&moto.url);
    let pushed = Command::new(crate::common::terraform())
        .args(["state", "push", "-lock=false", "errored.tfstate"])
        .current_dir(errored.parent().unwrap())
        .envs(moto.env())
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{pushed:?}");
    let shown = runner.run(&["unlock", "network"]).code(1);
    assert!(
        shown.stderr.contains(&format!("--lock-id {lock_id}")),
        "{}",
        shown.stderr
    );
    runner
        .run(&["unlock", "network", "--lock-id", lock_id])
        .ok();
    // Nothing was lost: the state holds what the failed apply created.
    let plan = runner
        .run(&[
            "plan",
            &reference,
            "--inputs",
            network.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(
        plan["receipt"]["receipt"]["plan"],
        serde_json::json!({"add": 0, "change": 0, "destroy": 0}),
        "{plan}"
    );
}

/// Starts `apply` of the slow stack and returns once its slow resource is being
/// created (the provisioner touched `applying`): the run holds the state lock then.
fn start_slow_apply(
    runner: &Runner,
    reference: &str,
    network: &Path,
    applying: &Path,
) -> std::process::Child {
    let child = runner
        .command(&[
            "apply",
            reference,
            "--inputs",
            network.to_str().unwrap(),
            "--yes",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !applying.exists() {
        assert!(start.elapsed().as_secs() < 120, "the apply never started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child
}

/// Security review (issue 39 §7.4): two homes of one customer on one state bucket.
/// The second's `unlock` broke the first's lock while its apply ran, and both
/// applied one state. Now the run recorded beside the state (home, host, process)
/// is checked, whichever home asks; `--force` breaks it only with a warning, and the
/// first apply then says its lock was broken under it, not that it "did not start".
#[test]
fn unlock_from_a_second_home_refuses_while_the_first_homes_apply_holds_the_lock() {
    let moto = Arc::new(Moto::start());
    let vendor = ReleaseVendor::new();
    let scratch = tempfile::tempdir().unwrap();
    let applying = scratch.path().join("applying");
    vendor.change(
        "network",
        &format!(
            "\nresource \"terraform_data\" \"slow\" {{\n  provisioner \"local-exec\" {{\n    command = \"touch {} && sleep 12\"\n  }}\n}}\n",
            applying.display()
        ),
    );
    let version = vendor.build_version_of("network");
    let (first, reference, _) = runner_on(&moto, &vendor, &version, &["--create-bucket"]);
    let (second, _, _) = runner_on(&moto, &vendor, &version, &[]);
    let network = inputs(&first, "10.1.0.0/16");
    let child = start_slow_apply(&first, &reference, &network, &applying);

    let shown = second.run(&["unlock", "network"]).code(1);
    let lock_id = shown
        .stderr
        .split("--lock-id ")
        .nth(1)
        .and_then(|rest| rest.split(['`', ' ', '\n']).next())
        .unwrap_or_else(|| panic!("no lock id shown: {}", shown.stderr))
        .to_string();
    assert!(
        shown.stderr.contains(&first.home.display().to_string()),
        "the holder's home is shown: {}",
        shown.stderr
    );
    let refused = second.run(&["unlock", "network", "--lock-id", &lock_id]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!(
            "is being run from the runner home `{}`",
            first.home.display()
        )) && refused.stderr.contains("nothing was unlocked"),
        "{}",
        refused.stderr
    );
    assert!(lock_exists(&moto), "the live run's lock was broken");

    let forced = second.run(&["unlock", "network", "--lock-id", &lock_id, "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(
        forced.stderr.contains("warning: `--force`"),
        "{}",
        forced.stderr
    );

    // The first apply went on; what it says of its lock is what happened.
    let ended = Run::from(child.wait_with_output().unwrap());
    assert!(
        !ended.stderr.contains("did not start"),
        "the apply ran, and says otherwise: {}",
        ended.stderr
    );
    if ended.code != 0 {
        assert!(
            ended.stderr.contains("could not release the state lock"),
            "{}",
            ended.stderr
        );
    }
}
