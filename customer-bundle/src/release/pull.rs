//! `pull HOST/NS/releases/NAME:VERSION`: the release index, its signatures, its
//! description and every bundle it pins (with their signatures), all from the
//! release's repository, into a staging layout; then the same verified import as a
//! tar's. Service artifacts come too, so `mirror-services` can copy them from the
//! store into the customer's registry.

use stackpack_bundle::layout::{
    attestation_entry_annotations, bundle_entry_annotations, signature_entry_annotations,
    ImageLayout,
};
use stackpack_bundle::release::release_entry_annotations;
use stackpack_bundle::remote::Remote;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};

use crate::error::{Error, Result};
use crate::home::Home;
use crate::pull::RemoteBundle;
use crate::store::{import_pulled, staging, Imported};

/// Pulls the release `reference` names and imports it, verified, with its bundles.
pub fn pull(home: &Home, reference: &RemoteBundle, insecure: bool) -> Result<Vec<Imported>> {
    let name = &reference.stack;
    let version = &reference.version;
    if !version.pre.is_empty() && !home.config.policy.allow_prereleases {
        return Err(Error::refused(format!(
            "`{name}@{version}` is a prerelease, and this runner's policy allows stable versions only: nothing was pulled"
        ))
        .at(format!("`{}`", home.root.join("runner.toml").display()))
        .hint("set `allow-prereleases = true` under `[policy]` in `runner.toml` to allow prereleases"));
    }
    let remote = Remote::new(&reference.host, insecure)?;
    remote.probe()?;
    let (_staging_dir, staged) = staging(home)?;
    let repository = &reference.repository;
    let (bytes, digest) = remote
        .pull_manifest(repository, &version.to_string())?
        .ok_or_else(|| {
            Error::refused(format!(
                "`{}/{repository}:{version}` is not in registry `{}`",
                reference.host, reference.host
            ))
            .hint("check the release and version with your vendor")
        })?;
    let index: ImageIndex = serde_json::from_slice(&bytes).map_err(|e| {
        Error::refused(format!(
            "`{}/{repository}:{version}` is not a release: its manifest is not an OCI image index ({e})",
            reference.host
        ))
    })?;
    // The index's own `artifactType` is not required: copy tools drop it. What
    // makes it a release is checked by `verify_release_index` on import: a signed
    // description first.
    staged.write_blob(&bytes)?;
    for entry in &index.manifests {
        if entry.annotation(annotation::SERVICE).is_some() {
            service(&remote, repository, &entry.digest, &staged)?;
            continue;
        }
        let manifest = manifest_with_blobs(&remote, repository, &entry.digest, &staged)?;
        // Told apart by annotations and by the manifests themselves, which copy
        // tools keep byte for byte (unlike the index's own fields).
        if entry.annotation(annotation::STACK).is_some() {
            let (Some(stack), Some(Ok(version))) = (
                entry.annotation(annotation::STACK),
                entry
                    .annotation(annotation::VERSION)
                    .map(semver::Version::parse),
            ) else {
                continue;
            };
            let mut bundle =
                Descriptor::new(entry.media_type.clone(), entry.digest.clone(), entry.size);
            bundle.artifact_type = entry.artifact_type.clone();
            bundle.annotations = Some(bundle_entry_annotations(stack, &version));
            staged.add_entry(bundle)?;
            bundle_attestations(&remote, repository, &entry.digest, &staged)?;
        } else if let Some(subject) = manifest
            .subject
            .as_ref()
            .filter(|_| manifest.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT))
        {
            let mut signature =
                Descriptor::new(entry.media_type.clone(), entry.digest.clone(), entry.size);
            signature.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
            signature.annotations = Some(signature_entry_annotations(&subject.digest));
            staged.add_entry(signature)?;
        }
    }
    let mut release = Descriptor::new(media_type::OCI_INDEX, digest, bytes.len() as u64);
    release.artifact_type = Some(media_type::RELEASE_ARTIFACT.into());
    release.annotations = Some(release_entry_annotations(name, version));
    staged.add_entry(release)?;
    import_pulled(
        home,
        &staged,
        repository,
        &mut super::stored::Staged::default(),
    )
}

/// The attestations of a bundle the release pins (its SBOM and Sigstore bundles),
/// which the release's publish put beside it in the release's repository: checked
/// with the bundle on import, as a bundle pulled on its own is.
fn bundle_attestations(
    remote: &Remote,
    repository: &str,
    digest: &Digest,
    staged: &ImageLayout,
) -> Result<()> {
    let mut received = 0;
    let reference = format!("{}/{repository}@{digest}", remote.host());
    let referrers = stackpack_bundle::transfer::pull_referrers(
        remote,
        repository,
        digest,
        &reference,
        staged,
        &mut received,
    )
    .map_err(|e| match e {
        stackpack_bundle::transfer::TransferError::Remote(remote) => Error::from(remote),
        other => Error::refused(format!("nothing was pulled: {other}")),
    })?;
    for mut referrer in referrers {
        let kind = referrer.artifact_type.as_deref();
        if kind.is_some_and(|t| media_type::ATTESTATION_ARTIFACTS.contains(&t)) {
            referrer.annotations = Some(attestation_entry_annotations(digest));
            staged.add_entry(referrer)?;
        }
    }
    Ok(())
}

/// A service artifact (a manifest, or an index and its manifests), so that it can
/// be mirrored into the customer's registry from the store.
fn service(remote: &Remote, repository: &str, digest: &Digest, staged: &ImageLayout) -> Result<()> {
    let (bytes, _) = remote
        .pull_manifest(repository, &digest.to_string())?
        .ok_or_else(|| missing(remote, repository, digest))?;
    match serde_json::from_slice::<ImageIndex>(&bytes)
        .ok()
        .filter(|i| !i.manifests.is_empty())
    {
        Some(index) => {
            for child in &index.manifests {
                manifest_with_blobs(remote, repository, &child.digest, staged)?;
            }
            staged.write_blob(&bytes)?;
        }
        None => {
            manifest_with_blobs(remote, repository, digest, staged)?;
        }
    }
    Ok(())
}

fn missing(remote: &Remote, repository: &str, digest: &Digest) -> Error {
    Error::refused(format!(
        "nothing was pulled: `{}/{repository}@{digest}` is missing from the registry",
        remote.host()
    ))
    .hint("the release was copied without all its parts; ask your vendor to publish it again")
}

/// A manifest by digest and the blobs it names, each checked against its digest.
fn manifest_with_blobs(
    remote: &Remote,
    repository: &str,
    digest: &Digest,
    staged: &ImageLayout,
) -> Result<ImageManifest> {
    let (bytes, _) = remote
        .pull_manifest(repository, &digest.to_string())?
        .ok_or_else(|| missing(remote, repository, digest))?;
    let manifest: ImageManifest = serde_json::from_slice(&bytes).map_err(|e| {
        Error::refused(format!(
            "`{repository}@{digest}` is not an OCI image manifest: {e}"
        ))
    })?;
    let blobs: Vec<Descriptor> = manifest.blobs().cloned().collect();
    remote.pull_blobs(repository, &blobs, staged, None)?;
    staged.write_blob(&bytes)?;
    Ok(manifest)
}
