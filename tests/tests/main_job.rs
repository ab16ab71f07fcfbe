//! The README's first command, `scripts/demo.sh`, run whole: the embedded registry,
//! `stackpack publish` (a first release, then a computed minor), a connected customer
//! that pulls, verifies and applies with real Terraform and reports, an airgapped one
//! that imports a tar, applies and carries its receipt back as a file, and support's
//! view of the fleet.

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

    // CI computed a minor release from the new input.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("data-plane") && l.contains("0.2.0") && l.contains("minor")),
        "{stdout}"
    );
    // Globex applied its own CIDR with real Terraform.
    assert!(stdout.contains("vpc_cidr = \"10.40.0.0/16\""), "{stdout}");
    // Support's view: globex behind on 0.1.0, initech on 0.2.0 from its receipt file.
    let fleet: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("CUSTOMER"))
        .collect();
    assert!(
        fleet
            .iter()
            .any(|l| l.starts_with("globex") && l.contains("0.1.0") && l.contains("behind 0.2.0")),
        "{stdout}"
    );
    assert!(
        fleet
            .iter()
            .any(|l| l.starts_with("initech") && l.contains("0.2.0") && !l.contains("behind")),
        "{stdout}"
    );
}
