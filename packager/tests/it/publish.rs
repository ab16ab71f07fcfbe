//! `stackpack publish` against real registries on 127.0.0.1: CNCF Distribution (no
//! referrers API, so the tag-schema fallback is used) and our own registry.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::servers::{Distribution, FaultProxy, OurRegistry};
use common::{git, stackpack, TestRepo};
use stackpack_bundle::remote::{Credentials, Remote};

fn publish(repo: &TestRepo, host: &str, extra: &[&str]) -> common::Run {
    let registry = format!("{host}/acme");
    let mut args = vec![
        "publish",
        "--json",
        "--insecure",
        "--registry",
        &registry,
        "--key",
        repo.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    repo.run(&args)
}

fn published(report: &serde_json::Value) -> Vec<(String, String)> {
    report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["published"] == true)
        .map(|s| {
            (
                s["stack"].as_str().unwrap().to_string(),
                s["version"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn remote(host: &str) -> Remote {
    Remote::with_credentials(host, true, Credentials::Anonymous).unwrap()
}

fn blobs(layout: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(layout.join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn published_bundles_pull_back_byte_for_byte_with_their_signatures() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let report = publish(&repo, &registry.host(), &[]).ok().json();
    assert_eq!(
        published(&report),
        vec![
            ("cluster".into(), "0.1.0".into()),
            ("control-plane".into(), "0.1.0".into()),
            ("data-plane".into(), "0.1.0".into()),
            ("gpu-pools".into(), "0.1.0".into()),
            ("model-storage".into(), "0.1.0".into()),
            ("network".into(), "0.1.0".into())
        ]
    );

    // Pull back into a fresh layout through `export --registry`, then compare every blob.
    let out = repo.temp.path().join("pulled.tar");
    stackpack(
        repo.temp.path(),
        &[
            "export",
            "--insecure",
            "--registry",
            &format!("{}/acme", registry.host()),
            "data-plane@0.1.0",
            "control-plane@0.1.0",
            "-o",
            out.to_str().unwrap(),
        ],
    )
    .ok();
    let unpacked = repo.temp.path().join("pulled");
    std::fs::create_dir_all(&unpacked).unwrap();
    assert!(Command::new("tar")
        .arg("-xf")
        .arg(&out)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap()
        .success());
    let local = blobs(&repo.layout());
    let remote = blobs(&unpacked);
    assert!(!remote.is_empty());
    for (digest, bytes) in &remote {
        assert_eq!(local.get(digest), Some(bytes), "blob {digest} differs");
    }
    // And it verifies offline with the vendor's key.
    let run = stackpack(
        repo.temp.path(),
        &[
            "inspect",
            &format!("{}:data-plane@0.1.0", unpacked.display()),
            "--trust",
            repo.public_key.to_str().unwrap(),
        ],
    )
    .ok();
    assert!(run.stdout.contains("valid, trusted"), "{}", run.stdout);
}

#[test]
fn skopeo_reads_and_copies_what_we_publish_and_we_read_what_skopeo_pushes() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let report = publish(&repo, &registry.host(), &["--stack", "data-plane"])
        .ok()
        .json();
    let digest = report["stacks"][0]["digest"].as_str().unwrap().to_string();
    let reference = format!("docker://{}/acme/stacks/data-plane:0.1.0", registry.host());

    let raw = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false", &reference])
        .output()
        .unwrap();
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    let manifest: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    assert_eq!(
        manifest["artifactType"],
        "application/vnd.stackpack.bundle.v1"
    );
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["layers"][0]["mediaType"],
        "application/vnd.stackpack.stack.v1.tar+gzip"
    );

    // skopeo copies it out with the digest intact.
    let copied = repo.temp.path().join("skopeo-layout");
    let status = Command::new("skopeo")
        .args(["copy", "--quiet", "--src-tls-verify=false", &reference])
        .arg(format!("oci:{}:bundle", copied.display()))
        .status()
        .unwrap();
    assert!(status.success());
    assert!(copied
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
        .exists());

    // skopeo pushes our local bundle under another name; our client reads it back.
    let status = Command::new("skopeo")
        .args(["copy", "--quiet", "--dest-tls-verify=false"])
        .arg(format!(
            "oci:{}:stacks/data-plane:0.1.0",
            repo.layout().display()
        ))
        .arg(format!(
            "docker://{}/acme/mirror/data-plane:copied",
            registry.host()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    let client = remote(&registry.host());
    let (bytes, pulled_digest) = client
        .pull_manifest("acme/mirror/data-plane", "copied")
        .unwrap()
        .expect("skopeo pushed it");
    assert_eq!(pulled_digest.to_string(), digest);
    let parsed: stackpack_schema::oci::ImageManifest = serde_json::from_slice(&bytes).unwrap();
    let target = tempfile::tempdir().unwrap();
    let layout = stackpack_bundle::layout::ImageLayout::create(target.path()).unwrap();
    client
        .pull_blob("acme/mirror/data-plane", &parsed.layers[0], &layout, None)
        .unwrap();
    assert_eq!(
        std::fs::read(layout.blob_path(&parsed.layers[0].digest)).unwrap(),
        std::fs::read(
            repo.layout()
                .join("blobs/sha256")
                .join(parsed.layers[0].digest.hex())
        )
        .unwrap()
    );
}

#[test]
fn republishing_the_same_commit_publishes_nothing() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    publish(&repo, &registry.host(), &[]).ok();
    let again = publish(&repo, &registry.host(), &[]).ok();
    assert!(published(&again.json()).is_empty(), "{}", again.stdout);
    let tags = remote(&registry.host())
        .tags("acme/stacks/data-plane")
        .unwrap();
    let versions: Vec<&String> = tags.iter().filter(|t| !t.starts_with("sha256-")).collect();
    // The version, and the signed newest-version statement every publish refreshes.
    assert_eq!(versions, vec!["0.1.0", "stackpack-latest"]);
}

#[test]
fn prerelease_numbers_come_from_the_registry_alone_on_a_fresh_clone() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    repo.checkout_new("feature/gpu");
    for n in 1..=2 {
        repo.append("stacks/data-plane/main.tf", &format!("\n# change {n}\n"));
        repo.commit(&format!("change {n}"));
        publish(&repo, &registry.host(), &["--stack", "data-plane"]).ok();
    }
    // A fresh CI runner: a new clone, no `.stackpack` folder, no history of builds.
    let fresh = repo.temp.path().join("fresh");
    git(
        repo.temp.path(),
        &[
            "clone",
            "-q",
            "--branch",
            "feature/gpu",
            repo.dir.to_str().unwrap(),
            fresh.to_str().unwrap(),
        ],
    );
    std::fs::write(
        fresh.join("stacks/data-plane/main.tf"),
        std::fs::read_to_string(fresh.join("stacks/data-plane/main.tf")).unwrap()
            + "\n# change 3\n",
    )
    .unwrap();
    git(&fresh, &["commit", "-q", "-am", "change 3"]);
    let run = stackpack(
        &fresh,
        &[
            "publish",
            "--json",
            "--insecure",
            "--registry",
            &format!("{}/acme", registry.host()),
            "--key",
            repo.key.to_str().unwrap(),
            "--stack",
            "data-plane",
        ],
    )
    .ok();
    assert_eq!(
        published(&run.json()),
        vec![("data-plane".into(), "0.1.0-feature-gpu.3".into())]
    );
}

#[test]
fn concurrent_publishes_on_one_branch_never_claim_the_same_number() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    repo.checkout_new("feature/race");
    let clones: Vec<_> = (0..3)
        .map(|i| {
            let clone = repo.temp.path().join(format!("runner-{i}"));
            git(
                repo.temp.path(),
                &[
                    "clone",
                    "-q",
                    "--branch",
                    "feature/race",
                    repo.dir.to_str().unwrap(),
                    clone.to_str().unwrap(),
                ],
            );
            let path = clone.join("stacks/data-plane/main.tf");
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{text}\n# runner {i}\n")).unwrap();
            git(&clone, &["commit", "-q", "-am", &format!("runner {i}")]);
            clone
        })
        .collect();
    let registry_arg = format!("{}/acme", registry.host());
    let children: Vec<_> = clones
        .iter()
        .map(|clone| {
            Command::new(env!("CARGO_BIN_EXE_stackpack"))
                .current_dir(clone)
                .args([
                    "publish",
                    "--json",
                    "--insecure",
                    "--registry",
                    &registry_arg,
                    "--key",
                    repo.key.to_str().unwrap(),
                    "--stack",
                    "data-plane",
                ])
                .env_remove("GITHUB_HEAD_REF")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut claimed = BTreeMap::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let stack = &report["stacks"][0];
        let version = stack["version"].as_str().unwrap().to_string();
        let previous = claimed.insert(
            version.clone(),
            stack["digest"].as_str().unwrap().to_string(),
        );
        assert!(previous.is_none(), "two publishes claimed `{version}`");
    }
    assert_eq!(claimed.len(), 3);
    // Every tag points at the bundle its publisher reported.
    let client = remote(&registry.host());
    for (version, digest) in &claimed {
        let tag = client
            .tag_digest("acme/stacks/data-plane", version)
            .unwrap()
            .unwrap();
        assert_eq!(&tag.to_string(), digest, "tag {version} was overwritten");
    }
}

#[test]
fn a_stable_tag_that_exists_with_another_digest_is_never_overwritten() {
    use stackpack_packager::plan::{plan, PlanOptions};
    use stackpack_packager::publish::publish as publish_library;
    use stackpack_packager::releases::NoReleases;
    use stackpack_packager::repository::Repository;

    let registry = Distribution::require();
    let first = TestRepo::new();
    publish(&first, &registry.host(), &["--stack", "data-plane"]).ok();
    let before = remote(&registry.host())
        .tag_digest("acme/stacks/data-plane", "0.1.0")
        .unwrap()
        .unwrap();

    // Another repository's pipeline with a stale view (it saw no releases) builds
    // different content as `0.1.0`: the library must refuse to move the tag.
    let second = TestRepo::new();
    second.append("stacks/data-plane/main.tf", "\n# different content\n");
    second.commit("different");
    let repository = Repository::open(&second.dir).unwrap();
    let options = PlanOptions {
        stacks: vec!["data-plane".into()],
        ..Default::default()
    };
    let stale = plan(&repository, &NoReleases, &options).unwrap();
    assert_eq!(stale.stacks[0].next.as_ref().unwrap().to_string(), "0.1.0");
    let key = stackpack_schema::signature::PrivateKey::from_pem(
        &std::fs::read_to_string(&second.key).unwrap(),
    )
    .unwrap();
    let address: stackpack_bundle::remote::RegistryAddress =
        format!("{}/acme", registry.host()).parse().unwrap();
    let layout_dir = tempfile::tempdir().unwrap();
    let layout = stackpack_bundle::layout::ImageLayout::create(layout_dir.path()).unwrap();
    let client = remote(&registry.host());
    let destination = stackpack_packager::publish::Destination {
        remote: &client,
        address: &address,
        layout: &layout,
        progress: None,
    };
    let error = publish_library(&repository, &stale, &destination, &key).unwrap_err();
    assert!(
        error.message.contains("never overwritten"),
        "{}",
        error.message
    );
    let after = remote(&registry.host())
        .tag_digest("acme/stacks/data-plane", "0.1.0")
        .unwrap()
        .unwrap();
    assert_eq!(before, after);
}

#[test]
fn a_registry_that_is_down_gets_a_clear_error_naming_it() {
    let repo = TestRepo::new();
    let port = common::servers::free_port();
    let run = publish(&repo, &format!("127.0.0.1:{port}"), &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("`127.0.0.1:{port}`")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("cannot reach"), "{}", run.stderr);
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
}

#[test]
fn a_500_mid_upload_fails_clearly_and_a_retry_duplicates_nothing() {
    let registry = Distribution::require();
    // The second blob upload (the stack layer or config of the first bundle) fails.
    let proxy = FaultProxy::start(registry.port, "PUT", "/blobs/uploads/", 2);
    let repo = TestRepo::new();
    let run = publish(&repo, &proxy.host(), &["--stack", "data-plane"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(proxy.failures.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(run.stderr.contains(&proxy.host()), "{}", run.stderr);
    assert!(run.stderr.contains("500"), "{}", run.stderr);
    // Nothing is tagged after the failure.
    let client = remote(&registry.host());
    assert!(client
        .tag_digest("acme/stacks/data-plane", "0.1.0")
        .unwrap()
        .is_none());

    // The retry (through the same proxy, which fails no more) publishes exactly once.
    let retry = publish(&repo, &proxy.host(), &["--stack", "data-plane"])
        .ok()
        .json();
    assert_eq!(
        published(&retry),
        vec![("data-plane".into(), "0.1.0".into())]
    );
    let tags = client.tags("acme/stacks/data-plane").unwrap();
    assert_eq!(
        tags.iter()
            .filter(|t| !t.starts_with("sha256-") && *t != "stackpack-latest")
            .count(),
        1,
        "{tags:?}"
    );
    let fallback = client
        .pull_manifest(
            "acme/stacks/data-plane",
            tags.iter().find(|t| t.starts_with("sha256-")).unwrap(),
        )
        .unwrap()
        .unwrap();
    let index: serde_json::Value = serde_json::from_slice(&fallback.0).unwrap();
    let mut kinds: Vec<&str> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["artifactType"].as_str().unwrap())
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "application/vnd.cyclonedx+json",
            "application/vnd.dev.sigstore.bundle.v0.3+json",
            "application/vnd.dev.sigstore.bundle.v0.3+json",
            "application/vnd.stackpack.signature.v1"
        ],
        "one signature and one of each attestation, none twice"
    );
}

#[test]
fn wrong_credentials_get_a_clear_error_naming_the_registry() {
    let registry = OurRegistry::start();
    let repo = TestRepo::new();
    let registry_arg = format!("{}/acme", registry.host());
    let run_with = |token: &str| {
        common::Run::from_output(
            Command::new(env!("CARGO_BIN_EXE_stackpack"))
                .current_dir(&repo.dir)
                .args([
                    "publish",
                    "--json",
                    "--insecure",
                    "--registry",
                    &registry_arg,
                    "--key",
                    repo.key.to_str().unwrap(),
                ])
                .env("STACKPACK_REGISTRY_TOKEN", token)
                .env("NO_COLOR", "1")
                .env_remove("GITHUB_HEAD_REF")
                .output()
                .unwrap(),
        )
    };
    let run = run_with("not-a-real-token");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("`{}`", registry.host())),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("refused"), "{}", run.stderr);
    assert!(run.stderr.contains("STACKPACK_REGISTRY"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("not-a-real-token"),
        "the secret was printed"
    );

    let run = run_with(&registry.publisher_token()).ok();
    // Every stack of the example.
    assert_eq!(published(&run.json()).len(), 6);
    // Our registry has the referrers API: no fallback tag is needed there.
    let client = Remote::with_credentials(
        &registry.host(),
        true,
        Credentials::Bearer(registry.publisher_token()),
    )
    .unwrap();
    let tags = client.tags("acme/stacks/data-plane").unwrap();
    assert_eq!(tags, vec!["0.1.0", "stackpack-latest"]);
}

#[test]
fn a_tag_list_longer_than_one_page_is_read_whole() {
    let registry = OurRegistry::start();
    let client = Remote::with_credentials(
        &registry.host(),
        true,
        Credentials::Bearer(registry.publisher_token()),
    )
    .unwrap();
    // 1,200 prerelease tags on the line `0.1.0-feature-long`: more than one page.
    let dir = tempfile::tempdir().unwrap();
    let layout = stackpack_bundle::layout::ImageLayout::create(dir.path()).unwrap();
    let (config, size) = layout.write_blob(b"{}").unwrap();
    let manifest = stackpack_schema::oci::ImageManifest {
        schema_version: 2,
        media_type: Some(stackpack_schema::media_type::OCI_MANIFEST.into()),
        artifact_type: Some("application/vnd.example.filler".into()),
        config: stackpack_schema::oci::Descriptor::new(
            stackpack_schema::media_type::OCI_EMPTY,
            config,
            size,
        ),
        layers: vec![],
        subject: None,
        annotations: None,
    };
    let bytes = manifest.to_bytes();
    client
        .push_blob("acme/stacks/data-plane", &layout, &manifest.config, None)
        .unwrap();
    for n in 1..=1200 {
        client
            .push_manifest(
                "acme/stacks/data-plane",
                &format!("0.1.0-feature-long.{n}"),
                &bytes,
                stackpack_schema::media_type::OCI_MANIFEST,
            )
            .unwrap();
    }
    assert_eq!(client.tags("acme/stacks/data-plane").unwrap().len(), 1200);

    let repo = TestRepo::new();
    repo.checkout_new("feature/long");
    let run = common::Run::from_output(
        Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args(["version", "--json", "--stack", "data-plane"])
            .env_remove("GITHUB_HEAD_REF")
            .output()
            .unwrap(),
    );
    // Locally nothing is known; the registry knows 1,200 numbers.
    assert_eq!(run.ok().json()["stacks"][0]["next"], "0.1.0-feature-long.1");
    let run = common::Run::from_output(
        Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args([
                "publish",
                "--json",
                "--insecure",
                "--registry",
                &format!("{}/acme", registry.host()),
                "--key",
                repo.key.to_str().unwrap(),
                "--stack",
                "data-plane",
            ])
            .env("STACKPACK_REGISTRY_TOKEN", registry.publisher_token())
            .env_remove("GITHUB_HEAD_REF")
            .output()
            .unwrap(),
    )
    .ok();
    assert_eq!(
        published(&run.json()),
        vec![("data-plane".into(), "0.1.0-feature-long.1201".into())]
    );
}

#[test]
fn the_github_step_summary_lists_what_was_published() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let summary = repo.temp.path().join("summary.md");
    let output = Command::new(env!("CARGO_BIN_EXE_stackpack"))
        .current_dir(&repo.dir)
        .args([
            "publish",
            "--insecure",
            "--registry",
            &format!("{}/acme", registry.host()),
            "--key",
            repo.key.to_str().unwrap(),
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("GITHUB_HEAD_REF")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.contains("| data-plane | **0.1.0** (new) |"), "{text}");
    assert!(text.contains("first release"), "{text}");
    // Human output on stdout is a table.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("STACK"), "{stdout}");
}

#[test]
fn credentials_come_from_the_docker_config_when_no_variable_is_set() {
    use base64::Engine as _;
    let registry = OurRegistry::start();
    let repo = TestRepo::new();
    let docker = repo.temp.path().join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    let auth = base64::engine::general_purpose::STANDARD
        .encode(format!("ci:{}", registry.publisher_token()));
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_stackpack"))
        .current_dir(&repo.dir)
        .args([
            "publish",
            "--json",
            "--insecure",
            "--registry",
            &format!("{}/acme", registry.host()),
            "--key",
            repo.key.to_str().unwrap(),
            "--stack",
            "control-plane",
        ])
        .env("DOCKER_CONFIG", &docker)
        .env_remove("STACKPACK_REGISTRY_TOKEN")
        .env_remove("STACKPACK_REGISTRY_USERNAME")
        .env_remove("STACKPACK_REGISTRY_PASSWORD")
        .env_remove("GITHUB_HEAD_REF")
        .output()
        .unwrap();
    let run = common::Run::from_output(output).ok();
    assert_eq!(
        published(&run.json()),
        vec![("control-plane".into(), "0.1.0".into())]
    );
}

#[test]
fn an_interrupted_pull_resumes_and_a_partial_file_never_counts_as_present() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    // A large, incompressible file so the layer is worth resuming.
    let noise: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(repo.dir.join("stacks/data-plane/mirror.bin"), &noise).unwrap();
    repo.commit("provider mirror");
    publish(&repo, &registry.host(), &["--stack", "data-plane"]).ok();
    let client = remote(&registry.host());
    let (bytes, _) = client
        .pull_manifest("acme/stacks/data-plane", "0.1.0")
        .unwrap()
        .unwrap();
    let manifest: stackpack_schema::oci::ImageManifest = serde_json::from_slice(&bytes).unwrap();
    let layer = &manifest.layers[0];
    let original =
        std::fs::read(repo.layout().join("blobs/sha256").join(layer.digest.hex())).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let layout = stackpack_bundle::layout::ImageLayout::create(dir.path()).unwrap();
    let partial = dir
        .path()
        .join("blobs/sha256")
        .join(format!(".partial-{}", layer.digest.hex()));
    // A download cut off halfway.
    std::fs::write(&partial, &original[..original.len() / 2]).unwrap();
    assert!(
        !layout.has_blob(&layer.digest),
        "a partial file must not count"
    );
    let received = client
        .pull_blob("acme/stacks/data-plane", layer, &layout, None)
        .unwrap();
    assert_eq!(
        received as usize,
        original.len() - original.len() / 2,
        "only the rest is fetched"
    );
    assert_eq!(
        std::fs::read(layout.blob_path(&layer.digest)).unwrap(),
        original
    );
    assert!(!partial.exists());

    // A corrupted partial file is caught by the digest check and thrown away.
    let dir = tempfile::tempdir().unwrap();
    let layout = stackpack_bundle::layout::ImageLayout::create(dir.path()).unwrap();
    let partial = dir
        .path()
        .join("blobs/sha256")
        .join(format!(".partial-{}", layer.digest.hex()));
    let mut corrupt = original[..1000].to_vec();
    corrupt[10] ^= 0xff;
    std::fs::write(&partial, &corrupt).unwrap();
    let error = client
        .pull_blob("acme/stacks/data-plane", layer, &layout, None)
        .unwrap_err();
    assert!(
        error.to_string().contains("does not match its digest"),
        "{error}"
    );
    assert!(!layout.has_blob(&layer.digest));
    assert!(!partial.exists());
    // And the next attempt starts over and succeeds.
    client
        .pull_blob("acme/stacks/data-plane", layer, &layout, None)
        .unwrap();
    assert_eq!(
        std::fs::read(layout.blob_path(&layer.digest)).unwrap(),
        original
    );
}
