//! Copies a release's service artifacts (container images, Helm charts) from the
//! store into the customer's own registry, so the cluster pulls nothing from
//! outside the account. Each artifact is checked against the digest the signed
//! release pins before it is sent, and read back by digest after.

use stackpack_bundle::layout::{ImageLayout, MAX_MANIFEST_SIZE};
use stackpack_bundle::release::VerifiedRelease;
use stackpack_bundle::remote::{RegistryAddress, Remote};
use stackpack_bundle::transfer::push_manifest_with_blobs;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::{Descriptor, ImageIndex, ImageManifest};

use crate::error::{Error, Result};
use crate::home::Home;

/// One service copied.
#[derive(Clone, Debug)]
pub struct Mirrored {
    pub service: String,
    /// `HOST/NS/<service>@<digest>`: what the cluster pulls.
    pub reference: String,
    pub bytes_sent: u64,
}

/// Copies every service of `release` to `to` (`HOST/NS`), each into `NS/<service>`,
/// by digest.
pub fn mirror(
    home: &Home,
    release: &VerifiedRelease,
    to: &RegistryAddress,
    insecure: bool,
) -> Result<Vec<Mirrored>> {
    let store = home.store()?;
    let d = &release.description;
    // Every artifact must be here, whole, before anything is sent.
    for service in &d.services {
        check_present(&store, &service.digest).map_err(|missing| {
            Error::refused(format!(
                "service `{}` of release `{}@{}` is not whole in the store: `{missing}` is missing or damaged; nothing was mirrored",
                service.name, d.name, d.version
            ))
            .hint("import the release from the tar your vendor exported with its services (`stackpack export NAME@VERSION`), or pull it again")
        })?;
    }
    let remote = Remote::new(&to.host, insecure)?;
    remote.probe()?;
    let mut out = Vec::new();
    for service in &d.services {
        let repository = format!("{}/{}", to.namespace, service.name);
        let mut descriptor = Descriptor::new(
            service.media_type.clone(),
            service.digest.clone(),
            service.size,
        );
        descriptor.artifact_type = service.artifact_type.clone();
        let mut sent = 0;
        let bytes = store.read_blob(&service.digest, MAX_MANIFEST_SIZE)?;
        match as_index(&bytes) {
            Some(index) => {
                for child in index.manifests.iter().filter(|c| store.has_blob(&c.digest)) {
                    sent += push_manifest_with_blobs(
                        &remote,
                        &repository,
                        &store,
                        child,
                        &child.digest.to_string(),
                        None,
                    )
                    .map_err(transfer_error)?
                    .bytes_sent;
                }
                remote.push_manifest(
                    &repository,
                    &service.digest.to_string(),
                    &bytes,
                    &service.media_type,
                )?;
                sent += bytes.len() as u64;
            }
            None => {
                sent += push_manifest_with_blobs(
                    &remote,
                    &repository,
                    &store,
                    &descriptor,
                    &service.digest.to_string(),
                    None,
                )
                .map_err(transfer_error)?
                .bytes_sent;
            }
        }
        // Read back by digest: the registry holds exactly what the release pins.
        remote
            .pull_manifest(&repository, &service.digest.to_string())?
            .ok_or_else(|| {
                Error::refused(format!(
                    "`{}/{repository}@{}` is not readable after it was pushed",
                    to.host, service.digest
                ))
            })?;
        out.push(Mirrored {
            service: service.name.clone(),
            reference: format!("{}/{repository}@{}", to.host, service.digest),
            bytes_sent: sent,
        });
    }
    Ok(out)
}

fn transfer_error(error: stackpack_bundle::transfer::TransferError) -> Error {
    match error {
        stackpack_bundle::transfer::TransferError::Remote(remote) => Error::from(remote),
        other => Error::refused_by(other),
    }
}

/// An image index with entries, or `None` for a manifest.
fn as_index(bytes: &[u8]) -> Option<ImageIndex> {
    serde_json::from_slice::<ImageIndex>(bytes)
        .ok()
        .filter(|i| !i.manifests.is_empty())
}

/// Every blob of the artifact `digest` is in the store and matches its digest; the
/// first that does not, otherwise.
fn check_present(store: &ImageLayout, digest: &Digest) -> std::result::Result<(), Digest> {
    let intact = |d: &Digest| store.has_blob(d) && store.blob_is_intact(d).unwrap_or(false);
    if !intact(digest) {
        return Err(digest.clone());
    }
    let bytes = store
        .read_blob(digest, MAX_MANIFEST_SIZE)
        .map_err(|_| digest.clone())?;
    let children: Vec<Digest> = match as_index(&bytes) {
        Some(index) => index.manifests.iter().map(|c| c.digest.clone()).collect(),
        None => vec![digest.clone()],
    };
    for child in children {
        if !intact(&child) {
            return Err(child);
        }
        let bytes = store
            .read_blob(&child, MAX_MANIFEST_SIZE)
            .map_err(|_| child.clone())?;
        let manifest: ImageManifest = serde_json::from_slice(&bytes).map_err(|_| child.clone())?;
        for blob in manifest.blobs() {
            if !intact(&blob.digest) {
                return Err(blob.digest.clone());
            }
        }
    }
    Ok(())
}
