//! A release as the packager publishes it, built from the schema's types, for tests
//! that push one to a registry: the blobs, then every manifest by digest (stack
//! bundles, services, the description), then the index tagged with its version.
//! Pure: what is pushed, and how, is the test's.

use std::collections::BTreeMap;

use stackpack_schema::bundle::Source;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};
use stackpack_schema::release::{ReleaseDescription, ReleaseService, ReleaseStack, RELEASE_FORMAT};
use stackpack_schema::signature::{PrivateKey, SignaturePayload};
use stackpack_schema::Digest;

/// A manifest (or the index) to push: its bytes, digest and media type.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub bytes: Vec<u8>,
    pub digest: Digest,
    pub media_type: &'static str,
}

impl Manifest {
    fn of(bytes: Vec<u8>, media_type: &'static str) -> Manifest {
        Manifest {
            digest: Digest::of(&bytes),
            bytes,
            media_type,
        }
    }

    /// Its descriptor, for an index entry.
    pub fn descriptor(&self) -> Descriptor {
        Descriptor::new(
            self.media_type,
            self.digest.clone(),
            self.bytes.len() as u64,
        )
    }
}

/// Everything a release is made of, in the order it is pushed.
#[derive(Clone, Debug)]
pub struct ReleaseArtifacts {
    pub description: ReleaseDescription,
    /// Configs and layers, each once.
    pub blobs: Vec<Vec<u8>>,
    /// Bundles, services and the description, to push by digest.
    pub manifests: Vec<Manifest>,
    /// The index's entries: the description first, then each stack and service.
    pub entries: Vec<Descriptor>,
    /// The index, to push last, tagged with the version.
    pub index: Manifest,
}

impl ReleaseArtifacts {
    /// Another index over `entries` (to push a malformed release).
    pub fn index_of(entries: Vec<Descriptor>) -> Manifest {
        let mut index = ImageIndex::new(entries);
        index.artifact_type = Some(media_type::RELEASE_ARTIFACT.into());
        Manifest::of(index.to_bytes(), media_type::OCI_INDEX)
    }
}

/// A release `name` at `version` with the stacks and services it is given, each
/// made up as a small manifest of its own.
#[derive(Clone, Debug)]
pub struct ReleaseBuilder {
    name: String,
    version: semver::Version,
    stacks: Vec<(String, semver::Version, Vec<String>)>,
    services: Vec<(String, String)>,
    key: Option<std::sync::Arc<PrivateKey>>,
}

/// The key tests sign as the vendor with, unless they choose another: a registry
/// accepts a channel statement only from a key that signed what it approves.
pub fn test_vendor_key() -> PrivateKey {
    PrivateKey::from_secret_bytes([42; 32])
}

/// The signature artifact of `subject` by `key`, as `stackpack` writes it
/// (`stackpack_bundle::sign`): its envelope blob and its manifest.
pub fn signature_of(
    subject: &Descriptor,
    repository: &str,
    version: &semver::Version,
    key: &PrivateKey,
) -> (Vec<u8>, Manifest) {
    let envelope = key
        .sign(SignaturePayload {
            manifest_digest: subject.digest.clone(),
            repository: repository.to_string(),
            version: version.to_string(),
            key_id: String::new(),
            signed_at: "2026-01-01T00:00:00Z".into(),
        })
        .to_bytes();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::SIGNATURE_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers: vec![Descriptor::new(
            media_type::SIGNATURE_LAYER,
            Digest::of(&envelope),
            envelope.len() as u64,
        )],
        subject: Some(subject.clone()),
        annotations: None,
    };
    (
        envelope,
        Manifest::of(manifest.to_bytes(), media_type::OCI_MANIFEST),
    )
}

fn version(text: &str) -> semver::Version {
    semver::Version::parse(text).unwrap_or_else(|e| panic!("`{text}` is not a version: {e}"))
}

impl ReleaseBuilder {
    pub fn new(name: &str, release_version: &str) -> ReleaseBuilder {
        ReleaseBuilder {
            name: name.into(),
            version: version(release_version),
            stacks: Vec::new(),
            services: Vec::new(),
            key: Some(std::sync::Arc::new(test_vendor_key())),
        }
    }

    /// Signed by `key` (`None`: not signed at all) instead of [`test_vendor_key`].
    pub fn signed_by(mut self, key: Option<PrivateKey>) -> ReleaseBuilder {
        self.key = key.map(std::sync::Arc::new);
        self
    }

    /// A stack at `stack_version`, applied after `depends_on`. Its bundle is made up
    /// from the name and version, so the same stack version always has the same
    /// digest.
    pub fn stack(mut self, name: &str, stack_version: &str, depends_on: &[&str]) -> ReleaseBuilder {
        self.stacks.push((
            name.into(),
            version(stack_version),
            depends_on.iter().map(|d| d.to_string()).collect(),
        ));
        self
    }

    /// A service taken from `reference` (its image is made up from the reference).
    pub fn service(mut self, name: &str, reference: &str) -> ReleaseBuilder {
        self.services.push((name.into(), reference.into()));
        self
    }

    pub fn build(self) -> ReleaseArtifacts {
        let mut parts = Parts::default();
        let stacks: Vec<ReleaseStack> = self
            .stacks
            .iter()
            .map(|(name, version, depends_on)| parts.bundle(name, version, depends_on))
            .collect();
        let services: Vec<ReleaseService> = self
            .services
            .iter()
            .map(|(name, reference)| parts.service(name, reference))
            .collect();
        let Parts {
            mut blobs,
            mut manifests,
            mut entries,
        } = parts;
        let description = ReleaseDescription {
            format: RELEASE_FORMAT,
            name: self.name.clone(),
            version: self.version.clone(),
            source: Source {
                repository: "https://git.example/acme/infra".into(),
                commit: "c0ffee".into(),
                branch: "main".into(),
            },
            created: "2026-01-01T00:00:00Z".into(),
            stacks,
            services,
            changes: Vec::new(),
            engine: None,
        };
        let config = description.to_bytes();
        let described = manifest(
            Some(media_type::RELEASE_DESCRIPTION_ARTIFACT),
            Descriptor::new(
                media_type::RELEASE_CONFIG,
                Digest::of(&config),
                config.len() as u64,
            ),
            Descriptor::empty(),
        );
        blobs.extend([config, media_type::EMPTY_BLOB.to_vec()]);
        let mut first = described.descriptor();
        first.artifact_type = Some(media_type::RELEASE_DESCRIPTION_ARTIFACT.into());
        entries.insert(0, first.clone());
        manifests.push(described);
        // The signature of the description, right after it, as `stackpack` writes it.
        if let Some(key) = &self.key {
            let repository = format!("acme/releases/{}", self.name);
            let (envelope, signature) = signature_of(&first, &repository, &self.version, key);
            let mut entry = signature.descriptor();
            entry.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
            entries.insert(1, entry);
            blobs.push(envelope);
            manifests.push(signature);
        }
        let index = ReleaseArtifacts::index_of(entries.clone());
        blobs.sort();
        blobs.dedup();
        ReleaseArtifacts {
            description,
            blobs,
            manifests,
            entries,
            index,
        }
    }
}

/// The blobs, manifests and index entries of a release's parts, as they are made.
#[derive(Default)]
struct Parts {
    blobs: Vec<Vec<u8>>,
    manifests: Vec<Manifest>,
    entries: Vec<Descriptor>,
}

impl Parts {
    /// A manifest (of `artifact_type`, or a plain image) over a config and a layer,
    /// listed in the index with `annotations`.
    fn add(
        &mut self,
        artifact_type: Option<&str>,
        (config_type, config): (&str, Vec<u8>),
        (layer_type, layer): (&str, Vec<u8>),
        annotations: Vec<(&str, String)>,
    ) -> Manifest {
        let made = manifest(
            artifact_type,
            Descriptor::new(config_type, Digest::of(&config), config.len() as u64),
            Descriptor::new(layer_type, Digest::of(&layer), layer.len() as u64),
        );
        self.blobs.extend([config, layer]);
        let mut entry = made.descriptor();
        entry.artifact_type = artifact_type.map(Into::into);
        entry.annotations = Some(
            annotations
                .into_iter()
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
        );
        self.entries.push(entry);
        self.manifests.push(made.clone());
        made
    }

    fn bundle(
        &mut self,
        name: &str,
        version: &semver::Version,
        depends_on: &[String],
    ) -> ReleaseStack {
        let config =
            serde_json::json!({"format": 1, "stack": name, "version": version.to_string()});
        let bundle = self.add(
            Some(media_type::BUNDLE_ARTIFACT),
            (media_type::BUNDLE_CONFIG, config.to_string().into_bytes()),
            (
                media_type::STACK_LAYER,
                format!("stack {name} {version}").into_bytes(),
            ),
            vec![
                (annotation::STACK, name.to_string()),
                (annotation::VERSION, version.to_string()),
            ],
        );
        ReleaseStack {
            name: name.into(),
            version: version.clone(),
            digest: bundle.digest,
            depends_on: depends_on.to_vec(),
            inputs_from: BTreeMap::new(),
        }
    }

    fn service(&mut self, name: &str, reference: &str) -> ReleaseService {
        const IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
        let config = serde_json::json!({"service": reference});
        let image = self.add(
            None,
            (IMAGE_CONFIG, config.to_string().into_bytes()),
            (
                "application/vnd.oci.image.layer.v1.tar+gzip",
                format!("image {reference}").into_bytes(),
            ),
            vec![(annotation::SERVICE, name.to_string())],
        );
        ReleaseService {
            name: name.into(),
            reference: reference.into(),
            media_type: media_type::OCI_MANIFEST.into(),
            size: image.bytes.len() as u64,
            digest: image.digest,
            artifact_type: None,
        }
    }
}

/// An image manifest (of `artifact_type`, if given) with one config and one layer.
fn manifest(artifact_type: Option<&str>, config: Descriptor, layer: Descriptor) -> Manifest {
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: artifact_type.map(Into::into),
        config,
        layers: vec![layer],
        subject: None,
        annotations: None,
    };
    Manifest::of(manifest.to_bytes(), media_type::OCI_MANIFEST)
}
