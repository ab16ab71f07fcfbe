//! Two builds of the same commit, from two clones in different folders, under
//! different umasks, time zones and wall-clock times, give the same digests.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{git, TestRepo};

fn build_in(
    clone: &Path,
    key: &Path,
    umask: &str,
    tz: &str,
    env: &[(&str, &str)],
) -> serde_json::Value {
    let script = format!("umask {umask} && exec \"$0\" build --json --key \"$1\"",);
    let output = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_stackpack"))
        .arg(key)
        .current_dir(clone)
        .env("TZ", tz)
        .envs(env.iter().copied())
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

    let first = build_in(&a, &repo.key, "022", "UTC", &[]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let second = build_in(&b, &repo.key, "077", "Asia/Kolkata", &[]);

    assert_eq!(first["stacks"], second["stacks"]);
    let layout_a = a.join(".stackpack/bundles");
    let layout_b = b.join(".stackpack/bundles");
    assert_eq!(blobs(&layout_a), blobs(&layout_b));
    assert_eq!(
        std::fs::read(layout_a.join("index.json")).unwrap(),
        std::fs::read(layout_b.join("index.json")).unwrap()
    );
}

/// The stack layers of every manifest in a layout.
fn stack_layers(layout: &Path) -> Vec<std::path::PathBuf> {
    let blobs_dir = layout.join("blobs/sha256");
    let mut layers = Vec::new();
    // Manifests are small; layers and provider packages are not.
    for (name, _) in blobs(layout)
        .into_iter()
        .filter(|(_, size)| *size < 64 << 10)
    {
        let Ok(manifest) = serde_json::from_slice::<serde_json::Value>(
            &std::fs::read(blobs_dir.join(&name)).unwrap(),
        ) else {
            continue;
        };
        for layer in manifest["layers"].as_array().into_iter().flatten() {
            if layer["mediaType"] == "application/vnd.stackpack.stack.v1.tar+gzip" {
                let digest = layer["digest"].as_str().unwrap();
                layers.push(blobs_dir.join(digest.trim_start_matches("sha256:")));
            }
        }
    }
    layers
}

/// The stack layer is compressed in parallel blocks: the number of threads must never
/// show in the bytes, or the same commit would get other digests on other machines.
#[test]
fn the_layer_is_the_same_on_1_2_and_16_compression_threads() {
    let repo = TestRepo::new();
    // Several compression blocks: text that deflates, and a binary that is stored.
    let text: String = (0..60_000)
        .map(|i| format!("# line {i} of a long generated comment\n"))
        .collect();
    repo.write("stacks/control-plane/generated.tf.txt", &text);
    let mut noise = vec![0u8; 3 << 20];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut noise);
    std::fs::write(repo.dir.join("stacks/control-plane/blob.bin"), noise).unwrap();
    repo.commit("large files");

    let mut layouts = Vec::new();
    for threads in ["1", "2", "16"] {
        let clone = repo.temp.path().join(format!("clone-{threads}"));
        git(
            repo.temp.path(),
            &[
                "clone",
                "-q",
                repo.dir.to_str().unwrap(),
                clone.to_str().unwrap(),
            ],
        );
        let built = build_in(
            &clone,
            &repo.key,
            "022",
            "UTC",
            &[("STACKPACK_PACK_THREADS", threads)],
        );
        layouts.push((threads, built, clone.join(".stackpack/bundles")));
    }
    let (_, first_json, first_layout) = &layouts[0];
    for (threads, json, layout) in &layouts[1..] {
        assert_eq!(json["stacks"], first_json["stacks"], "{threads} threads");
        assert_eq!(blobs(layout), blobs(first_layout), "{threads} threads");
    }

    // The control-plane stack layer (the one holding blob.bin): standard tools read it.
    let layer = stack_layers(first_layout)
        .into_iter()
        .max_by_key(|layer| layer.metadata().unwrap().len())
        .unwrap();
    let gzip = Command::new("gzip").arg("-t").arg(&layer).output().unwrap();
    assert!(
        gzip.status.success(),
        "gzip -t: {}",
        String::from_utf8_lossy(&gzip.stderr)
    );
    let tar = Command::new("tar")
        .arg("-tzf")
        .arg(&layer)
        .output()
        .unwrap();
    assert!(tar.status.success());
    let listing = String::from_utf8_lossy(&tar.stdout);
    assert!(
        listing.contains("stacks/control-plane/blob.bin"),
        "{listing}"
    );
    assert!(
        listing.contains("stacks/control-plane/main.tf"),
        "{listing}"
    );
}
