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

/// Issue 39 §5: `stackpack keygen --out ci` in the repository root (as the README
/// shows) left `ci.key` untracked, one `git add -A` from being committed.
#[test]
fn keygen_refuses_to_write_a_key_git_would_commit_and_writes_it_once_ignored() {
    let repo = TestRepo::new();
    let refused = repo.run(&["keygen", "--out", "ci"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("would be written inside the git work tree")
            && refused.stderr.contains("git add -A")
            && refused.stderr.contains("hint: "),
        "{}",
        refused.stderr
    );
    assert!(!repo.dir.join("ci.key").exists(), "a key was written");
    assert!(!repo.dir.join("ci.pub").exists(), "half a pair was written");

    // Ignored, it is written where asked.
    let ignore = repo.dir.join(".gitignore");
    let mut text = std::fs::read_to_string(&ignore).unwrap_or_default();
    text.push_str("ci.key\n");
    std::fs::write(&ignore, text).unwrap();
    repo.run(&["keygen", "--out", "ci"]).ok();
    assert!(repo.dir.join("ci.key").is_file());
}

#[test]
fn build_and_publish_refuse_a_signing_key_git_tracks() {
    let repo = TestRepo::new();
    std::fs::copy(&repo.key, repo.dir.join("tracked.key")).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo.dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["add", "-f", "tracked.key"]);
    git(&[
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@x",
        "commit",
        "-qm",
        "a key, by mistake",
    ]);
    for args in [
        vec!["build", "--key", "tracked.key"],
        vec![
            "publish",
            "--key",
            "tracked.key",
            "--registry",
            "127.0.0.1:9/acme",
            "--insecure",
        ],
    ] {
        let run = repo.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("is tracked by git")
                && run.stderr.contains("git rm --cached tracked.key"),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert!(!repo.layout().exists(), "a bundle was built");
}
