//! Each published bundle's attestations, found and checked with tools Stackpack did
//! not write (`scripts/verify/attestations.py`): `@sigstore/verify` for the Sigstore
//! bundles, `securesystemslib` and `in-toto-attestation` for the DSSE envelope and
//! the SLSA provenance, `cyclonedx-python-lib` for the SBOM; found through our
//! registry's referrers API and through the tag fallback on CNCF Distribution.

use crate::common;

use std::process::Command;

use common::servers::{Distribution, OurRegistry};
use common::{git, TestRepo};

fn verify_with_their_tools(
    registry_url: &str,
    (repository, reference): (&str, &str),
    key: &std::path::Path,
    token: Option<&str>,
) -> common::Run {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/verify/attestations.py"
    );
    let mut command = Command::new("python3");
    command.args([
        script,
        "--registry",
        registry_url,
        "--repository",
        repository,
        "--reference",
        reference,
        "--key",
        key.to_str().unwrap(),
    ]);
    if let Some(token) = token {
        command.args(["--token", token]);
    }
    common::Run::from_output(command.output().unwrap())
}

/// Publishes every stack and release; returns the first release published, as
/// (repository, version).
fn publish(repo: &TestRepo, host: &str, token: Option<&str>) -> (String, String) {
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
    let report = common::Run::from_output(command.output().unwrap())
        .ok()
        .json();
    let release = &report["releases"][0];
    (
        format!("acme/releases/{}", release["release"].as_str().unwrap()),
        release["version"].as_str().unwrap().to_string(),
    )
}

const NETWORK: (&str, &str) = ("acme/stacks/network", "0.1.0");

#[test]
fn published_attestations_verify_with_sigstore_in_toto_and_cyclonedx_on_both_registries() {
    let distribution = Distribution::require();
    let ours = OurRegistry::start();
    let repo = TestRepo::new();
    let manifest = repo.dir.join("stackpack.toml");
    let mut config = std::fs::read_to_string(&manifest).unwrap();
    config.push_str("\n[releases.edge]\nstacks = [\"network\"]\n");
    std::fs::write(&manifest, config).unwrap();
    repo.commit("release edge");
    let commit = git(&repo.dir, &["rev-parse", "HEAD"]);

    let (release, version) = publish(&repo, &distribution.host(), None);
    let run = verify_with_their_tools(&distribution.url(), NETWORK, &repo.public_key, None).ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["foundBy"], "tag fallback", "{report}");
    assert_eq!(
        report["sigstore"],
        serde_json::json!([
            "https://sigstore.dev/cosign/sign/v1",
            "https://slsa.dev/provenance/v1"
        ])
    );
    assert_eq!(report["provenance"]["commit"], commit.trim(), "{report}");
    assert_eq!(report["provenance"]["ref"], "refs/heads/main", "{report}");
    assert_eq!(
        report["provenance"]["builder"],
        "https://stackpack.dev/builders/local"
    );

    // The release's own, about its index; and once promoted, the channel statement
    // as a Sigstore bundle beside them.
    let name = release.rsplit('/').next().unwrap();
    repo.run(&[
        "promote",
        &format!("{name}@{version}"),
        "--channel",
        "stable",
        "--insecure",
        "--registry",
        &format!("{}/acme", distribution.host()),
        "--key",
        repo.key.to_str().unwrap(),
    ])
    .ok();
    let run = verify_with_their_tools(
        &distribution.url(),
        (&release, &version),
        &repo.public_key,
        None,
    )
    .ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        report["sigstore"],
        serde_json::json!([
            "https://sigstore.dev/cosign/sign/v1",
            "https://slsa.dev/provenance/v1",
            "https://stackpack.dev/attestations/channel-statement/v1"
        ]),
        "{report}"
    );
    assert_eq!(report["provenance"]["commit"], commit.trim(), "{report}");

    // The freshness statement carries the same as a Sigstore bundle, its second
    // layer, about the newest version's manifest.
    let client = stackpack_bundle::remote::Remote::with_credentials(
        &distribution.host(),
        true,
        stackpack_bundle::remote::Credentials::Anonymous,
    )
    .unwrap();
    let (bytes, _) = client
        .pull_manifest("acme/stacks/network", "stackpack-latest")
        .unwrap()
        .unwrap();
    let latest: stackpack_schema::oci::ImageManifest = serde_json::from_slice(&bytes).unwrap();
    let sealed = client
        .pull_blob_bytes("acme/stacks/network", &latest.layers[1], 1 << 20)
        .unwrap();
    let file = repo.temp.path().join("latest.sigstore.json");
    std::fs::write(&file, sealed).unwrap();
    let verifier = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scripts/verify/sigstore-verify.js"
    );
    let run = common::Run::from_output(
        Command::new("node")
            .args([
                verifier,
                file.to_str().unwrap(),
                repo.public_key.to_str().unwrap(),
            ])
            .output()
            .unwrap(),
    )
    .ok();
    assert!(
        run.stdout
            .contains("https://stackpack.dev/attestations/latest/v1"),
        "{}",
        run.stdout
    );

    let token = ours.publisher_token();
    let (release, version) = publish(&repo, &ours.host(), Some(&token));
    for subject in [NETWORK, (&release, &version)] {
        let run =
            verify_with_their_tools(&ours.url(), subject, &repo.public_key, Some(&token)).ok();
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(report["foundBy"], "referrers API", "{report}");
        assert_eq!(report["sigstore"].as_array().unwrap().len(), 2, "{report}");
    }

    // The same tools refuse them under a key the vendor does not hold.
    let other = repo.temp.path().join("other.pub");
    let key = stackpack_schema::signature::PrivateKey::from_secret_bytes([9; 32]);
    std::fs::write(&other, key.public_key().to_pem()).unwrap();
    let run = verify_with_their_tools(&distribution.url(), NETWORK, &other, None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("@sigstore/verify refused"),
        "{}",
        run.stderr
    );
}
