//! A bundle that was altered in any part, signed by an untrusted key, or not signed
//! at all is refused, with a message naming what is wrong.

use crate::common;

use std::path::{Path, PathBuf};

use common::{stackpack, TestRepo};

struct Built {
    repo: TestRepo,
    manifest: serde_json::Value,
    manifest_digest: String,
}

fn built() -> Built {
    let repo = TestRepo::new();
    let report = repo.build(&["--stack", "data-plane"]);
    let manifest_digest = report["stacks"][0]["digest"].as_str().unwrap().to_string();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(blob(&repo.layout(), &manifest_digest)).unwrap())
            .unwrap();
    Built {
        repo,
        manifest,
        manifest_digest,
    }
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

fn inspect(built: &Built, trust: &Path) -> common::Run {
    stackpack(
        &built.repo.dir,
        &[
            "inspect",
            &format!("{}:data-plane@0.1.0", built.repo.layout().display()),
            "--trust",
            trust.to_str().unwrap(),
        ],
    )
}

fn signature_manifest(built: &Built) -> serde_json::Value {
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(built.repo.layout().join("index.json")).unwrap())
            .unwrap();
    let entry = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["artifactType"] == "application/vnd.stackpack.signature.v1")
        .unwrap()
        .clone();
    let digest = entry["digest"].as_str().unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(blob(&built.repo.layout(), digest)).unwrap())
            .unwrap();
    manifest["_digest"] = entry["digest"].clone();
    manifest
}

#[test]
fn an_untouched_bundle_verifies() {
    let built = built();
    let run = inspect(&built, &built.repo.public_key).ok();
    assert!(run.stdout.contains("valid, trusted"), "{}", run.stdout);
}

#[test]
fn a_flipped_byte_in_the_layer_is_refused() {
    let built = built();
    let layer = built.manifest["layers"][0]["digest"].as_str().unwrap();
    flip_byte(&blob(&built.repo.layout(), layer), 100);
    let run = inspect(&built, &built.repo.public_key);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("stack layer") && run.stderr.contains("does not match its digest"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_flipped_byte_in_the_config_is_refused() {
    let built = built();
    let config = built.manifest["config"]["digest"].as_str().unwrap();
    flip_byte(&blob(&built.repo.layout(), config), 40);
    let run = inspect(&built, &built.repo.public_key);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("config") && run.stderr.contains("does not match its digest"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_flipped_byte_in_the_manifest_is_refused() {
    let built = built();
    flip_byte(&blob(&built.repo.layout(), &built.manifest_digest), 30);
    let run = inspect(&built, &built.repo.public_key);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("manifest") && run.stderr.contains("does not match its digest"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_flipped_byte_in_the_signature_is_refused() {
    let built = built();
    let signature = signature_manifest(&built);
    let layer = signature["layers"][0]["digest"].as_str().unwrap();
    let path = blob(&built.repo.layout(), layer);
    // Flip a byte inside the base64 signature value.
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find("\"signature\":\"").unwrap() + 20;
    flip_byte(&path, at);
    let run = inspect(&built, &built.repo.public_key);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("signature"), "{}", run.stderr);
}

#[test]
fn a_re_signed_payload_with_a_matching_digest_but_a_forged_signature_is_refused() {
    // The attacker rewrites the signature blob and fixes up every digest, so only the
    // cryptographic check can catch it.
    let built = built();
    let signature = signature_manifest(&built);
    let layout = built.repo.layout();
    let layer_digest = signature["layers"][0]["digest"].as_str().unwrap();
    let mut envelope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(blob(&layout, layer_digest)).unwrap()).unwrap();
    // A field nothing else cross-checks, so only the ed25519 check can notice.
    envelope["payload"]["signedAt"] = "2020-01-01T00:00:00Z".into();
    let bytes = serde_json::to_vec(&envelope).unwrap();
    let new_layer = format!("sha256:{}", sha256_hex(&bytes));
    std::fs::write(blob(&layout, &new_layer), &bytes).unwrap();
    let mut manifest = signature.clone();
    let old_manifest_digest = manifest["_digest"].as_str().unwrap().to_string();
    manifest.as_object_mut().unwrap().remove("_digest");
    manifest["layers"][0]["digest"] = new_layer.clone().into();
    manifest["layers"][0]["size"] = bytes.len().into();
    let manifest_bytes = serde_json::to_vec(&manifest).unwrap();
    let new_manifest = format!("sha256:{}", sha256_hex(&manifest_bytes));
    std::fs::write(blob(&layout, &new_manifest), &manifest_bytes).unwrap();
    let index_path = layout.join("index.json");
    let index = std::fs::read_to_string(&index_path)
        .unwrap()
        .replace(&old_manifest_digest, &new_manifest)
        .replace(
            &format!("\"size\":{}", signature_size(&layout, &old_manifest_digest)),
            &format!("\"size\":{}", manifest_bytes.len()),
        );
    std::fs::write(&index_path, index).unwrap();
    let run = inspect(&built, &built.repo.public_key);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stderr.contains("signature does not match its payload"),
        "{}",
        run.stderr
    );
}

fn signature_size(layout: &Path, digest: &str) -> u64 {
    std::fs::metadata(blob(layout, digest)).unwrap().len()
}

fn sha256_hex(bytes: &[u8]) -> String {
    let output = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(bytes)?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8(output.stdout).unwrap()[..64].to_string()
}

#[test]
fn a_signature_by_an_untrusted_key_is_refused_and_names_the_key() {
    let built = built();
    let other = built.repo.temp.path().join("other");
    stackpack(
        built.repo.temp.path(),
        &["keygen", "--out", other.to_str().unwrap()],
    )
    .ok();
    let run = inspect(&built, &other.with_extension("pub"));
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("not trusted"), "{}", run.stderr);
    let key_id = stackpack(
        &built.repo.dir,
        &[
            "inspect",
            &format!("{}:data-plane@0.1.0", built.repo.layout().display()),
            "--json",
        ],
    )
    .ok()
    .json()["signatures"][0]["keyId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(run.stderr.contains(&key_id), "{}", run.stderr);
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
}

#[test]
fn a_missing_signature_is_refused() {
    let built = built();
    let index_path = built.repo.layout().join("index.json");
    let mut index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&index_path).unwrap()).unwrap();
    index["manifests"]
        .as_array_mut()
        .unwrap()
        .retain(|m| m["artifactType"] != "application/vnd.stackpack.signature.v1");
    std::fs::write(&index_path, serde_json::to_vec(&index).unwrap()).unwrap();
    let run = inspect(&built, &built.repo.public_key);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("no trusted signature matches"),
        "{}",
        run.stderr
    );
}
