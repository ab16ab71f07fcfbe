//! Releases in the store: verified on import (before anything enters the store, with
//! the bundles they pin), added after their bundles, and verified again before use.

use semver::Version;
use stackpack_bundle::layout::{ImageLayout, MAX_MANIFEST_SIZE};
use stackpack_bundle::release::{self, VerifiedRelease};
use stackpack_bundle::verify::{Trust, VerifyError};
use stackpack_schema::oci::{ImageIndex, ImageManifest};

use crate::error::{Error, Result};
use crate::home::Home;
use crate::store::{removed_key, trusted, Beside, Copier};

/// The releases of a staging layout, imported beside the bundles they pin: verified
/// before them, added after them.
#[derive(Default)]
pub struct Staged(Vec<VerifiedRelease>);

impl Beside for Staged {
    fn verify(&mut self, home: &Home, staged: &ImageLayout) -> Result<()> {
        self.0 = verify_staged(home, staged)?;
        Ok(())
    }

    fn add(&mut self, copier: &mut Copier) -> Result<()> {
        for release in std::mem::take(&mut self.0) {
            add(copier, release)?;
        }
        Ok(())
    }

    /// A release's bundles are copied into its repository and stay signed for
    /// their own (`NS/stacks/<stack>`).
    fn signed_for(&self, pulled_from: &str, stack: &str) -> String {
        match pulled_from.rsplit_once("/releases/") {
            Some((namespace, _)) => format!("{namespace}/stacks/{stack}"),
            None => pulled_from.to_string(),
        }
    }
}

/// Every release of the staging layout, verified with the trusted keys. The
/// bundles they pin are verified by the bundle import beside this; a release whose
/// bundle is missing, or is not the one it pins, is refused here.
fn verify_staged(home: &Home, staged: &ImageLayout) -> Result<Vec<VerifiedRelease>> {
    let found = release::releases_in(staged)?;
    if found.is_empty() {
        return Ok(vec![]);
    }
    let trust = Trust::Keys(trusted(home)?);
    let store = home.store()?;
    let mut verified = Vec::new();
    for (name, version, descriptor) in found {
        let checked = release::verify_release_index(staged, &descriptor, &name, &version, &trust)
            .map_err(|e| nothing_imported(release_error(home, &name, &version, e)))?;
        stage_pinned_bundles(staged, &checked)?;
        if let Some(existing) = release::find_release(&store, &name, &version)? {
            if existing.digest != descriptor.digest {
                return Err(Error::refused(format!(
                    "nothing was imported: the store already holds a different release as `{name}@{version}` (`{}`, not `{}`)",
                    existing.digest.short(),
                    descriptor.digest.short()
                ))
                .hint("a version is immutable; ask your vendor why two releases carry the same version"));
            }
        }
        verified.push(checked);
    }
    Ok(verified)
}

/// Makes every bundle the release pins an entry of the staging layout, with the
/// signatures its index lists for it, so the bundle import beside this verifies
/// each one as it would on its own: a layout written by a copy tool (`skopeo copy
/// --all … oci:DIR`) holds the release's manifests but names only the release. A
/// staged entry for the same stack and version with another digest is not the
/// part the release pins, and is refused.
fn stage_pinned_bundles(staged: &ImageLayout, verified: &VerifiedRelease) -> Result<()> {
    use stackpack_bundle::layout::{bundle_entry_annotations, signature_entry_annotations};
    use stackpack_schema::media_type;
    let reference = format!(
        "{}@{}",
        verified.description.name, verified.description.version
    );
    for stack in &verified.description.stacks {
        match staged.find_bundle(&stack.name, &stack.version)? {
            Some(held) if held.digest == stack.digest => continue,
            Some(held) => {
                return Err(nothing_imported(Error::refused(format!(
                    "release `{reference}` pins `{}@{}` at `{}`, but the bundle beside it is `{}`",
                    stack.name,
                    stack.version,
                    stack.digest.short(),
                    held.digest.short()
                ))
                .hint("export the release again (`stackpack export NAME@VERSION`): a release travels with the parts it pins")));
            }
            None => {}
        }
        let Some(pinned) = verified.bundle_entry(&stack.name) else {
            continue;
        };
        let mut entry = pinned.clone();
        entry.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
        entry.annotations = Some(bundle_entry_annotations(&stack.name, &stack.version));
        staged.add_entry(entry)?;
        for candidate in &verified.index.manifests {
            let signs_it = staged
                .read_blob(&candidate.digest, MAX_MANIFEST_SIZE)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<ImageManifest>(&bytes).ok())
                .is_some_and(|m| {
                    m.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT)
                        && m.subject.as_ref().map(|s| &s.digest) == Some(&stack.digest)
                });
            if signs_it {
                let mut entry = candidate.clone();
                entry.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
                entry.annotations = Some(signature_entry_annotations(&stack.digest));
                staged.add_entry(entry)?;
            }
        }
    }
    Ok(())
}

/// The shared conversion, with an untrusted signature worded for a release (the
/// signature check words it for a bundle).
fn release_error(
    home: &Home,
    name: &str,
    version: &Version,
    error: release::ReleaseError,
) -> Error {
    match error {
        release::ReleaseError::Signature(VerifyError::Untrusted { keys, .. })
            if removed_key(home, &keys).is_some() =>
        {
            Error::refused(format!(
                "release `{name}@{version}` is signed by key {keys}, which was removed from this runner's trusted keys (`stackpack-runner trust remove`)"
            ))
            .hint("ask your vendor for this version signed by a key you trust; add the removed key back (`trust add`) only if it was removed by mistake")
        }
        release::ReleaseError::Signature(VerifyError::Untrusted { keys, .. }) => {
            Error::refused(format!(
                "release `{name}@{version}` is signed by key {keys}, which this runner does not trust"
            ))
            .hint("ask your vendor for the key that signs their releases, then run `stackpack-runner trust add vendor.pub`")
        }
        other => Error::from(other),
    }
}

fn nothing_imported(error: Error) -> Error {
    Error {
        message: format!("nothing was imported: {}", error.message),
        ..error
    }
}

/// Copies a verified release's index, description and signatures into the store
/// (and any service artifact the layout carries), then adds its index entry, last,
/// so it is never findable without them.
fn add(copier: &mut Copier, verified: VerifiedRelease) -> Result<()> {
    let staged = copier.from;
    let subject = verified.index_descriptor.digest.clone();
    copier.copy(&subject)?;
    let first = &verified.index.manifests[0];
    copy_manifest(copier, &first.digest)?;
    for service in &verified.description.services {
        // Services travel in an airgap tar; a release pulled or exported without
        // them still verifies (they are pinned by digest and copied registry to
        // registry).
        if staged.has_blob(&service.digest) {
            copy_artifact(copier, &service.digest)?;
        }
    }
    // The engine the release carries: its manifest and every platform's binary
    // (each copied blob is checked against its digest, which the signed
    // description pins).
    if let Some(engine) = &verified.description.engine {
        copy_manifest(copier, &engine.digest)?;
    }
    // The release's signatures are entries of its index (they sign the
    // description): copied with it, found through it.
    for signature in &verified.signatures {
        copy_manifest(copier, &signature.manifest_digest)?;
    }
    let description = &verified.description;
    let mut entry = verified.index_descriptor.clone();
    entry.annotations = Some(release::release_entry_annotations(
        &description.name,
        &description.version,
    ));
    copier.to.add_entry(entry)?;
    Ok(())
}

/// A manifest and the blobs it names.
fn copy_manifest(copier: &mut Copier, digest: &stackpack_schema::digest::Digest) -> Result<()> {
    let bytes = copier.from.read_blob(digest, MAX_MANIFEST_SIZE)?;
    copier.copy(digest)?;
    if let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) {
        copier.copy(&manifest.config.digest)?;
        for layer in &manifest.layers {
            copier.copy(&layer.digest)?;
        }
    }
    Ok(())
}

/// A service artifact: a manifest, or an index and the manifests it lists (each
/// copied when the layout holds it).
fn copy_artifact(copier: &mut Copier, digest: &stackpack_schema::digest::Digest) -> Result<()> {
    let bytes = copier.from.read_blob(digest, MAX_MANIFEST_SIZE)?;
    if let Ok(index) = serde_json::from_slice::<ImageIndex>(&bytes) {
        if !index.manifests.is_empty() {
            copier.copy(digest)?;
            for child in &index.manifests {
                if copier.from.has_blob(&child.digest) {
                    copy_manifest(copier, &child.digest)?;
                }
            }
            return Ok(());
        }
    }
    copy_manifest(copier, digest)
}

/// Whether the store holds a release called `name` (release and stack names share
/// one namespace: a name that is a release here is a release).
pub fn is_release(home: &Home, name: &str) -> Result<bool> {
    let store = home.store()?;
    Ok(release::releases_in(&store)?
        .iter()
        .any(|(n, _, _)| n == name))
}

/// `name@version` from the store, verified again (signature, description, pins)
/// with every bundle it pins.
pub fn load(home: &Home, name: &str, version: &Version) -> Result<VerifiedRelease> {
    let store = home.store()?;
    let trust = Trust::Keys(trusted(home)?);
    let verified = release::verify_release(&store, name, version, &trust).map_err(|e| {
        // Who signed it is the news, not which versions the store holds.
        let untrusted = matches!(
            e,
            release::ReleaseError::Signature(VerifyError::Untrusted { .. })
        );
        let mut error = release_error(home, name, version, e);
        if untrusted {
            return error;
        }
        if let Ok(found) = release::releases_in(&store) {
            let held: Vec<String> = found
                .iter()
                .filter(|(n, _, _)| n == name)
                .map(|(n, v, _)| format!("`{n}@{v}`"))
                .collect();
            if !held.is_empty() {
                error = error.hint(format!("the store holds {}", held.join(", ")));
            }
        }
        error
    })?;
    for stack in &verified.description.stacks {
        crate::store::verify_in(home, &store, &stack.name, &stack.version)?;
    }
    Ok(verified)
}
