//! Reviewed plans with real Terraform against the emulated AWS account (moto):
//! `plan --out` writes the saved plan with a record signed by the installation key,
//! `plan --format markdown` gives the change request's summary, `apply --plan`
//! applies exactly that plan, and a reviewed plan is refused once the inputs, the
//! state, or the file itself changed.

use crate::common;

use common::{build_and_import, globex_inputs, Runner, Vendor};

#[test]
fn a_reviewed_plan_is_applied_as_reviewed_and_refused_after_its_inputs_changed() {
    let vendor = Vendor::new();
    let runner = Runner::new("globex");
    let reference = build_and_import(&vendor, &runner);
    let inputs = runner.temp.path().join("globex.tfvars");
    std::fs::copy(globex_inputs(), &inputs).unwrap();
    let inputs = inputs.to_str().unwrap().to_string();
    let reviewed = runner.temp.path().join("reviewed.plan");
    let reviewed = reviewed.to_str().unwrap().to_string();

    let summary = runner
        .run(&[
            "plan", &reference, "--inputs", &inputs, "--out", &reviewed, "--format", "markdown",
        ])
        .ok()
        .stdout;
    assert!(
        summary.starts_with(&format!("## Plan: `{reference}`")),
        "{summary}"
    );
    assert!(summary.contains("| 36 | 0 | 0 | 0 | 7 |"), "{summary}");
    assert!(
        summary.contains("- `module.network.aws_vpc.this`"),
        "{summary}"
    );
    assert!(summary.contains("### Policies"), "{summary}");
    assert!(summary.contains("5 file(s): passed"), "{summary}");
    let document: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&reviewed).unwrap()).unwrap();
    assert_eq!(document["record"]["state"], "empty");
    assert_eq!(document["record"]["summary"]["add"], 36);
    assert!(
        !document["record"].to_string().contains("111122223333"),
        "the record holds an input value"
    );

    // A changed file is refused: the signature no longer fits.
    let mut tampered = document.clone();
    tampered["record"]["summary"]["add"] = 1.into();
    let forged = runner.temp.path().join("forged.plan");
    std::fs::write(&forged, tampered.to_string()).unwrap();
    let refused = runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            &inputs,
            "--plan",
            forged.to_str().unwrap(),
            "--yes",
        ])
        .code(1);
    assert!(
        refused
            .stderr
            .contains("is not signed by this installation's key"),
        "{}",
        refused.stderr
    );

    let applied = runner
        .run(&[
            "apply", &reference, "--inputs", &inputs, "--plan", &reviewed, "--yes", "--json",
        ])
        .ok();
    assert!(
        applied.stderr.contains("applying the reviewed plan"),
        "{}",
        applied.stderr
    );
    assert!(
        !applied.stderr.contains("terraform plan"),
        "{}",
        applied.stderr
    );
    assert_eq!(applied.json()["outcome"], "succeeded");
    assert_eq!(applied.json()["plan"]["add"], 36);

    // Applied once, the same plan is stale: the state changed since.
    let stale = runner
        .run(&[
            "apply", &reference, "--inputs", &inputs, "--plan", &reviewed, "--yes",
        ])
        .code(1);
    assert!(
        stale
            .stderr
            .contains("the state of `data-plane` changed since the plan was reviewed"),
        "{}",
        stale.stderr
    );

    // A new reviewed plan, then the inputs change: refused before the engine runs.
    runner
        .run(&["plan", &reference, "--inputs", &inputs, "--out", &reviewed])
        .ok();
    let text = std::fs::read_to_string(&inputs).unwrap();
    std::fs::write(&inputs, text.replace("\"1.30\"", "\"1.31\"")).unwrap();
    let refused = runner
        .run(&[
            "apply", &reference, "--inputs", &inputs, "--plan", &reviewed, "--yes",
        ])
        .code(1);
    assert!(
        refused.stderr.contains("the inputs changed since the plan"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("terraform init"),
        "{}",
        refused.stderr
    );
}
