//! Releases, vendor side: `stackpack publish` turns `[releases.<name>]` into one
//! signed OCI image index in `<namespace>/releases/<name>` pinning every bundle and
//! service, versioned from its parts; `skopeo copy --all` carries it whole; and
//! `stackpack export NAME@V` writes it into one airgap tar. Against real
//! Distribution, with three `terraform_data` stacks wired by outputs.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::servers::Distribution;
use common::{git, stackpack, Run};
use semver::Version;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::release::verify_release;
use stackpack_bundle::remote::{Credentials, Remote};
use stackpack_bundle::verify::Trust;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};
use stackpack_schema::release::ReleaseDescription;

/// A vendor repository: `network` → `cluster` → `gpu-pools`, wired by outputs, and
/// release `data-plane` with them and service `api`.
struct Vendor {
    temp: tempfile::TempDir,
    dir: PathBuf,
    key: PathBuf,
    public_key: PathBuf,
}

fn variable(name: &str, default: Option<&str>) -> String {
    let default = default.map_or(String::new(), |d| format!("  default     = \"{d}\"\n"));
    format!(
        "variable \"{name}\" {{\n  type        = string\n  description = \"The {name}.\"\n{default}}}\n"
    )
}

fn stack(inputs: &str, output: Option<&str>) -> String {
    let output = output.map_or(String::new(), |o| {
        format!("output \"{o}\" {{\n  value = terraform_data.this.output\n}}\n")
    });
    format!("{inputs}resource \"terraform_data\" \"this\" {{\n  input = \"x\"\n}}\n{output}")
}

impl Vendor {
    fn new(service: &str) -> Vendor {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("vendor");
        let vendor = Vendor {
            key: temp.path().join("keys/vendor.key"),
            public_key: temp.path().join("keys/vendor.pub"),
            dir,
            temp,
        };
        vendor.write(
            "stackpack.toml",
            &format!(
                "repository = \"https://git.acme.example/infra\"\nmain-branch = \"main\"\nstacks = [\"stacks/*\"]\n\n\
                 [releases.data-plane]\nstacks = [\"network\", \"cluster\", \"gpu-pools\"]\n\n\
                 [releases.data-plane.services]\napi = \"{service}\"\n"
            ),
        );
        vendor.write("stacks/network/stack.toml", "engine = \"terraform\"\n");
        vendor.write(
            "stacks/network/main.tf",
            &stack(&variable("name", Some("net")), Some("vpc_id")),
        );
        vendor.write(
            "stacks/cluster/stack.toml",
            "engine = \"terraform\"\ndepends-on = [\"network\"]\n\n[inputs.from]\nvpc_id = \"network.vpc_id\"\n",
        );
        vendor.write(
            "stacks/cluster/main.tf",
            &stack(&variable("vpc_id", None), Some("cluster_id")),
        );
        vendor.write(
            "stacks/gpu-pools/stack.toml",
            "engine = \"terraform\"\n\n[inputs.from]\ncluster_id = \"cluster.cluster_id\"\n",
        );
        vendor.write(
            "stacks/gpu-pools/main.tf",
            &stack(&variable("cluster_id", None), None),
        );
        vendor.write(".gitignore", ".stackpack/\n");
        git(&vendor.dir, &["init", "-q", "-b", "main"]);
        vendor.commit("initial");
        let keys = vendor.temp.path().join("keys/vendor");
        stackpack(
            vendor.temp.path(),
            &["keygen", "--out", keys.to_str().unwrap()],
        )
        .ok();
        vendor
    }

    fn write(&self, path: &str, content: &str) {
        let path = self.dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn commit(&self, message: &str) {
        git(&self.dir, &["add", "-A"]);
        git(&self.dir, &["commit", "-q", "-m", message]);
    }

    fn publish(&self, host: &str) -> Run {
        stackpack(
            &self.dir,
            &[
                "publish",
                "--json",
                "--insecure",
                "--registry",
                &format!("{host}/acme"),
                "--key",
                self.key.to_str().unwrap(),
            ],
        )
    }

    /// The one release of a successful publish's report.
    fn publish_release(&self, host: &str) -> serde_json::Value {
        let report = self.publish(host).ok().json();
        report["releases"][0].clone()
    }
}

fn remote(host: &str) -> Remote {
    Remote::with_credentials(host, true, Credentials::Anonymous).unwrap()
}

/// Pushes a tiny OCI image (a config and one gzip layer, as real images have: a
/// copy tool keeps those as they are) as `repository:tag`.
fn push_service_image(host: &str, repository: &str, tag: &str, content: &[u8]) -> Digest {
    use std::io::Write;
    let remote = remote(host);
    let mut gzip = stackpack_bundle::gzip::ParallelGzip::new(Vec::new(), 1);
    gzip.write_all(content).unwrap();
    let content = &gzip.finish().unwrap()[..];
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let config_digest = remote.push_blob_bytes(repository, config).unwrap();
    let layer_digest = remote.push_blob_bytes(repository, content).unwrap();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: None,
        config: Descriptor::new(
            "application/vnd.oci.image.config.v1+json",
            config_digest,
            config.len() as u64,
        ),
        layers: vec![Descriptor::new(
            "application/vnd.oci.image.layer.v1.tar+gzip",
            layer_digest,
            content.len() as u64,
        )],
        subject: None,
        annotations: None,
    };
    let bytes = manifest.to_bytes();
    remote
        .push_manifest(repository, tag, &bytes, media_type::OCI_MANIFEST)
        .unwrap();
    Digest::of(&bytes)
}

/// The release index and its description, read from the registry.
fn read_release(host: &str, repository: &str, tag: &str) -> (ImageIndex, ReleaseDescription) {
    let remote = remote(host);
    let (bytes, _) = remote.pull_manifest(repository, tag).unwrap().unwrap();
    let index: ImageIndex = serde_json::from_slice(&bytes).unwrap();
    let (bytes, _) = remote
        .pull_manifest(repository, &index.manifests[0].digest.to_string())
        .unwrap()
        .unwrap();
    let manifest: ImageManifest = serde_json::from_slice(&bytes).unwrap();
    let config = remote
        .pull_blob_bytes(repository, &manifest.config, 1 << 20)
        .unwrap();
    (index, serde_json::from_slice(&config).unwrap())
}

fn versions(description: &ReleaseDescription) -> Vec<(String, String)> {
    description
        .stacks
        .iter()
        .map(|s| (s.name.clone(), s.version.to_string()))
        .collect()
}

/// Every blob (and manifest) the index reaches, in `repository` on `remote`.
fn assert_parts_present(remote: &Remote, repository: &str, index: &ImageIndex) {
    for entry in &index.manifests {
        let (bytes, _) = remote
            .pull_manifest(repository, &entry.digest.to_string())
            .unwrap()
            .unwrap_or_else(|| panic!("{repository} lacks {}", entry.digest));
        let manifest: ImageManifest = serde_json::from_slice(&bytes).unwrap();
        for blob in std::iter::once(&manifest.config).chain(&manifest.layers) {
            assert!(
                remote.blob_exists(repository, &blob.digest).unwrap(),
                "{repository} lacks blob {}",
                blob.digest
            );
        }
    }
}

fn untar(tar: &Path, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    let status = Command::new("tar")
        .arg("-xf")
        .arg(tar)
        .arg("-C")
        .arg(into)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_release_is_one_signed_index_that_copies_and_exports_whole() {
    let registry = Distribution::require();
    let host = registry.host();
    // The service lives on another registry: publish streams it into the release.
    let other = Distribution::require();
    let service = push_service_image(&other.host(), "vendor/api", "1.0", b"api v1");
    let vendor = Vendor::new(&format!("{}/vendor/api:1.0", other.host()));

    let release = vendor.publish_release(&host);
    assert_eq!(release["release"], "data-plane");
    assert_eq!(release["published"], true, "{release}");
    assert_eq!(release["version"], "0.1.0");
    let digest: Digest = release["digest"].as_str().unwrap().parse().unwrap();

    // The index: artifactType, description first, each bundle with its signature,
    // the service; the description in apply order with the wiring.
    let repository = "acme/releases/data-plane";
    let (index, description) = read_release(&host, repository, "0.1.0");
    assert_eq!(
        index.artifact_type.as_deref(),
        Some(media_type::RELEASE_ARTIFACT)
    );
    assert_eq!(
        index.manifests[0].artifact_type.as_deref(),
        Some(media_type::RELEASE_DESCRIPTION_ARTIFACT)
    );
    let stacks: Vec<&str> = index
        .manifests
        .iter()
        .filter_map(|d| d.annotation(annotation::STACK))
        .collect();
    assert_eq!(stacks, ["network", "cluster", "gpu-pools"]);
    let signatures = index
        .manifests
        .iter()
        .filter(|d| d.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT))
        .count();
    // One per bundle, and the release's own: it signs the description, listed
    // right after it.
    assert_eq!(signatures, 4);
    assert_eq!(
        index.manifests[1].artifact_type.as_deref(),
        Some(media_type::SIGNATURE_ARTIFACT)
    );
    let pinned_service = index
        .manifests
        .iter()
        .find(|d| d.annotation(annotation::SERVICE) == Some("api"))
        .expect("the service is pinned");
    assert_eq!(pinned_service.digest, service);
    assert_eq!(
        versions(&description),
        [
            ("network".to_string(), "0.1.0".to_string()),
            ("cluster".into(), "0.1.0".into()),
            ("gpu-pools".into(), "0.1.0".into())
        ]
    );
    let cluster = description.stack("cluster").unwrap();
    assert_eq!(cluster.inputs_from["vpc_id"].to_string(), "network.vpc_id");
    assert_eq!(cluster.depends_on, ["network"]);
    let api = description.service("api").unwrap();
    assert_eq!(api.digest, service);
    assert_eq!(api.reference, format!("{}/vendor/api:1.0", other.host()));
    assert_parts_present(&remote(&host), repository, &index);

    // `skopeo copy --all` carries the release with every part to another registry.
    let copied = Command::new("skopeo")
        .args([
            "copy",
            "--all",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
        ])
        .arg(format!("docker://{host}/{repository}:0.1.0"))
        .arg(format!("docker://{}/mirror/data-plane:0.1.0", other.host()))
        .output()
        .unwrap();
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
    // Every part arrives byte for byte (skopeo 1.9, Debian's, drops the index's own
    // `artifactType`, which it does not know, so the copied index has a new digest;
    // newer skopeo and `oras copy -r` keep it).
    let (bytes, _) = remote(&other.host())
        .pull_manifest("mirror/data-plane", "0.1.0")
        .unwrap()
        .unwrap();
    let copied: ImageIndex = serde_json::from_slice(&bytes).unwrap();
    let digests = |index: &ImageIndex| -> Vec<Digest> {
        index.manifests.iter().map(|d| d.digest.clone()).collect()
    };
    assert_eq!(digests(&copied), digests(&index));
    assert_parts_present(&remote(&other.host()), "mirror/data-plane", &index);
    // ... and the copy still verifies: its signature is one of those parts.
    let copied_layout = vendor.temp.path().join("skopeo-layout");
    let to_layout = Command::new("skopeo")
        .args(["copy", "--all", "--src-tls-verify=false"])
        .arg(format!("docker://{}/mirror/data-plane:0.1.0", other.host()))
        .arg(format!("oci:{}:0.1.0", copied_layout.display()))
        .output()
        .unwrap();
    assert!(
        to_layout.status.success(),
        "{}",
        String::from_utf8_lossy(&to_layout.stderr)
    );
    let copied_layout = ImageLayout::open(&copied_layout).unwrap();
    let copied_entry = copied_layout.index().unwrap().manifests[0].clone();
    let key = stackpack_bundle::trust::read_public_key(&vendor.public_key).unwrap();
    let verified = stackpack_bundle::release::verify_release_index(
        &copied_layout,
        &copied_entry,
        "data-plane",
        &Version::new(0, 1, 0),
        &Trust::Keys(vec![key]),
    )
    .expect("a release copied with skopeo verifies");
    assert_eq!(verified.description, description);

    // Export: one tar, every blob once, and the release verifies with the key.
    let tar = vendor.temp.path().join("data-plane.tar");
    stackpack(
        &vendor.dir,
        &["export", "data-plane@0.1.0", "-o", tar.to_str().unwrap()],
    )
    .ok();
    let listing = Command::new("tar").arg("-tf").arg(&tar).output().unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let unique: BTreeSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a blob is in the tar twice");
    assert!(names.contains(&format!("blobs/sha256/{}", digest.hex())));
    assert!(names.contains(&format!("blobs/sha256/{}", service.hex())));
    let unpacked = vendor.temp.path().join("unpacked");
    untar(&tar, &unpacked);
    let layout = ImageLayout::open(&unpacked).unwrap();
    let key = stackpack_bundle::trust::read_public_key(&vendor.public_key).unwrap();
    let verified = verify_release(
        &layout,
        "data-plane",
        &Version::new(0, 1, 0),
        &Trust::Keys(vec![key]),
    )
    .unwrap();
    assert!(verified.signer.is_some());
    assert_eq!(verified.description, description);
    assert!(layout.has_blob(&index.manifests.last().unwrap().digest));

    // The same export straight from the registry is the same file.
    let from_registry = vendor.temp.path().join("from-registry.tar");
    stackpack(
        vendor.temp.path(),
        &[
            "export",
            "--insecure",
            "--registry",
            &format!("{host}/acme"),
            "data-plane@0.1.0",
            "-o",
            from_registry.to_str().unwrap(),
        ],
    )
    .ok();
    assert_eq!(
        std::fs::read(&tar).unwrap(),
        std::fs::read(&from_registry).unwrap()
    );

    // A part missing from the layout: the export fails and leaves no file.
    let service_layer = vendor
        .dir
        .join(".stackpack/bundles/blobs/sha256")
        .join(description.service("api").unwrap().digest.hex());
    std::fs::remove_file(&service_layer).unwrap();
    let partial = vendor.temp.path().join("partial.tar");
    let run = stackpack(
        &vendor.dir,
        &[
            "export",
            "data-plane@0.1.0",
            "-o",
            partial.to_str().unwrap(),
        ],
    );
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(!partial.exists());
    let leftovers: Vec<_> = std::fs::read_dir(vendor.temp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".stackpack-export-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Nothing changed: nothing new.
    let again = vendor.publish_release(&host);
    assert_eq!(again["published"], false, "{again}");
    assert_eq!(again["version"], "0.1.0");
    let versions: Vec<String> = remote(&host)
        .tags(repository)
        .unwrap()
        .into_iter()
        .filter(|t| Version::parse(t).is_ok())
        .collect();
    assert_eq!(versions, ["0.1.0"]);
}

#[test]
fn release_versions_follow_their_parts_and_branches_get_prereleases() {
    let registry = Distribution::require();
    let host = registry.host();
    push_service_image(&host, "vendor/api", "1.0", b"api v1");
    let vendor = Vendor::new(&format!("{host}/vendor/api:1.0"));
    assert_eq!(vendor.publish_release(&host)["version"], "0.1.0");

    // A new output on gpu-pools is a minor change of the stack, and so of the release.
    vendor.write(
        "stacks/gpu-pools/main.tf",
        &stack(&variable("cluster_id", None), Some("pool_id")),
    );
    vendor.commit("gpu-pools: pool_id");
    let release = vendor.publish_release(&host);
    assert_eq!(release["version"], "0.2.0", "{release}");
    assert_eq!(release["bump"], "minor");
    let changes = release["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{release}");
    assert_eq!(changes[0]["part"], "gpu-pools");
    assert_eq!(changes[0]["kind"], "stack-changed");
    assert_eq!(changes[0]["bump"], "minor");

    // A new digest behind the service's tag is a patch.
    push_service_image(&host, "vendor/api", "1.0", b"api v1.0.1");
    let release = vendor.publish_release(&host);
    assert_eq!(release["version"], "0.2.1", "{release}");
    assert_eq!(release["changes"][0]["kind"], "service-changed");

    // Removing the service is major.
    let config = std::fs::read_to_string(vendor.dir.join("stackpack.toml")).unwrap();
    let without: String = config
        .lines()
        .take_while(|l| !l.contains("services"))
        .map(|l| format!("{l}\n"))
        .collect();
    vendor.write("stackpack.toml", &without);
    vendor.commit("no service");
    let release = vendor.publish_release(&host);
    assert_eq!(release["version"], "1.0.0", "{release}");
    assert_eq!(release["bump"], "major");
    assert_eq!(release["changes"][0]["kind"], "service-removed");

    // A pull-request branch changing one stack: a prerelease of the release pinning
    // the branch's prerelease bundle and the latest stable of the others.
    git(&vendor.dir, &["checkout", "-q", "-b", "feature/pools"]);
    vendor.write(
        "stacks/gpu-pools/main.tf",
        &format!(
            "{}# bigger pools\n",
            stack(&variable("cluster_id", None), Some("pool_id"))
        ),
    );
    vendor.commit("gpu-pools: bigger");
    let release = vendor.publish_release(&host);
    assert_eq!(release["version"], "1.0.1-feature-pools.1", "{release}");
    let (_, description) = read_release(&host, "acme/releases/data-plane", "1.0.1-feature-pools.1");
    assert_eq!(
        versions(&description),
        [
            ("network".to_string(), "0.1.0".to_string()),
            ("cluster".into(), "0.1.0".into()),
            ("gpu-pools".into(), "0.2.1-feature-pools.1".into())
        ]
    );
    assert_eq!(description.source.branch, "feature/pools");

    // Back on main: a wiring removed breaks the downstream input, a major change.
    git(&vendor.dir, &["checkout", "-q", "main"]);
    vendor.write(
        "stacks/cluster/stack.toml",
        "engine = \"terraform\"\ndepends-on = [\"network\"]\n",
    );
    vendor.commit("cluster: vpc_id from the customer");
    let release = vendor.publish_release(&host);
    assert_eq!(release["version"], "2.0.0", "{release}");
    let broken = release["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "wiring-broken")
        .unwrap_or_else(|| panic!("{release}"));
    assert_eq!(broken["bump"], "major");
    assert!(
        broken["detail"]
            .as_str()
            .unwrap()
            .contains("network.vpc_id"),
        "{broken}"
    );
}

#[test]
fn a_release_naming_a_missing_stack_or_with_a_cycle_is_refused_before_any_push() {
    let registry = Distribution::require();
    let host = registry.host();
    push_service_image(&host, "vendor/api", "1.0", b"api v1");
    let vendor = Vendor::new(&format!("{host}/vendor/api:1.0"));
    let config = std::fs::read_to_string(vendor.dir.join("stackpack.toml")).unwrap();

    vendor.write(
        "stackpack.toml",
        &config.replace("\"gpu-pools\"]", "\"gpu-pools\", \"storage\"]"),
    );
    vendor.commit("a missing stack");
    let run = vendor.publish(&host);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("`storage`"), "{}", run.stderr);
    let remote = remote(&host);
    assert!(remote.tags("acme/releases/data-plane").unwrap().is_empty());
    assert!(remote.tags("acme/stacks/network").unwrap().is_empty());

    vendor.write("stackpack.toml", &config);
    vendor.write(
        "stacks/network/stack.toml",
        "engine = \"terraform\"\ndepends-on = [\"gpu-pools\"]\n",
    );
    vendor.commit("a cycle");
    let run = vendor.publish(&host);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("cycle"), "{}", run.stderr);
    assert!(remote.tags("acme/releases/data-plane").unwrap().is_empty());
    assert!(remote.tags("acme/stacks/network").unwrap().is_empty());
}

#[test]
fn a_release_push_failing_midway_leaves_no_tag_and_a_rerun_completes_it() {
    let registry = Distribution::require();
    let host = registry.host();
    let service = Distribution::require();
    push_service_image(&service.host(), "vendor/api", "1.0", b"api v1");
    let vendor = Vendor::new(&format!("{}/vendor/api:1.0", service.host()));

    // The registry fails the release index's own push (after its parts went up).
    let proxy = common::servers::FaultProxy::start(
        registry.port,
        "PUT",
        "/releases/data-plane/manifests/",
        9,
    );
    let run = vendor.publish(&proxy.host());
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(proxy.failures.load(std::sync::atomic::Ordering::SeqCst), 1);
    let tags = remote(&host).tags("acme/releases/data-plane").unwrap();
    assert!(
        tags.iter().all(|t| Version::parse(t).is_err()),
        "a version tag after a failed push: {tags:?}"
    );

    let release = vendor.publish_release(&host);
    assert_eq!(release["published"], true, "{release}");
    assert_eq!(release["version"], "0.1.0");
}

/// `publish --stack X` publishes the releases X is part of, and no other: a stack
/// outside every release leaves the releases alone.
#[test]
fn publish_of_chosen_stacks_publishes_only_the_releases_they_are_in() {
    let registry = Distribution::require();
    let host = registry.host();
    push_service_image(&host, "vendor/api", "1.0", b"api v1");
    let vendor = Vendor::new(&format!("{host}/vendor/api:1.0"));
    vendor.write("stacks/tools/stack.toml", "engine = \"terraform\"\n");
    vendor.write(
        "stacks/tools/main.tf",
        &stack(&variable("name", Some("t")), None),
    );
    vendor.commit("tools: outside every release");
    let publish_stack = |stack: &str| {
        stackpack(
            &vendor.dir,
            &[
                "publish",
                "--json",
                "--insecure",
                "--registry",
                &format!("{host}/acme"),
                "--key",
                vendor.key.to_str().unwrap(),
                "--stack",
                stack,
            ],
        )
        .ok()
        .json()
    };
    let report = publish_stack("tools");
    assert_eq!(report["releases"], serde_json::json!([]), "{report}");
    assert!(remote(&host)
        .tags("acme/releases/data-plane")
        .unwrap()
        .is_empty());

    // The first stable version of every stack of the release is published first;
    // then choosing one of them publishes the release.
    vendor.publish(&host).ok();
    vendor.write(
        "stacks/gpu-pools/main.tf",
        &stack(&variable("cluster_id", None), Some("pool_id")),
    );
    vendor.commit("gpu-pools: pool_id");
    let report = publish_stack("gpu-pools");
    let release = &report["releases"][0];
    assert_eq!(release["release"], "data-plane", "{report}");
    assert_eq!(release["version"], "0.2.0", "{report}");
}
