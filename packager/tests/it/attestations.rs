//! Each published bundle's attestations, found and checked with tools Stackpack did
//! not write (`scripts/verify/attestations.py`): `@sigstore/verify` for the Sigstore
//! bundles, `securesystemslib` and `in-toto-attestation` for the DSSE envelope and
//! the SLSA provenance, `cyclonedx-python-lib` for the SBOM; found through our
//! registry's referrers API and through the tag fallback on CNCF Distribution.

use crate::common;

use std::process::Command;

use common::servers::{Distribution, OurRegistry};
use common::{git, TestRepo};

fn verify_with_their_tools(registry_url: &str, key: &std::path::Path, token: Option<&str>) -> common::Run {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/verify/attestations.py");
    let mut command = Command::new("python3");
    command.args([
        script,
        "--registry",
        registry_url,
        "--repository",
        "acme/stacks/network",
        "--reference",
        "0.1.0",
        "--key",
        key.to_str().unwrap(),
    ]);
    if let Some(token) = token {
        command.args(["--token", token]);
    }
    common::Run::from_output(command.output().unwrap())
}

fn publish(repo: &TestRepo, host: &str, token: Option<&str>) {
    let registry = format!("{host}/acme");
    let mut command = Command::new(env!("CARGO_BIN_EXE_stackpack"));
    command
        .current_dir(&repo.dir)
        .args(["publish", "--json", "--insecure", "--registry", &registry])
        .args(["--key", repo.key.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_HEAD_REF")
        .env_remove("GITHUB_ACTIONS");
    if let Some(token) = token {
        command.env("STACKPACK_REGISTRY_TOKEN", token);
    }
    common::Run::from_output(command.output().unwrap()).ok();
}

#[test]
fn published_attestations_verify_with_sigstore_in_toto_and_cyclonedx_on_both_registries() {
    let distribution = Distribution::require();
    let ours = OurRegistry::start();
    let repo = TestRepo::new();
    let commit = git(&repo.dir, &["rev-parse", "HEAD"]);

    publish(&repo, &distribution.host(), None);
    let run = verify_with_their_tools(&distribution.url(), &repo.public_key, None).ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["foundBy"], "tag fallback", "{report}");
    assert_eq!(
        report["sigstore"],
        serde_json::json!(["https://sigstore.dev/cosign/sign/v1", "https://slsa.dev/provenance/v1"])
    );
    assert_eq!(report["provenance"]["commit"], commit.trim(), "{report}");
    assert_eq!(report["provenance"]["ref"], "refs/heads/main", "{report}");
    assert_eq!(
        report["provenance"]["builder"],
        "https://stackpack.dev/builders/local"
    );

    let token = ours.publisher_token();
    publish(&repo, &ours.host(), Some(&token));
    let run = verify_with_their_tools(&ours.url(), &repo.public_key, Some(&token)).ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["foundBy"], "referrers API", "{report}");
    assert_eq!(report["sigstore"].as_array().unwrap().len(), 2, "{report}");

    // The same tools refuse them under a key the vendor does not hold.
    let other = repo.temp.path().join("other.pub");
    let key = stackpack_schema::signature::PrivateKey::from_secret_bytes([9; 32]);
    std::fs::write(&other, key.public_key().to_pem()).unwrap();
    let run = verify_with_their_tools(&distribution.url(), &other, None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("@sigstore/verify refused"), "{}", run.stderr);
}
