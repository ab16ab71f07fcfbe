//! Freeze protection: a signed statement of a stack's newest stable version.
//!
//! Every `publish` run (CI runs it on a schedule too) signs, with the vendor key,
//! "the newest stable version of this stack is V, manifest D, as of now" and keeps it
//! under the tag [`LATEST_TAG`] of the stack's repository. A runner that pulls reads
//! it, checks the signature against the keys it trusts, and, when its policy sets a
//! maximum age, refuses a statement older than that: a registry that keeps serving
//! an old state (TUF's "indefinite freeze") is noticed, because it cannot make a
//! fresh statement without the vendor's key.

use semver::Version;
use stackpack_schema::attest::sigstore::SigstoreBundle;
use stackpack_schema::attest::statement::{
    Statement as InTotoStatement, Subject, LATEST_PREDICATE,
};
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, LATEST_ARTIFACT, LATEST_TAG};
use stackpack_schema::oci::{Descriptor, ImageManifest};
use stackpack_schema::signature::{PublicKey, SignatureEnvelope, SignaturePayload, SigningKey};

use crate::remote::{Remote, RemoteError};

/// The largest statement we read.
const MAX_STATEMENT: u64 = 64 * 1024;

/// Signs and pushes the statement that `version` (manifest `digest`) is the newest
/// stable version in `repository`, as of `now` (RFC 3339).
pub fn push_statement(
    remote: &Remote,
    repository: &str,
    version: &Version,
    digest: &Digest,
    key: &dyn SigningKey,
    now: &str,
) -> Result<(), RemoteError> {
    let envelope = key.sign_payload(SignaturePayload {
        manifest_digest: digest.clone(),
        repository: repository.to_string(),
        version: version.to_string(),
        key_id: String::new(),
        signed_at: now.to_string(),
    })?;
    let bytes = envelope.to_bytes();
    let layer_digest = remote.push_blob_bytes(repository, &bytes)?;
    remote.push_blob_bytes(repository, media_type::EMPTY_BLOB)?;
    // The same statement as a Sigstore bundle (about the newest version's manifest),
    // a second layer: readers take the first, and Sigstore tools read this one.
    // Not a referrer of that manifest: a scheduled CI re-signs it daily, and each
    // would stay listed among its referrers.
    let statement = InTotoStatement::new(
        Subject::new(repository, digest),
        LATEST_PREDICATE,
        serde_json::json!({ "repository": repository, "version": version.to_string(), "signedAt": now }),
    );
    let sealed = SigstoreBundle::seal(&statement, key)?.to_bytes();
    let sealed_digest = remote.push_blob_bytes(repository, &sealed)?;
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(LATEST_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers: vec![
            Descriptor::new(
                media_type::SIGNATURE_LAYER,
                layer_digest,
                bytes.len() as u64,
            ),
            Descriptor::new(
                media_type::SIGSTORE_BUNDLE,
                sealed_digest,
                sealed.len() as u64,
            ),
        ],
        subject: None,
        annotations: None,
    };
    remote.push_manifest(
        repository,
        LATEST_TAG,
        &manifest.to_bytes(),
        media_type::OCI_MANIFEST,
    )
}

/// A verified statement: who signed it and what it says.
#[derive(Clone, Debug)]
pub struct Statement {
    pub payload: SignaturePayload,
    pub signer: PublicKey,
}

/// Reads and verifies the statement of `repository`, which must speak of
/// `signed_for` (the same repository, or the vendor's one it mirrors); `Ok(None)`
/// when there is none.
pub fn fetch_statement(
    remote: &Remote,
    repository: &str,
    signed_for: &str,
    trusted: &[PublicKey],
) -> Result<Option<Statement>, String> {
    let Some((bytes, _)) = remote
        .pull_manifest(repository, LATEST_TAG)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let manifest: ImageManifest = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the latest statement is not a manifest: {e}"))?;
    if manifest.artifact_type.as_deref() != Some(LATEST_ARTIFACT) {
        return Err("the latest statement has the wrong artifactType".into());
    }
    let layer = manifest
        .layers
        .first()
        .ok_or("the latest statement has no layer")?;
    let bytes = remote
        .pull_blob_bytes(repository, layer, MAX_STATEMENT)
        .map_err(|e| e.to_string())?;
    let envelope = SignatureEnvelope::from_bytes(&bytes).map_err(|e| e.to_string())?;
    let signer = envelope.verify(trusted).map_err(|e| e.to_string())?;
    if envelope.payload.repository != signed_for {
        return Err(format!(
            "the latest statement speaks of `{}`, not `{signed_for}`",
            envelope.payload.repository
        ));
    }
    Ok(Some(Statement {
        payload: envelope.payload,
        signer,
    }))
}

/// How old a statement is, in seconds (negative when from the future).
pub fn age_seconds(signed_at: &str) -> Option<i64> {
    let at = time::OffsetDateTime::parse(signed_at, &time::format_description::well_known::Rfc3339)
        .ok()?;
    Some((time::OffsetDateTime::now_utc() - at).whole_seconds())
}
