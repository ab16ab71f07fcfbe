//! Channel statements as OCI artifacts: `stackpack promote` writes one whose
//! `subject` is the release index (or a stack's bundle manifest) and whose one
//! layer is the vendor's [`SignedChannelStatement`]. It travels like a signature:
//! pushed to the release's repository (the registry schedules waves from it),
//! carried in an export for an airgapped runner, kept in the runner's store.

use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::rollout::SignedChannelStatement;

use crate::layout::{ImageLayout, LayoutError, SUBJECT_ANNOTATION};

/// The largest statement read: a few hundred bytes in practice.
pub const STATEMENT_LIMIT: u64 = 64 * 1024;

/// The `dev.stackpack.kind` of a statement's index entry in a layout.
pub const CHANNEL_STATEMENT_KIND: &str = "channel-statement";

/// The manifest of a statement artifact and its layer's bytes, ready to push or
/// to write into a layout. `subject` is the approved release index (or bundle).
pub fn statement_artifact(
    signed: &SignedChannelStatement,
    subject: &Descriptor,
) -> (ImageManifest, Vec<u8>) {
    let layer = signed.to_bytes();
    let s = &signed.statement;
    let mut annotations = Annotations::new();
    annotations.insert(annotation::CREATED.into(), s.promoted_at.clone());
    annotations.insert(annotation::CHANNEL.into(), s.channel.clone());
    annotations.insert(annotation::RELEASE.into(), s.release.clone());
    annotations.insert(annotation::VERSION.into(), s.version.to_string());
    let mut subject = Descriptor::new(
        subject.media_type.clone(),
        subject.digest.clone(),
        subject.size,
    );
    subject.artifact_type = None;
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::CHANNEL_STATEMENT_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers: vec![Descriptor::new(
            media_type::CHANNEL_STATEMENT_LAYER,
            stackpack_schema::Digest::of(&layer),
            layer.len() as u64,
        )],
        subject: Some(subject),
        annotations: Some(annotations),
    };
    (manifest, layer)
}

/// The index-entry annotations of a statement manifest in a layout.
pub fn statement_entry_annotations(signed: &SignedChannelStatement) -> Annotations {
    let s = &signed.statement;
    let mut annotations = Annotations::new();
    annotations.insert(annotation::KIND.into(), CHANNEL_STATEMENT_KIND.into());
    annotations.insert(SUBJECT_ANNOTATION.into(), s.digest.to_string());
    annotations.insert(annotation::CHANNEL.into(), s.channel.clone());
    annotations.insert(annotation::RELEASE.into(), s.release.clone());
    annotations.insert(annotation::VERSION.into(), s.version.to_string());
    annotations
}

/// Writes a statement artifact into `layout` and lists it in `index.json`; returns
/// the statement manifest's descriptor (annotated as its index entry is).
pub fn write_statement(
    layout: &ImageLayout,
    signed: &SignedChannelStatement,
    subject: &Descriptor,
) -> Result<Descriptor, LayoutError> {
    let (manifest, layer) = statement_artifact(signed, subject);
    layout.write_blob(&layer)?;
    layout.write_blob(media_type::EMPTY_BLOB)?;
    let (digest, size) = layout.write_blob(&manifest.to_bytes())?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    descriptor.artifact_type = Some(media_type::CHANNEL_STATEMENT_ARTIFACT.into());
    descriptor.annotations = Some(statement_entry_annotations(signed));
    layout.add_entry(descriptor.clone())?;
    Ok(descriptor)
}

/// Reads the statement a statement manifest holds (capped; the layer's digest is
/// checked as it is read). Says nothing about its signature: callers verify.
pub fn read_statement(
    layout: &ImageLayout,
    manifest: &Descriptor,
) -> Result<SignedChannelStatement, LayoutError> {
    let malformed = |message: String| LayoutError::Malformed {
        path: layout.blob_path(&manifest.digest),
        message,
    };
    let bytes = layout.read_blob(&manifest.digest, STATEMENT_LIMIT)?;
    let parsed: ImageManifest =
        serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
    if parsed.artifact_type.as_deref() != Some(media_type::CHANNEL_STATEMENT_ARTIFACT) {
        return Err(malformed("not a channel statement".into()));
    }
    let layer = parsed
        .layers
        .iter()
        .find(|l| l.media_type == media_type::CHANNEL_STATEMENT_LAYER)
        .ok_or_else(|| malformed("the statement artifact has no statement layer".into()))?;
    let bytes = layout.read_blob(&layer.digest, STATEMENT_LIMIT)?;
    let signed =
        SignedChannelStatement::from_bytes(&bytes).map_err(|e| malformed(e.to_string()))?;
    if parsed.subject.as_ref().map(|s| &s.digest) != Some(&signed.statement.digest) {
        return Err(malformed(
            "the statement's subject is not the digest it approves".into(),
        ));
    }
    Ok(signed)
}

/// Every statement listed in `layout`'s `index.json` (for `channel`, when given),
/// each with its manifest descriptor. Unreadable ones are returned as errors, so a
/// caller can say which it skipped.
pub fn statements_in(
    layout: &ImageLayout,
    channel: Option<&str>,
) -> Result<Vec<(Descriptor, Result<SignedChannelStatement, LayoutError>)>, LayoutError> {
    Ok(layout
        .index()?
        .manifests
        .into_iter()
        .filter(|d| {
            d.artifact_type.as_deref() == Some(media_type::CHANNEL_STATEMENT_ARTIFACT)
                || d.annotation(annotation::KIND) == Some(CHANNEL_STATEMENT_KIND)
        })
        .filter(|d| channel.is_none() || d.annotation(annotation::CHANNEL) == channel)
        .map(|d| {
            let read = read_statement(layout, &d);
            (d, read)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackpack_schema::rollout::{ApprovedKind, ChannelStatement, CHANNEL_STATEMENT_FORMAT};
    use stackpack_schema::signature::PrivateKey;
    use stackpack_schema::Digest;

    #[test]
    fn a_statement_written_to_a_layout_reads_back_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path()).unwrap();
        let key = PrivateKey::from_secret_bytes([5; 32]);
        let index = Descriptor::new(media_type::OCI_INDEX, Digest::of(b"index"), 5);
        let signed = SignedChannelStatement::sign(
            ChannelStatement {
                format: CHANNEL_STATEMENT_FORMAT,
                channel: "stable".into(),
                kind: ApprovedKind::Release,
                release: "environment".into(),
                version: semver::Version::new(1, 0, 0),
                digest: index.digest.clone(),
                required: false,
                promoted_at: "2026-12-02T09:00:00Z".into(),
                promoted_by: None,
                key_id: String::new(),
            },
            &key,
        );
        write_statement(&layout, &signed, &index).unwrap();
        let found = statements_in(&layout, Some("stable")).unwrap();
        assert_eq!(found.len(), 1);
        let read = found[0].1.as_ref().unwrap();
        assert_eq!(read, &signed);
        assert!(read.verify(&[key.public_key()], "stable").is_ok());
        assert!(statements_in(&layout, Some("beta")).unwrap().is_empty());
    }
}
