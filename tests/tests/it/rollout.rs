//! A rollout across waves, end to end on the real programs: the vendor publishes a
//! release with `stackpack publish` to our registry on 127.0.0.1 and promotes it to
//! `stable` with `stackpack promote`; four customers' runners (each its own home,
//! the real Terraform) reconcile with `stackpack-runner sync` against the
//! registry's assignment. A canary whose apply fails halts the rollout: the next
//! wave is never assigned. After the customer fixes its inputs and the vendor
//! resumes, every wave converges. An airgapped customer syncs from the statement
//! its export carried, and a GitOps customer from a desired-state file.
//!
//! The stacks are Terraform's own `terraform_data` resources: what is under test is
//! the orchestration, not a cloud (the demo runs the same story on the AWS example
//! in the emulated account).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use stackpack_test_support::copy_dir;
use stackpack_test_support::servers::OurRegistry;

use crate::fleet::{place, rollout_registry, state, wait_for_rollout, Customer, Vendor};

const NAMESPACE: &str = "shop";

fn shop_vendor() -> Vendor {
    Vendor::new("rollout-vendor", NAMESPACE, "shop")
}

/// A shop customer: its base named after it, three replicas.
fn shop_customer(
    vendor: &Vendor,
    registry: &OurRegistry,
    id: &'static str,
    sync: &str,
) -> Customer {
    let inputs = [
        ("base.tfvars", format!("name = \"{id}\"\n")),
        ("app.tfvars", "replicas = 3\n".to_string()),
    ];
    Customer::new(vendor, registry, id, sync, &inputs, Vec::new())
}

fn set_replicas(customer: &Customer, replicas: u32) {
    customer.write_input("app.tfvars", &format!("replicas = {replicas}\n"));
}

fn rollout(registry: &OurRegistry) -> Value {
    registry.newest_rollout("shop")
}

fn wait(registry: &OurRegistry, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_for_rollout(registry, "shop", what, done)
}

#[test]
fn a_rollout_opens_wave_after_wave_halts_on_a_canary_failure_and_converges_after_a_fix_and_resume()
{
    let vendor = shop_vendor();
    let registry = rollout_registry("2s");
    let namespace = format!("{}/{NAMESPACE}", registry.host());
    let source = format!("registry = \"{namespace}\"\ninsecure = true");
    let globex = shop_customer(&vendor, &registry, "globex", &source);
    let umbrella = shop_customer(&vendor, &registry, "umbrella", &source);
    let hooli = shop_customer(&vendor, &registry, "hooli", &source);
    let soylent = shop_customer(&vendor, &registry, "soylent", &source);
    place(&registry, globex.id, "canary");
    place(&registry, umbrella.id, "canary");
    place(&registry, hooli.id, "early");
    place(&registry, soylent.id, "general");

    let version = vendor.publish(&registry);
    // Nothing is assigned before the vendor promotes: publishing is not approving.
    let (before, _, _) = globex.sync();
    assert_eq!(before, "nothing-assigned");

    // umbrella's operator set a value the engine refuses: its apply will fail.
    set_replicas(&umbrella, 50);
    vendor.promote(&registry, &version, &[]).ok();
    let opened = rollout(&registry);
    assert_eq!(state(&opened), "running", "{opened}");

    let (globex_state, globex_running, _) = globex.sync();
    assert_eq!(globex_state, "applied");
    assert_eq!(globex_running.as_deref(), Some(version.as_str()));
    // A scheduled pass keeps the engine's own output in a log: the pass's output is
    // the runner's summary, and the engine's error is still shown.
    let engine_log = vendor.temp.path().join("umbrella-engine.log");
    let (umbrella_state, _, failed_pass) =
        umbrella.sync_with(&["--engine-log", engine_log.to_str().unwrap()]);
    assert_eq!(umbrella_state, "failed", "{}", failed_pass.stderr);
    assert!(
        failed_pass.stderr.contains("At most 10 replicas"),
        "the pass says why it failed: {}",
        failed_pass.stderr
    );
    assert!(
        !failed_pass
            .stderr
            .contains("Terraform has been successfully initialized"),
        "{}",
        failed_pass.stderr
    );
    let logged = std::fs::read_to_string(&engine_log).unwrap();
    assert!(
        logged.contains("Terraform has been successfully initialized")
            && logged.contains("At most 10 replicas"),
        "{logged}"
    );

    // The failure halts the rollout, naming the customer; the next wave is never
    // assigned, however long its soak has passed.
    let halted = wait(&registry, "halted by umbrella", |r| state(r) == "halted");
    let reason = halted.to_string();
    assert!(reason.contains("umbrella"), "{halted}");
    std::thread::sleep(Duration::from_secs(3));
    let (hooli_state, hooli_running, _) = hooli.sync();
    assert_eq!(hooli_state, "nothing-assigned");
    assert_eq!(hooli_running, None);
    assert_eq!(state(&rollout(&registry)), "halted");

    // The customer fixes its inputs; its next pass applies; the vendor resumes.
    set_replicas(&umbrella, 4);
    let (fixed, _, _) = umbrella.sync();
    assert_eq!(fixed, "applied");
    let id = rollout(&registry)["id"].to_string();
    registry.run(&["rollout", "resume", &id]).ok();

    // The early wave opens after the canaries' soak, then the general one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut converged = Vec::new();
    for customer in [&hooli, &soylent] {
        loop {
            let (state, running, pass) = customer.sync();
            if state == "applied" {
                assert_eq!(running.as_deref(), Some(version.as_str()));
                converged.push(customer.id);
                break;
            }
            assert_eq!(
                state, "nothing-assigned",
                "{} before its wave: {}",
                customer.id, pass.stderr
            );
            assert!(
                Instant::now() < deadline,
                "{} was never assigned",
                customer.id
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    assert_eq!(converged, ["hooli", "soylent"]);
    let done = wait(&registry, "completed", |r| state(r) == "completed");

    // Who got it when, who failed: the history says it in order.
    let history = registry
        .run(&["rollout", "show", &done["id"].to_string(), "--json"])
        .ok()
        .json()
        .to_string();
    for id in ["globex", "umbrella", "hooli", "soylent"] {
        assert!(history.contains(id), "{id} is in the history: {history}");
    }

    // A pass that changes nothing leaves no receipt.
    let receipts = |c: &Customer| c.run(&["receipts", "list", "--json"]).ok().json();
    let before = receipts(&globex).as_array().map(Vec::len);
    let (again, _, _) = globex.sync();
    assert_eq!(again, "converged");
    assert_eq!(receipts(&globex).as_array().map(Vec::len), before);

    // A second version reaches the canaries first.
    vendor.commit(
        "stacks/app/main.tf",
        "${var.replicas}\"",
        "${var.replicas}:v2\"",
        "app: v2",
    );
    let second = vendor.publish(&registry);
    vendor.promote(&registry, &second, &[]).ok();
    let (globex_second, running, _) = globex.sync();
    assert_eq!(globex_second, "applied");
    assert_eq!(running.as_deref(), Some(second.as_str()));
    let (soylent_still, running, _) = soylent.sync();
    assert_eq!(soylent_still, "converged");
    assert_eq!(
        running.as_deref(),
        Some(version.as_str()),
        "general waits for its wave"
    );
}

#[test]
fn an_airgapped_runner_syncs_from_the_statement_its_export_carried_and_a_gitops_runner_from_its_desired_state(
) {
    let vendor = shop_vendor();
    let registry = OurRegistry::start();
    // A promotion goes to a channel the registry has.
    registry.run(&["channel", "set", "stable"]).ok();
    let version = vendor.publish(&registry);
    vendor.promote(&registry, &version, &[]).ok();
    let namespace = format!("{}/{NAMESPACE}", registry.host());
    let tar = vendor.temp.path().join("shop.tar");
    vendor
        .stackpack(
            &registry,
            &[
                "export",
                &format!("shop@{version}"),
                "--channel",
                "stable",
                "--registry",
                &namespace,
                "--insecure",
                "-o",
                tar.to_str().unwrap(),
            ],
        )
        .ok();

    // Airgapped: the statement came in the tar; the runner never calls a registry.
    let initech = shop_customer(&vendor, &registry, "initech", "source = \"store\"");
    initech.run(&["import", tar.to_str().unwrap()]).ok();
    let (state, running, _) = initech.sync();
    assert_eq!(state, "applied");
    assert_eq!(running.as_deref(), Some(version.as_str()));

    // A runner that trusts another key refuses the same tar's statement.
    let stranger = shop_vendor();
    let wary = shop_customer(&stranger, &registry, "wary", "source = \"store\"");
    let refused = wary.run(&["import", tar.to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);

    // GitOps: a desired-state file in a checkout names the release and the inputs.
    let gitops = vendor.temp.path().join("gitops");
    std::fs::create_dir_all(&gitops).unwrap();
    let acme = shop_customer(&vendor, &registry, "acme", "source = \"desired\"");
    copy_dir(&acme.inputs, &gitops.join("acme"));
    write_desired(&gitops, &format!("version = \"{version}\""), "acme");
    acme.run(&["import", tar.to_str().unwrap()]).ok();
    let desired = gitops.join("desired.toml");
    let pass = acme.run(&["sync", "--json", "--desired", desired.to_str().unwrap()]);
    assert_eq!(
        pass.json()["report"]["releases"][0]["state"],
        "applied",
        "{}",
        pass.stderr
    );
    // A desired-state file naming a missing inputs folder says so, and changes
    // nothing.
    write_desired(&gitops, &format!("version = \"{version}\""), "nobody");
    let wrong = acme.run(&["sync", "--desired", desired.to_str().unwrap()]);
    assert_eq!(wrong.code, 2, "{}", wrong.stderr);
    assert!(wrong.stderr.contains("nobody"), "{}", wrong.stderr);
}

fn write_desired(dir: &Path, version: &str, inputs: &str) {
    std::fs::write(
        dir.join("desired.toml"),
        format!("[releases.shop]\n{version}\ninputs = \"{inputs}\"\n"),
    )
    .unwrap();
}
