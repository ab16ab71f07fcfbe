//! The deployment receipt: what a runner reports after it planned, applied, rolled
//! back or checked for drift, signed with the runner installation's ed25519 key.
//!
//! The runner builds a [`Receipt`], signs it with [`SignedReceipt::sign`] (an ed25519
//! signature over the receipt's canonical JSON, see
//! [`crate::signature::canonical_json`]) and posts the [`SignedReceipt`] to the
//! registry's `POST /api/v1/receipts`. The registry checks the signature with
//! [`SignedReceipt::verify_integrity`], then decides whether it trusts the key for
//! that customer. Receipt ids are unique, so posting the same receipt twice is
//! harmless. A receipt never holds a secret value: inputs appear only as a keyed hash
//! (HMAC with a per-installation secret), which cannot be tested against guesses.

use std::fmt;

use base64::Engine as _;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey};
use ed25519_dalek::Signer;
use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::signature::{canonical_json, PrivateKey, PublicKey};

/// Version of the receipt document's own format.
pub const RECEIPT_FORMAT: u32 = 1;

/// What the runner did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiptKind {
    Apply,
    Rollback,
    Drift,
    Plan,
    /// Everything the stack manages was destroyed; nothing of it runs any more.
    Destroy,
    /// A stuck state lock was broken (`stackpack-runner unlock`): nothing was planned
    /// or applied; version and bundle are those installed when it was broken.
    Unlock,
}

impl ReceiptKind {
    pub const ALL: [ReceiptKind; 6] = [
        ReceiptKind::Apply,
        ReceiptKind::Rollback,
        ReceiptKind::Drift,
        ReceiptKind::Plan,
        ReceiptKind::Destroy,
        ReceiptKind::Unlock,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptKind::Apply => "apply",
            ReceiptKind::Rollback => "rollback",
            ReceiptKind::Drift => "drift",
            ReceiptKind::Plan => "plan",
            ReceiptKind::Destroy => "destroy",
            ReceiptKind::Unlock => "unlock",
        }
    }

    /// True for the kinds that change what runs (apply, rollback, destroy).
    pub fn changes_deployment(self) -> bool {
        matches!(
            self,
            ReceiptKind::Apply | ReceiptKind::Rollback | ReceiptKind::Destroy
        )
    }
}

impl std::str::FromStr for ReceiptKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        ReceiptKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a receipt kind"))
    }
}

impl fmt::Display for ReceiptKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Succeeded,
    Failed,
    Drifted,
    NoChanges,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [
        Outcome::Succeeded,
        Outcome::Failed,
        Outcome::Drifted,
        Outcome::NoChanges,
    ];

    /// True when what was asked for is in place: it succeeded, or there was nothing
    /// to change.
    pub fn in_place(self) -> bool {
        matches!(self, Outcome::Succeeded | Outcome::NoChanges)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Drifted => "drifted",
            Outcome::NoChanges => "no-changes",
        }
    }
}

impl std::str::FromStr for Outcome {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Outcome::ALL
            .into_iter()
            .find(|outcome| outcome.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not an outcome"))
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The engine that ran the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineRun {
    pub name: crate::bundle::EngineName,
    pub version: String,
}

/// Counts from the plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanSummary {
    pub add: u64,
    pub change: u64,
    pub destroy: u64,
}

/// One deployment report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// [`RECEIPT_FORMAT`].
    pub format: u32,
    /// Unique per receipt (the runner draws it at random); the registry stores each
    /// id once.
    pub id: String,
    pub customer: String,
    pub stack: String,
    pub version: semver::Version,
    pub bundle_digest: Digest,
    /// HMAC-SHA256 over the customer's inputs, keyed by a secret that never leaves the
    /// installation (never the inputs themselves, and no plain hash a guess of a
    /// sensitive value could be tested against). Equal on one installation for equal
    /// inputs; not comparable across installations.
    pub inputs_hash: Digest,
    pub engine: EngineRun,
    pub plan: PlanSummary,
    pub kind: ReceiptKind,
    pub outcome: Outcome,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC.
    pub finished_at: String,
    /// Key id of the runner installation's key (see [`PublicKey::key_id`]).
    pub key_id: String,
    /// The release this run was part of, when the stack was applied as one of a
    /// release's stacks (absent for a stack applied on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<ReleaseRef>,
    /// Every resource the plan changes (address and action, never a value), at most
    /// [`MAX_RECEIPT_CHANGES`]; the registry holds them against the forecast.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<crate::plan::PlannedChange>,
    /// [`crate::plan::changes_digest`] of all the plan's changes (also those past
    /// the cap); absent from runners that predate forecasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes_digest: Option<Digest>,
    /// Resources the engine found changed outside it while refreshing before this
    /// plan: a difference from the forecast there is the customer's hand, not a
    /// wrong forecast.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drifted: Vec<String>,
    /// What preflight checked of the account before this plan (quotas, instance
    /// types, network ranges); absent when it did not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<crate::preflight::PreflightCheck>,
}

/// The most resource changes a receipt lists; the digest covers them all.
pub const MAX_RECEIPT_CHANGES: usize = 1000;

/// A release by name, version and index digest, as a receipt names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseRef {
    pub name: String,
    pub version: semver::Version,
    /// The release index's digest.
    pub digest: Digest,
}

/// A receipt with its signature: what is posted and stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedReceipt {
    pub receipt: Receipt,
    /// Always `ed25519`.
    pub algorithm: String,
    /// Base64 of the 64-byte ed25519 signature over the receipt's canonical JSON.
    pub signature: String,
    /// Base64 of the installation's DER SubjectPublicKeyInfo.
    pub public_key: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReceiptError {
    #[error("the receipt is malformed: {0}")]
    Malformed(String),
    #[error("the receipt's signature does not match: the receipt or its signature was altered")]
    Invalid,
    #[error("the receipt names key `{claimed}`, but it is signed with key `{actual}`")]
    KeyIdMismatch { claimed: String, actual: String },
}

impl SignedReceipt {
    /// Signs `receipt` with the installation key; sets the receipt's `key_id`.
    pub fn sign(mut receipt: Receipt, key: &PrivateKey) -> SignedReceipt {
        let public_key = key.public_key();
        receipt.key_id = public_key.key_id();
        // `PrivateKey` keeps its dalek key private to `signature`; it round-trips
        // through PKCS#8 here so that module stays untouched.
        let signing = ed25519_dalek::SigningKey::from_pkcs8_pem(&key.to_pem())
            .expect("a PrivateKey always encodes to a readable PKCS#8 PEM");
        let signature = signing.sign(&canonical_json(&receipt));
        let b64 = base64::engine::general_purpose::STANDARD;
        SignedReceipt {
            receipt,
            algorithm: "ed25519".to_string(),
            signature: b64.encode(signature.to_bytes()),
            public_key: b64.encode(public_key.to_der()),
        }
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ReceiptError> {
        serde_json::from_slice(bytes).map_err(|e| ReceiptError::Malformed(e.to_string()))
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("receipt serialisation cannot fail")
    }

    /// Checks the signature against the receipt's own public key and returns that key.
    /// Whether the key is trusted for the customer is the caller's question.
    pub fn verify_integrity(&self) -> Result<PublicKey, ReceiptError> {
        if self.algorithm != "ed25519" {
            return Err(ReceiptError::Malformed(format!(
                "algorithm `{}` is not supported, only `ed25519` is",
                self.algorithm
            )));
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let der = b64
            .decode(&self.public_key)
            .map_err(|_| ReceiptError::Malformed("`publicKey` is not base64".into()))?;
        let public_key = PublicKey::from_der(&der)
            .map_err(|_| ReceiptError::Malformed("`publicKey` is not an ed25519 key".into()))?;
        let actual = public_key.key_id();
        if actual != self.receipt.key_id {
            return Err(ReceiptError::KeyIdMismatch {
                claimed: self.receipt.key_id.clone(),
                actual,
            });
        }
        let bytes: [u8; 64] = b64
            .decode(&self.signature)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| ReceiptError::Malformed("`signature` is not 64 base64 bytes".into()))?;
        let verifying = ed25519_dalek::VerifyingKey::from_public_key_der(&der)
            .map_err(|_| ReceiptError::Malformed("`publicKey` is not an ed25519 key".into()))?;
        verifying
            .verify_strict(
                &canonical_json(&self.receipt),
                &ed25519_dalek::Signature::from_bytes(&bytes),
            )
            .map_err(|_| ReceiptError::Invalid)?;
        Ok(public_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Receipt {
        Receipt {
            format: RECEIPT_FORMAT,
            id: "r-0001".into(),
            customer: "globex".into(),
            stack: "data-plane".into(),
            version: semver::Version::parse("1.4.0").unwrap(),
            bundle_digest: Digest::of(b"manifest"),
            inputs_hash: Digest::of(b"inputs"),
            engine: EngineRun {
                name: crate::bundle::EngineName::Tofu,
                version: "1.8.0".into(),
            },
            plan: PlanSummary {
                add: 3,
                change: 1,
                destroy: 0,
            },
            kind: ReceiptKind::Apply,
            outcome: Outcome::Succeeded,
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:05:00Z".into(),
            key_id: String::new(),
            release: None,
            changes: Vec::new(),
            changes_digest: None,
            drifted: Vec::new(),
            preflight: Vec::new(),
        }
    }

    #[test]
    fn a_signed_receipt_verifies_and_an_altered_one_does_not() {
        let key = PrivateKey::from_secret_bytes([3; 32]);
        let signed = SignedReceipt::sign(sample(), &key);
        assert_eq!(signed.receipt.key_id, key.public_key().key_id());
        assert_eq!(signed.verify_integrity().unwrap(), key.public_key());
        let again = SignedReceipt::from_bytes(&signed.to_bytes()).unwrap();
        assert_eq!(again.verify_integrity().unwrap(), key.public_key());

        let mut altered = signed.clone();
        altered.receipt.version = semver::Version::parse("9.0.0").unwrap();
        assert_eq!(altered.verify_integrity(), Err(ReceiptError::Invalid));
    }

    #[test]
    fn kinds_and_outcomes_use_the_documented_spelling() {
        let json = serde_json::to_string(&SignedReceipt::sign(
            sample(),
            &PrivateKey::from_secret_bytes([1; 32]),
        ))
        .unwrap();
        assert!(json.contains(r#""kind":"apply""#));
        assert!(json.contains(r#""outcome":"succeeded""#));
        assert!(json.contains(r#""bundleDigest":"sha256:"#));
        assert_eq!(
            serde_json::to_string(&Outcome::NoChanges).unwrap(),
            r#""no-changes""#
        );
    }
}
