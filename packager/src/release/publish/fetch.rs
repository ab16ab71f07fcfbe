//! Reading releases back from a registry: the description of a published version
//! (to compare the next one with), and a whole release pulled into a layout (for
//! `export --registry`).

use semver::Version;
use stackpack_bundle::layout::{ImageLayout, MAX_CONFIG_SIZE};
use stackpack_bundle::release::release_entry_annotations;
use stackpack_bundle::remote::{RegistryAddress, Remote};
use stackpack_bundle::transfer::pull_bundle;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};
use stackpack_schema::release::ReleaseDescription;

use crate::error::{Error, Result};
use crate::publish::transfer_error;

/// `<namespace>/releases/<name>`.
pub fn release_repository(address: &RegistryAddress, name: &str) -> String {
    format!("{}/releases/{name}", address.namespace)
}

/// Every version tag of the release.
pub fn release_versions(remote: &Remote, repository: &str) -> Result<Vec<Version>> {
    Ok(remote
        .tags(repository)?
        .iter()
        .filter_map(|t| Version::parse(t).ok())
        .collect())
}

/// A release as read from a registry.
pub struct RemoteRelease {
    /// The index's bytes, exactly as the registry holds them.
    pub bytes: Vec<u8>,
    pub descriptor: Descriptor,
    pub index: ImageIndex,
    pub description: ReleaseDescription,
}

/// The index and description of `repository:version`, if that tag exists.
pub fn remote_release(
    remote: &Remote,
    repository: &str,
    version: &Version,
) -> Result<Option<RemoteRelease>> {
    let Some((bytes, digest)) = remote.pull_manifest(repository, &version.to_string())? else {
        return Ok(None);
    };
    let invalid = |reason: String| {
        Error::refused(format!(
            "release `{}/{repository}:{version}` is unreadable: {reason}",
            remote.host()
        ))
    };
    let index: ImageIndex = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
    if index.artifact_type.as_deref() != Some(media_type::RELEASE_ARTIFACT) {
        return Err(invalid("it is not a Stackpack release".into()));
    }
    let first = index
        .manifests
        .first()
        .ok_or_else(|| invalid("its index is empty".into()))?;
    let (manifest_bytes, _) = remote
        .pull_manifest(repository, &first.digest.to_string())?
        .ok_or_else(|| invalid("its description is missing".into()))?;
    let manifest: ImageManifest =
        serde_json::from_slice(&manifest_bytes).map_err(|e| invalid(e.to_string()))?;
    let config = remote.pull_blob_bytes(repository, &manifest.config, MAX_CONFIG_SIZE)?;
    let description: ReleaseDescription =
        serde_json::from_slice(&config).map_err(|e| invalid(e.to_string()))?;
    let mut descriptor = Descriptor::new(media_type::OCI_INDEX, digest, bytes.len() as u64);
    descriptor.artifact_type = Some(media_type::RELEASE_ARTIFACT.into());
    Ok(Some(RemoteRelease {
        bytes,
        descriptor,
        index,
        description,
    }))
}

/// Pulls release `name@version` into `layout`: its bundles with their signatures
/// (from their stacks' repositories), its description, services and signatures
/// (from the release's repository), and the index entries that make `export` and
/// `verify_release` find it. Returns the index's descriptor.
pub fn pull_release(
    remote: &Remote,
    address: &RegistryAddress,
    name: &str,
    version: &Version,
    layout: &ImageLayout,
) -> Result<Descriptor> {
    let repository = release_repository(address, name);
    let RemoteRelease {
        bytes,
        descriptor,
        index,
        description,
    } = remote_release(remote, &repository, version)?.ok_or_else(|| {
        Error::usage(format!("release `{name}@{version}` is not in `{address}`"))
            .hint("list the versions with `oras repo tags HOST/NAMESPACE/releases/NAME`")
    })?;
    for stack in &description.stacks {
        pull_bundle(
            remote,
            &address.stack_repository(&stack.name),
            &stack.name,
            &stack.version,
            layout,
            None,
        )
        .map_err(transfer_error)?;
    }
    let bundles: Vec<&Descriptor> = index
        .manifests
        .iter()
        .filter(|d| d.annotation(annotation::STACK).is_some())
        .collect();
    for entry in &index.manifests {
        // Bundles came whole with their signatures above; the rest (the description,
        // the bundles' signatures as the release pinned them, the services) lives in
        // the release's repository.
        if !bundles.iter().any(|b| b.digest == entry.digest) {
            pull_manifest_tree(remote, &repository, entry, layout)?;
        }
    }
    layout.write_blob(&bytes)?;
    add_release_entries(layout, &descriptor, name, version)?;
    Ok(descriptor)
}

/// Adds the release's `index.json` entry (its signature is inside the index),
/// replacing any older entry of the same version.
pub fn add_release_entries(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    name: &str,
    version: &Version,
) -> Result<()> {
    let mut entry = descriptor.clone();
    entry.annotations = Some(release_entry_annotations(name, version));
    let reference = entry.annotation(annotation::REF_NAME).map(str::to_string);
    layout.update_index(|index| {
        index.manifests.retain(|d| {
            d.digest != entry.digest && d.annotation(annotation::REF_NAME) != reference.as_deref()
        });
        index.manifests.push(entry);
    })?;
    Ok(())
}

/// A manifest (or an index and its manifests) and every blob it lists.
fn pull_manifest_tree(
    remote: &Remote,
    repository: &str,
    entry: &Descriptor,
    layout: &ImageLayout,
) -> Result<()> {
    let (bytes, _) = remote
        .pull_manifest(repository, &entry.digest.to_string())?
        .ok_or_else(|| {
            Error::refused(format!(
                "`{}/{repository}@{}` is missing: the release is incomplete in the registry",
                remote.host(),
                entry.digest
            ))
        })?;
    if media_type::is_index(&entry.media_type) {
        let index: ImageIndex = serde_json::from_slice(&bytes)
            .map_err(|e| Error::refused(format!("`{}` is not an index: {e}", entry.digest)))?;
        for child in &index.manifests {
            pull_manifest_tree(remote, repository, child, layout)?;
        }
    } else {
        let manifest: ImageManifest = serde_json::from_slice(&bytes)
            .map_err(|e| Error::refused(format!("`{}` is not a manifest: {e}", entry.digest)))?;
        let blobs: Vec<Descriptor> = manifest.blobs().cloned().collect();
        remote.pull_blobs(repository, &blobs, layout, None)?;
    }
    layout.write_blob(&bytes)?;
    Ok(())
}
