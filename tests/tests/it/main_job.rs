//! The README's first command, `scripts/demo.sh`, run whole: the embedded registry,
//! `stackpack publish` with the AWS provider inside each bundle, a connected customer
//! whose (emulated) AWS account gets real resources, an in-place upgrade, drift found,
//! a rollback, a major release whose plan replaces a resource; then releases: the
//! customer moves to the four-stack `environment` release (applied in order with
//! outputs wired, its service mirrored into the customer's registry), a second
//! release re-applies only the stack it changed, a rollback of the whole
//! environment; an airgapped customer applies the release from one tar inside a
//! network namespace; a rollout in three waves, halted by a canary's failure and
//! resumed, with a destructive release waiting for approval; support's view of the
//! fleet, of the release and of the rollout.

use std::process::Command;

use stackpack_test_support::repository_root;

#[test]
fn the_demo_runs_the_main_job_end_to_end_and_the_fleet_shows_both_customers() {
    let work = tempfile::tempdir().unwrap();
    let output = Command::new("bash")
        .arg(repository_root().join("scripts/demo.sh"))
        .env("STACKPACK_DEMO_DIR", work.path().join("demo"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let all = format!("{stdout}\n{stderr}");
    let has = |needle: &str| {
        assert!(all.contains(needle), "missing `{needle}` in:\n{all}");
    };
    // Globex's account (the AWS API emulator) got real resources from the bundle's
    // own provider package.
    has("provider `registry.terraform.io/hashicorp/aws` 3.39.0 from the bundle");
    has("applied `data-plane@0.1.0`: 36 to add, 0 to change, 0 to destroy");
    has("in the account now: 1 VPC, 6 subnets, clusters ['globex-data']");
    // Its engine state is an object in a bucket of its own account, not a file in
    // the runner's home.
    has("state in globex's own bucket: s3://globex-tf-state/stackpack/globex/data-plane.tfstate (");
    has("state files in the runner's home: 0");
    has("beside it, what runs (a new runner home reads it): s3://globex-tf-state/stackpack/globex/data-plane.stackpack.json (data-plane@0.1.0)");
    // The second stack and the second version did not send the provider again.
    let sent: Vec<u64> = stdout
        .lines()
        .chain(stderr.lines())
        .filter(|l| l.trim_start().starts_with("data-plane") && l.contains("bytes sent"))
        .map(|l| {
            let digits: String = l
                .split("bytes sent")
                .next()
                .unwrap()
                .split_whitespace()
                .last()
                .unwrap()
                .replace(',', "");
            digits.parse().unwrap()
        })
        .collect();
    assert!(sent.len() >= 2, "{all}");
    assert!(
        sent.iter().all(|bytes| *bytes < 1_000_000),
        "{sent:?}\n{all}"
    );
    // What the runner verified before applying, link by link; the same proofs found
    // as referrers and checked with a security team's own tools; and the registry's
    // record of it.
    has("3. provenance  SLSA v1, signed by the same trusted key: https://git.acme.example/platform/acme-infra at `");
    has("4. SBOM        sha256:");
    has("its 1 provider(s) match the lock's hashes");
    has("found through the referrers API: 2 Sigstore bundles and an SBOM about sha256:");
    has("cyclonedx-python-lib: the SBOM sha256:");
    has("5. policy      requires provenance and SBOM: met; repository pinned to `https://git.acme.example/platform/acme-infra`: met; refs pinned to `refs/heads/main`: met");
    has("verified before apply:");
    has("built from `acme-infra@");
    // An upgrade changed a resource in place; drift was found; rollback went back.
    has("applied `data-plane@0.2.0` (was `0.1.0`): 0 to add, 1 to change, 0 to destroy");
    has("`data-plane@0.2.0` has drifted");
    has("rolled back to `data-plane@0.1.0` (was `0.2.0`)");
    // A changed default that replaces a resource: the contract said major, the plan
    // showed the replacement.
    has("stack `stacks/data-plane` needs a major release");
    has("must be replaced");
    has("planned `data-plane@1.0.0`: 1 to add");
    // Releases: globex's one-stack data plane destroyed, the release planned (the
    // stacks after an upstream that changes wait for it) and applied in order.
    has("destroyed `data-plane@0.1.0`: 0 to add, 0 to change, 36 to destroy");
    has("release environment 0.1.0      published");
    has("cluster        waiting on `network`");
    has("release `environment@1.0.0` applied: release receipt `r-");
    assert!(
        all.lines().any(
            |l| l.starts_with("one-stack data plane destroyed in ") && l.contains("applied in")
        ),
        "{all}"
    );
    // Its service, pinned by digest, mirrored into globex's own registry.
    has(r#"globex's registry now holds: {"repositories":["globex/inference-api"]}"#);
    // A second release that changes only the GPU pools: only that stack is applied
    // (the result table just before the release's line).
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("release `environment@1.0.1` applied"))
        .unwrap_or_else(|| panic!("no second release applied in:\n{all}"));
    let table = &lines[at.saturating_sub(4)..at];
    for (stack, result) in [
        ("model-storage", "unchanged"),
        ("network", "unchanged"),
        ("cluster", "unchanged"),
        ("gpu-pools", "applied"),
    ] {
        assert!(
            table
                .iter()
                .any(|l| l.starts_with(stack) && l.split_whitespace().nth(2) == Some(result)),
            "`{stack}` should be {result}:\n{table:?}\n{all}"
        );
    }
    // Rollback returns the whole environment to the release before.
    has("release `environment@1.0.0` rolled back to: release receipt");
    // The airgapped customer applied the release from one tar with no network (as root).
    if is_root() {
        has("inside a network namespace: no network but 127.0.0.1");
    }
    has("release `environment@1.0.1` applied: release receipt");
    // The rollout: umbrella's failed apply halted it before the early wave; after
    // its fix and `resume`, hooli's wave opened; the release replacing GPU node
    // groups waited for globex's approval of the exact plan, then reached every wave.
    has("umbrella's pass failed (exit 1): the rollout halts");
    has("customer `umbrella` (wave `canary`) failed");
    has("nothing is assigned to this runner");
    has("hooli: its wave opened; the pass applied environment");
    // Before promoting the GPU release, the vendor forecast each customer's plan from
    // the version it runs: globex's node groups replaced, umbrella unchanged, hooli
    // (inputs only on its side) skipped and named; promote read it, and the registry
    // asked globex's runner to hold the plan for a person.
    assert!(
        all.lines().any(|l| l.starts_with("globex ")
            && l.contains(" replace ")
            && l.contains("aws_eks_node_group.pool")),
        "globex's forecast replaces its GPU node groups:\n{all}"
    );
    has("was skipped: no inputs file `customers/hooli/");
    has("forecast: ");
    has("held for approval (the registry asks for a person: the vendor's forecast replaces");
    has("pending-approval");
    // Every real plan matched its forecast: nothing halted on a miss.
    assert!(!all.contains("forecast missed"), "{all}");
    has("2 replaced or destroyed");
    has("release `environment@1.0.2` applied: release receipt");
    assert!(
        all.lines()
            .any(|l| l.contains("environment@1.0.2") && l.contains(" completed ")),
        "the second rollout completed:\n{all}"
    );
    // The engine's own output is in the demo's engine log, not in its output.
    assert!(
        !all.contains("Terraform has been successfully initialized"),
        "{all}"
    );
    // Support's view: every customer runs its release unmixed (initech, airgapped,
    // the version before); the snapshot names every stack and the service's digest.
    let release_fleet: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("CUSTOMER  ENVIRONMENT  VERSION  MIXED"))
        .collect();
    for (customer, version) in [
        ("globex", " 1.0.2 "),
        ("umbrella", " 1.0.2 "),
        ("hooli", " 1.0.2 "),
        ("initech", " 1.0.1 "),
    ] {
        assert!(
            release_fleet
                .iter()
                .any(|l| l.starts_with(customer) && l.contains(version)),
            "{customer} at{version}:\n{stdout}"
        );
    }
    has("release environment 1.0.2  index sha256:");
    has("gpu-pools      0.1.2    sha256:");
    has("inference-api  sha256:");
    // ... and what exactly globex runs, in one command: its stacks and release.
    has("customer globex");

    // The demo teaches (issue 39 §4): each command shown as a user types it, the
    // build's measured time, no escape codes without a terminal, every warning
    // explained or absent, and an ending that says how to reach the pages.
    has("$ stackpack publish --registry ");
    has("$ stackpack-runner --home runner-globex apply data-plane@0.1.0 ");
    has("==> built in ");
    assert!(
        !all.contains('\u{1b}'),
        "escape codes with no terminal:\n{all}"
    );
    assert!(!all.contains("has no earlier release"), "{all}");
    has("hooli's skip above is expected");
    has("support token (sign in at http://127.0.0.1:");
    has("to serve its data again: ");
}

/// The demo runs its airgapped customer in a network namespace only as root.
fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
