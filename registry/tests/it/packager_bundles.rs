//! Real bundles from the real packager: `stackpack build` makes an image layout of the
//! example repository; `skopeo` copies a bundle into the registry, which records the
//! release from the bundle's config; the signature artifact is pushed by digest and
//! found through the referrers API; the bundle comes back byte for byte.
//!
//! Needs the `stackpack` binary built next to ours (`cargo build -p stackpack-packager`)
//! plus `git` and `skopeo`; skips with a note otherwise (fails under
//! `STACKPACK_REQUIRE_TOOLS`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn packager() -> Option<PathBuf> {
    let path = Path::new(BIN).with_file_name("stackpack");
    if path.exists() {
        Some(path)
    } else {
        if std::env::var_os("STACKPACK_REQUIRE_TOOLS").is_some() {
            panic!(
                "`{}` is missing: run `cargo build -p stackpack-packager` first",
                path.display()
            );
        }
        eprintln!("skipping: the packager binary is not built");
        None
    }
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed:\n{}",
        cmd.get_program(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn packager_bundles_publish_record_a_release_and_their_signatures_are_referrers() {
    let Some(stackpack) = packager() else { return };
    if !have("git") || !have("skopeo") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("acme-infra");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/acme-infra");
    run(Command::new("cp").arg("-r").arg(&example).arg(&repo));
    run(Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .current_dir(&repo));
    run(Command::new("git").args(["add", "-A"]).current_dir(&repo));
    run(Command::new("git")
        .args([
            "-c",
            "user.email=ci@example.invalid",
            "-c",
            "user.name=ci",
            "commit",
            "-qm",
            "init",
        ])
        .current_dir(&repo));
    let key = work.path().join("signing");
    // The AWS provider package the example's lock files pin, as CI fills a mirror.
    let mirror = work.path().join("providers");
    run(
        Command::new(example.join("../../scripts/provider-mirror.sh"))
            .arg(&mirror)
            .arg("3.39.0"),
    );
    run(Command::new(&stackpack).args(["keygen", "--out"]).arg(&key));
    run(Command::new(&stackpack)
        .args(["build", "--repo"])
        .arg(&repo)
        .env("STACKPACK_SIGNING_KEY", key.with_extension("key"))
        .env("STACKPACK_PROVIDER_MIRROR", &mirror));
    let layout = repo.join(".stackpack/bundles");
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    let entries = index["manifests"].as_array().unwrap();
    let bundle = entries
        .iter()
        .find(|m| m["annotations"]["dev.stackpack.stack"] == "data-plane")
        .expect("a data-plane bundle");
    let bundle_digest = bundle["digest"].as_str().unwrap();
    let version = bundle["annotations"]["org.opencontainers.image.version"]
        .as_str()
        .unwrap();
    let reference = bundle["annotations"]["org.opencontainers.image.ref.name"]
        .as_str()
        .unwrap();

    let server = OurRegistry::start();
    let token = server.token("publisher", None);
    let target = format!(
        "docker://{}/acme/stacks/data-plane:{version}",
        server.host()
    );
    run(Command::new("skopeo")
        .args([
            "copy",
            "--preserve-digests",
            "--dest-tls-verify=false",
            "--dest-creds",
        ])
        .arg(format!("ci:{token}"))
        .arg(format!("oci:{}:{reference}", layout.display()))
        .arg(&target));

    // The ledger read the release from the bundle's config.
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let releases = support
        .req("GET", "/api/v1/releases?stack=data-plane", &[], None)
        .json();
    assert_eq!(releases[0]["version"], version);
    assert_eq!(releases[0]["digest"], bundle_digest);
    assert_eq!(releases[0]["source"]["branch"], "main");
    assert_eq!(
        releases[0]["source"]["repository"],
        "https://git.acme.example/platform/acme-infra"
    );

    // The signature, pushed by digest as a referrer of the bundle.
    let client = Client::new(server.url(), Some(token.clone()));
    let signature = entries
        .iter()
        .find(|m| m["annotations"]["dev.stackpack.subject"] == bundle_digest)
        .expect("the bundle's signature");
    let blob =
        |digest: &str| std::fs::read(layout.join("blobs/sha256").join(&digest[7..])).unwrap();
    let signature_digest = signature["digest"].as_str().unwrap();
    let signature_manifest = blob(signature_digest);
    let parsed: serde_json::Value = serde_json::from_slice(&signature_manifest).unwrap();
    for d in std::iter::once(&parsed["config"]).chain(parsed["layers"].as_array().unwrap()) {
        client.push_blob(
            "acme/stacks/data-plane",
            &blob(d["digest"].as_str().unwrap()),
        );
    }
    let r = client.push_manifest(
        "acme/stacks/data-plane",
        signature_digest,
        &signature_manifest,
        OCI_MANIFEST,
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("oci-subject"), Some(bundle_digest));
    let referrers = client
        .req(
            "GET",
            &format!("/v2/acme/stacks/data-plane/referrers/{bundle_digest}?artifactType=application/vnd.stackpack.signature.v1"),
            &[],
            None,
        )
        .json();
    assert_eq!(referrers["manifests"][0]["digest"], signature_digest);

    // And the bundle comes back whole.
    let back = work.path().join("back");
    run(Command::new("skopeo")
        .args([
            "copy",
            "--preserve-digests",
            "--src-tls-verify=false",
            "--src-creds",
        ])
        .arg(format!("ci:{token}"))
        .arg(&target)
        .arg(format!("oci:{}:{version}", back.display())));
    let manifest = std::fs::read(back.join("blobs/sha256").join(&bundle_digest[7..])).unwrap();
    assert_eq!(manifest, blob(bundle_digest));
    let parsed: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    for d in std::iter::once(&parsed["config"]).chain(parsed["layers"].as_array().unwrap()) {
        let digest = d["digest"].as_str().unwrap();
        assert_eq!(
            std::fs::read(back.join("blobs/sha256").join(&digest[7..])).unwrap(),
            blob(digest)
        );
    }
}
