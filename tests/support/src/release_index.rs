//! A release as the packager publishes it, built from the schema's types, for tests
//! that push one to a registry: the blobs, then every manifest by digest (stack
//! bundles, services, the description), then the index tagged with its version.
//! Pure: what is pushed, and how, is the test's.

use std::collections::BTreeMap;

use stackpack_schema::bundle::Source;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};
use stackpack_schema::release::{ReleaseDescription, ReleaseService, ReleaseStack, RELEASE_FORMAT};
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
        }
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
        let mut blobs: Vec<Vec<u8>> = Vec::new();
        let mut manifests = Vec::new();
        let mut entries = Vec::new();
        let mut stacks = Vec::new();
        for (name, stack_version, depends_on) in &self.stacks {
            let config = serde_json::to_vec(&serde_json::json!({
                "format": 1, "stack": name, "version": stack_version.to_string(),
            }))
            .unwrap();
            let layer = format!("stack {name} {stack_version}").into_bytes();
            let bundle = manifest(
                media_type::BUNDLE_ARTIFACT,
                Descriptor::new(
                    media_type::BUNDLE_CONFIG,
                    Digest::of(&config),
                    config.len() as u64,
                ),
                Descriptor::new(
                    media_type::STACK_LAYER,
                    Digest::of(&layer),
                    layer.len() as u64,
                ),
            );
            blobs.extend([config, layer]);
            let mut entry = bundle.descriptor();
            entry.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
            entry.annotations = Some(BTreeMap::from([
                (annotation::STACK.into(), name.clone()),
                (annotation::VERSION.into(), stack_version.to_string()),
            ]));
            entries.push(entry);
            stacks.push(ReleaseStack {
                name: name.clone(),
                version: stack_version.clone(),
                digest: bundle.digest.clone(),
                depends_on: depends_on.clone(),
                inputs_from: BTreeMap::new(),
            });
            manifests.push(bundle);
        }
        let mut services = Vec::new();
        for (name, reference) in &self.services {
            let config = format!("{{\"service\":\"{reference}\"}}").into_bytes();
            let layer = format!("image {reference}").into_bytes();
            let image = manifest(
                "application/vnd.oci.image.config.v1+json",
                Descriptor::new(
                    "application/vnd.oci.image.config.v1+json",
                    Digest::of(&config),
                    config.len() as u64,
                ),
                Descriptor::new(
                    "application/vnd.oci.image.layer.v1.tar+gzip",
                    Digest::of(&layer),
                    layer.len() as u64,
                ),
            );
            blobs.extend([config, layer]);
            let mut entry = image.descriptor();
            entry.annotations = Some(BTreeMap::from([(annotation::SERVICE.into(), name.clone())]));
            entries.push(entry);
            services.push(ReleaseService {
                name: name.clone(),
                reference: reference.clone(),
                media_type: media_type::OCI_MANIFEST.into(),
                digest: image.digest.clone(),
                size: image.bytes.len() as u64,
                artifact_type: None,
            });
            manifests.push(image);
        }
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
        };
        let config = description.to_bytes();
        let described = manifest(
            media_type::RELEASE_DESCRIPTION_ARTIFACT,
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
        entries.insert(0, first);
        manifests.push(described);
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

/// An image manifest of `artifact_type` with one config and one layer.
fn manifest(artifact_type: &str, config: Descriptor, layer: Descriptor) -> Manifest {
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(artifact_type.into()),
        config,
        layers: vec![layer],
        subject: None,
        annotations: None,
    };
    Manifest::of(manifest.to_bytes(), media_type::OCI_MANIFEST)
}
