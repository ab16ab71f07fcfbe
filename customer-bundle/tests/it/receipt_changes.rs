//! A receipt carries its plan's actions (address and action per resource change,
//! never a value) and their digest, for the registry to hold the real plan against
//! its forecast; a receipt from a runner that predates them still verifies. Real
//! Terraform, the small `terraform_data` stacks.

use std::path::PathBuf;

use serde_json::Value;
use stackpack_schema::plan::{changes_digest, Action, PlannedChange};
use stackpack_schema::receipt::SignedReceipt;
use stackpack_schema::signature::PrivateKey;

use crate::common::release::ReleaseVendor;
use crate::common::Runner;

/// A runner trusting the vendor, its built stacks imported, and `network`'s
/// inputs file with range `cidr`.
fn imported(cidr: &str) -> (ReleaseVendor, Runner, PathBuf, String) {
    let vendor = ReleaseVendor::new();
    let version = vendor.build_version_of("network");
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.export_tar("stacks.tar").to_str().unwrap()])
        .ok();
    let inputs = runner.temp.path().join("network.tfvars");
    std::fs::write(&inputs, format!("cidr = \"{cidr}\"\n")).unwrap();
    (vendor, runner, inputs, format!("network@{version}"))
}

fn receipt_of(run: &Value) -> SignedReceipt {
    let receipt: SignedReceipt = serde_json::from_value(run["receipt"].clone()).unwrap();
    receipt.verify_integrity().unwrap();
    receipt
}

fn change(address: &str, action: Action) -> PlannedChange {
    PlannedChange {
        address: address.into(),
        action,
    }
}

#[test]
fn plan_and_apply_receipts_carry_the_plans_actions_and_their_digest_an_empty_plan_that_of_none() {
    let (_vendor, runner, inputs, reference) = imported("10.1.0.0/16");
    let inputs = inputs.to_str().unwrap();

    let planned = runner
        .run(&["plan", &reference, "--inputs", inputs, "--json"])
        .ok()
        .json();
    let receipt = receipt_of(&planned).receipt;
    let created = vec![change("terraform_data.vpc", Action::Create)];
    assert_eq!(receipt.changes, created, "{planned}");
    assert_eq!(receipt.changes_digest, Some(changes_digest(&created)));
    assert!(receipt.drifted.is_empty());

    let applied = runner
        .run(&["apply", &reference, "--inputs", inputs, "--yes", "--json"])
        .ok()
        .json();
    let receipt = receipt_of(&applied).receipt;
    assert_eq!(receipt.changes, created);
    assert_eq!(receipt.changes_digest, Some(changes_digest(&created)));

    // Nothing left to change: no changes listed, and the digest of none, so the
    // registry can still hold it against a forecast of "no change".
    let again = runner
        .run(&["plan", &reference, "--inputs", inputs, "--json"])
        .ok()
        .json();
    let receipt = receipt_of(&again).receipt;
    assert_eq!(receipt.outcome.as_str(), "no-changes");
    assert!(receipt.changes.is_empty());
    assert_eq!(receipt.changes_digest, Some(changes_digest(&[])));
    assert_ne!(changes_digest(&[]), changes_digest(&created));

    // A new range updates the resource in place: a different digest.
    std::fs::write(inputs, "cidr = \"10.2.0.0/16\"\n").unwrap();
    let moved = runner
        .run(&["plan", &reference, "--inputs", inputs, "--json"])
        .ok()
        .json();
    let receipt = receipt_of(&moved).receipt;
    let updated = vec![change("terraform_data.vpc", Action::Update)];
    assert_eq!(receipt.changes, updated);
    assert_eq!(receipt.changes_digest, Some(changes_digest(&updated)));
    // Addresses and actions only: never the inputs' values.
    let document = serde_json::to_string(&receipt).unwrap();
    assert!(!document.contains("10.2.0.0"), "{document}");
}

#[test]
fn a_receipt_from_a_runner_before_forecasts_still_verifies_and_reads_as_having_no_changes() {
    let (_vendor, runner, inputs, reference) = imported("10.1.0.0/16");
    let planned = runner
        .run(&[
            "plan",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    // The receipt as an older runner wrote it: the same document without the
    // fields it did not know, signed over that document's canonical JSON.
    let mut old = planned["receipt"]["receipt"].clone();
    let fields = old.as_object_mut().unwrap();
    for field in ["changes", "changesDigest", "drifted"] {
        fields.remove(field);
    }
    assert!(fields.contains_key("inputsHash"), "{old}");
    let key = PrivateKey::from_pem(
        &std::fs::read_to_string(runner.home.join("installation.key")).unwrap(),
    )
    .unwrap();
    use ed25519_dalek::pkcs8::DecodePrivateKey as _;
    let signing = ed25519_dalek::SigningKey::from_pkcs8_pem(&key.to_pem()).unwrap();
    let signature =
        ed25519_dalek::Signer::sign(&signing, &stackpack_schema::signature::canonical_json(&old));
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let document = serde_json::json!({
        "receipt": old,
        "algorithm": "ed25519",
        "signature": b64.encode(signature.to_bytes()),
        "publicKey": planned["receipt"]["publicKey"],
    });
    let read = SignedReceipt::from_bytes(document.to_string().as_bytes()).unwrap();
    read.verify_integrity().unwrap();
    assert!(read.receipt.changes.is_empty());
    assert_eq!(read.receipt.changes_digest, None);
    assert!(read.receipt.drifted.is_empty());
    // And the new fields are inside the signature: a receipt whose changes were
    // altered after signing does not verify.
    let mut altered = receipt_of(&planned);
    altered.receipt.changes[0].action = Action::Update;
    assert!(altered.verify_integrity().is_err());
}
