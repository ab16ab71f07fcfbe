//! `sync`: a runner that reconciles to a desired-state file, to the channel
//! statements an airgapped export carried, or to its assignment from our registry
//! (started on 127.0.0.1, the release promoted with `stackpack promote`), with the
//! approval policy holding the exact plan that replaces something until a person
//! approves it. Real Terraform, real `stackpack` builds, small `terraform_data`
//! stacks.

use std::path::{Path, PathBuf};

use serde_json::Value;
use stackpack_bundle::channel::write_statement;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::rollout::{
    ApprovedKind, ChannelStatement, SignedChannelStatement, CHANNEL_STATEMENT_FORMAT,
};
use stackpack_schema::signature::PrivateKey;

use crate::common::release::{push_release_to, ReleaseVendor};
use crate::common::Runner;
use stackpack_test_support::servers::OurRegistry;

const ALL_V1: &[(&str, &str)] = &[
    ("network", "0.1.0"),
    ("cluster", "0.1.0"),
    ("gpu-pools", "0.1.0"),
];

/// A resource replaced whenever the pool size changes: what makes a plan
/// destructive.
const MARKER: &str =
    "\nresource \"terraform_data\" \"marker\" {\n  triggers_replace = var.pool_size\n}\n";

/// A vendor whose gpu-pools stack replaces its marker when the pool size changes,
/// built, with release `platform@1.0.0` (and the other versions asked for) of it.
fn vendor(versions: &[&str]) -> (ReleaseVendor, Vec<Descriptor>) {
    let vendor = ReleaseVendor::new();
    vendor.change("gpu-pools", MARKER);
    vendor.build();
    let indexes = versions
        .iter()
        .map(|v| vendor.write(&vendor.description("platform", v, ALL_V1), &[], None))
        .collect();
    (vendor, indexes)
}

fn runner_with(vendor: &ReleaseVendor) -> Runner {
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
}

/// A runner trusting `vendor`, with the vendor's export imported.
fn imported(vendor: &ReleaseVendor) -> Runner {
    let runner = runner_with(vendor);
    runner
        .run(&[
            "import",
            vendor.export_tar("platform.tar").to_str().unwrap(),
        ])
        .ok();
    runner
}

/// A git checkout with `desired.toml` and `customers/globex/<stack>.tfvars`.
struct GitOps {
    dir: PathBuf,
}

impl GitOps {
    fn new(runner: &Runner, pool_size: u32) -> GitOps {
        let dir = runner.temp.path().join("gitops");
        let inputs = dir.join("customers/globex");
        std::fs::create_dir_all(&inputs).unwrap();
        let gitops = GitOps { dir };
        std::fs::write(inputs.join("network.tfvars"), "cidr = \"10.1.0.0/16\"\n").unwrap();
        std::fs::write(inputs.join("cluster.tfvars"), "cluster_name = \"main\"\n").unwrap();
        gitops.pool_size(pool_size);
        gitops
    }

    fn pool_size(&self, size: u32) {
        std::fs::write(
            self.dir.join("customers/globex/gpu-pools.tfvars"),
            format!("pool_size = {size}\n"),
        )
        .unwrap();
    }

    fn desire(&self, text: &str) -> PathBuf {
        let path = self.dir.join("desired.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn platform(&self, version: &str) -> PathBuf {
        self.desire(&format!(
            "[releases.platform]\nversion = \"{version}\"\ninputs = \"customers/globex\"\n"
        ))
    }
}

fn configure(runner: &Runner, sync: &str) {
    let path = runner.home.join("runner.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n[sync]\n{sync}\n")).unwrap();
}

fn sync(runner: &Runner) -> Value {
    runner.run(&["sync", "--json"]).ok().json()
}

fn release<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["report"]["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["release"] == name)
        .unwrap_or_else(|| panic!("`{name}` in {report}"))
}

fn receipts(runner: &Runner) -> usize {
    runner.run(&["receipts", "list", "--json"]).ok().json()["receipts"]
        .as_array()
        .unwrap()
        .len()
}

fn pending(runner: &Runner) -> Vec<Value> {
    runner.run(&["pending", "--json"]).ok().json()["pending"]
        .as_array()
        .unwrap()
        .clone()
}

fn marker(runner: &Runner) -> Value {
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(runner.state_file("gpu-pools")).unwrap())
            .unwrap();
    state["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "marker")
        .map(|r| r["instances"][0]["attributes"]["triggers_replace"]["value"].clone())
        .unwrap_or(Value::Null)
}

#[test]
fn a_desired_state_converges_and_a_second_pass_changes_nothing_and_leaves_no_receipt() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    configure(
        &runner,
        &format!(
            "desired = {:?}\napprove = \"auto-unless-destructive\"",
            desired
        ),
    );

    let first = sync(&runner);
    let platform = release(&first, "platform");
    assert_eq!(platform["state"], "applied", "{first}");
    assert_eq!(platform["running"], "1.0.0");
    assert!(platform["receiptId"].is_string());
    assert_eq!(marker(&runner), serde_json::json!(3));
    let after_first = receipts(&runner);

    let second = sync(&runner);
    let platform = release(&second, "platform");
    assert_eq!(platform["state"], "converged", "{second}");
    assert!(platform.get("receiptId").is_none(), "{second}");
    assert_eq!(
        receipts(&runner),
        after_first,
        "a pass that changes nothing leaves no receipt"
    );

    // The table says the same for a person.
    let table = runner.run(&["sync"]).ok();
    assert!(table.stdout.contains("RELEASE"), "{}", table.stdout);
    assert!(table.stdout.contains("converged"), "{}", table.stdout);

    // Dropped from the desired state: kept running (`on-removal = "keep"`).
    gitops.desire("[releases]\n");
    let removed = sync(&runner);
    let platform = release(&removed, "platform");
    assert_eq!(platform["state"], "converged", "{removed}");
    assert!(
        platform["message"].as_str().unwrap().contains("kept"),
        "{removed}"
    );
    assert_eq!(marker(&runner), serde_json::json!(3));
}

#[test]
fn a_replacing_change_is_held_keeps_its_id_and_approve_applies_exactly_it() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    configure(&runner, &format!("desired = {:?}", desired));
    assert_eq!(release(&sync(&runner), "platform")["state"], "applied");

    // The pool grows: its marker is replaced, so the plan waits for a person.
    gitops.pool_size(5);
    let held = sync(&runner);
    let platform = release(&held, "platform");
    assert_eq!(platform["state"], "pending-approval", "{held}");
    let id = platform["pending"]["id"].as_str().unwrap().to_string();
    assert!(
        platform["pending"]["destructive"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().contains("terraform_data.marker")),
        "{held}"
    );
    assert_eq!(marker(&runner), serde_json::json!(3), "nothing applied");
    let listed = pending(&runner);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    let review = PathBuf::from(listed[0]["review"].as_str().unwrap());
    assert!(std::fs::read_to_string(&review)
        .unwrap()
        .contains("terraform_data.marker"));
    assert_private(review.parent().unwrap());

    // The same plan on the next pass keeps its id: nobody is asked twice.
    let again = sync(&runner);
    assert_eq!(release(&again, "platform")["pending"]["id"], id.as_str());
    assert_eq!(pending(&runner).len(), 1);

    let approved = runner.run(&["approve", &id, "--json"]).ok().json();
    assert_eq!(approved["release"]["state"], "applied", "{approved}");
    assert_eq!(marker(&runner), serde_json::json!(5));
    assert!(pending(&runner).is_empty());
    assert_eq!(release(&sync(&runner), "platform")["state"], "converged");

    // Held again, then the state moves under it: approve refuses, nothing applied.
    gitops.pool_size(7);
    let held = sync(&runner);
    let id = release(&held, "platform")["pending"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Someone applies another pool size by hand.
    let by_hand = crate::common::release::inputs_dir(runner.temp.path(), 9);
    runner
        .run(&[
            "apply",
            "platform@1.0.0",
            "--inputs-dir",
            by_hand.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    assert_eq!(marker(&runner), serde_json::json!(9));
    let refused = runner.run(&["approve", &id]).code(1);
    assert!(
        refused.stderr.contains("changed since"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("new id"), "{}", refused.stderr);
    assert!(pending(&runner).is_empty());
    assert_eq!(marker(&runner), serde_json::json!(9), "nothing applied");
}

fn assert_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{} is {mode:o}", dir.display());
    for entry in std::fs::read_dir(dir).unwrap() {
        let mode = entry.unwrap().metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0);
    }
}

#[test]
fn manual_policy_holds_additions_and_a_closed_window_holds_applies() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    // A window two hours from now: closed.
    let hour = (time::OffsetDateTime::now_utc().hour() + 2) % 24;
    configure(
        &runner,
        &format!(
            "desired = {:?}\napprove = \"manual\"\nwindow = \"daily {hour:02}:00-{hour:02}:30 UTC\"",
            desired
        ),
    );
    let closed = sync(&runner);
    assert_eq!(
        release(&closed, "platform")["state"],
        "outside-window",
        "{closed}"
    );
    assert!(!runner.state_file("network").exists(), "nothing applied");
    assert_eq!(receipts(&runner), 0, "nothing was even planned");

    runner.set_config(
        &format!("window = \"daily {hour:02}:00-{hour:02}:30 UTC\""),
        "",
    );
    let held = sync(&runner);
    let platform = release(&held, "platform");
    assert_eq!(platform["state"], "pending-approval", "{held}");
    assert_eq!(platform["pending"]["destroy"], 0);
    assert!(platform["pending"]["add"].as_u64().unwrap() > 0);
    assert!(!runner.state_file("network").exists(), "nothing applied");

    // Approving applies the stacks it reviewed; the next pass plans those that
    // waited on them, and holds them again.
    let id = platform["pending"]["id"].as_str().unwrap();
    runner.run(&["approve", id]).ok();
    assert!(runner.state_file("network").exists());
    let next = sync(&runner);
    assert_eq!(
        release(&next, "platform")["state"],
        "pending-approval",
        "{next}"
    );
}

#[test]
fn an_older_assignment_is_refused_and_a_bad_desired_state_names_its_line() {
    let (vendor, _) = vendor(&["1.0.0", "1.1.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.1.0");
    configure(
        &runner,
        &format!("desired = {:?}\napprove = \"auto\"", desired),
    );
    assert_eq!(release(&sync(&runner), "platform")["running"], "1.1.0");

    gitops.platform("1.0.0");
    let refused = runner.run(&["sync", "--json"]).code(1).json();
    let platform = release(&refused, "platform");
    assert_eq!(platform["state"], "refused", "{refused}");
    assert_eq!(platform["running"], "1.1.0");
    assert!(platform["message"].as_str().unwrap().contains("downgrade"));

    gitops.desire("[releases.platfrom]\nversion = \"1.0.0\"\ninputs = \"customers/globex\"\n");
    let unknown = runner.run(&["sync"]).code(1);
    assert!(unknown.stderr.contains("platfrom"), "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("desired.toml:1"),
        "{}",
        unknown.stderr
    );

    gitops.desire("[releases.platform]\nversion = \"1.1.0\"\ninputs = \"customers/nobody\"\n");
    let missing = runner.run(&["sync"]).code(2);
    assert!(
        missing.stderr.contains("customers/nobody"),
        "{}",
        missing.stderr
    );
    assert!(
        missing.stderr.contains("desired.toml:3"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_second_sync_on_one_home_does_nothing_while_the_first_holds_the_lock() {
    use fs2::FileExt;
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    configure(&runner, &format!("desired = {:?}", desired));
    // The lock as a running pass holds it (the operating system's, not a file's
    // presence).
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(runner.home.join("sync.lock"))
        .unwrap();
    lock.lock_exclusive().unwrap();
    let second = runner.run(&["sync"]).code(1);
    assert!(
        second.stderr.contains("holds this home's lock"),
        "{}",
        second.stderr
    );
    assert!(!runner.state_file("network").exists());
    FileExt::unlock(&lock).unwrap();
    assert_eq!(release(&sync(&runner), "platform")["state"], "applied");
}

fn statement(
    vendor_key: &PrivateKey,
    channel: &str,
    version: &str,
    index: &Descriptor,
) -> SignedChannelStatement {
    SignedChannelStatement::sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: channel.into(),
            kind: ApprovedKind::Release,
            release: "platform".into(),
            version: semver::Version::parse(version).unwrap(),
            digest: index.digest.clone(),
            required: false,
            promoted_at: "2026-12-02T09:00:00Z".into(),
            promoted_by: None,
            key_id: String::new(),
        },
        vendor_key,
    )
}

#[test]
fn an_airgapped_runner_syncs_from_imported_statements_and_refuses_untrusted_or_other_channel_ones()
{
    let (vendor, indexes) = vendor(&["1.0.0"]);
    let key = PrivateKey::from_pem(&std::fs::read_to_string(&vendor.key).unwrap()).unwrap();

    // Signed by a key this runner does not trust: the whole import is refused.
    let stranger = PrivateKey::from_secret_bytes([9; 32]);
    let runner = runner_with(&vendor);
    let layout = vendor.layout();
    let untrusted = write_statement(
        &layout,
        &statement(&stranger, "stable", "1.0.0", &indexes[0]),
        &indexes[0],
    )
    .unwrap();
    let refused = runner
        .run(&[
            "import",
            vendor.export_tar("untrusted.tar").to_str().unwrap(),
        ])
        .code(1);
    assert!(
        refused.stderr.contains("nothing was imported"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("trust"), "{}", refused.stderr);
    assert!(stackpack_bundle::release::releases_in(&runner.store())
        .unwrap()
        .is_empty());
    remove_entry(&layout, &untrusted);

    // For another channel: imported, and refused by a `stable` runner.
    write_statement(
        &layout,
        &statement(&key, "beta", "1.0.0", &indexes[0]),
        &indexes[0],
    )
    .unwrap();
    runner
        .run(&["import", vendor.export_tar("beta.tar").to_str().unwrap()])
        .ok();
    let gitops = GitOps::new(&runner, 3);
    let inputs = gitops.dir.join("customers/globex");
    configure(
        &runner,
        &format!("source = \"store\"\ninputs = {:?}", inputs),
    );
    let other = runner.run(&["sync", "--json"]).code(1).json();
    let platform = release(&other, "platform");
    assert_eq!(platform["state"], "refused", "{other}");
    assert!(
        platform["message"].as_str().unwrap().contains("`beta`"),
        "{other}"
    );
    assert!(!runner.state_file("network").exists());

    // Approved for `stable`: the runner converges to it.
    write_statement(
        &layout,
        &statement(&key, "stable", "1.0.0", &indexes[0]),
        &indexes[0],
    )
    .unwrap();
    runner
        .run(&["import", vendor.export_tar("stable.tar").to_str().unwrap()])
        .ok();
    let applied = sync(&runner);
    assert_eq!(
        release(&applied, "platform")["state"],
        "applied",
        "{applied}"
    );
    assert_eq!(marker(&runner), serde_json::json!(3));

    // A statement approving a release the store does not hold: refused, and what
    // runs stays.
    let elsewhere = Descriptor::new(
        stackpack_schema::media_type::OCI_INDEX,
        stackpack_schema::Digest::of(b"platform 2.0.0, not exported"),
        10,
    );
    write_statement(
        &layout,
        &statement(&key, "stable", "2.0.0", &elsewhere),
        &elsewhere,
    )
    .unwrap();
    runner
        .run(&["import", vendor.export_tar("ahead.tar").to_str().unwrap()])
        .ok();
    let ahead = runner.run(&["sync", "--json"]).code(1).json();
    let platform = release(&ahead, "platform");
    assert_eq!(platform["state"], "refused", "{ahead}");
    assert_eq!(platform["assigned"], "2.0.0");
    assert_eq!(platform["running"], "1.0.0");
    assert!(
        platform["message"]
            .as_str()
            .unwrap()
            .contains("does not hold"),
        "{ahead}"
    );
}

fn remove_entry(layout: &stackpack_bundle::layout::ImageLayout, entry: &Descriptor) {
    let path = layout.root().join("index.json");
    let mut index: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    index["manifests"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["digest"] != entry.digest.to_string());
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
}

/// Changes the network's recorded input behind the runner's back, as a person
/// editing the resource by hand would.
fn tamper_network(runner: &Runner) {
    let path = runner.state_file("network");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let attributes = &mut state["resources"][0]["instances"][0]["attributes"];
    attributes["input"]["value"] = Value::String("vpc-by-hand".into());
    std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();
}

fn network_input(runner: &Runner) -> Value {
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(runner.state_file("network")).unwrap())
            .unwrap();
    state["resources"][0]["instances"][0]["attributes"]["input"]["value"].clone()
}

#[test]
fn drift_is_reported_with_a_receipt_or_corrected_through_the_approval_policy() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    configure(
        &runner,
        &format!("desired = {:?}\non-drift = \"report\"", desired),
    );
    assert_eq!(release(&sync(&runner), "platform")["state"], "applied");
    assert_eq!(release(&sync(&runner), "platform")["state"], "converged");

    tamper_network(&runner);
    let found = sync(&runner);
    let platform = release(&found, "platform");
    assert_eq!(platform["state"], "drifted", "{found}");
    assert!(platform["message"].as_str().unwrap().contains("`network`"));
    let receipt = platform["receiptId"].as_str().unwrap();
    let listed = runner.run(&["receipts", "list", "--json"]).ok().json();
    assert!(listed["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["receipt"]["receipt"]["id"] == receipt
            && r["receipt"]["receipt"]["outcome"] == "drifted"));
    assert_eq!(
        network_input(&runner),
        "vpc-by-hand",
        "reported, not changed"
    );

    runner.set_config("on-drift = \"report\"", "on-drift = \"correct\"");
    let corrected = sync(&runner);
    let platform = release(&corrected, "platform");
    assert_eq!(platform["state"], "applied", "{corrected}");
    assert!(platform["message"]
        .as_str()
        .unwrap()
        .contains("drift corrected"));
    assert_eq!(network_input(&runner), "vpc-10.1.0.0/16");
    assert_eq!(release(&sync(&runner), "platform")["state"], "converged");
}

/// Our registry on 127.0.0.1 with channel `stable` (one wave, `canary`) and
/// customer `globex` placed in it, and the vendor's release `platform@1.0.0`
/// pushed to `acme/releases/platform`.
struct Connected {
    registry: OurRegistry,
}

impl Connected {
    fn start(vendor: &ReleaseVendor) -> Connected {
        let registry = OurRegistry::start();
        registry
            .run(&["channel", "set", "stable", "--waves", "canary"])
            .ok();
        registry.run(&["customer", "add", "globex"]).ok();
        registry
            .run(&[
                "customer",
                "set",
                "globex",
                "--channel",
                "stable",
                "--wave",
                "canary",
            ])
            .ok();
        let connected = Connected { registry };
        push_release_to(
            &connected.publisher(),
            &vendor.layout(),
            "acme",
            "platform",
            "1.0.0",
        );
        connected
    }

    fn publisher(&self) -> stackpack_bundle::remote::Remote {
        stackpack_bundle::remote::Remote::with_credentials(
            &self.registry.host(),
            true,
            stackpack_bundle::remote::Credentials::Bearer(self.registry.publisher_token()),
        )
        .unwrap()
    }

    /// `stackpack ARGS --registry <this>/acme --insecure --key KEY` as a publisher,
    /// in the vendor's repository; it must succeed.
    fn stackpack(&self, vendor: &ReleaseVendor, args: &[&str], key: &Path) {
        let output = self.try_stackpack(vendor, args, key);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// [`Connected::stackpack`], whatever it answers.
    fn try_stackpack(
        &self,
        vendor: &ReleaseVendor,
        args: &[&str],
        key: &Path,
    ) -> std::process::Output {
        std::process::Command::new(crate::common::stackpack_bin())
            .current_dir(&vendor.dir)
            .args(args)
            .args(["--registry", &format!("{}/acme", self.registry.host())])
            .args(["--insecure", "--key", key.to_str().unwrap()])
            .env("STACKPACK_REGISTRY_TOKEN", self.registry.publisher_token())
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    /// `stackpack promote platform@VERSION --channel stable` with a key that did
    /// not sign the release: refused (security review §7.3), nothing reaches the
    /// registry.
    fn promote_refused(&self, vendor: &ReleaseVendor, version: &str, key: &Path) {
        let reference = format!("platform@{version}");
        let output =
            self.try_stackpack(vendor, &["promote", &reference, "--channel", "stable"], key);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("only a key that signed what a statement approves may approve it"),
            "{stderr}"
        );
    }

    /// `stackpack publish`: the vendor's stack bundles (with their signatures) into
    /// `acme/stacks/<stack>`.
    fn publish_stacks(&self, vendor: &ReleaseVendor) {
        self.stackpack(vendor, &["publish"], &vendor.key);
    }

    /// `stackpack promote platform@VERSION --channel stable`, the statement signed
    /// with `key`.
    fn promote(&self, vendor: &ReleaseVendor, version: &str, key: &Path) {
        self.promote_reference(vendor, &format!("platform@{version}"), key);
    }

    /// `stackpack promote REFERENCE --channel stable` (a release, or a single
    /// stack).
    fn promote_reference(&self, vendor: &ReleaseVendor, reference: &str, key: &Path) {
        self.stackpack(vendor, &["promote", reference, "--channel", "stable"], key);
    }

    /// `runner.toml` pointing `sync` at this registry, inputs from `gitops`.
    fn configure(&self, runner: &Runner, gitops: &GitOps) {
        configure(
            runner,
            &format!(
                "registry = \"{}/acme\"\ninsecure = true\ninputs = {:?}",
                self.registry.host(),
                gitops.dir.join("customers/globex")
            ),
        );
    }

    /// One pass with globex's customer token, expecting exit `code`; its report and
    /// standard error.
    fn pass(&self, runner: &Runner, code: i32) -> (Value, String) {
        let output = runner
            .command(&["sync", "--json"])
            .env(
                "STACKPACK_REGISTRY_TOKEN",
                self.registry.token("customer", Some("globex")),
            )
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(code), "{stderr}");
        (
            serde_json::from_slice(&output.stdout).unwrap_or(Value::Null),
            stderr,
        )
    }

    /// The rollout of `platform` as `stackpack-registry rollout show --json` gives
    /// it: the rollout, each assigned customer's gate standing, the events.
    fn rollout(&self) -> Value {
        self.rollout_of("platform")
    }

    /// The newest rollout of release (or stack) `name`, with each assigned
    /// customer's gate standing and the events.
    fn rollout_of(&self, name: &str) -> Value {
        let id = self.registry.newest_rollout(name)["id"].to_string();
        self.registry
            .run(&["rollout", "show", &id, "--json"])
            .ok()
            .json()
    }

    fn gate(&self) -> Value {
        self.gate_of("platform")
    }

    fn gate_of(&self, name: &str) -> Value {
        let rollout = self.rollout_of(name);
        rollout["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["customer"] == "globex")
            .map(|a| a["gate"].clone())
            .unwrap_or_else(|| panic!("globex is not assigned: {rollout}"))
    }

    fn customer(&self) -> Value {
        self.registry
            .run(&["customer", "show", "globex", "--json"])
            .ok()
            .json()
    }
}

/// A signing key that is not the vendor's (and that no runner trusts).
fn stranger_key(vendor: &ReleaseVendor) -> PathBuf {
    let stranger = vendor.temp.path().join("stranger");
    let keygen = std::process::Command::new(crate::common::stackpack_bin())
        .args(["keygen", "--out", stranger.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(keygen.status.success());
    stranger.with_extension("key")
}

#[test]
fn a_connected_runner_applies_its_verified_assignment_and_reports_receipts_and_the_pass() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let connected = Connected::start(&vendor);
    connected.promote(&vendor, "1.0.0", &vendor.key);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    connected.configure(&runner, &gitops);
    assert_eq!(connected.gate(), "waiting");
    assert!(connected.customer()["rollout"]["lastSync"].is_null());

    let (first, stderr) = connected.pass(&runner, 0);
    let platform = release(&first, "platform");
    assert_eq!(platform["state"], "applied", "{first}\n{stderr}");
    assert_eq!(platform["running"], "1.0.0");
    assert_eq!(marker(&runner), serde_json::json!(3));
    let receipts_after_apply = receipts(&runner);
    // The stack receipts and the release receipt reached the registry: the
    // customer runs the release, and its gate stands `succeeded`.
    assert_eq!(connected.gate(), "succeeded", "{}", connected.rollout());
    let customer = connected.customer();
    let releases = customer["releases"].as_array().unwrap();
    assert!(
        releases
            .iter()
            .any(|r| r["release"] == "platform" && r["version"] == "1.0.0"),
        "{customer}"
    );
    assert_eq!(
        customer["stacks"].as_array().unwrap().len(),
        3,
        "{customer}"
    );
    // The pass itself was reported.
    let synced = customer["rollout"]["lastSync"].clone();
    assert!(synced.is_string(), "{customer}");

    // The next pass changes nothing and sends only its report.
    let receipts_before = customer["recent"].as_array().unwrap().len();
    let (second, _) = connected.pass(&runner, 0);
    assert_eq!(release(&second, "platform")["state"], "converged");
    assert_eq!(second["receiptsSent"], 0, "{second}");
    let customer = connected.customer();
    assert_eq!(
        customer["recent"].as_array().unwrap().len(),
        receipts_before
    );
    assert!(customer["rollout"]["lastSync"].is_string());

    // The registry stopped: the pass fails saying so, and what runs stays.
    let mut connected = connected;
    connected.registry.kill();
    let (_, stderr) = connected.pass(&runner, 1);
    assert!(stderr.contains("cannot reach the registry"), "{stderr}");
    assert_eq!(marker(&runner), serde_json::json!(3));
    assert_eq!(network_input(&runner), "vpc-10.1.0.0/16");
    assert_eq!(receipts(&runner), receipts_after_apply);
}

/// A key that did not sign the release cannot approve it: `promote` refuses it
/// before anything is pushed, the registry would too (its own test), so no runner
/// is ever assigned it. (A statement a runner does not trust is still refused by
/// the runner itself: `an_airgapped_runner_syncs_from_imported_statements_…`.)
#[test]
fn a_statement_by_a_key_that_did_not_sign_the_release_is_refused_and_nothing_is_assigned() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let connected = Connected::start(&vendor);
    let stranger = stranger_key(&vendor);
    connected.promote_refused(&vendor, "1.0.0", &stranger);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    connected.configure(&runner, &gitops);

    let (nothing, stderr) = connected.pass(&runner, 0);
    assert_eq!(
        nothing["report"]["releases"],
        serde_json::json!([]),
        "nothing is assigned: {nothing}\n{stderr}"
    );
    assert!(!runner.state_file("network").exists(), "nothing applied");
    assert_eq!(receipts(&runner), 0);
    // Reported: the registry saw the pass.
    let customer = connected.customer();
    assert!(customer["rollout"]["lastSync"].is_string(), "{customer}");
    assert!(customer["releases"].as_array().unwrap().is_empty());
}

/// A stand-in engine (a script around the real Terraform, named as such) that is
/// slow to apply, so the runner can be killed mid-pass.
const SLOW_APPLY: &str = r#"
if [ "$1" = apply ]; then
  stopped="$(dirname "$0")/engine.stopped"
  trap 'echo "apply stopped" > "$stopped"; exit 1' INT TERM HUP
  echo trapped >> "$0.ran"
  i=0
  while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi
exec "$REAL" "$@""#;

#[test]
fn a_pass_killed_midway_is_reported_by_the_next_which_continues() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let scratch = tempfile::tempdir().unwrap();
    let (engine, ran) = crate::common::fake_engine(scratch.path(), "slow-engine", SLOW_APPLY);
    let runner = Runner::with_engine("globex", &engine).without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&[
            "import",
            vendor.export_tar("platform.tar").to_str().unwrap(),
        ])
        .ok();
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    configure(&runner, &format!("desired = {:?}", desired));
    let mut child = runner
        .command(&["sync"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&ran)
        .unwrap_or_default()
        .lines()
        .any(|l| l == "trapped")
    {
        // `trapped`, not `apply`: killed before its trap is set, the engine ends
        // without saying so.
        assert!(start.elapsed().as_secs() < 120, "the engine never applied");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let stopped = scratch.path().join("engine.stopped");
    let start = std::time::Instant::now();
    while !stopped.exists() {
        assert!(start.elapsed().as_secs() < 30, "the engine ran on");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    runner.set_config(
        &format!("{:?}", engine.display().to_string()),
        &format!("{:?}", crate::common::terraform().display().to_string()),
    );
    let next = sync(&runner);
    let interrupted = next["report"]["interrupted"].as_str().unwrap_or_default();
    assert!(interrupted.contains("`network@0.1.0`"), "{next}");
    assert_eq!(release(&next, "platform")["state"], "applied", "{next}");
    assert_eq!(marker(&runner), serde_json::json!(3));
    // Reported once: the stack ran again since.
    assert!(sync(&runner)["report"].get("interrupted").is_none());
}

#[test]
fn sync_every_keeps_passing_and_sigterm_between_passes_ends_it_with_exit_0() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired = gitops.platform("1.0.0");
    configure(&runner, &format!("desired = {:?}", desired));
    // Files, not pipes: a pipe nobody reads would stall the engine's output.
    let out = runner.temp.path().join("sync.out");
    let err = runner.temp.path().join("sync.err");
    let mut child = runner
        .command(&["sync", "--every", "2s", "--json"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    // Two passes: the first applies, the next finds nothing to do.
    while !runner.state_file("gpu-pools").exists() {
        assert!(
            start.elapsed().as_secs() < 120,
            "the first pass never applied"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Until the second pass has reported (under load a pass takes seconds): a fixed
    // wait here made the test depend on the machine's speed.
    let reported = |out: &std::path::Path| {
        let bytes = std::fs::read(out).unwrap_or_default();
        serde_json::Deserializer::from_slice(&bytes)
            .into_iter::<Value>()
            .take_while(Result::is_ok)
            .count()
    };
    while reported(&out) < 2 {
        assert!(
            start.elapsed().as_secs() < 180,
            "the second pass never reported"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // SAFETY: signals the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().unwrap();
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let stdout = std::fs::read(&out).unwrap();
    let passes: Vec<Value> = serde_json::Deserializer::from_slice(&stdout)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect();
    assert!(passes.len() >= 2, "{passes:?}\n{stderr}");
    assert_eq!(release(&passes[0], "platform")["state"], "applied");
    assert_eq!(release(&passes[1], "platform")["state"], "converged");
}

/// Whether `stack`'s state records output `name`.
fn has_output(runner: &Runner, stack: &str, name: &str) -> bool {
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(runner.state_file(stack)).unwrap()).unwrap();
    state["outputs"].get(name).is_some()
}

#[test]
fn a_failed_pass_rolls_back_what_it_changed_under_on_failure_rollback() {
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    let runner = runner_with(&vendor);
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();
    let gitops = GitOps::new(&runner, 3);
    configure(
        &runner,
        &format!("desired = {:?}", gitops.platform("1.0.0")),
    );
    assert_eq!(release(&sync(&runner), "platform")["state"], "applied");

    // 1.1.0 changes the cluster, and GPU pools that refuse three GPUs per pool:
    // the cluster is applied in the pass before the pools fail.
    vendor.write_failing_pools("platform", "1.1.0");
    runner
        .run(&["import", vendor.layout_dir().to_str().unwrap()])
        .ok();
    runner.set_config("[policy]\n", "[policy]\non-failure = \"rollback\"\n");
    gitops.platform("1.1.0");

    let failed = runner.run(&["sync", "--json"]).code(1).json();
    let platform = release(&failed, "platform");
    assert_eq!(platform["state"], "failed", "{failed}");
    let message = platform["message"].as_str().unwrap();
    assert!(
        message.contains("`terraform plan` failed") && message.contains("rolled back"),
        "{message}"
    );
    assert!(
        !has_output(&runner, "cluster", "name"),
        "the cluster went back"
    );
    let listed = runner.run(&["receipts", "list", "--json"]).ok().json();
    assert!(
        listed["receipts"].as_array().unwrap().iter().any(|r| {
            r["receipt"]["receipt"]["kind"] == "rollback"
                && r["receipt"]["receipt"]["stack"] == "cluster"
                && r["receipt"]["receipt"]["version"] == "0.1.0"
        }),
        "{listed}"
    );
    assert!(platform["receiptId"].is_string(), "{failed}");

    // Regression: `status` showed no failure and no reason. It names the failed plan
    // with the engine's reason (the registry's wording) and the last pass.
    let shown = runner.run(&["status"]).ok();
    assert!(
        shown.stdout.contains("failed: plan of `gpu-pools@"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains(
            ": Resource precondition failed: a pool of more than one GPU needs a bigger cluster (receipt `r-"
        ),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("last sync at ")
            && shown.stdout.contains("`platform@1.1.0` failed: "),
        "{}",
        shown.stdout
    );
    let document = runner.run(&["status", "--json"]).ok().json();
    let first = &document["failed"][0];
    assert_eq!(first["stack"], "gpu-pools", "{document}");
    assert_eq!(first["kind"], "plan", "{document}");
    assert_eq!(
        first["reason"],
        "Resource precondition failed: a pool of more than one GPU needs a bigger cluster",
        "{document}"
    );
    assert_eq!(
        document["lastSync"]["report"]["releases"][0]["state"], "failed",
        "{document}"
    );
}

/// GPU pools on their own: the inputs a release would wire, in the file.
fn solo_inputs(runner: &Runner, pool_size: u32) -> PathBuf {
    let dir = runner.temp.path().join("solo");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("gpu-pools.tfvars");
    std::fs::write(
        &file,
        format!("cluster_id = \"cluster-solo\"\npool_size = {pool_size}\n"),
    )
    .unwrap();
    file
}

#[test]
fn a_single_stack_in_the_desired_state_applies_is_held_when_replacing_and_leaves_a_release_s_stacks_alone(
) {
    let (vendor, _) = vendor(&["1.0.0"]);
    let runner = imported(&vendor);
    let inputs = solo_inputs(&runner, 3);
    let desired = runner.temp.path().join("desired.toml");
    std::fs::write(
        &desired,
        format!(
            "[stacks.gpu-pools]\nversion = \"0.1.0\"\ninputs = {:?}\n",
            inputs.display().to_string()
        ),
    )
    .unwrap();
    configure(&runner, &format!("desired = {:?}", desired));

    let first = sync(&runner);
    let gpu = release(&first, "gpu-pools");
    assert_eq!(gpu["state"], "applied", "{first}");
    assert_eq!(gpu["kind"], "stack");
    assert_eq!(gpu["running"], "0.1.0");
    assert_eq!(marker(&runner), serde_json::json!(3));
    // The stack's own receipt is the record: no release receipt, no release.
    let listed = runner.run(&["receipts", "list", "--json"]).ok().json();
    let applied: Vec<&Value> = listed["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["receipt"]["receipt"]["kind"] == "apply")
        .collect();
    assert_eq!(applied.len(), 1, "{listed}");
    assert_eq!(applied[0]["receipt"]["receipt"]["stack"], "gpu-pools");
    assert_eq!(gpu["receiptId"], applied[0]["receipt"]["receipt"]["id"]);
    assert!(applied[0]["receipt"]["receipt"].get("release").is_none());
    assert!(!runner.state_file("network").exists());

    let before = receipts(&runner);
    let second = sync(&runner);
    assert_eq!(release(&second, "gpu-pools")["state"], "converged");
    assert_eq!(
        receipts(&runner),
        before,
        "a converged pass leaves no receipt"
    );

    // The pool grows: its marker is replaced, so the plan waits for a person.
    solo_inputs(&runner, 5);
    let held = sync(&runner);
    let gpu = release(&held, "gpu-pools");
    assert_eq!(gpu["state"], "pending-approval", "{held}");
    assert_eq!(gpu["kind"], "stack");
    let id = gpu["pending"]["id"].as_str().unwrap().to_string();
    assert_eq!(marker(&runner), serde_json::json!(3), "nothing applied");
    assert_eq!(
        release(&sync(&runner), "gpu-pools")["pending"]["id"],
        id.as_str()
    );
    let listed = pending(&runner);
    assert_eq!(listed[0]["kind"], "stack");
    let table = runner.run(&["sync"]).ok().stdout;
    assert!(table.contains("gpu-pools (stack)"), "{table}");
    let approved = runner.run(&["approve", &id, "--json"]).ok().json();
    assert_eq!(approved["release"]["state"], "applied", "{approved}");
    assert_eq!(approved["release"]["kind"], "stack");
    assert_eq!(marker(&runner), serde_json::json!(5));
    assert!(pending(&runner).is_empty());
    assert_eq!(release(&sync(&runner), "gpu-pools")["state"], "converged");

    // A stack that runs as part of a release is not taken out of it by a pass.
    runner
        .run(&["destroy", "gpu-pools", "--confirm", "globex"])
        .ok();
    let gitops = GitOps::new(&runner, 3);
    let platform_only = gitops.platform("1.0.0");
    runner.set_config(
        &format!("desired = {:?}", desired),
        &format!("desired = {:?}", platform_only),
    );
    assert_eq!(release(&sync(&runner), "platform")["state"], "applied");
    runner.set_config(
        &format!("desired = {:?}", platform_only),
        &format!("desired = {:?}", desired),
    );
    let refused = runner.run(&["sync", "--json"]).code(1).json();
    let gpu = release(&refused, "gpu-pools");
    assert_eq!(gpu["state"], "refused", "{refused}");
    assert!(gpu["message"]
        .as_str()
        .unwrap()
        .contains("runs as part of release `platform@1.0.0`"));
}

#[test]
fn a_single_stack_promoted_on_its_own_is_synced_as_a_release_of_one() {
    let (vendor, _) = vendor(&["1.0.0"]);
    let connected = Connected::start(&vendor);
    connected.publish_stacks(&vendor);
    connected.promote_reference(&vendor, "gpu-pools@0.1.0", &vendor.key);
    // Nothing imported: the runner pulls the bundle the statement approves.
    let runner = runner_with(&vendor);
    let inputs = solo_inputs(&runner, 3);
    configure(
        &runner,
        &format!(
            "registry = \"{}/acme\"\ninsecure = true\ninputs = {:?}",
            connected.registry.host(),
            inputs.parent().unwrap()
        ),
    );

    let (first, stderr) = connected.pass(&runner, 0);
    let gpu = release(&first, "gpu-pools");
    assert_eq!(gpu["state"], "applied", "{first}\n{stderr}");
    assert_eq!(gpu["kind"], "stack");
    assert_eq!(marker(&runner), serde_json::json!(3));
    assert!(!runner.state_file("network").exists());
    assert!(runner
        .store()
        .find_bundle("gpu-pools", &semver::Version::new(0, 1, 0))
        .unwrap()
        .is_some());
    assert_eq!(connected.gate_of("gpu-pools"), "succeeded");
    let (second, _) = connected.pass(&runner, 0);
    assert_eq!(release(&second, "gpu-pools")["state"], "converged");
}

#[test]
fn a_desired_channel_resolves_through_the_registry_when_the_store_has_no_statement() {
    let (vendor, _) = vendor(&["1.0.0", "1.1.0"]);
    let connected = Connected::start(&vendor);
    push_release_to(
        &connected.publisher(),
        &vendor.layout(),
        "acme",
        "platform",
        "1.1.0",
    );
    let runner = runner_with(&vendor);
    let gitops = GitOps::new(&runner, 3);
    let desired =
        gitops.desire("[releases.platform]\nchannel = \"stable\"\ninputs = \"customers/globex\"\n");
    configure(
        &runner,
        &format!(
            "source = \"desired\"\ndesired = {:?}\nregistry = \"{}/acme\"\ninsecure = true",
            desired,
            connected.registry.host()
        ),
    );

    // Not promoted yet: no statement anywhere, nothing applied.
    let (before, _) = connected.pass(&runner, 1);
    assert_eq!(release(&before, "platform")["state"], "refused", "{before}");
    assert!(!runner.state_file("network").exists());

    // A key that did not sign the release cannot approve it: refused before the
    // registry, and the runner still finds nothing.
    let stranger = stranger_key(&vendor);
    connected.promote_refused(&vendor, "1.0.0", &stranger);
    let (still, _) = connected.pass(&runner, 1);
    assert_eq!(release(&still, "platform")["state"], "refused");
    assert!(!runner.state_file("network").exists());

    // The vendor's statement: found next to the release, the release pulled, and
    // the statement kept in the store for the next passes.
    connected.promote(&vendor, "1.1.0", &vendor.key);
    let (applied, stderr) = connected.pass(&runner, 0);
    let platform = release(&applied, "platform");
    assert_eq!(platform["state"], "applied", "{applied}\n{stderr}");
    assert_eq!(platform["running"], "1.1.0");
    assert_eq!(marker(&runner), serde_json::json!(3));
    let kept = stackpack_bundle::channel::statements_in(&runner.store(), Some("stable")).unwrap();
    assert_eq!(kept.len(), 1);
    let (converged, _) = connected.pass(&runner, 0);
    assert_eq!(release(&converged, "platform")["state"], "converged");
}

#[test]
fn an_assignment_with_a_hold_is_held_for_a_person_even_under_auto_says_why_and_approve_applies_it()
{
    let (vendor, _) = vendor(&["1.0.0"]);
    let connected = Connected::start(&vendor);
    connected.promote(&vendor, "1.0.0", &vendor.key);
    let relay = crate::common::hold_relay::HoldRelay::start(connected.registry.host());
    let runner = imported(&vendor);
    let gitops = GitOps::new(&runner, 3);
    configure(
        &runner,
        &format!(
            "registry = \"{}/acme\"\ninsecure = true\ninputs = {:?}\napprove = \"auto\"",
            relay.host,
            gitops.dir.join("customers/globex")
        ),
    );
    let (first, stderr) = connected.pass(&runner, 0);
    assert_eq!(
        release(&first, "platform")["state"],
        "applied",
        "{first}\n{stderr}"
    );
    assert_eq!(marker(&runner), serde_json::json!(3));

    // The pool grows (its marker is replaced: `auto` would apply it), and the
    // registry's forecast asks for a person.
    let words = "the forecast replaces `terraform_data.marker` (pool_size)";
    relay.hold(Some(words));
    gitops.pool_size(5);
    let (held, stderr) = connected.pass(&runner, 0);
    let platform = release(&held, "platform");
    assert_eq!(platform["state"], "pending-approval", "{held}\n{stderr}");
    let message = platform["message"].as_str().unwrap();
    assert!(message.contains(words), "{message}");
    assert!(message.contains("registry asks for a person"), "{message}");
    assert_eq!(held["report"]["approve"], "auto", "{held}");
    assert_eq!(marker(&runner), serde_json::json!(3), "nothing applied");
    let id = platform["pending"]["id"].as_str().unwrap().to_string();
    let listed = pending(&runner);
    assert_eq!(
        listed[0]["reason"],
        serde_json::json!({"by": "registry", "words": words})
    );
    let table = runner.run(&["pending"]).ok().stdout;
    assert!(table.contains(words), "{table}");
    let review = std::fs::read_to_string(listed[0]["review"].as_str().unwrap()).unwrap();
    assert!(review.contains(words), "{review}");

    runner.run(&["approve", &id]).ok();
    assert_eq!(marker(&runner), serde_json::json!(5));
    assert!(pending(&runner).is_empty());
    // Still under the hold, a plan with nothing to change converges.
    let (after, stderr) = connected.pass(&runner, 0);
    assert_eq!(
        release(&after, "platform")["state"],
        "converged",
        "{after}\n{stderr}"
    );
}
