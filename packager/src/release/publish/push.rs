//! Pushing a release built in the local layout into `<namespace>/releases/<name>`.
//!
//! Order, so that a release becomes visible only once whole and signed: every part
//! the index pins (the description and its signature, bundles and their signatures,
//! services) by digest, then the index by digest, its attestations, and only then the version tag. A failure anywhere leaves no tag. Blobs already in the registry (a bundle's,
//! in its stack's repository; a service's, in its own repository on the same host)
//! are mounted rather than sent again.

use semver::Version;
use stackpack_bundle::layout::{ImageLayout, MAX_MANIFEST_SIZE};
use stackpack_bundle::remote::Remote;
use stackpack_bundle::transfer::{push_manifest_with_blobs, push_referrers};
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};

use super::services::ResolvedService;
use crate::error::{Error, Result};
use crate::publish::{transfer_error, Destination};

/// A release built in the local layout, ready to push.
pub(crate) struct BuiltRelease<'a> {
    pub version: &'a Version,
    pub index: &'a Descriptor,
    /// Its SBOM and Sigstore bundles, pushed as referrers before the tag.
    pub attestations: &'a [Descriptor],
    pub services: &'a [ResolvedService],
}

/// How a push ended.
pub(crate) enum Outcome {
    /// The version tag holds this release.
    Tagged { bytes_sent: u64 },
    /// Another publish holds the version tag, with this index: nothing was tagged.
    Taken(Digest),
}

/// Pushes `built` into `repository`.
pub(crate) fn push_release(
    destination: &Destination<'_>,
    repository: &str,
    built: &BuiltRelease<'_>,
) -> Result<Outcome> {
    let Destination {
        remote,
        layout,
        address,
        ..
    } = *destination;
    let index_bytes = layout.read_blob(&built.index.digest, MAX_MANIFEST_SIZE)?;
    let index: ImageIndex = serde_json::from_slice(&index_bytes)
        .map_err(|e| Error::refused(format!("the release index just written is invalid: {e}")))?;
    let mut sent = 0;
    // The stack whose repository holds the entries that follow (a bundle, then its
    // signatures).
    let mut from: Option<String> = None;
    for entry in &index.manifests {
        if let Some(stack) = entry.annotation(annotation::STACK) {
            from = Some(address.stack_repository(stack));
        } else if let Some(service) = entry.annotation(annotation::SERVICE) {
            from = built
                .services
                .iter()
                .find(|s| s.service.name == service && s.source.host == remote.host())
                .map(|s| s.source.repository.clone());
        } else if entry.artifact_type.as_deref() != Some(media_type::SIGNATURE_ARTIFACT) {
            from = None;
        }
        sent += push_part(remote, layout, repository, entry, from.as_deref())?;
    }
    remote.push_manifest(
        repository,
        &built.index.digest.to_string(),
        &index_bytes,
        media_type::OCI_INDEX,
    )?;
    sent += index_bytes.len() as u64;
    // Each bundle's attestations beside it in the release's repository, where a
    // runner pulling the release finds them (a bundle's live in its stack's too).
    for entry in index
        .manifests
        .iter()
        .filter(|e| e.annotation(annotation::STACK).is_some())
    {
        let attestations = layout.attestations_for(&entry.digest)?;
        sent += push_referrers(remote, repository, layout, &attestations, &entry.digest)
            .map_err(transfer_error)?
            .bytes_sent;
    }
    sent += push_referrers(
        remote,
        repository,
        layout,
        built.attestations,
        &built.index.digest,
    )
    .map_err(transfer_error)?
    .bytes_sent;

    let tag = built.version.to_string();
    if let Some(existing) = remote.tag_digest(repository, &tag)? {
        if existing != built.index.digest {
            return Ok(Outcome::Taken(existing));
        }
    }
    remote.push_manifest(repository, &tag, &index_bytes, media_type::OCI_INDEX)?;
    Ok(Outcome::Tagged { bytes_sent: sent })
}

/// One entry of the release index, by digest. An index (a multi-platform service)
/// goes after its manifests. `from` is a repository on the same host that holds the
/// blobs already: they are mounted from there.
fn push_part(
    remote: &Remote,
    layout: &ImageLayout,
    repository: &str,
    entry: &Descriptor,
    from: Option<&str>,
) -> Result<u64> {
    let bytes = layout.read_blob(&entry.digest, MAX_MANIFEST_SIZE)?;
    if media_type::is_index(&entry.media_type) {
        let index: ImageIndex = serde_json::from_slice(&bytes).map_err(|e| {
            Error::refused(format!("`{}` is not an image index: {e}", entry.digest))
        })?;
        let mut sent = 0;
        for child in &index.manifests {
            sent += push_part(remote, layout, repository, child, from)?;
        }
        remote.push_manifest(
            repository,
            &entry.digest.to_string(),
            &bytes,
            &entry.media_type,
        )?;
        return Ok(sent + bytes.len() as u64);
    }
    if let Some(from) = from {
        // Every blob is in `from` already: checking them there lets the push below
        // mount each one instead of uploading it.
        let manifest: ImageManifest = serde_json::from_slice(&bytes)
            .map_err(|e| Error::refused(format!("`{}` is not a manifest: {e}", entry.digest)))?;
        let blobs: Vec<Descriptor> = manifest.blobs().cloned().collect();
        remote.push_blobs(from, layout, &blobs, None)?;
    }
    let pushed = push_manifest_with_blobs(
        remote,
        repository,
        layout,
        entry,
        &entry.digest.to_string(),
        None,
    )
    .map_err(transfer_error)?;
    Ok(pushed.bytes_sent)
}
