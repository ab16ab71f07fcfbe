//! The README's first command, `scripts/demo.sh`, run whole: the embedded registry,
//! `stackpack publish` with the AWS provider inside each bundle, a connected customer
//! whose (emulated) AWS account gets real resources, an in-place upgrade, drift found,
//! a rollback, a major release whose plan replaces a resource, destroy and recreate,
//! an airgapped customer inside a network namespace, and support's view of the fleet.

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
    // An upgrade changed a resource in place; drift was found; rollback went back.
    has("applied `data-plane@0.2.0` (was `0.1.0`): 0 to add, 1 to change, 0 to destroy");
    has("`data-plane@0.2.0` has drifted");
    has("rolled back to `data-plane@0.1.0` (was `0.2.0`)");
    // A changed default that replaces a resource: the contract said major, the plan
    // showed the replacement.
    has("stack `stacks/data-plane` needs a major release");
    has("must be replaced");
    has("planned `data-plane@1.0.0`: 1 to add");
    // Destroyed and recreated from nothing, timed.
    has("destroyed `data-plane@0.1.0`: 0 to add, 0 to change, 36 to destroy");
    has("receipt `r-");
    assert!(
        all.lines()
            .any(|l| l.starts_with("destroyed in ") && l.contains("recreated in")),
        "{all}"
    );
    // The airgapped customer applied with no network at all (as root).
    if is_root() {
        has("inside a network namespace: no network but 127.0.0.1");
    }
    has("applied `data-plane@0.2.0`: 34 to add");
    // Support's view: both customers on 0.2.0, behind the major 1.0.0.
    let fleet: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("CUSTOMER"))
        .collect();
    for customer in ["globex", "initech"] {
        assert!(
            fleet.iter().any(|l| l.starts_with(customer)
                && l.contains(" 0.2.0 ")
                && l.contains("latest 1.0.0")),
            "{stdout}"
        );
    }
}

/// The demo runs its airgapped customer in a network namespace only as root.
fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
