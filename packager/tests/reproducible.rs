//! Two builds of the same commit, from two clones in different folders, under
//! different umasks, time zones and wall-clock times, give the same digests.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{git, TestRepo};

fn build_in(clone: &Path, key: &Path, umask: &str, tz: &str) -> serde_json::Value {
    let script = format!("umask {umask} && exec \"$0\" build --json --key \"$1\"",);
    let output = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_stackpack"))
        .arg(key)
        .current_dir(clone)
        .env("TZ", tz)
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("GITHUB_HEAD_REF")
        .env_remove("GITHUB_REF_NAME")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every blob in a layout, by digest, with its bytes' digest recomputed.
fn blobs(layout: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(layout.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect()
}

#[test]
fn two_clones_build_bit_for_bit_identical_bundles() {
    let repo = TestRepo::new();
    let a = repo.temp.path().join("clone-a");
    let b = repo.temp.path().join("somewhere/else/entirely/clone-b");
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    for clone in [&a, &b] {
        git(
            repo.temp.path(),
            &[
                "clone",
                "-q",
                repo.dir.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
    }
    // Different permissions on disk in the second clone.
    Command::new("chmod")
        .args(["-R", "go-rwx"])
        .arg(&b)
        .status()
        .unwrap();

    let first = build_in(&a, &repo.key, "022", "UTC");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = build_in(&b, &repo.key, "077", "Asia/Kolkata");

    assert_eq!(first["stacks"], second["stacks"]);
    let layout_a = a.join(".stackpack/bundles");
    let layout_b = b.join(".stackpack/bundles");
    assert_eq!(blobs(&layout_a), blobs(&layout_b));
    assert_eq!(
        std::fs::read(layout_a.join("index.json")).unwrap(),
        std::fs::read(layout_b.join("index.json")).unwrap()
    );
}
