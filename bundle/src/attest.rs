//! A bundle's or a release's attestations in a layout: written by the packager
//! beside the signature, read and checked by the runner and by `inspect`.
//!
//! Three referrers of the manifest: the CycloneDX SBOM (plain JSON, what scanners
//! read), a Sigstore bundle holding the SLSA provenance (which names the SBOM's
//! digest, so its signature covers the SBOM), and a Sigstore bundle holding the
//! statement that mirrors the Stackpack signature. The schema's `attest` module
//! says what each holds; this one says where they are.

use serde_json::json;
use stackpack_schema::attest::provenance::Provenance;
use stackpack_schema::attest::sbom::Bom;
use stackpack_schema::attest::sigstore::{Opened, SigstoreBundle};
use stackpack_schema::attest::statement::{
    Statement, Subject, PROVENANCE_PREDICATE, SIGNATURE_PREDICATE,
};
use stackpack_schema::attest::AttestError;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::signature::{PublicKey, SigningKey};

use crate::layout::{attestation_entry_annotations, ImageLayout, LayoutError, MAX_MANIFEST_SIZE};
use crate::sign::{write_referrer, Referrer};

/// The largest attestation layer read (an SBOM of a stack with many files).
pub const MAX_ATTESTATION_SIZE: u64 = 16 * 1024 * 1024;

/// What the packager attests of one manifest.
pub struct ToAttest<'a> {
    pub subject: &'a Descriptor,
    /// The repository path without the registry host.
    pub repository: &'a str,
    pub version: &'a str,
    /// The source commit's time: attestations are as reproducible as the build.
    pub created: &'a str,
    pub sbom: &'a Bom,
}

/// Writes the SBOM, the provenance (made by `provenance` from the SBOM's digest)
/// and the signature statement of `what.subject` into `layout`, each as a referrer,
/// and adds them to the index. Returns their descriptors.
pub fn write_attestations(
    layout: &ImageLayout,
    what: &ToAttest<'_>,
    provenance: impl FnOnce(&Digest) -> Statement,
    key: &dyn SigningKey,
) -> Result<Vec<Descriptor>, LayoutError> {
    let sbom_bytes = what.sbom.to_bytes();
    let sbom_digest = Digest::of(&sbom_bytes);
    let sbom = write_referrer(
        layout,
        what.subject,
        Referrer {
            artifact_type: media_type::CYCLONEDX_JSON,
            layer_media_type: media_type::CYCLONEDX_JSON,
            content: &sbom_bytes,
            created: what.created,
            annotations: Annotations::new(),
        },
    )?;
    let signature = Statement::new(
        Subject::new(what.repository, &what.subject.digest),
        SIGNATURE_PREDICATE,
        json!({ "repository": what.repository, "version": what.version, "signedAt": what.created }),
    );
    let mut written = vec![sbom];
    for statement in [provenance(&sbom_digest), signature] {
        let sealed = SigstoreBundle::seal(&statement, key)?.to_bytes();
        let mut annotations = Annotations::new();
        annotations.insert(annotation::PREDICATE_TYPE.into(), statement.predicate_type);
        written.push(write_referrer(
            layout,
            what.subject,
            Referrer {
                artifact_type: media_type::SIGSTORE_BUNDLE,
                layer_media_type: media_type::SIGSTORE_BUNDLE,
                content: &sealed,
                created: what.created,
                annotations,
            },
        )?);
    }
    let entries: Vec<Descriptor> = written
        .iter()
        .map(|d| {
            let mut entry = d.clone();
            entry.annotations = Some(attestation_entry_annotations(&what.subject.digest));
            entry
        })
        .collect();
    layout.update_index(|index| {
        index
            .manifests
            .retain(|existing| !entries.iter().any(|e| e.digest == existing.digest));
        index.manifests.extend(entries.iter().cloned());
    })?;
    Ok(written)
}

/// The attestations of one subject found in a layout, as they are (unchecked).
#[derive(Debug, Default)]
pub struct Found {
    /// The SBOM's digest and bytes.
    pub sbom: Option<(Digest, Vec<u8>)>,
    /// Sigstore bundles by the predicate type their manifest announces.
    pub sealed: Vec<(String, Vec<u8>)>,
}

/// Reads the attestations the layout's index lists for `subject`. A referrer that
/// names another subject in its own manifest is refused (an index entry can lie).
pub fn find(layout: &ImageLayout, subject: &Digest) -> Result<Found, FindError> {
    let mut found = Found::default();
    for descriptor in layout.attestations_for(subject)? {
        let bytes = layout.read_blob(&descriptor.digest, MAX_MANIFEST_SIZE)?;
        let manifest: ImageManifest = serde_json::from_slice(&bytes)
            .map_err(|e| FindError::Malformed(descriptor.digest.clone(), e.to_string()))?;
        let named = manifest.subject.as_ref().map(|s| &s.digest);
        if named != Some(subject) {
            return Err(FindError::OtherSubject {
                referrer: descriptor.digest.clone(),
                subject: subject.clone(),
                named: named
                    .map(Digest::to_string)
                    .unwrap_or_else(|| "nothing".into()),
            });
        }
        let Some(layer) = manifest.layers.first() else {
            continue;
        };
        let content = layout.read_blob(&layer.digest, MAX_ATTESTATION_SIZE)?;
        match manifest.artifact_type.as_deref() {
            Some(media_type::CYCLONEDX_JSON) => found.sbom = Some((layer.digest.clone(), content)),
            Some(media_type::SIGSTORE_BUNDLE) => {
                let predicate = manifest
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(annotation::PREDICATE_TYPE))
                    .cloned()
                    .unwrap_or_default();
                found.sealed.push((predicate, content));
            }
            _ => {}
        }
    }
    Ok(found)
}

#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("attestation `{0}` is not an OCI manifest: {1}")]
    Malformed(Digest, String),
    #[error("attestation `{referrer}` is filed under `{subject}` but its manifest names `{named}` as its subject")]
    OtherSubject {
        referrer: Digest,
        subject: Digest,
        named: String,
    },
}

/// The provenance and SBOM of a subject, each checked: the provenance signed by a
/// trusted key and about this subject, the SBOM the one it names.
#[derive(Debug, Clone)]
pub struct Checked {
    pub provenance: Option<(Provenance, PublicKey)>,
    pub sbom: Option<(Digest, Bom)>,
}

/// Checks what [`find`] found against `trusted` keys.
pub fn check(
    found: &Found,
    subject: &Digest,
    trusted: &[PublicKey],
) -> Result<Checked, AttestError> {
    let mut provenance = None;
    for (predicate, bytes) in &found.sealed {
        if predicate != PROVENANCE_PREDICATE {
            continue;
        }
        let Opened { statement, key } =
            SigstoreBundle::from_bytes(bytes)?.open(subject, PROVENANCE_PREDICATE, trusted)?;
        let parsed: Provenance = serde_json::from_value(statement.predicate)
            .map_err(|e| AttestError::Malformed(format!("not a SLSA v1 provenance: {e}")))?;
        provenance = Some((parsed, key));
    }
    let sbom = match (&found.sbom, &provenance) {
        (Some((digest, bytes)), Some((p, _))) => {
            if p.sbom().as_ref() != Some(digest) {
                return Err(AttestError::Malformed(format!(
                    "the SBOM `{digest}` is not the one its provenance names (`{}`)",
                    p.sbom()
                        .map(|d| d.to_string())
                        .unwrap_or_else(|| "none".into())
                )));
            }
            let bom: Bom = serde_json::from_slice(bytes)
                .map_err(|e| AttestError::Malformed(format!("not a CycloneDX SBOM: {e}")))?;
            Some((digest.clone(), bom))
        }
        // An SBOM no signed provenance vouches for is not taken.
        _ => None,
    };
    Ok(Checked { provenance, sbom })
}
