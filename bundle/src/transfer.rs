//! Moving bundles between registries, image layouts and tar files.
//!
//! - [`pull_bundle`]: a bundle and its signatures from a registry into a layout
//!   (usually a staging layout the caller verifies before trusting it);
//! - [`push_manifest_with_blobs`] and [`push_referrer`]: a manifest and its blobs,
//!   or a signature, from a layout to a registry;
//! - [`export_bundles`]: bundles and their signatures from a layout into an OCI image
//!   layout tar, for carrying into an airgapped account.
//!
//! None of these verify a bundle: they move bytes, checking every digest on the
//! way. Verification is [`crate::verify`]'s job, always done before use. A pull
//! given trusted keys ([`pull_bundle_reusing`]) checks only who signed, before the
//! layers move, so a bundle no trusted key signed costs its manifest alone.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use semver::Version;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type;
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageLayoutMarker, ImageManifest};

use crate::layout::{
    bundle_entry_annotations, referrer_entry_annotations, ImageLayout, LayoutError,
    MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE,
};
use crate::remote::{Progress, Remote, RemoteError};
use crate::verify::{trusted_signer, Trust};

#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("`{reference}` is not in registry `{host}`")]
    NotFound { reference: String, host: String },
    #[error("`{reference}` is not a Stackpack bundle: {detail}")]
    NotABundle { reference: String, detail: String },
    /// No trusted key signs the bundle (checked before its layers move).
    #[error(transparent)]
    Signature(#[from] crate::verify::VerifyError),
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: String,
        #[source]
        source: io::Error,
    },
}

fn parse_manifest(bytes: &[u8], reference: &str) -> Result<ImageManifest, TransferError> {
    serde_json::from_slice(bytes).map_err(|e| TransferError::NotABundle {
        reference: reference.to_string(),
        detail: format!("its manifest is not an OCI image manifest: {e}"),
    })
}

/// What a pull brought.
#[derive(Clone, Debug)]
pub struct Pulled {
    pub manifest: Descriptor,
    pub signatures: Vec<Descriptor>,
    pub bytes_received: u64,
}

/// Pulls `stack@version` from `repository` (`<namespace>/stacks/<stack>`) into
/// `layout`, with every signature the registry lists for it.
pub fn pull_bundle(
    remote: &Remote,
    repository: &str,
    stack: &str,
    version: &Version,
    layout: &ImageLayout,
    progress: Option<Progress>,
) -> Result<Pulled, TransferError> {
    pull_bundle_reusing(
        remote,
        repository,
        stack,
        version,
        layout,
        None,
        &Trust::ReportOnly,
        progress,
    )
}

/// [`pull_bundle`], taking every blob that `have` (a store) already holds intact
/// from there instead of the registry: an upgrade moves only what changed, and
/// the progress says how many blobs were already here. With [`Trust::Keys`], a
/// bundle none of them signed is refused ([`TransferError::Signature`]) once its
/// signatures are here, before any layer moves.
#[allow(clippy::too_many_arguments)]
pub fn pull_bundle_reusing(
    remote: &Remote,
    repository: &str,
    stack: &str,
    version: &Version,
    layout: &ImageLayout,
    have: Option<&ImageLayout>,
    trust: &Trust,
    progress: Option<Progress>,
) -> Result<Pulled, TransferError> {
    let reference = format!("{}/{repository}:{version}", remote.host());
    let (bytes, digest) = remote
        .pull_manifest(repository, &version.to_string())?
        .ok_or_else(|| TransferError::NotFound {
            reference: reference.clone(),
            host: remote.host().to_string(),
        })?;
    let manifest = parse_manifest(&bytes, &reference)?;
    if manifest.artifact_type.as_deref() != Some(media_type::BUNDLE_ARTIFACT) {
        return Err(TransferError::NotABundle {
            reference,
            detail: format!(
                "its artifactType is `{}`",
                manifest.artifact_type.as_deref().unwrap_or("(none)")
            ),
        });
    }
    if manifest.config.size > MAX_CONFIG_SIZE {
        return Err(TransferError::NotABundle {
            reference,
            detail: format!(
                "its config is {} bytes, over the limit of {MAX_CONFIG_SIZE}",
                manifest.config.size
            ),
        });
    }
    let mut received = bytes.len() as u64;
    // The signatures first: who signed decides whether the layers move at all.
    let referrers = pull_referrers(
        remote,
        repository,
        &digest,
        &reference,
        layout,
        &mut received,
    )?;
    let signatures = signatures_among(&referrers);
    trusted_signer(layout, &signatures, &digest, stack, version, trust)?;
    // Every blob the manifest lists, whatever its media type.
    let blobs: Vec<Descriptor> = manifest.blobs().cloned().collect();
    if let Some(have) = have {
        copy_blobs_already_here(&blobs, have, layout, progress.as_ref())?;
    }
    received += remote.pull_blobs(repository, &blobs, layout, progress)?;
    layout.write_blob(&bytes)?;
    let mut manifest_descriptor =
        Descriptor::new(media_type::OCI_MANIFEST, digest.clone(), bytes.len() as u64);
    manifest_descriptor.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());

    let mut bundle_entry = manifest_descriptor.clone();
    bundle_entry.annotations = Some(bundle_entry_annotations(stack, version));
    let signature_entries: Vec<Descriptor> = referrers
        .iter()
        .map(|d| {
            let mut entry = d.clone();
            entry.annotations = Some(referrer_entry_annotations(
                d.artifact_type.as_deref(),
                &digest,
            ));
            entry
        })
        .collect();
    layout.update_index(|index| {
        let keep: BTreeSet<Digest> = std::iter::once(bundle_entry.digest.clone())
            .chain(signature_entries.iter().map(|d| d.digest.clone()))
            .collect();
        let name = bundle_entry
            .annotation(media_type::annotation::REF_NAME)
            .map(str::to_string);
        index.manifests.retain(|d| {
            !keep.contains(&d.digest)
                && (name.is_none()
                    || d.annotation(media_type::annotation::REF_NAME) != name.as_deref())
        });
        index.manifests.push(bundle_entry);
        index.manifests.extend(signature_entries);
    })?;
    Ok(Pulled {
        manifest: manifest_descriptor,
        signatures,
        bytes_received: received,
    })
}

/// Copies into `layout` every one of `blobs` that `have` holds intact (hashed as it
/// is copied), and tells `progress` how many of them need not move.
fn copy_blobs_already_here(
    blobs: &[Descriptor],
    have: &ImageLayout,
    layout: &ImageLayout,
    progress: Option<&Progress>,
) -> Result<(), TransferError> {
    let mut needed: Vec<&Digest> = blobs.iter().map(|b| &b.digest).collect();
    needed.sort();
    needed.dedup();
    let mut here = 0;
    for digest in &needed {
        if layout.has_blob(digest) || layout.copy_blob_from(have, digest)? {
            here += 1;
        }
    }
    if let Some(progress) = progress {
        progress.already_here(here, needed.len());
    }
    Ok(())
}

/// Pulls every referrer the registry lists for the bundle `digest` that travels with
/// it (signatures, Sigstore bundles, SBOMs) into `layout`; adds the bytes moved to
/// `received`. Each descriptor keeps its artifact type.
pub fn pull_referrers(
    remote: &Remote,
    repository: &str,
    digest: &Digest,
    reference: &str,
    layout: &ImageLayout,
    received: &mut u64,
) -> Result<Vec<Descriptor>, TransferError> {
    let mut referrers = Vec::new();
    for referrer in remote.referrers(repository, digest, None)? {
        let Some(artifact_type) = referrer.artifact_type.as_deref().filter(|t| {
            *t == media_type::SIGNATURE_ARTIFACT || media_type::ATTESTATION_ARTIFACTS.contains(t)
        }) else {
            continue;
        };
        let Some((bytes, referrer_digest)) =
            remote.pull_manifest(repository, &referrer.digest.to_string())?
        else {
            continue;
        };
        let manifest = parse_manifest(&bytes, &format!("{reference} referrer"))?;
        // A registry may list what someone pushed claiming this subject; one that
        // is not about this manifest is not taken (nor lets anyone block a pull).
        if manifest.subject.as_ref().map(|s| &s.digest) != Some(digest) {
            continue;
        }
        let blobs: Vec<Descriptor> = manifest
            .blobs()
            .filter(|blob| blob.size <= crate::attest::MAX_ATTESTATION_SIZE)
            .cloned()
            .collect();
        *received += remote.pull_blobs(repository, &blobs, layout, None)?;
        layout.write_blob(&bytes)?;
        *received += bytes.len() as u64;
        let mut descriptor = Descriptor::new(
            media_type::OCI_MANIFEST,
            referrer_digest,
            bytes.len() as u64,
        );
        descriptor.artifact_type = Some(artifact_type.into());
        referrers.push(descriptor);
    }
    Ok(referrers)
}

/// The signatures among `referrers`.
fn signatures_among(referrers: &[Descriptor]) -> Vec<Descriptor> {
    referrers
        .iter()
        .filter(|d| d.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT))
        .cloned()
        .collect()
}

/// What a push sent.
#[derive(Clone, Debug, Default)]
pub struct Pushed {
    pub bytes_sent: u64,
    pub blobs_skipped: usize,
}

/// Pushes the blobs of a manifest (config, layers) that the registry lacks, several
/// at a time, then the manifest itself under `reference` (a tag, or its digest), only
/// once every blob is whole: a failed blob leaves no manifest behind.
pub fn push_manifest_with_blobs(
    remote: &Remote,
    repository: &str,
    layout: &ImageLayout,
    manifest: &Descriptor,
    reference: &str,
    progress: Option<Progress>,
) -> Result<Pushed, TransferError> {
    let bytes = layout.read_blob(&manifest.digest, MAX_MANIFEST_SIZE)?;
    let parsed = parse_manifest(&bytes, &manifest.digest.to_string())?;
    let blobs: Vec<Descriptor> = std::iter::once(&parsed.config)
        .chain(&parsed.layers)
        .cloned()
        .collect();
    let sent = remote.push_blobs(repository, layout, &blobs, progress)?;
    let mut pushed = Pushed {
        bytes_sent: sent.bytes_sent,
        blobs_skipped: sent.blobs_skipped,
    };
    remote.push_manifest(repository, reference, &bytes, &manifest.media_type)?;
    pushed.bytes_sent += bytes.len() as u64;
    Ok(pushed)
}

/// Pushes a referrer manifest (a signature or an attestation; by digest, untagged)
/// and makes it findable: through the registry's referrers API when it has one,
/// else by adding it to the `sha256-<hex>` fallback index under its artifact type.
pub fn push_referrer(
    remote: &Remote,
    repository: &str,
    layout: &ImageLayout,
    signature: &Descriptor,
    subject: &Digest,
) -> Result<Pushed, TransferError> {
    push_referrers(
        remote,
        repository,
        layout,
        std::slice::from_ref(signature),
        subject,
    )
}

/// [`push_referrer`] for several referrers of one subject (a signature and its
/// attestations): each manifest with its blobs, then one look for the referrers API
/// and, without it, one update of the fallback index for them all.
pub fn push_referrers(
    remote: &Remote,
    repository: &str,
    layout: &ImageLayout,
    referrers: &[Descriptor],
    subject: &Digest,
) -> Result<Pushed, TransferError> {
    let mut pushed = Pushed::default();
    for referrer in referrers {
        let one = push_manifest_with_blobs(
            remote,
            repository,
            layout,
            referrer,
            &referrer.digest.to_string(),
            None,
        )?;
        pushed.bytes_sent += one.bytes_sent;
        pushed.blobs_skipped += one.blobs_skipped;
    }
    if !referrers.is_empty() && !remote.has_referrers_api(repository, subject)? {
        let listed: Vec<Descriptor> = referrers
            .iter()
            .map(|r| {
                let mut d = r.clone();
                d.annotations = None;
                if d.artifact_type.is_none() {
                    d.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
                }
                d
            })
            .collect();
        remote.add_all_to_referrers_fallback(repository, subject, &listed)?;
    }
    Ok(pushed)
}

/// Every blob a manifest needs, the manifest included; for an image index (a
/// release, a multi-platform service image), every blob of every manifest it lists.
fn blobs_of(layout: &ImageLayout, manifest: &Descriptor) -> Result<Vec<Descriptor>, TransferError> {
    let bytes = layout.read_blob(&manifest.digest, MAX_MANIFEST_SIZE)?;
    if media_type::is_index(&manifest.media_type) {
        let index: ImageIndex =
            serde_json::from_slice(&bytes).map_err(|e| TransferError::NotABundle {
                reference: manifest.digest.to_string(),
                detail: format!("its index is not an OCI image index: {e}"),
            })?;
        let mut blobs = vec![manifest.clone()];
        for child in &index.manifests {
            blobs.extend(blobs_of(layout, child)?);
        }
        return Ok(blobs);
    }
    let parsed = parse_manifest(&bytes, &manifest.digest.to_string())?;
    let mut blobs = vec![manifest.clone(), parsed.config.clone()];
    blobs.extend(parsed.layers.iter().cloned());
    Ok(blobs)
}

/// Writes `bundles` (manifest descriptors found in `layout`) and their signatures as
/// an OCI image layout tar at `out`: entries sorted, times and owners fixed, so the
/// same bundles give the same file. `extra` are further `index.json` entries (a
/// release index and its signature) written as given, with every blob they reach;
/// blobs in `omit` are left out (see `kit`'s `--for`).
/// Each blob is written once. Written to a temporary name and renamed, so a failed
/// export never leaves a half-written tar.
pub fn export_bundles(
    layout: &ImageLayout,
    bundles: &[Descriptor],
    extra: &[Descriptor],
    omit: &std::collections::BTreeSet<Digest>,
    out: &Path,
) -> Result<Exported, TransferError> {
    let mut entries: Vec<Descriptor> = Vec::new();
    let mut blobs: Vec<Descriptor> = Vec::new();
    let all = layout.entries()?;
    for bundle in bundles {
        let entry = all
            .iter()
            .find(|(_, d)| d.digest == bundle.digest)
            .map(|(_, d)| d.clone())
            .unwrap_or_else(|| bundle.clone());
        blobs.extend(blobs_of(layout, &entry)?);
        entries.push(entry);
        for signature in layout.referrers_for(&bundle.digest)? {
            blobs.extend(blobs_of(layout, &signature)?);
            entries.push(signature);
        }
    }
    for entry in extra {
        blobs.extend(blobs_of(layout, entry)?);
        entries.push(entry.clone());
    }
    blobs.sort_by(|a, b| a.digest.cmp(&b.digest));
    blobs.dedup_by(|a, b| a.digest == b.digest);
    // Left out for a reader that holds them (a kit made for one customer); the
    // index and every manifest still name them.
    let omitted: Vec<Digest> = blobs
        .iter()
        .filter(|b| omit.contains(&b.digest))
        .map(|b| b.digest.clone())
        .collect();
    blobs.retain(|b| !omit.contains(&b.digest));
    let index = ImageIndex::new(entries);

    let directory = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let write_error = |source: io::Error| TransferError::Write {
        path: out.display().to_string(),
        source,
    };
    let temporary = tempfile::Builder::new()
        .prefix(".stackpack-export-")
        .tempfile_in(directory)
        .map_err(write_error)?;
    let mut builder = tar::Builder::new(io::BufWriter::new(temporary.as_file()));
    let mut append = |path: &str, size: u64, reader: &mut dyn io::Read| -> io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        builder.append_data(&mut header, path, reader)
    };
    let marker = serde_json::to_vec(&ImageLayoutMarker::default()).expect("serialises");
    append("oci-layout", marker.len() as u64, &mut &marker[..]).map_err(write_error)?;
    let index_bytes = index.to_bytes();
    append(
        "index.json",
        index_bytes.len() as u64,
        &mut &index_bytes[..],
    )
    .map_err(write_error)?;
    for blob in &blobs {
        let mut file = layout.open_blob(&blob.digest)?;
        let size = file.metadata().map_err(write_error)?.len();
        append(
            &format!("blobs/sha256/{}", blob.digest.hex()),
            size,
            &mut file,
        )
        .map_err(write_error)?;
    }
    let writer = builder.into_inner().map_err(write_error)?;
    let file: &File = writer
        .into_inner()
        .map_err(|e| write_error(e.into_error()))?;
    file.sync_all().map_err(write_error)?;
    let size = file.metadata().map_err(write_error)?.len();
    let mut file = temporary.persist(out).map_err(|e| write_error(e.error))?;
    file.flush().map_err(write_error)?;
    Ok(Exported { size, omitted })
}

/// What [`export_bundles`] wrote.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The tar's size in bytes.
    pub size: u64,
    /// The blobs the export reaches but left out (asked to, in `omit`), sorted.
    pub omitted: Vec<Digest>,
}
