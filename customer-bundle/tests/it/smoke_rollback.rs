//! Smoke checks after an apply, and the automatic rollback, with real Terraform
//! against the emulated AWS account (moto): a version whose `check` block and
//! `[[smoke]]` output assertion fail is rolled back at once when `runner.toml` says
//! `on-failure = "rollback"`; the previous version's resources are in place again,
//! both receipts are recorded, and `status` shows the last attempt.

use crate::common;

use common::{build_and_import, globex_inputs, Runner, Vendor};

/// The models bucket of the first version, which the rollback must leave in place.
const MODELS: &str = "globex-models-111122223333-us-east-1";

/// Whether the emulated account holds a bucket named `name`.
fn bucket_exists(runner: &Runner, name: &str) -> bool {
    let out = runner
        .moto()
        .python(&format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url=ENDPOINT, region_name='us-east-1')\nprint({name:?} in [b['Name'] for b in s3.list_buckets()['Buckets']])"
        ))
        .ok();
    out.stdout.trim() == "True"
}

#[test]
fn failed_smoke_checks_roll_back_to_the_previous_version_with_both_receipts() {
    let vendor = Vendor::new();
    let runner = Runner::new("globex");
    runner.set_config("[policy]\n", "[policy]\non-failure = \"rollback\"\n");
    let first = build_and_import(&vendor, &runner);
    let inputs = globex_inputs();
    let inputs = inputs.to_str().unwrap();
    runner
        .run(&["apply", &first, "--inputs", inputs, "--yes"])
        .ok();
    assert!(bucket_exists(&runner, MODELS));
    assert!(!bucket_exists(&runner, "globex-canary"));

    // The next version adds a bucket, a `check` block that fails, and an output
    // assertion that fails.
    vendor.change(
        "stacks/data-plane/main.tf",
        "\nresource \"aws_s3_bucket\" \"canary\" {\n  bucket = \"${var.customer_id}-canary\"\n}\n\ncheck \"canary_is_versioned\" {\n  assert {\n    condition     = aws_s3_bucket.canary.versioning[0].enabled\n    error_message = \"The canary bucket is not versioned.\"\n  }\n}\n",
    );
    vendor.change(
        "stacks/data-plane/stack.toml",
        "\n[[smoke]]\nname = \"three private subnets\"\ncondition = \"length(output.private_subnets) == 4\"\nerror-message = \"the data plane does not have four private subnets\"\n",
    );
    let second = build_and_import(&vendor, &runner);
    let failed = runner
        .run(&["apply", &second, "--inputs", inputs, "--yes"])
        .code(1);
    assert!(
        failed.stderr.contains("smoke checks failed after applying"),
        "{}",
        failed.stderr
    );
    assert!(
        failed
            .stderr
            .contains("check.canary_is_versioned: The canary bucket is not versioned."),
        "{}",
        failed.stderr
    );
    assert!(
        failed.stderr.contains(
            "smoke \"three private subnets\": the data plane does not have four private subnets"
        ),
        "{}",
        failed.stderr
    );
    assert!(
        failed.stderr.contains(&format!("rolled back to `{first}`")),
        "{}",
        failed.stderr
    );
    // The previous version's resources, and only those.
    assert!(
        !bucket_exists(&runner, "globex-canary"),
        "the rollback left the canary"
    );
    assert!(bucket_exists(&runner, MODELS));

    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let kinds: Vec<String> = receipts["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}:{}",
                r["receipt"]["receipt"]["kind"].as_str().unwrap(),
                r["receipt"]["receipt"]["version"].as_str().unwrap(),
                r["receipt"]["receipt"]["outcome"].as_str().unwrap()
            )
        })
        .collect();
    let v1 = first.split('@').nth(1).unwrap();
    let v2 = second.split('@').nth(1).unwrap();
    assert_eq!(
        kinds,
        [
            format!("apply:{v1}:succeeded"),
            format!("apply:{v2}:failed"),
            format!("rollback:{v1}:succeeded"),
        ]
    );
    let failed_apply = &receipts["receipts"][1];
    assert!(
        failed_apply["notes"]
            .to_string()
            .contains("check.canary_is_versioned"),
        "{failed_apply:#}"
    );

    let status = runner.run(&["status", "--json"]).ok().json();
    assert_eq!(status["stacks"][0]["version"], v1);
    assert_eq!(status["stacks"][0]["lastAttempt"]["kind"], "rollback");
    let table = runner.run(&["status"]).ok().stdout;
    assert!(table.contains("LAST ATTEMPT"), "{table}");
    assert!(
        table.contains(&format!("rollback {v1} succeeded")),
        "{table}"
    );
}
