//! The release receipt: one signed snapshot of what runs after a release was
//! applied, rolled back or destroyed — the stack receipts it is made of and the
//! services' digests. Signed by the installation key, like a stack receipt. The
//! runner keeps it in its ledger and reports it; the registry's rollout health gate
//! reads it.

use crate::digest::Digest;
use crate::receipt::{Outcome, ReceiptKind};
use crate::signature::{canonical_json, PrivateKey};
use base64::Engine as _;
use semver::Version;
use serde::{Deserialize, Serialize};

/// The release receipt format this build writes.
pub const RELEASE_RECEIPT_FORMAT: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseReceipt {
    pub format: u32,
    pub id: String,
    pub customer: String,
    pub release: String,
    pub version: Version,
    /// The release index's digest.
    pub digest: Digest,
    /// Apply, rollback or destroy.
    pub kind: ReceiptKind,
    pub outcome: Outcome,
    /// Every stack of the release, in apply order.
    pub stacks: Vec<ReleaseReceiptStack>,
    pub services: Vec<ReleaseReceiptService>,
    pub started_at: String,
    pub finished_at: String,
    pub key_id: String,
}

/// One stack in a release receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseReceiptStack {
    pub name: String,
    /// The version the release pins.
    pub version: Version,
    /// What this run did with it.
    pub result: StackResult,
    /// The stack receipt of this run, or of the deployment left in place
    /// (`unchanged`); none when the stack was not reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_id: Option<String>,
    /// The version installed when the run ended (none: not installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<Version>,
}

/// What a release run did with one stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackResult {
    Applied,
    Unchanged,
    RolledBack,
    Destroyed,
    Failed,
    /// The run stopped before this stack.
    NotReached,
}

impl StackResult {
    pub fn as_str(self) -> &'static str {
        match self {
            StackResult::Applied => "applied",
            StackResult::Unchanged => "unchanged",
            StackResult::RolledBack => "rolled back",
            StackResult::Destroyed => "destroyed",
            StackResult::Failed => "failed",
            StackResult::NotReached => "not reached",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseReceiptService {
    pub name: String,
    pub digest: Digest,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedReleaseReceipt {
    pub receipt: ReleaseReceipt,
    /// Always `ed25519`.
    pub algorithm: String,
    /// Base64 of the ed25519 signature over the receipt's canonical JSON.
    pub signature: String,
    /// Base64 of the installation's DER SubjectPublicKeyInfo.
    pub public_key: String,
}

impl SignedReleaseReceipt {
    pub fn sign(mut receipt: ReleaseReceipt, key: &PrivateKey) -> SignedReleaseReceipt {
        let public_key = key.public_key();
        receipt.key_id = public_key.key_id();
        let signature = key.sign_bytes(&canonical_json(&receipt));
        let b64 = base64::engine::general_purpose::STANDARD;
        SignedReleaseReceipt {
            receipt,
            algorithm: "ed25519".into(),
            signature: b64.encode(signature),
            public_key: b64.encode(public_key.to_der()),
        }
    }

    /// Whether the signature matches the receipt and the key it names: true only
    /// for the receipt exactly as signed.
    pub fn verifies(&self) -> bool {
        crate::signature::PublicKey::verify_detached(
            &canonical_json(&self.receipt),
            &self.algorithm,
            &self.signature,
            &self.public_key,
            &self.receipt.key_id,
        )
        .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_receipt_verifies_as_signed_and_not_once_changed() {
        let key = PrivateKey::from_secret_bytes([3; 32]);
        let receipt = ReleaseReceipt {
            format: RELEASE_RECEIPT_FORMAT,
            id: "r-1".into(),
            customer: "globex".into(),
            release: "platform".into(),
            version: Version::new(1, 2, 0),
            digest: Digest::of(b"index"),
            kind: ReceiptKind::Apply,
            outcome: Outcome::Succeeded,
            stacks: vec![ReleaseReceiptStack {
                name: "network".into(),
                version: Version::new(1, 0, 0),
                result: StackResult::Unchanged,
                receipt_id: Some("r-0".into()),
                installed: Some(Version::new(1, 0, 0)),
            }],
            services: vec![ReleaseReceiptService {
                name: "inference".into(),
                digest: Digest::of(b"image"),
            }],
            started_at: "2026-12-01T00:00:00.000Z".into(),
            finished_at: "2026-12-01T00:01:00.000Z".into(),
            key_id: String::new(),
        };
        let signed = SignedReleaseReceipt::sign(receipt, &key);
        assert_eq!(signed.receipt.key_id, key.public_key().key_id());
        assert!(signed.verifies());
        let mut changed = signed.clone();
        changed.receipt.outcome = Outcome::Failed;
        assert!(!changed.verifies());
    }
}
