//! Releases on the runner: a signed release of three wired stacks imported from a
//! tar, applied in dependency order with each stack's output reaching the next one,
//! a second release re-applying only the stack it changed, rolled back and
//! destroyed in reverse order; every bad input refused with nothing half-applied.
//! Real Terraform, real `stackpack` builds, small `terraform_data` stacks.

use std::path::Path;

use serde_json::Value;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::release::releases_in;
use stackpack_schema::signature::PrivateKey;

use crate::common::release::{inputs_dir, tar_of, ReleaseVendor};
use crate::common::{copy_dir, Runner};

const ALL_V1: &[(&str, &str)] = &[
    ("network", "0.1.0"),
    ("cluster", "0.1.0"),
    ("gpu-pools", "0.1.0"),
];

fn output_in_state(runner: &Runner, stack: &str, output: &str) -> Value {
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(runner.state_file(stack)).unwrap()).unwrap();
    state["outputs"][output]["value"].clone()
}

fn resources_in_state(runner: &Runner, stack: &str) -> usize {
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(runner.state_file(stack)).unwrap()).unwrap();
    state["resources"].as_array().map_or(0, |r| r.len())
}

fn status(runner: &Runner) -> Value {
    runner.run(&["status", "--json"]).ok().json()
}

fn release_status<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["release"] == name)
        .unwrap_or_else(|| panic!("release `{name}` in {status}"))
}

fn results(run: &crate::common::Run) -> Vec<(String, String)> {
    run.json()["releaseReceipt"]["receipt"]["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["result"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pair(stack: &str, result: &str) -> (String, String) {
    (stack.to_string(), result.to_string())
}

#[test]
fn a_release_applies_in_order_with_wired_outputs_reapplies_only_what_changed_rolls_back_and_destroys(
) {
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    let tar = vendor.export_tar("platform-1.0.0.tar");

    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["import", tar.to_str().unwrap()]).ok();
    assert_eq!(releases_in(&runner.store()).unwrap().len(), 1);

    let inputs = inputs_dir(runner.temp.path(), 3);
    let dir = inputs.to_str().unwrap();

    // Plan: network changes, so the others wait on their upstream, planned with no
    // guessed value.
    let plan = runner
        .run(&["plan", "platform@1.0.0", "--inputs-dir", dir, "--json"])
        .ok();
    let plans = plan.json();
    let states: Vec<(&str, &str)> = plans["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["stack"].as_str().unwrap(), s["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("network", "changes"),
            ("cluster", "waiting"),
            ("gpu-pools", "waiting")
        ]
    );
    assert_eq!(plans["stacks"][1]["waitingOn"], "network");

    // Without a terminal and without `--yes`: refused, nothing applied.
    let refused = runner
        .run(&["apply", "platform@1.0.0", "--inputs-dir", dir])
        .code(1);
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);

    let applied = runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            dir,
            "--yes",
            "--json",
        ])
        .ok();
    assert_eq!(
        results(&applied),
        [
            pair("network", "applied"),
            pair("cluster", "applied"),
            pair("gpu-pools", "applied")
        ]
    );
    // The release receipt is signed by the installation key and names each stack
    // receipt.
    let signed: stackpack_runner::release::receipt::SignedReleaseReceipt =
        serde_json::from_value(applied.json()["releaseReceipt"].clone()).unwrap();
    assert!(signed.verifies());
    assert_eq!(signed.receipt.release, "platform");
    assert!(signed.receipt.stacks.iter().all(|s| s.receipt_id.is_some()));
    // The wired values went all the way down.
    assert_eq!(
        output_in_state(&runner, "network", "vpc_id"),
        "vpc-10.1.0.0/16"
    );
    assert_eq!(
        output_in_state(&runner, "cluster", "cluster_id"),
        "main@vpc-10.1.0.0/16"
    );
    assert_eq!(
        output_in_state(&runner, "gpu-pools", "pool"),
        "3x@main@vpc-10.1.0.0/16"
    );
    // Each stack receipt names the release.
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let applies: Vec<&Value> = receipts["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["receipt"]["receipt"])
        .filter(|r| r["kind"] == "apply")
        .collect();
    assert_eq!(applies.len(), 3, "{receipts}");
    for receipt in &applies {
        assert_eq!(receipt["release"]["name"], "platform", "{receipt}");
        assert_eq!(receipt["release"]["version"], "1.0.0", "{receipt}");
    }

    let status_now = status(&runner);
    let platform = release_status(&status_now, "platform");
    assert_eq!(platform["version"], "1.0.0");
    assert_eq!(platform["state"], "applied");
    assert_eq!(platform["stacks"].as_array().unwrap().len(), 3);
    assert!(platform["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["state"] == "at-release"));

    // The same release again: nothing is re-applied.
    let again = runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            dir,
            "--yes",
            "--json",
        ])
        .ok();
    assert_eq!(
        results(&again),
        [
            pair("network", "unchanged"),
            pair("cluster", "unchanged"),
            pair("gpu-pools", "unchanged")
        ]
    );

    // A second release that changes only the GPU pools: a new output, and the pool
    // replaced (`triggers_replace`), which the plan names before anyone says yes.
    let main_tf = vendor.dir.join("stacks/gpu-pools/main.tf");
    let text = std::fs::read_to_string(&main_tf).unwrap().replace(
        "resource \"terraform_data\" \"pool\" {\n",
        "resource \"terraform_data\" \"pool\" {\n  triggers_replace = \"generation-2\"\n",
    );
    std::fs::write(&main_tf, text).unwrap();
    vendor.change("gpu-pools", "\noutput \"size\" {\n  value       = var.pool_size\n  description = \"GPUs per pool.\"\n}\n");
    let built = vendor.build();
    let gpu = built
        .iter()
        .find(|(s, _)| s == "gpu-pools")
        .unwrap()
        .1
        .clone();
    vendor.write(
        &vendor.description(
            "platform",
            "1.1.0",
            &[
                ("network", "0.1.0"),
                ("cluster", "0.1.0"),
                ("gpu-pools", &gpu),
            ],
        ),
        &[],
        None,
    );
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();
    let plan = runner
        .run(&["plan", "platform@1.1.0", "--inputs-dir", dir, "--json"])
        .ok()
        .json();
    let states: Vec<&str> = plan["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["unchanged", "unchanged", "changes"]);
    let pools = &plan["stacks"][2];
    assert_eq!(
        pools["plan"], "0 to add, 0 to change, 1 to replace, 0 to destroy",
        "{plan}"
    );
    assert_eq!(
        pools["replace"],
        serde_json::json!(["terraform_data.pool"]),
        "{plan}"
    );
    assert_eq!(pools["destroy"], serde_json::json!([]), "{plan}");
    // The table an operator reads before the prompt names what is replaced, by stack.
    let listed = runner
        .run(&["plan", "platform@1.1.0", "--inputs-dir", dir])
        .ok();
    assert!(listed.stdout.contains("1 to replace"), "{}", listed.stdout);
    let named = listed
        .stdout
        .find("`gpu-pools`:")
        .unwrap_or_else(|| panic!("{}", listed.stdout));
    assert!(
        listed.stdout[named..].contains("replace  `terraform_data.pool`"),
        "{}",
        listed.stdout
    );
    let second = runner
        .run(&[
            "apply",
            "platform@1.1.0",
            "--inputs-dir",
            dir,
            "--yes",
            "--json",
        ])
        .ok();
    assert_eq!(
        results(&second),
        [
            pair("network", "unchanged"),
            pair("cluster", "unchanged"),
            pair("gpu-pools", "applied")
        ]
    );
    assert_eq!(output_in_state(&runner, "gpu-pools", "size"), 3);
    assert_eq!(
        output_in_state(&runner, "gpu-pools", "pool"),
        "3x@main@vpc-10.1.0.0/16"
    );
    assert_eq!(
        release_status(&status(&runner), "platform")["version"],
        "1.1.0"
    );

    // Rollback: every stack back to its version in 1.0.0, with the inputs it had.
    let back = runner
        .run(&["rollback", "platform", "--yes", "--json"])
        .ok();
    assert_eq!(
        results(&back),
        [
            pair("network", "unchanged"),
            pair("cluster", "unchanged"),
            pair("gpu-pools", "rolled-back")
        ]
    );
    assert_eq!(output_in_state(&runner, "gpu-pools", "size"), Value::Null);
    assert_eq!(
        output_in_state(&runner, "gpu-pools", "pool"),
        "3x@main@vpc-10.1.0.0/16"
    );
    let status_now = status(&runner);
    let platform = release_status(&status_now, "platform");
    assert_eq!(platform["version"], "1.0.0");
    let gpu_status = platform["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "gpu-pools")
        .unwrap();
    assert_eq!(gpu_status["installed"], "0.1.0");

    // Destroy: the customer id, then reverse dependency order.
    let wrong = runner
        .run(&["destroy", "platform", "--confirm", "initech"])
        .code(1);
    assert!(
        wrong
            .stderr
            .contains("nothing of release `platform` was destroyed"),
        "{}",
        wrong.stderr
    );
    let destroyed = runner
        .run(&["destroy", "platform", "--confirm", "globex"])
        .ok();
    let at = |stack: &str| {
        destroyed
            .stderr
            .find(&format!("destroying `{stack}`"))
            .unwrap_or_else(|| panic!("{stack} destroyed: {}", destroyed.stderr))
    };
    assert!(at("gpu-pools") < at("cluster") && at("cluster") < at("network"));
    for stack in ["network", "cluster", "gpu-pools"] {
        assert_eq!(resources_in_state(&runner, stack), 0, "{stack}");
    }
    let status_now = status(&runner);
    assert!(
        status_now["stacks"].as_array().unwrap().is_empty(),
        "{status_now}"
    );
    assert_eq!(
        release_status(&status_now, "platform")["state"],
        "destroyed"
    );
}

/// The layout with its `index.json` edited by `edit`, as a tar.
fn forged_tar(vendor: &ReleaseVendor, name: &str, edit: impl FnOnce(&Path)) -> std::path::PathBuf {
    let dir = vendor.temp.path().join(format!("{name}-layout"));
    copy_dir(&vendor.layout_dir(), &dir);
    edit(&dir);
    tar_of(&dir, &vendor.temp.path().join(format!("{name}.tar")))
}

fn edit_index(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("index.json");
    let mut index: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut index);
    std::fs::write(&path, serde_json::to_string(&index).unwrap()).unwrap();
}

fn assert_nothing_imported(runner: &Runner) {
    let store = runner.store();
    assert!(releases_in(&store).unwrap().is_empty());
    assert!(
        store.entries().unwrap().is_empty(),
        "the store holds nothing"
    );
}

#[test]
fn a_bad_release_tar_is_refused_whole_and_bad_inputs_before_anything_runs() {
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();

    // A tar missing a part: the gpu-pools bundle's manifest is not in it.
    let missing = forged_tar(&vendor, "missing", |dir| {
        let mut gpu_pools = String::new();
        edit_index(dir, |index| {
            index["manifests"].as_array_mut().unwrap().retain(|m| {
                let is_it = m["annotations"]["dev.stackpack.stack"] == "gpu-pools"
                    && m["annotations"]["dev.stackpack.kind"] == "bundle";
                if is_it {
                    gpu_pools = m["digest"].as_str().unwrap().to_string();
                }
                !is_it
            });
        });
        let hex = gpu_pools.trim_start_matches("sha256:");
        std::fs::remove_file(dir.join("blobs/sha256").join(hex)).unwrap();
    });
    let run = runner.run(&["import", missing.to_str().unwrap()]).code(1);
    assert!(
        run.stderr.contains("nothing was imported") && run.stderr.contains("gpu-pools@0.1.0"),
        "{}",
        run.stderr
    );
    assert_nothing_imported(&runner);

    // A part whose digest is not the one pinned: another gpu-pools bundle stands in
    // for the pinned one.
    vendor.change(
        "gpu-pools",
        "\n# changed\nresource \"terraform_data\" \"extra\" {\n  input = 1\n}\n",
    );
    let rebuilt = vendor.build();
    let other = rebuilt
        .iter()
        .find(|(s, _)| s == "gpu-pools")
        .unwrap()
        .1
        .clone();
    let layout = ImageLayout::open(vendor.layout_dir()).unwrap();
    let other_digest = layout
        .find_bundle("gpu-pools", &other.parse().unwrap())
        .unwrap()
        .unwrap()
        .digest
        .to_string();
    let swapped = forged_tar(&vendor, "swapped", |dir| {
        edit_index(dir, |index| {
            let manifests = index["manifests"].as_array_mut().unwrap();
            manifests.retain(|m| {
                m["digest"] != other_digest.as_str()
                    || m["annotations"]["dev.stackpack.kind"] != "bundle"
            });
            for m in manifests.iter_mut() {
                if m["annotations"]["dev.stackpack.stack"] == "gpu-pools"
                    && m["annotations"]["dev.stackpack.kind"] == "bundle"
                {
                    m["digest"] = Value::String(other_digest.clone());
                }
            }
        })
    });
    let run = runner.run(&["import", swapped.to_str().unwrap()]).code(1);
    assert!(
        run.stderr.contains("nothing was imported")
            && run.stderr.contains("gpu-pools@0.1.0")
            && run.stderr.contains("pins"),
        "{}",
        run.stderr
    );
    assert_nothing_imported(&runner);

    // A release signed by a key this runner does not trust.
    let stranger = PrivateKey::from_secret_bytes([7; 32]);
    vendor.write(
        &vendor.description("rogue", "1.0.0", ALL_V1),
        &[],
        Some(&stranger),
    );
    let rogue = forged_tar(&vendor, "rogue", |dir| {
        edit_index(dir, |index| {
            index["manifests"]
                .as_array_mut()
                .unwrap()
                .retain(|m| m["annotations"]["dev.stackpack.release"] != "platform");
        })
    });
    let run = runner.run(&["import", rogue.to_str().unwrap()]).code(1);
    assert!(
        run.stderr.contains("nothing was imported") && run.stderr.contains("trust"),
        "{}",
        run.stderr
    );
    assert_nothing_imported(&runner);

    // The good release imports; bad inputs folders are refused before any engine runs.
    let good = forged_tar(&vendor, "good", |dir| {
        edit_index(dir, |index| {
            index["manifests"]
                .as_array_mut()
                .unwrap()
                .retain(|m| m["annotations"]["dev.stackpack.release"] != "rogue");
        })
    });
    runner.run(&["import", good.to_str().unwrap()]).ok();
    let inputs = inputs_dir(runner.temp.path(), 2);
    let dir = inputs.to_str().unwrap();

    std::fs::rename(inputs.join("cluster.tfvars"), inputs.join("cluster.keep")).unwrap();
    let run = runner
        .run(&["apply", "platform@1.0.0", "--inputs-dir", dir, "--yes"])
        .code(1);
    assert!(
        run.stderr.contains("no `cluster.tfvars`") && run.stderr.contains("`cluster_name`"),
        "{}",
        run.stderr
    );
    std::fs::write(
        inputs.join("cluster.tfvars"),
        "cluster_name = \"main\"\nvpc_id = \"vpc-guessed\"\n",
    )
    .unwrap();
    let run = runner
        .run(&["apply", "platform@1.0.0", "--inputs-dir", dir, "--yes"])
        .code(1);
    assert!(
        run.stderr.contains("cluster.tfvars")
            && run.stderr.contains("`vpc_id`")
            && run.stderr.contains("`network.vpc_id`"),
        "{}",
        run.stderr
    );
    let status_now = status(&runner);
    assert!(
        status_now["stacks"].as_array().unwrap().is_empty(),
        "{status_now}"
    );
    assert!(
        status_now["releases"].as_array().unwrap().is_empty(),
        "{status_now}"
    );
    assert!(!runner.state_file("network").exists());
}

#[test]
fn two_releases_cannot_claim_one_stack() {
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(
        &vendor.description("base", "1.0.0", &[("network", "0.1.0")]),
        &[],
        None,
    );
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();
    let inputs = inputs_dir(runner.temp.path(), 1);
    let dir = inputs.to_str().unwrap();
    runner
        .run(&["apply", "base@1.0.0", "--inputs-dir", dir, "--yes"])
        .ok();
    let run = runner
        .run(&["apply", "platform@1.0.0", "--inputs-dir", dir, "--yes"])
        .code(1);
    assert!(
        run.stderr
            .contains("stack `network` is installed as part of release `base@1.0.0`")
            && run.stderr.contains("`platform@1.0.0`")
            && run.stderr.contains("stackpack-runner destroy base"),
        "{}",
        run.stderr
    );
    assert!(!runner.state_file("cluster").exists());
    let status_now = status(&runner);
    assert_eq!(status_now["stacks"].as_array().unwrap().len(), 1);
}

#[test]
fn a_release_pulled_from_distribution_applies_and_its_services_mirror_to_the_customers_registry() {
    use crate::common::release::{push_release, service_image};
    use stackpack_test_support::servers::Distribution;

    let vendor_registry = Distribution::require();
    let customer_registry = Distribution::require();
    let vendor = ReleaseVendor::new();
    vendor.build();
    let service = service_image(&vendor.layout(), "inference", b"model server, version 1");
    vendor.write(
        &vendor.description("platform", "1.0.0", ALL_V1),
        std::slice::from_ref(&service),
        None,
    );
    push_release(
        &vendor.layout(),
        &vendor_registry.host(),
        "acme",
        "platform",
        "1.0.0",
    );

    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    let reference = format!("{}/acme/releases/platform:1.0.0", vendor_registry.host());
    runner.run(&["pull", &reference, "--insecure"]).ok();
    let store = runner.store();
    assert_eq!(releases_in(&store).unwrap().len(), 1);
    for stack in ["network", "cluster", "gpu-pools"] {
        assert!(
            store
                .find_bundle(stack, &"0.1.0".parse().unwrap())
                .unwrap()
                .is_some(),
            "{stack}"
        );
    }

    // The service goes to the customer's registry, by digest.
    let mirrored = runner
        .run(&[
            "mirror-services",
            "platform@1.0.0",
            "--to",
            &format!("{}/globex", customer_registry.host()),
            "--insecure",
            "--json",
        ])
        .ok()
        .json();
    let digest = service.0.digest.to_string();
    assert_eq!(
        mirrored["mirrored"][0]["reference"],
        format!("{}/globex/inference@{digest}", customer_registry.host())
    );
    let manifest = ureq::get(&format!(
        "{}/v2/globex/inference/manifests/{digest}",
        customer_registry.url()
    ))
    .set("Accept", "application/vnd.oci.image.manifest.v1+json")
    .call()
    .unwrap();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut manifest.into_reader(), &mut body).unwrap();
    assert_eq!(
        stackpack_schema::digest::Digest::of(&body).to_string(),
        digest
    );

    // Applied as pulled; status lists the service.
    let inputs = inputs_dir(runner.temp.path(), 1);
    runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    assert_eq!(
        output_in_state(&runner, "gpu-pools", "pool"),
        "1x@main@vpc-10.1.0.0/16"
    );
    let status_now = status(&runner);
    let platform = release_status(&status_now, "platform");
    assert_eq!(platform["services"][0]["name"], "inference");
    assert_eq!(platform["services"][0]["digest"], digest.as_str());

    // A copy in another namespace: its bundles are signed for `acme/stacks/…`, so it
    // is refused until `runner.toml` says that namespace mirrors `acme`.
    push_release(
        &vendor.layout(),
        &vendor_registry.host(),
        "other",
        "platform",
        "1.0.0",
    );
    let elsewhere = Runner::new("initech").without_account();
    elsewhere
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    let copy = format!("{}/other/releases/platform:1.0.0", vendor_registry.host());
    let refused = elsewhere.run(&["pull", &copy, "--insecure"]).code(1);
    assert!(
        refused.stderr.contains("nothing was imported")
            && refused.stderr.contains("[policy.mirrors]"),
        "{}",
        refused.stderr
    );
    assert!(releases_in(&elsewhere.store()).unwrap().is_empty());
    let config = elsewhere.home.join("runner.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[policy.mirrors]\n\"other\" = \"acme\"\n");
    std::fs::write(&config, text).unwrap();
    elsewhere.run(&["pull", &copy, "--insecure"]).ok();
    assert_eq!(releases_in(&elsewhere.store()).unwrap().len(), 1);

    // A prerelease is refused where the policy says stable only, before any download.
    let run = runner
        .run(&[
            "pull",
            &format!(
                "{}/acme/releases/platform:1.1.0-feat.1",
                vendor_registry.host()
            ),
            "--insecure",
        ])
        .code(1);
    assert!(run.stderr.contains("prerelease"), "{}", run.stderr);
}

#[test]
fn a_failed_stack_stops_the_release_says_where_each_stack_is_and_rolls_back_what_it_changed() {
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();
    let inputs = inputs_dir(runner.temp.path(), 3);
    let dir = inputs.to_str().unwrap();
    runner
        .run(&["apply", "platform@1.0.0", "--inputs-dir", dir, "--yes"])
        .ok();

    // 1.1.0 changes the cluster, and GPU pools that refuse three GPUs per pool.
    let (cluster, gpu) = vendor.write_failing_pools("platform", "1.1.0");
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();

    // Stop: the error names the failed stack and where every stack is.
    let run = runner
        .run(&["apply", "platform@1.1.0", "--inputs-dir", dir, "--yes"])
        .code(1);
    assert!(
        run.stderr
            .contains("release `platform@1.1.0` stopped at `gpu-pools`")
            && run
                .stderr
                .contains("a pool of more than one GPU needs a bigger cluster")
            && run.stderr.contains(&format!(
                "cluster          at {cluster} (release pins {cluster}; applied)"
            ))
            && run.stderr.contains(&format!(
                "gpu-pools        at 0.1.0 (release pins {gpu}; failed)"
            )),
        "{}",
        run.stderr
    );
    let status_now = status(&runner);
    let platform = release_status(&status_now, "platform");
    assert_eq!(platform["version"], "1.0.0");
    assert_eq!(platform["state"], "mixed");
    assert_eq!(platform["lastRun"]["outcome"], "failed");

    // With `on-failure = "rollback"`, what this run changed goes back.
    let refused = runner
        .run(&["apply", "platform@1.0.0", "--inputs-dir", dir, "--yes"])
        .code(1);
    assert!(
        refused.stderr.contains(&format!(
            "nothing was applied: release `platform@1.0.0` pins `cluster@0.1.0`, older than the installed `{cluster}`"
        )),
        "{}",
        refused.stderr
    );
    runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            dir,
            "--yes",
            "--allow-downgrade",
        ])
        .ok();
    assert_eq!(
        release_status(&status(&runner), "platform")["state"],
        "applied"
    );
    runner.set_config("[policy]\n", "[policy]\non-failure = \"rollback\"\n");
    let run = runner
        .run(&["apply", "platform@1.1.0", "--inputs-dir", dir, "--yes"])
        .code(1);
    assert!(
        run.stderr.contains("rolling back `cluster` to `0.1.0`")
            && run
                .stderr
                .contains("cluster          at 0.1.0 (release pins"),
        "{}",
        run.stderr
    );
    let status_now = status(&runner);
    let platform = release_status(&status_now, "platform");
    assert_eq!(platform["state"], "applied", "{platform}");
    assert_eq!(output_in_state(&runner, "cluster", "name"), Value::Null);
    assert_eq!(
        output_in_state(&runner, "gpu-pools", "pool"),
        "3x@main@vpc-10.1.0.0/16"
    );
}

#[test]
fn a_release_stopped_by_sigterm_is_recorded_truthfully_and_a_rerun_continues_where_it_stopped() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let vendor = ReleaseVendor::new();
    // GPU pools that take a while to apply, the first time only: long enough to be
    // stopped mid-apply.
    vendor.change(
        "gpu-pools",
        "\nvariable \"marker\" {\n  type        = string\n  default     = \"\"\n  description = \"A file made when the pool starts.\"\n}\n\nresource \"terraform_data\" \"slow\" {\n  count = var.marker == \"\" ? 0 : 1\n  provisioner \"local-exec\" {\n    command = \"if [ -e '${var.marker}' ]; then exit 0; fi; touch '${var.marker}'; sleep 60\"\n  }\n}\n",
    );
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    let runner = Runner::new("globex").without_account();
    // State where the customer says, not in the home: the rerun reads the
    // unchanged upstreams' outputs through the engine (`output -json`).
    let states = runner.temp.path().join("states");
    std::fs::create_dir_all(&states).unwrap();
    runner.set_config(
        "[backend]\ntype = \"local\"\n",
        &format!(
            "[backend]\ntype = \"local\"\nconfig = {{ path = \"{}/{{stack}}.tfstate\" }}\n",
            states.display()
        ),
    );
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();
    let inputs = inputs_dir(runner.temp.path(), 2);
    let marker = runner.temp.path().join("pool-started");
    std::fs::write(
        inputs.join("gpu-pools.tfvars"),
        format!("pool_size = 2\nmarker = \"{}\"\n", marker.display()),
    )
    .unwrap();
    let dir = inputs.to_str().unwrap();

    let child = runner
        .command(&["apply", "platform@1.0.0", "--inputs-dir", dir, "--yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !marker.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "gpu-pools never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let stopped = crate::common::Run::from(child.wait_with_output().unwrap());
    assert_ne!(stopped.code, 0, "{}", stopped.stderr);
    assert!(
        stopped
            .stderr
            .contains("release `platform@1.0.0` stopped at `gpu-pools`")
            && stopped
                .stderr
                .contains("network          at 0.1.0 (release pins 0.1.0; applied)")
            && stopped
                .stderr
                .contains("cluster          at 0.1.0 (release pins 0.1.0; applied)"),
        "{}",
        stopped.stderr
    );
    let status_now = status(&runner);
    let platform = release_status(&status_now, "platform");
    assert_eq!(platform["lastRun"]["outcome"], "failed");

    // The rerun leaves what is done alone and finishes the rest.
    let rerun = runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            dir,
            "--yes",
            "--json",
        ])
        .ok();
    assert_eq!(
        results(&rerun),
        [
            pair("network", "unchanged"),
            pair("cluster", "unchanged"),
            pair("gpu-pools", "applied")
        ]
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(states.join("gpu-pools.tfstate")).unwrap())
            .unwrap();
    assert_eq!(state["outputs"]["pool"]["value"], "2x@main@vpc-10.1.0.0/16");
    assert!(!runner.state_file("network").exists());
    assert_eq!(
        release_status(&status(&runner), "platform")["state"],
        "applied"
    );
}

#[test]
fn independent_stacks_apply_in_parallel_and_services_from_a_tar_mirror_to_the_customers_registry() {
    use crate::common::release::service_image;
    use stackpack_test_support::servers::Distribution;

    let vendor = ReleaseVendor::new();
    vendor.build();
    // `gpu-pools` without its wiring: it depends on nothing here, so it can run
    // beside `network`.
    let mut description = vendor.description(
        "pools",
        "1.0.0",
        &[("network", "0.1.0"), ("gpu-pools", "0.1.0")],
    );
    for stack in &mut description.stacks {
        stack.depends_on.clear();
        stack.inputs_from.clear();
    }
    let service = service_image(&vendor.layout(), "inference", b"model server, version 2");
    vendor.write(&description, std::slice::from_ref(&service), None);
    let tar = vendor.export_tar("pools.tar");

    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["import", tar.to_str().unwrap()]).ok();
    let inputs = inputs_dir(runner.temp.path(), 4);
    std::fs::write(
        inputs.join("gpu-pools.tfvars"),
        "pool_size = 4\ncluster_id = \"existing\"\n",
    )
    .unwrap();
    let applied = runner
        .run(&[
            "apply",
            "pools@1.0.0",
            "--inputs-dir",
            inputs.to_str().unwrap(),
            "--yes",
            "--parallel",
            "2",
            "--json",
        ])
        .ok();
    assert_eq!(
        results(&applied),
        [pair("network", "applied"), pair("gpu-pools", "applied")]
    );
    assert_eq!(output_in_state(&runner, "gpu-pools", "pool"), "4x@existing");
    // The two ran at once: each started before the other finished.
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let span = |stack: &str| {
        let r = receipts["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["receipt"]["receipt"])
            .find(|r| r["stack"] == stack && r["kind"] == "apply")
            .unwrap();
        (
            r["startedAt"].as_str().unwrap().to_string(),
            r["finishedAt"].as_str().unwrap().to_string(),
        )
    };
    let (network, pools) = (span("network"), span("gpu-pools"));
    assert!(
        network.0 < pools.1 && pools.0 < network.1,
        "{network:?} {pools:?}"
    );

    // The service came in the tar: it goes from the store to the customer's registry.
    let customer_registry = Distribution::require();
    let mirrored = runner
        .run(&[
            "mirror-services",
            "pools@1.0.0",
            "--to",
            &format!("{}/globex", customer_registry.host()),
            "--insecure",
        ])
        .ok();
    assert!(
        mirrored.stdout.contains(&format!(
            "{}/globex/inference@{}",
            customer_registry.host(),
            service.0.digest
        )),
        "{}",
        mirrored.stdout
    );
    let manifest = ureq::get(&format!(
        "{}/v2/globex/inference/manifests/{}",
        customer_registry.url(),
        service.0.digest
    ))
    .set("Accept", "application/vnd.oci.image.manifest.v1+json")
    .call()
    .unwrap();
    assert_eq!(manifest.status(), 200);
}

/// A customer's own copy made with `skopeo copy --all` (which rewrites the index,
/// dropping its `artifactType`, and copies no referrers) into an image layout tar:
/// the release still verifies, imports and applies, its signature being one of the
/// manifests the copy carries.
#[test]
fn a_release_copied_with_skopeo_into_a_tar_imports_and_applies() {
    use crate::common::release::push_release;
    use stackpack_test_support::servers::Distribution;

    let vendor_registry = Distribution::require();
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    push_release(
        &vendor.layout(),
        &vendor_registry.host(),
        "acme",
        "platform",
        "1.0.0",
    );

    let copied = vendor.temp.path().join("skopeo-copy");
    let output = std::process::Command::new("skopeo")
        .args(["copy", "--all", "--src-tls-verify=false"])
        .arg(format!(
            "docker://{}/acme/releases/platform:1.0.0",
            vendor_registry.host()
        ))
        .arg(format!("oci:{}:1.0.0", copied.display()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tar = tar_of(&copied, &vendor.temp.path().join("skopeo-copy.tar"));

    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    let imported = runner.run(&["import", tar.to_str().unwrap()]).ok();
    assert!(
        imported
            .stderr
            .contains("release `platform@1.0.0` verified and imported"),
        "{}",
        imported.stderr
    );
    let inputs = inputs_dir(runner.temp.path(), 1);
    runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    assert_eq!(
        output_in_state(&runner, "gpu-pools", "pool"),
        "1x@main@vpc-10.1.0.0/16"
    );
}
