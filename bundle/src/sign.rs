//! Signing a manifest (a bundle's or a release's): a signature artifact whose
//! `subject` is the manifest, holding the signed payload, written into a layout.
//! The packager signs what it builds; tests sign what they forge.

use semver::Version;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::signature::{PrivateKey, SignaturePayload};

use crate::layout::{ImageLayout, LayoutError};

/// Writes a signature artifact for `subject` and returns its manifest's descriptor.
pub fn sign_manifest(
    subject: &Descriptor,
    repository: &str,
    version: &Version,
    signed_at: &str,
    key: &PrivateKey,
    layout: &ImageLayout,
) -> Result<Descriptor, LayoutError> {
    let envelope = key.sign(SignaturePayload {
        manifest_digest: subject.digest.clone(),
        repository: repository.to_string(),
        version: version.to_string(),
        key_id: String::new(),
        signed_at: signed_at.to_string(),
    });
    let (envelope_digest, envelope_size) = layout.write_blob(&envelope.to_bytes())?;
    layout.write_blob(media_type::EMPTY_BLOB)?;
    let mut subject_descriptor = Descriptor::new(
        subject.media_type.clone(),
        subject.digest.clone(),
        subject.size,
    );
    subject_descriptor.artifact_type = subject.artifact_type.clone();
    let mut annotations = Annotations::new();
    annotations.insert(annotation::CREATED.into(), signed_at.to_string());
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::SIGNATURE_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers: vec![Descriptor::new(
            media_type::SIGNATURE_LAYER,
            envelope_digest,
            envelope_size,
        )],
        subject: Some(subject_descriptor),
        annotations: Some(annotations),
    };
    let (digest, size) = layout.write_blob(&manifest.to_bytes())?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    descriptor.artifact_type = Some(media_type::SIGNATURE_ARTIFACT.into());
    Ok(descriptor)
}
