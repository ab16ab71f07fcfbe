//! Releases in an image layout: writing one (the packager) and verifying one (the
//! runner, and the packager on what it publishes).
//!
//! A release is an image index whose first entry is its description (see
//! [`stackpack_schema::release`]); the other entries pin each stack bundle, its
//! signatures and each service by digest. In an image layout the release index is
//! an `index.json` entry of kind `release`, beside the bundles it pins (which stay
//! ordinary bundle entries, so every bundle is verified exactly as on its own).
//!
//! The signature signs the *description manifest* and is itself an entry of the
//! index, right after the description. Copy tools rewrite an index (skopeo 1.9 drops
//! its `artifactType`, giving it a new digest) and leave referrers behind, but they
//! copy every child manifest byte for byte: a release copied with `skopeo copy
//! --all` still verifies. The description pins every bundle and service by digest,
//! so signing it signs the release.
//!
//! Verification order mirrors a bundle's: the release signature first (nothing else
//! of an untrusted release is used), then the description, then every pin. The
//! caller verifies each bundle with [`crate::verify`], against the digest the
//! release pins.

use semver::Version;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageIndex, ImageManifest};
use stackpack_schema::release::{ReleaseDescription, RELEASE_FORMAT};
use stackpack_schema::signature::{PublicKey, SigningKey};

use crate::layout::{ImageLayout, LayoutError, MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE};
use crate::verify::{
    check_signature_manifests, signature_failure, SignatureCheck, Trust, VerifyError,
};

/// `dev.stackpack.kind` of a release index's entry in an image layout.
pub const RELEASE_KIND: &str = "release";

/// Why a release cannot be written or trusted.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error("release `{name}@{version}` is not in `{layout}`")]
    NotFound {
        name: String,
        version: Version,
        layout: String,
    },
    #[error("release `{reference}`: {reason}")]
    Invalid { reference: String, reason: String },
    #[error("release `{reference}` pins {part} at `{pinned}`, but {found}")]
    WrongPart {
        reference: String,
        part: String,
        pinned: Digest,
        found: String,
    },
    #[error("release `{reference}` needs {part}, which is not in `{layout}`")]
    MissingPart {
        reference: String,
        part: String,
        layout: String,
    },
    #[error("the release description's format is `{format}`, newer than the newest this program reads (`{newest}`): upgrade stackpack-runner to a release that reads it")]
    NewerFormat { format: u32, newest: u32 },
    /// The signature check, worded as for a bundle (its reference names the release).
    #[error("{0}")]
    Signature(VerifyError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// What verifying a release established.
#[derive(Clone, Debug)]
pub struct VerifiedRelease {
    /// The release index's descriptor.
    pub index_descriptor: Descriptor,
    pub index: ImageIndex,
    pub description: ReleaseDescription,
    pub signatures: Vec<SignatureCheck>,
    pub signer: Option<PublicKey>,
}

impl VerifiedRelease {
    /// The index entry of the stack bundle `name`.
    pub fn bundle_entry(&self, name: &str) -> Option<&Descriptor> {
        let stack = self.description.stack(name)?;
        self.index
            .manifests
            .iter()
            .find(|d| d.digest == stack.digest)
    }
}

/// The index-entry annotations of a release in an image layout.
pub fn release_entry_annotations(name: &str, version: &Version) -> Annotations {
    let mut annotations = Annotations::new();
    annotations.insert(
        annotation::REF_NAME.into(),
        format!("releases/{name}:{version}"),
    );
    annotations.insert(annotation::KIND.into(), RELEASE_KIND.into());
    annotations.insert(annotation::RELEASE.into(), name.into());
    annotations.insert(annotation::VERSION.into(), version.to_string());
    annotations
}

/// The releases an image layout holds, by name and version, with their index
/// descriptors: the entries we annotate as releases, and any other image index
/// whose first manifest is a release description (a layout written by a copy tool,
/// `skopeo copy --all … oci:DIR:TAG`, names an entry only by its tag), read from
/// that description. Which of them can be trusted is [`verify_release_index`]'s.
pub fn releases_in(
    layout: &ImageLayout,
) -> Result<Vec<(String, Version, Descriptor)>, LayoutError> {
    Ok(layout
        .index()?
        .manifests
        .into_iter()
        .filter_map(|d| {
            if d.annotation(annotation::KIND) == Some(RELEASE_KIND) {
                let name = d.annotation(annotation::RELEASE)?.to_string();
                let version = Version::parse(d.annotation(annotation::VERSION)?).ok()?;
                return Some((name, version, d));
            }
            if d.annotation(annotation::KIND).is_some() || !media_type::is_index(&d.media_type) {
                return None;
            }
            let (name, version) = described_release(layout, &d)?;
            Some((name, version, d))
        })
        .collect())
}

/// The name and version a release index's description gives, when `index` is one.
fn described_release(layout: &ImageLayout, index: &Descriptor) -> Option<(String, Version)> {
    let bytes = layout.read_blob(&index.digest, MAX_MANIFEST_SIZE).ok()?;
    let index: ImageIndex = serde_json::from_slice(&bytes).ok()?;
    let manifest = read_manifest(layout, index.manifests.first()?)?;
    if manifest.artifact_type.as_deref() != Some(media_type::RELEASE_DESCRIPTION_ARTIFACT) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
        version: Version,
    }
    let config = layout
        .read_blob(&manifest.config.digest, MAX_CONFIG_SIZE)
        .ok()?;
    let named: Named = serde_json::from_slice(&config).ok()?;
    Some((named.name, named.version))
}

/// The index descriptor of `name@version` in the layout, if present.
pub fn find_release(
    layout: &ImageLayout,
    name: &str,
    version: &Version,
) -> Result<Option<Descriptor>, LayoutError> {
    Ok(releases_in(layout)?
        .into_iter()
        .find(|(n, v, _)| n == name && v == version)
        .map(|(_, _, d)| d))
}

/// Writes the description, its signature by `key` for `repository`
/// (`<namespace>/releases/<name>`) and the release index into `layout` (not the
/// layout's `index.json` entry: see [`release_entry_annotations`]). Every stack the
/// description names must be in the layout at the digest it pins, so a release never
/// points at a bundle that is not beside it; services are pinned by their
/// descriptors, whose blobs need not be here (a publish copies them registry to
/// registry).
pub fn write_release(
    layout: &ImageLayout,
    description: &ReleaseDescription,
    services: &[Descriptor],
    key: &dyn SigningKey,
    repository: &str,
) -> Result<Descriptor, ReleaseError> {
    let reference = format!("{}@{}", description.name, description.version);
    // The engine's manifest and binaries are written first (see
    // `carried_engine::write`): the index pins what is already here.
    if let Some(engine) = &description.engine {
        if !layout.has_blob(&engine.digest) {
            return Err(ReleaseError::MissingPart {
                reference,
                part: format!("engine `{}` {}", engine.name, engine.version),
                layout: layout.root().display().to_string(),
            });
        }
    }
    let (config_digest, config_size) = layout.write_blob(&description.to_bytes())?;
    layout.write_blob(media_type::EMPTY_BLOB)?;
    let mut description_annotations = Annotations::new();
    description_annotations.insert(annotation::TITLE.into(), description.name.clone());
    description_annotations.insert(annotation::VERSION.into(), description.version.to_string());
    let description_manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::RELEASE_DESCRIPTION_ARTIFACT.into()),
        config: Descriptor::new(media_type::RELEASE_CONFIG, config_digest, config_size),
        layers: vec![Descriptor::empty()],
        subject: None,
        annotations: Some(description_annotations),
    };
    let (digest, size) = layout.write_blob(&description_manifest.to_bytes())?;
    let mut first = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    first.artifact_type = Some(media_type::RELEASE_DESCRIPTION_ARTIFACT.into());
    let signature = crate::sign::sign_manifest(
        &first,
        repository,
        &description.version,
        &description.created,
        key,
        layout,
    )?;
    let mut manifests = vec![first, signature];

    manifests.extend(stack_entries(layout, description, &reference)?);
    for service in &description.services {
        let Some(found) = services.iter().find(|d| d.digest == service.digest) else {
            return Err(ReleaseError::MissingPart {
                reference,
                part: format!("service `{}` at `{}`", service.name, service.digest),
                layout: "the services given".into(),
            });
        };
        let mut entry = Descriptor::new(found.media_type.clone(), found.digest.clone(), found.size);
        entry.artifact_type = found.artifact_type.clone();
        let mut annotations = Annotations::new();
        annotations.insert(annotation::SERVICE.into(), service.name.clone());
        entry.annotations = Some(annotations);
        manifests.push(entry);
    }

    if let Some(engine) = &description.engine {
        manifests.push(engine_entry(layout, engine));
    }

    let mut index = ImageIndex::new(manifests);
    index.artifact_type = Some(media_type::RELEASE_ARTIFACT.into());
    let mut annotations = Annotations::new();
    annotations.insert(annotation::VERSION.into(), description.version.to_string());
    annotations.insert(annotation::CREATED.into(), description.created.clone());
    annotations.insert(
        annotation::REVISION.into(),
        description.source.commit.clone(),
    );
    annotations.insert(annotation::RELEASE.into(), description.name.clone());
    index.annotations = Some(annotations);
    let (digest, size) = layout.write_blob(&index.to_bytes())?;
    let mut descriptor = Descriptor::new(media_type::OCI_INDEX, digest, size);
    descriptor.artifact_type = Some(media_type::RELEASE_ARTIFACT.into());
    Ok(descriptor)
}

/// Each stack's bundle entry, then its signatures' entries, as the release index
/// lists them; every bundle must be in the layout at the digest the description
/// pins.
fn stack_entries(
    layout: &ImageLayout,
    description: &ReleaseDescription,
    reference: &str,
) -> Result<Vec<Descriptor>, ReleaseError> {
    let mut entries = Vec::new();
    for stack in &description.stacks {
        let found = layout.find_bundle(&stack.name, &stack.version)?;
        let Some(bundle) = found.filter(|d| d.digest == stack.digest) else {
            return Err(ReleaseError::MissingPart {
                reference: reference.to_string(),
                part: format!(
                    "bundle `{}@{}` at `{}`",
                    stack.name, stack.version, stack.digest
                ),
                layout: layout.root().display().to_string(),
            });
        };
        let mut entry = Descriptor::new(
            bundle.media_type.clone(),
            bundle.digest.clone(),
            bundle.size,
        );
        entry.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
        let mut annotations = Annotations::new();
        annotations.insert(annotation::STACK.into(), stack.name.clone());
        annotations.insert(annotation::VERSION.into(), stack.version.to_string());
        entry.annotations = Some(annotations);
        entries.push(entry);
        for signature in layout.signatures_for(&bundle.digest)? {
            let mut entry = Descriptor::new(signature.media_type, signature.digest, signature.size);
            entry.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// The release index's entry for the engine it carries (its manifest is in the
/// layout: `write_release` checked).
fn engine_entry(
    layout: &ImageLayout,
    engine: &stackpack_schema::release::ReleaseEngine,
) -> Descriptor {
    let size = std::fs::metadata(layout.blob_path(&engine.digest))
        .map(|m| m.len())
        .unwrap_or_default();
    let mut entry = Descriptor::new(media_type::OCI_MANIFEST, engine.digest.clone(), size);
    entry.artifact_type = Some(media_type::ENGINE_ARTIFACT.into());
    let mut annotations = Annotations::new();
    annotations.insert(annotation::ENGINE.into(), engine.name.as_str().to_string());
    annotations.insert(annotation::VERSION.into(), engine.version.to_string());
    entry.annotations = Some(annotations);
    entry
}

/// Finds `name@version` in the layout and verifies it: signed by a trusted key for
/// `releases/<name>`, a description of this name and version in a format this
/// program reads, every stack pinned in the index at the description's digest with
/// its manifest in the layout, every service pinned. The bundles
/// themselves are verified by the caller (see the module docs).
pub fn verify_release(
    layout: &ImageLayout,
    name: &str,
    version: &Version,
    trust: &Trust,
) -> Result<VerifiedRelease, ReleaseError> {
    let descriptor =
        find_release(layout, name, version)?.ok_or_else(|| ReleaseError::NotFound {
            name: name.into(),
            version: version.clone(),
            layout: layout.root().display().to_string(),
        })?;
    verify_release_index(layout, &descriptor, name, version, trust)
}

/// Verifies the release whose index `descriptor` points at (see [`verify_release`]).
pub fn verify_release_index(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    name: &str,
    version: &Version,
    trust: &Trust,
) -> Result<VerifiedRelease, ReleaseError> {
    let reference = format!("{name}@{version}");
    let invalid = |reason: String| ReleaseError::Invalid {
        reference: reference.clone(),
        reason,
    };

    // 1. The description's manifest and its signatures, before anything of the
    // release is used. The index's own `artifactType` is not required: copy tools
    // drop it (see the module docs); the description manifest's is.
    let bytes = layout.read_blob(&descriptor.digest, MAX_MANIFEST_SIZE)?;
    let index: ImageIndex = serde_json::from_slice(&bytes)
        .map_err(|e| invalid(format!("its index is not an OCI image index: {e}")))?;
    let first = index
        .manifests
        .first()
        .ok_or_else(|| invalid("its index is empty".into()))?;
    let manifest = read_manifest(layout, first)
        .filter(|m| m.artifact_type.as_deref() == Some(media_type::RELEASE_DESCRIPTION_ARTIFACT))
        .ok_or_else(|| invalid("its index does not begin with a release description".into()))?;
    let candidates: Vec<Descriptor> = index
        .manifests
        .iter()
        .skip(1)
        .filter(|entry| {
            read_manifest(layout, entry).is_some_and(|m| {
                m.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT)
                    && m.subject.as_ref().map(|s| &s.digest) == Some(&first.digest)
            })
        })
        .cloned()
        .collect();
    let (signatures, signer) = check_signature_manifests(
        layout,
        &candidates,
        &first.digest,
        &format!("releases/{name}"),
        version,
        trust,
    );
    if let Trust::Keys(_) = trust {
        if signer.is_none() {
            let release = format!("release {reference}");
            return Err(ReleaseError::Signature(signature_failure(
                &release,
                &signatures,
            )));
        }
    }

    // 2. The description.
    if manifest.config.media_type != media_type::RELEASE_CONFIG {
        return Err(invalid(format!(
            "its description's config is `{}`, not `{}`",
            manifest.config.media_type,
            media_type::RELEASE_CONFIG
        )));
    }
    let description = read_description(layout, &manifest.config, &reference)?;
    if description.name != name || &description.version != version {
        return Err(invalid(format!(
            "its signed description says `{}@{}`",
            description.name, description.version
        )));
    }

    // 3. Every pin.
    check_pins(layout, &index, &description, &reference)?;
    Ok(VerifiedRelease {
        index_descriptor: descriptor.clone(),
        index,
        description,
        signatures,
        signer,
    })
}

/// An image manifest of the layout, when `entry` is one whose blob is here, of
/// the size and digest the entry says, and parses.
fn read_manifest(layout: &ImageLayout, entry: &Descriptor) -> Option<ImageManifest> {
    if !media_type::is_image_manifest(&entry.media_type) {
        return None;
    }
    let bytes = layout.read_blob(&entry.digest, MAX_MANIFEST_SIZE).ok()?;
    if bytes.len() as u64 != entry.size || Digest::of(&bytes) != entry.digest {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

fn read_description(
    layout: &ImageLayout,
    config: &Descriptor,
    reference: &str,
) -> Result<ReleaseDescription, ReleaseError> {
    let bytes = layout.read_blob(&config.digest, MAX_CONFIG_SIZE)?;
    #[derive(serde::Deserialize)]
    struct Format {
        format: u32,
    }
    let format: Format = serde_json::from_slice(&bytes).map_err(|e| ReleaseError::Invalid {
        reference: reference.into(),
        reason: format!("its description is unreadable: {e}"),
    })?;
    if format.format > RELEASE_FORMAT {
        return Err(ReleaseError::NewerFormat {
            format: format.format,
            newest: RELEASE_FORMAT,
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| ReleaseError::Invalid {
        reference: reference.into(),
        reason: format!("its description is unreadable: {e}"),
    })
}

fn check_pins(
    layout: &ImageLayout,
    index: &ImageIndex,
    description: &ReleaseDescription,
    reference: &str,
) -> Result<(), ReleaseError> {
    for stack in &description.stacks {
        let part = format!("stack `{}@{}`", stack.name, stack.version);
        let pinned = index.manifests.iter().find(|d| {
            d.annotation(annotation::STACK) == Some(stack.name.as_str())
                && d.annotation(annotation::SERVICE).is_none()
        });
        match pinned {
            Some(entry) if entry.digest == stack.digest => {}
            Some(entry) => {
                return Err(ReleaseError::WrongPart {
                    reference: reference.into(),
                    part,
                    pinned: stack.digest.clone(),
                    found: format!("its index pins `{}`", entry.digest),
                })
            }
            None => {
                return Err(ReleaseError::Invalid {
                    reference: reference.into(),
                    reason: format!("its index does not pin {part}"),
                })
            }
        }
        // The bundle's manifest must be here; whether it is also an `index.json`
        // entry depends on who wrote the layout (a copy tool writes only the index).
        if !layout.has_blob(&stack.digest) {
            return Err(ReleaseError::MissingPart {
                reference: reference.into(),
                part: format!("bundle {part}"),
                layout: layout.root().display().to_string(),
            });
        }
    }
    if let Some(engine) = &description.engine {
        check_engine_pin(layout, index, engine, reference)?;
    }
    for service in &description.services {
        let pinned = index.manifests.iter().any(|d| {
            d.annotation(annotation::SERVICE) == Some(service.name.as_str())
                && d.digest == service.digest
        });
        if !pinned {
            return Err(ReleaseError::Invalid {
                reference: reference.into(),
                reason: format!(
                    "its index does not pin service `{}` at `{}`",
                    service.name, service.digest
                ),
            });
        }
    }
    Ok(())
}

/// The engine the description names is pinned by the index and its manifest is
/// here, with a layer of each platform's digest and size: what the runner installs
/// is what the signature covers.
fn check_engine_pin(
    layout: &ImageLayout,
    index: &ImageIndex,
    engine: &stackpack_schema::release::ReleaseEngine,
    reference: &str,
) -> Result<(), ReleaseError> {
    let part = format!("engine `{}` {}", engine.name, engine.version);
    let Some(entry) = index
        .manifests
        .iter()
        .find(|d| d.annotation(annotation::ENGINE).is_some())
    else {
        return Err(ReleaseError::Invalid {
            reference: reference.into(),
            reason: format!("its index does not pin {part}"),
        });
    };
    if entry.digest != engine.digest {
        return Err(ReleaseError::WrongPart {
            reference: reference.into(),
            part,
            pinned: engine.digest.clone(),
            found: format!("its index pins `{}`", entry.digest),
        });
    }
    let Some(manifest) = read_manifest(layout, entry) else {
        return Err(ReleaseError::MissingPart {
            reference: reference.into(),
            part: format!("the manifest of {part}"),
            layout: layout.root().display().to_string(),
        });
    };
    for platform in &engine.platforms {
        let layer = manifest.layers.iter().any(|l| {
            l.digest == platform.digest
                && l.size == platform.size
                && l.annotation(annotation::ENGINE_PLATFORM) == Some(platform.platform.as_str())
        });
        if !layer {
            return Err(ReleaseError::WrongPart {
                reference: reference.into(),
                part: format!("{part} for `{}`", platform.platform),
                pinned: platform.digest.clone(),
                found: "its engine manifest has no such layer".into(),
            });
        }
    }
    Ok(())
}
