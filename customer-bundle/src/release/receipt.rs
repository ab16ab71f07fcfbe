//! The release receipt: one signed snapshot of what runs after a release was
//! applied, rolled back or destroyed — the stack receipts it is made of and the
//! services' digests. Signed by the installation key, like a stack receipt.

use base64::Engine as _;
use ed25519_dalek::pkcs8::DecodePrivateKey;
use ed25519_dalek::Signer;
use semver::Version;
use serde::{Deserialize, Serialize};
use stackpack_schema::digest::Digest;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::signature::{canonical_json, PrivateKey};

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
        let signing = ed25519_dalek::SigningKey::from_pkcs8_pem(&key.to_pem())
            .expect("a PrivateKey always encodes to a readable PKCS#8 PEM");
        let signature = signing.sign(&canonical_json(&receipt));
        let b64 = base64::engine::general_purpose::STANDARD;
        SignedReleaseReceipt {
            receipt,
            algorithm: "ed25519".into(),
            signature: b64.encode(signature.to_bytes()),
            public_key: b64.encode(public_key.to_der()),
        }
    }
}
