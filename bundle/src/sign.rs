//! Signing a manifest (a bundle's or a release's): a signature artifact whose
//! `subject` is the manifest, holding the signed payload, written into a layout;
//! and [`write_referrer`], the artifact every referrer (signature, Sigstore bundle,
//! SBOM) is written as. The packager signs what it builds; tests sign what they forge.

use semver::Version;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::signature::{SignaturePayload, SigningKey};

use crate::layout::{ImageLayout, LayoutError};

/// Writes a signature artifact for `subject` and returns its manifest's descriptor.
pub fn sign_manifest(
    subject: &Descriptor,
    repository: &str,
    version: &Version,
    signed_at: &str,
    key: &dyn SigningKey,
    layout: &ImageLayout,
) -> Result<Descriptor, LayoutError> {
    let envelope = key.sign_payload(SignaturePayload {
        manifest_digest: subject.digest.clone(),
        repository: repository.to_string(),
        version: version.to_string(),
        key_id: String::new(),
        signed_at: signed_at.to_string(),
    })?;
    write_referrer(
        layout,
        subject,
        Referrer {
            artifact_type: media_type::SIGNATURE_ARTIFACT,
            layer_media_type: media_type::SIGNATURE_LAYER,
            content: &envelope.to_bytes(),
            created: signed_at,
            annotations: Annotations::new(),
        },
    )
}

/// One referrer's content and how it is labelled.
pub struct Referrer<'a> {
    pub artifact_type: &'a str,
    pub layer_media_type: &'a str,
    pub content: &'a [u8],
    pub created: &'a str,
    /// Added to the manifest's annotations (beside `created`).
    pub annotations: Annotations,
}

/// Writes an artifact manifest whose `subject` is `subject` and whose one layer is
/// `referrer.content`, with the empty config; returns its descriptor, with its
/// artifact type.
pub fn write_referrer(
    layout: &ImageLayout,
    subject: &Descriptor,
    referrer: Referrer<'_>,
) -> Result<Descriptor, LayoutError> {
    layout.write_blob(referrer.content)?;
    layout.write_blob(media_type::EMPTY_BLOB)?;
    let artifact_type = referrer.artifact_type;
    let manifest = referrer_manifest(subject, referrer);
    let (digest, size) = layout.write_blob(&manifest.to_bytes())?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    descriptor.artifact_type = Some(artifact_type.into());
    Ok(descriptor)
}

/// The manifest of a referrer: the empty config, `referrer.content` as its one
/// layer, `subject` as its subject. What [`write_referrer`] writes into a layout and
/// a push sends straight to a registry.
pub fn referrer_manifest(subject: &Descriptor, referrer: Referrer<'_>) -> ImageManifest {
    let mut subject_descriptor = Descriptor::new(
        subject.media_type.clone(),
        subject.digest.clone(),
        subject.size,
    );
    subject_descriptor.artifact_type = subject.artifact_type.clone();
    let mut annotations = referrer.annotations;
    annotations.insert(annotation::CREATED.into(), referrer.created.to_string());
    ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(referrer.artifact_type.into()),
        config: Descriptor::empty(),
        layers: vec![Descriptor::new(
            referrer.layer_media_type,
            Digest::of(referrer.content),
            referrer.content.len() as u64,
        )],
        subject: Some(subject_descriptor),
        annotations: Some(annotations),
    }
}
