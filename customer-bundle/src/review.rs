//! Reviewed plans: `plan --out FILE` writes the engine's saved plan together with a
//! record of what it was made from (bundle digest, inputs hash, state, plan hash,
//! summary, policy results), signed by this installation's key. `apply --plan FILE`
//! applies exactly that plan, and refuses it when the signature is not this
//! installation's, or when the bundle, the inputs or the state changed since.
//!
//! The file is one JSON document: `{"record": …, "signature": …, "plan": base64}`.

use std::path::Path;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use stackpack_schema::digest::Digest;
use stackpack_schema::receipt::PlanSummary;
use stackpack_schema::signature::{canonical_json, PrivateKey};

use super::error::{io, Error, Result};
use super::files;
use super::policy::Verdict;

pub const REVIEW_FORMAT: u32 = 1;

/// What a reviewed plan was made from, and what it does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub format: u32,
    pub customer: String,
    pub stack: String,
    pub version: String,
    pub bundle_digest: Digest,
    pub inputs_hash: Digest,
    /// The state the plan was made against: its lineage and serial, or `empty`.
    pub state: String,
    /// SHA-256 of the engine's saved plan file.
    pub plan_hash: Digest,
    pub summary: PlanSummary,
    pub policy: Verdict,
    pub created_at: String,
    pub key_id: String,
}

#[derive(Serialize, Deserialize)]
struct ReviewedPlan {
    record: Record,
    signature: String,
    plan: String,
}

/// The signing key, as ed25519-dalek's: `PrivateKey` keeps its own private.
fn dalek(key: &PrivateKey) -> ed25519_dalek::SigningKey {
    use ed25519_dalek::pkcs8::DecodePrivateKey;
    ed25519_dalek::SigningKey::from_pkcs8_pem(&key.to_pem())
        .expect("a PrivateKey always encodes to a readable PKCS#8 PEM")
}

/// Writes the reviewed plan to `out` (0600: a plan holds the inputs' values).
pub fn write(out: &Path, mut record: Record, plan: &[u8], key: &PrivateKey) -> Result<()> {
    use ed25519_dalek::Signer;
    record.key_id = key.public_key().key_id();
    let b64 = base64::engine::general_purpose::STANDARD;
    let signature = dalek(key).sign(&canonical_json(&record));
    let document = ReviewedPlan {
        record,
        signature: b64.encode(signature.to_bytes()),
        plan: b64.encode(plan),
    };
    let text = serde_json::to_string_pretty(&document).expect("serialisable") + "\n";
    files::write_private(out, &text)
}

/// Reads a reviewed plan; refuses one not signed by `key`, or whose plan does not
/// match its record. Returns the record and the plan file's bytes.
pub fn read(path: &Path, key: &PrivateKey) -> Result<(Record, Vec<u8>)> {
    use ed25519_dalek::Verifier;
    let shown = format!("`{}`", path.display());
    let text = std::fs::read_to_string(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::usage(format!("the reviewed plan {shown} does not exist"))
        } else {
            io("read", path, e)
        }
    })?;
    let refuse = |what: &str| {
        Error::refused(format!("the reviewed plan {shown} {what}: nothing was applied"))
            .at(shown.clone())
            .hint("make a new one with `stackpack-runner plan STACK@VERSION --inputs FILE --out FILE` on this runner")
    };
    let document: ReviewedPlan =
        serde_json::from_str(&text).map_err(|_| refuse("is not a reviewed plan"))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    let signature = b64
        .decode(&document.signature)
        .ok()
        .and_then(|s| ed25519_dalek::Signature::from_slice(&s).ok())
        .ok_or_else(|| refuse("has a malformed signature"))?;
    dalek(key)
        .verifying_key()
        .verify(&canonical_json(&document.record), &signature)
        .map_err(|_| {
            refuse("is not signed by this installation's key, or was changed after it was signed")
        })?;
    let plan = b64
        .decode(&document.plan)
        .map_err(|_| refuse("holds a malformed plan"))?;
    if Digest::of(&plan) != document.record.plan_hash {
        return Err(refuse("holds a plan that does not match its record"));
    }
    Ok((document.record, plan))
}

/// Reads a saved plan file from the work folder.
pub fn read_plan_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io("read", path, e))
}
