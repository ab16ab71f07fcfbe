//! A vendor with three small stacks split by blast radius (`network` → `cluster` →
//! `gpu-pools`, each a `terraform_data` whose output is wired to the next stack's
//! input), built with the real `stackpack`, and releases of them written into its
//! layout and signed as the packager would.

use std::path::{Path, PathBuf};
use std::process::Command;

use semver::Version;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::release::{release_entry_annotations, write_release};
use stackpack_schema::bundle::Source;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::release::{ReleaseDescription, ReleaseService, ReleaseStack, RELEASE_FORMAT};
use stackpack_schema::signature::PrivateKey;

use super::{git, stackpack_bin, Run};

pub const NETWORK: &str = r#"variable "cidr" {
  type        = string
  description = "The network range."
}

resource "terraform_data" "vpc" {
  input = "vpc-${var.cidr}"
}

output "vpc_id" {
  value       = terraform_data.vpc.output
  description = "The network id."
}
"#;

pub const CLUSTER: &str = r#"variable "vpc_id" {
  type        = string
  description = "The network the cluster runs in."
}

variable "cluster_name" {
  type        = string
  description = "The cluster's name."
}

resource "terraform_data" "cluster" {
  input = "${var.cluster_name}@${var.vpc_id}"
}

output "cluster_id" {
  value       = terraform_data.cluster.output
  description = "The cluster id."
}
"#;

pub const GPU_POOLS: &str = r#"variable "cluster_id" {
  type        = string
  description = "The cluster the pools join."
}

variable "pool_size" {
  type        = number
  description = "GPUs per pool."
}

resource "terraform_data" "pool" {
  input = "${var.pool_size}x@${var.cluster_id}"
}

output "pool" {
  value       = terraform_data.pool.output
  description = "The pool."
}
"#;

pub struct ReleaseVendor {
    pub temp: tempfile::TempDir,
    pub dir: PathBuf,
    pub key: PathBuf,
    pub public_key: PathBuf,
}

impl ReleaseVendor {
    pub fn new() -> ReleaseVendor {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("tiny-infra");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("stackpack.toml"),
            "registry = \"127.0.0.1:5000/acme\"\nrepository = \"https://git.acme.example/platform/tiny\"\nmain-branch = \"main\"\nstacks = [\"stacks/*\"]\n",
        )
        .unwrap();
        std::fs::write(dir.join(".gitignore"), ".stackpack/\n").unwrap();
        for (stack, main) in [
            ("network", NETWORK),
            ("cluster", CLUSTER),
            ("gpu-pools", GPU_POOLS),
        ] {
            let folder = dir.join("stacks").join(stack);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join("stack.toml"),
                format!("description = \"{stack}\"\nengine = \"terraform\"\n"),
            )
            .unwrap();
            std::fs::write(folder.join("main.tf"), main).unwrap();
        }
        git(&dir, &["init", "-q", "-b", "main"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "initial"]);
        let prefix = temp.path().join("vendor");
        Run::from(
            Command::new(stackpack_bin())
                .args(["keygen", "--out", prefix.to_str().unwrap()])
                .output()
                .unwrap(),
        )
        .ok();
        ReleaseVendor {
            dir,
            key: temp.path().join("vendor.key"),
            public_key: temp.path().join("vendor.pub"),
            temp,
        }
    }

    pub fn layout_dir(&self) -> PathBuf {
        self.dir.join(".stackpack/bundles")
    }

    pub fn layout(&self) -> ImageLayout {
        ImageLayout::open(self.layout_dir()).unwrap()
    }

    /// Builds the changed stacks; returns `stack -> version` built.
    pub fn build(&self) -> Vec<(String, String)> {
        crate::common::build_stacks(&self.dir, &self.key)
    }

    /// Builds the changed stacks; returns the version built of `stack`.
    pub fn build_version_of(&self, stack: &str) -> String {
        self.build()
            .into_iter()
            .find(|(built, _)| built == stack)
            .unwrap_or_else(|| panic!("`{stack}` was not built"))
            .1
    }

    /// Adds stack `name` (its `stack.toml` and `main.tf`) and commits.
    pub fn add_stack(&self, name: &str, stack_toml: &str, main: &str) {
        let folder = self.dir.join("stacks").join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("stack.toml"), stack_toml).unwrap();
        std::fs::write(folder.join("main.tf"), main).unwrap();
        git(&self.dir, &["add", "-A"]);
        git(&self.dir, &["commit", "-q", "-m", &format!("add {name}")]);
    }

    /// Appends to a stack's `main.tf` and commits.
    pub fn change(&self, stack: &str, text: &str) {
        let path = self.dir.join("stacks").join(stack).join("main.tf");
        let existing = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{existing}{text}")).unwrap();
        git(&self.dir, &["commit", "-qam", &format!("change {stack}")]);
    }

    fn signing_key(&self) -> PrivateKey {
        PrivateKey::from_pem(&std::fs::read_to_string(&self.key).unwrap()).unwrap()
    }

    /// The description of release `name@version` pinning `stacks` (`stack@version`,
    /// as in the layout), wired network → cluster → gpu-pools.
    pub fn description(
        &self,
        name: &str,
        version: &str,
        stacks: &[(&str, &str)],
    ) -> ReleaseDescription {
        let layout = self.layout();
        let order = ["network", "cluster", "gpu-pools"];
        let mut pinned = Vec::new();
        for stack in order {
            let Some((_, v)) = stacks.iter().find(|(s, _)| *s == stack) else {
                continue;
            };
            let v = Version::parse(v).unwrap();
            let bundle = layout.find_bundle(stack, &v).unwrap().expect("built");
            let (depends_on, inputs_from) = match stack {
                "cluster" => (
                    vec!["network".to_string()],
                    [("vpc_id", "network.vpc_id")].as_slice(),
                ),
                "gpu-pools" => (
                    vec!["cluster".to_string()],
                    [("cluster_id", "cluster.cluster_id")].as_slice(),
                ),
                _ => (vec![], [].as_slice()),
            };
            pinned.push(ReleaseStack {
                name: stack.into(),
                version: v,
                digest: bundle.digest,
                depends_on,
                inputs_from: inputs_from
                    .iter()
                    .map(|(i, w)| (i.to_string(), w.parse().unwrap()))
                    .collect(),
            });
        }
        ReleaseDescription {
            format: RELEASE_FORMAT,
            name: name.into(),
            version: Version::parse(version).unwrap(),
            source: Source {
                repository: "https://git.acme.example/platform/tiny".into(),
                commit: "0".repeat(40),
                branch: "main".into(),
            },
            created: "2026-12-01T00:00:00Z".into(),
            stacks: pinned,
            services: vec![],
            changes: vec![],
            engine: None,
        }
    }

    /// Writes `description` into the vendor's layout, signed with `key` (the
    /// vendor's when `None`), with `services` (their blobs must be in the layout
    /// for an airgap tar to carry them).
    pub fn write(
        &self,
        description: &ReleaseDescription,
        services: &[(ReleaseService, Descriptor)],
        key: Option<&PrivateKey>,
    ) -> Descriptor {
        let layout = self.layout();
        let mut description = description.clone();
        description.services = services.iter().map(|(s, _)| s.clone()).collect();
        let descriptors: Vec<Descriptor> = services.iter().map(|(_, d)| d.clone()).collect();
        let own = self.signing_key();
        let key = key.unwrap_or(&own);
        let repository = format!("acme/releases/{}", description.name);
        let index = write_release(&layout, &description, &descriptors, key, &repository).unwrap();
        let mut entry = index.clone();
        entry.annotations = Some(release_entry_annotations(
            &description.name,
            &description.version,
        ));
        layout.add_entry(entry).unwrap();
        index
    }

    /// Release `name@version` of network 0.1.0, a cluster with a new output, and
    /// GPU pools that refuse more than one GPU per pool (a precondition), built and
    /// written; the versions of cluster and gpu-pools built.
    pub fn write_failing_pools(&self, name: &str, version: &str) -> (String, String) {
        self.change(
            "cluster",
            "\noutput \"name\" {\n  value       = var.cluster_name\n  description = \"The cluster's name.\"\n}\n",
        );
        self.change(
            "gpu-pools",
            "\nresource \"terraform_data\" \"guard\" {\n  input = var.pool_size\n  lifecycle {\n    precondition {\n      condition     = var.pool_size < 2\n      error_message = \"a pool of more than one GPU needs a bigger cluster\"\n    }\n  }\n}\n",
        );
        let built = self.build();
        let built = |stack: &str| built.iter().find(|(s, _)| s == stack).unwrap().1.clone();
        let (cluster, gpu) = (built("cluster"), built("gpu-pools"));
        self.write(
            &self.description(
                name,
                version,
                &[
                    ("network", "0.1.0"),
                    ("cluster", &cluster),
                    ("gpu-pools", &gpu),
                ],
            ),
            &[],
            None,
        );
        (cluster, gpu)
    }

    /// The vendor's layout as a tar file.
    pub fn export_tar(&self, name: &str) -> PathBuf {
        tar_of(&self.layout_dir(), &self.temp.path().join(name))
    }
}

pub fn tar_of(dir: &Path, tar: &Path) -> PathBuf {
    let status = Command::new("tar")
        .arg("-cf")
        .arg(tar)
        .arg("-C")
        .arg(dir)
        .arg(".")
        .status()
        .unwrap();
    assert!(status.success());
    tar.to_path_buf()
}

/// An inputs folder as `customers/<id>/` holds it.
pub fn inputs_dir(root: &Path, pool_size: u32) -> PathBuf {
    let dir = root.join("inputs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("network.tfvars"), "cidr = \"10.1.0.0/16\"\n").unwrap();
    std::fs::write(dir.join("cluster.tfvars"), "cluster_name = \"main\"\n").unwrap();
    std::fs::write(
        dir.join("gpu-pools.tfvars"),
        format!("pool_size = {pool_size}\n"),
    )
    .unwrap();
    dir
}

/// A small service image (an OCI image manifest, its config and one layer) written
/// into `layout`, as the vendor's release pins it.
pub fn service_image(
    layout: &ImageLayout,
    name: &str,
    content: &[u8],
) -> (ReleaseService, Descriptor) {
    use stackpack_schema::media_type;
    use stackpack_schema::oci::ImageManifest;
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let (config_digest, config_size) = layout.write_blob(config).unwrap();
    let (layer_digest, layer_size) = layout.write_blob(content).unwrap();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: None,
        config: Descriptor::new(
            "application/vnd.oci.image.config.v1+json",
            config_digest,
            config_size,
        ),
        layers: vec![Descriptor::new(
            "application/vnd.oci.image.layer.v1.tar",
            layer_digest,
            layer_size,
        )],
        subject: None,
        annotations: None,
    };
    let bytes = manifest.to_bytes();
    let (digest, size) = layout.write_blob(&bytes).unwrap();
    let descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest.clone(), size);
    let service = ReleaseService {
        name: name.into(),
        reference: format!("registry.acme.example/acme/{name}:1.0.0"),
        media_type: media_type::OCI_MANIFEST.into(),
        digest,
        size,
        artifact_type: None,
    };
    (service, descriptor)
}

/// Pushes release `name@version` from the vendor's layout into
/// `<namespace>/releases/<name>` of the registry at `host`, as the packager
/// publishes it: every part by digest, the index by its version, signatures
/// findable by their subject.
pub fn push_release(layout: &ImageLayout, host: &str, namespace: &str, name: &str, version: &str) {
    let remote = stackpack_bundle::remote::Remote::new(host, true).unwrap();
    push_release_to(&remote, layout, namespace, name, version);
}

/// [`push_release`] with `remote`'s credentials (a publisher token of our
/// registry, say).
pub fn push_release_to(
    remote: &stackpack_bundle::remote::Remote,
    layout: &ImageLayout,
    namespace: &str,
    name: &str,
    version: &str,
) {
    use stackpack_bundle::release::find_release;
    use stackpack_bundle::transfer::{push_manifest_with_blobs, push_referrer};
    use stackpack_schema::media_type;
    use stackpack_schema::oci::ImageIndex;
    let repository = format!("{namespace}/releases/{name}");
    let version = Version::parse(version).unwrap();
    let index_descriptor = find_release(layout, name, &version).unwrap().unwrap();
    let bytes = layout.read_blob(&index_descriptor.digest, 1 << 20).unwrap();
    let index: ImageIndex = serde_json::from_slice(&bytes).unwrap();
    for entry in &index.manifests {
        if entry.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT) {
            let manifest: stackpack_schema::oci::ImageManifest =
                serde_json::from_slice(&layout.read_blob(&entry.digest, 1 << 20).unwrap()).unwrap();
            let subject = manifest.subject.unwrap().digest;
            push_referrer(remote, &repository, layout, entry, &subject).unwrap();
        } else {
            push_manifest_with_blobs(
                remote,
                &repository,
                layout,
                entry,
                &entry.digest.to_string(),
                None,
            )
            .unwrap();
        }
    }
    remote
        .push_manifest(
            &repository,
            &version.to_string(),
            &bytes,
            media_type::OCI_INDEX,
        )
        .unwrap();
}
