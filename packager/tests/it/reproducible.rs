//! Two builds of the same commit, from two clones in different folders, under
//! different umasks, time zones and wall-clock times, give the same digests.

use crate::common;

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

/// The layers of `media_type` in every manifest of a layout, with their annotations.
fn layers_of(layout: &Path, media_type: &str) -> Vec<serde_json::Value> {
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
            if layer["mediaType"] == media_type {
                layers.push(layer.clone());
            }
        }
    }
    layers
}

/// The stack layer is compressed in parallel blocks, and large incompressible files
/// leave it for layers of their own: the number of threads must never show in the
/// bytes, or the same commit would get other digests on other machines.
#[test]
fn the_bundle_is_the_same_on_1_2_and_16_compression_threads_with_file_layers() {
    let repo = TestRepo::new();
    // Several compression blocks: text that deflates, a small binary stored inside
    // the tar, and two large binaries that travel as file layers.
    let text: String = (0..60_000)
        .map(|i| format!("# line {i} of a long generated comment\n"))
        .collect();
    repo.write("stacks/control-plane/generated.tf.txt", &text);
    let mut noise = vec![0u8; 3 << 20];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut noise);
    std::fs::write(repo.dir.join("stacks/control-plane/blob.bin"), &noise).unwrap();
    std::fs::write(
        repo.dir.join("stacks/control-plane/small.bin"),
        &noise[..900 << 10],
    )
    .unwrap();
    let mut archive = vec![0u8; (5 << 20) + 333];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut archive);
    std::fs::write(repo.dir.join("stacks/control-plane/lambda.zip"), &archive).unwrap();
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

    // The two large binaries are file layers holding exactly their bytes.
    let file_layers = layers_of(first_layout, "application/vnd.stackpack.file.v1");
    let mut titles: Vec<(&str, &str)> = file_layers
        .iter()
        .map(|l| {
            (
                l["annotations"]["org.opencontainers.image.title"]
                    .as_str()
                    .unwrap(),
                l["digest"].as_str().unwrap(),
            )
        })
        .collect();
    titles.sort();
    let digest_of = |bytes: &[u8]| stackpack_schema::digest::Digest::of(bytes).to_string();
    assert_eq!(
        titles,
        [
            ("stacks/control-plane/blob.bin", digest_of(&noise).as_str()),
            (
                "stacks/control-plane/lambda.zip",
                digest_of(&archive).as_str()
            ),
        ]
    );

    // The control-plane stack layer (the largest): standard tools read it, and it
    // holds the text and the small binary, not the file layers.
    let blobs_dir = first_layout.join("blobs/sha256");
    let layer = layers_of(first_layout, "application/vnd.stackpack.stack.v1.tar+gzip")
        .into_iter()
        .map(|l| blobs_dir.join(l["digest"].as_str().unwrap().trim_start_matches("sha256:")))
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
    for packed in ["main.tf", "small.bin", "generated.tf.txt"] {
        assert!(
            listing.contains(&format!("stacks/control-plane/{packed}")),
            "{packed} missing from {listing}"
        );
    }
    for own_layer in ["blob.bin", "lambda.zip"] {
        assert!(
            !listing.contains(&format!("stacks/control-plane/{own_layer}")),
            "{own_layer} is also in the tar: {listing}"
        );
    }
}
