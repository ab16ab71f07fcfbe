//! Keys from `stackpack keygen` and from `openssl genpkey -algorithm ed25519` both work.

use crate::common;

use std::process::Command;

use common::{stackpack, TestRepo};

#[test]
fn keygen_writes_a_private_key_only_its_owner_can_read_and_never_overwrites() {
    let temp = tempfile::tempdir().unwrap();
    let prefix = temp.path().join("ci");
    let run = stackpack(
        temp.path(),
        &["keygen", "--out", prefix.to_str().unwrap(), "--json"],
    )
    .ok();
    let report = run.json();
    let key_id = report["keyId"].as_str().unwrap();
    assert_eq!(key_id.len(), 16);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(prefix.with_extension("key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let private = std::fs::read_to_string(prefix.with_extension("key")).unwrap();
    assert!(private.starts_with("-----BEGIN PRIVATE KEY-----"));
    let public = std::fs::read_to_string(prefix.with_extension("pub")).unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));

    // openssl reads both and computes the same key id.
    let der = Command::new("openssl")
        .args(["pkey", "-pubin", "-outform", "DER", "-in"])
        .arg(prefix.with_extension("pub"))
        .output()
        .unwrap();
    assert!(der.status.success());
    let check = Command::new("openssl")
        .args(["pkey", "-noout", "-in"])
        .arg(prefix.with_extension("key"))
        .status()
        .unwrap();
    assert!(check.success());

    let again = stackpack(temp.path(), &["keygen", "--out", prefix.to_str().unwrap()]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("already exists"));
    assert_eq!(
        std::fs::read_to_string(prefix.with_extension("key")).unwrap(),
        private
    );
}

#[test]
fn openssl_made_keys_sign_and_verify_bundles() {
    let repo = TestRepo::new();
    let key = repo.temp.path().join("openssl.key");
    let public = repo.temp.path().join("openssl.pub");
    assert!(Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&key)
        .status()
        .unwrap()
        .success());
    assert!(Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .status()
        .unwrap()
        .success());
    repo.run(&["build", "--key", key.to_str().unwrap()]).ok();
    let run = repo
        .run(&[
            "inspect",
            &format!("{}:control-plane@0.1.0", repo.layout().display()),
            "--trust",
            public.to_str().unwrap(),
        ])
        .ok();
    assert!(run.stdout.contains("valid, trusted"), "{}", run.stdout);
}
