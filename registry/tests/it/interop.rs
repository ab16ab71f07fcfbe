//! Real clients against the real server: `skopeo` (copy in and out, inspect) and the
//! Python `oras` client (push and pull, monolithic and chunked). Every blob must come
//! back byte for byte.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;

fn same_tree(a: &Path, b: &Path) {
    for entry in std::fs::read_dir(a.join("blobs/sha256")).unwrap() {
        let entry = entry.unwrap();
        let other = b.join("blobs/sha256").join(entry.file_name());
        assert_eq!(
            std::fs::read(entry.path()).unwrap(),
            std::fs::read(&other)
                .unwrap_or_else(|_| panic!("{} missing after the round trip", other.display())),
            "{:?} differs",
            entry.file_name()
        );
    }
}

fn skopeo(args: &[&str]) -> String {
    let out = Command::new("skopeo").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "skopeo {} failed:\n{}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn skopeo_copies_in_and_out_byte_for_byte_and_inspects() {
    if !have("skopeo") {
        return;
    }
    let server = OurRegistry::start();
    let token = server.token("publisher", None);
    let reader = server.token("reader", None);
    let creds = format!("skopeo:{token}");
    let read_creds = format!("skopeo:{reader}");
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    // Two layers, one larger than a typical chunk, so pulls stream.
    write_layout(&src, "v1", 7, &[3 * 1024 * 1024 + 17, 1234]);

    let dest = format!("docker://{}/acme/stacks/app:1.0.0", server.host());
    skopeo(&[
        "copy",
        "--preserve-digests",
        "--dest-tls-verify=false",
        "--dest-creds",
        &creds,
        &format!("oci:{}:v1", src.display()),
        &dest,
    ]);
    let inspect = skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--creds",
        &read_creds,
        &dest,
    ]);
    let inspect: serde_json::Value = serde_json::from_str(&inspect).unwrap();
    assert_eq!(inspect["RepoTags"], serde_json::json!(["1.0.0"]));
    assert_eq!(inspect["Layers"].as_array().unwrap().len(), 2);
    let raw = skopeo(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        "--creds",
        &read_creds,
        &dest,
    ]);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(src.join("index.json")).unwrap()).unwrap();
    assert_eq!(
        sha256(raw.as_bytes()),
        index["manifests"][0]["digest"].as_str().unwrap()
    );

    let back = work.path().join("back");
    skopeo(&[
        "copy",
        "--preserve-digests",
        "--src-tls-verify=false",
        "--src-creds",
        &read_creds,
        &dest,
        &format!("oci:{}:v1", back.display()),
    ]);
    same_tree(&src, &back);

    // Docker schema 2 as well: skopeo converts on the way in.
    let docker = format!("docker://{}/acme/stacks/app:docker", server.host());
    skopeo(&[
        "copy",
        "--format",
        "v2s2",
        "--dest-tls-verify=false",
        "--dest-creds",
        &creds,
        &format!("oci:{}:v1", src.display()),
        &docker,
    ]);
    let raw = skopeo(&[
        "inspect",
        "--raw",
        "--tls-verify=false",
        "--creds",
        &read_creds,
        &docker,
    ]);
    let raw: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        raw["mediaType"],
        "application/vnd.docker.distribution.manifest.v2+json"
    );

    // Copy between two repositories of the same registry (cross-repository mount).
    let again = format!("docker://{}/acme/stacks/other:1.0.0", server.host());
    skopeo(&[
        "copy",
        "--preserve-digests",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        "--src-creds",
        &creds,
        "--dest-creds",
        &creds,
        &dest,
        &again,
    ]);
    let repo = format!("docker://{}/acme/stacks/other", server.host());
    let tags = skopeo(&[
        "list-tags",
        "--tls-verify=false",
        "--creds",
        &read_creds,
        &repo,
    ]);
    assert!(tags.contains("1.0.0"), "{tags}");
}

#[test]
fn oras_python_pushes_and_pulls_byte_for_byte() {
    if !have("python3") {
        return;
    }
    let probe = Command::new("python3")
        .args(["-c", "import oras.client"])
        .output()
        .unwrap();
    if !probe.status.success() {
        if std::env::var_os("STACKPACK_REQUIRE_TOOLS").is_some() {
            panic!("the Python `oras` package is required");
        }
        eprintln!("skipping: Python `oras` is not installed");
        return;
    }
    let server = OurRegistry::start();
    let token = server.token("publisher", None);
    let work = tempfile::tempdir().unwrap();
    let big = bytes(42, 5 * 1024 * 1024 + 3);
    std::fs::write(work.path().join("big.bin"), &big).unwrap();
    std::fs::write(work.path().join("small.txt"), b"hello\n").unwrap();
    let script = format!(
        r#"
import os, oras.client
host = "{host}"
c = oras.client.OrasClient(hostname=host, insecure=True)
c.login(username="oras", password=os.environ["TOKEN"], hostname=host, tls_verify=False)
for chunked in (False, True):
    target = host + "/acme/files:v%d" % chunked
    r = c.push(target=target, files=["big.bin", "small.txt"], do_chunked=chunked, chunk_size=1000000)
    assert r.status_code == 201, r.status_code
    c.pull(target=target, outdir="out%d" % chunked)
print("ok")
"#,
        host = server.host()
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .env("TOKEN", &token)
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oras failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for dir in ["out0", "out1"] {
        assert_eq!(
            std::fs::read(work.path().join(dir).join("big.bin")).unwrap(),
            big
        );
        assert_eq!(
            std::fs::read(work.path().join(dir).join("small.txt")).unwrap(),
            b"hello\n"
        );
    }
}
