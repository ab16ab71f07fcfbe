//! A large binary travels in a layer of its own, so a new version after a one-line
//! `.tf` edit sends only the small layers: published twice to a real CNCF
//! Distribution, the second publish's `bytesSent` holds no copy of the binary, and
//! the version pulled back from the registry carries it and verifies.

use crate::common;

use common::servers::Distribution;
use common::TestRepo;

const BINARY: &str = "stacks/data-plane/assets/lambda.zip";

fn publish(repo: &TestRepo, host: &str) -> serde_json::Value {
    let registry = format!("{host}/acme");
    repo.run(&[
        "publish",
        "--json",
        "--insecure",
        "--registry",
        &registry,
        "--key",
        repo.key.to_str().unwrap(),
    ])
    .ok()
    .json()
}

fn data_plane(report: &serde_json::Value) -> &serde_json::Value {
    report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "data-plane")
        .unwrap()
}

#[test]
fn a_second_version_after_a_tf_edit_sends_only_the_small_layers() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let mut binary = vec![0u8; 8 << 20];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut binary);
    std::fs::create_dir_all(repo.dir.join("stacks/data-plane/assets")).unwrap();
    std::fs::write(repo.dir.join(BINARY), &binary).unwrap();
    repo.commit("a large binary");

    // `build` counts the whole bundle, the binary's layer included, not only the
    // stack layer.
    let built = repo
        .run(&["build", "--json", "--key", repo.key.to_str().unwrap()])
        .ok()
        .json();
    let built = data_plane(&built);
    let layer = built["layerSize"].as_u64().unwrap();
    let bundle = built["bundleSize"].as_u64().unwrap();
    assert!(
        bundle >= layer + binary.len() as u64,
        "bundleSize {bundle} leaves out the binary's layer (stack layer {layer})"
    );

    let first = publish(&repo, &registry.host());
    let first = data_plane(&first);
    assert_eq!(first["published"], true, "{first}");
    let first_sent = first["bytesSent"].as_u64().unwrap();
    assert!(
        first_sent >= binary.len() as u64,
        "the first publish sent {first_sent} bytes, less than the binary"
    );

    repo.append("stacks/data-plane/main.tf", "\n# one more line\n");
    repo.commit("a one-line edit");
    let second = publish(&repo, &registry.host());
    let second = data_plane(&second);
    assert_eq!(second["published"], true, "{second}");
    assert_ne!(second["version"], first["version"]);
    let second_sent = second["bytesSent"].as_u64().unwrap();
    assert!(
        second_sent < (1 << 20),
        "the second publish sent {second_sent} bytes: the binary's layer went again"
    );
    assert!(
        second_sent > 0,
        "the new stack layer and config were not sent"
    );

    // Both versions list the binary's layer, under the file's own digest.
    let digest = stackpack_schema::digest::Digest::of(&binary).to_string();
    for version in [&first["version"], &second["version"]] {
        let reference = format!(
            "{}:data-plane@{}",
            repo.layout().display(),
            version.as_str().unwrap()
        );
        let shown = repo
            .run(&[
                "inspect",
                &reference,
                "--trust",
                repo.public_key.to_str().unwrap(),
                "--json",
            ])
            .ok()
            .json();
        assert_eq!(shown["fileLayers"][0]["path"], BINARY, "{shown}");
        assert_eq!(shown["fileLayers"][0]["digest"], digest.as_str());
        let layers = shown["manifest"]["layers"].as_array().unwrap();
        assert!(
            layers.iter().any(|l| l["digest"] == digest.as_str()
                && l["mediaType"] == "application/vnd.stackpack.file.v1"),
            "{layers:?}"
        );
    }

    // Pulled back from the registry, the second version brings the file layer along
    // and verifies offline with the vendor's key.
    let reference = format!("data-plane@{}", second["version"].as_str().unwrap());
    let pulled = repo.temp.path().join("pulled.tar");
    common::stackpack(
        repo.temp.path(),
        &[
            "export",
            "--insecure",
            "--registry",
            &format!("{}/acme", registry.host()),
            &reference,
            "-o",
            pulled.to_str().unwrap(),
        ],
    )
    .ok();
    let unpacked = repo.temp.path().join("pulled");
    std::fs::create_dir_all(&unpacked).unwrap();
    assert!(std::process::Command::new("tar")
        .arg("-xf")
        .arg(&pulled)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap()
        .success());
    let blob = unpacked
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"));
    assert!(
        std::fs::read(blob).unwrap() == binary,
        "the pulled file layer differs"
    );
    let shown = common::stackpack(
        repo.temp.path(),
        &[
            "inspect",
            &format!("{}:{reference}", unpacked.display()),
            "--trust",
            repo.public_key.to_str().unwrap(),
        ],
    )
    .ok();
    assert!(shown.stdout.contains("valid, trusted"), "{}", shown.stdout);
}
