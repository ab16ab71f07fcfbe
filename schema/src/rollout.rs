//! Rollout: what the vendor approves for a channel, what the registry assigns to a
//! customer, and what a runner reports after a sync pass.
//!
//! Only the vendor approves. A [`ChannelStatement`] ("release R version V, index
//! digest D, is approved for channel C") is signed with the vendor's key by
//! `stackpack promote` and travels as an OCI artifact whose `subject` is the release
//! index (artifact type [`CHANNEL_STATEMENT_ARTIFACT`](crate::media_type::CHANNEL_STATEMENT_ARTIFACT)).
//! The registry schedules waves from it but cannot make one: the runner checks every
//! assignment against a statement signed by a key it trusts, for its own channel,
//! and for the exact digest it is about to apply. A compromised registry can delay or
//! reorder what the vendor signed, never add to it.
//!
//! A single stack is a release of one: a statement may name a stack, with the
//! bundle manifest's digest (`kind = "stack"`).

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::signature::{
    canonical_json, PrivateKey, PublicKey, SignError, SignatureError, SigningKey,
};

/// The channel statement format this build writes.
pub const CHANNEL_STATEMENT_FORMAT: u32 = 1;

/// What a statement approves: a release index, or a single stack's bundle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovedKind {
    #[default]
    Release,
    Stack,
}

impl ApprovedKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovedKind::Release => "release",
            ApprovedKind::Stack => "stack",
        }
    }
}

impl fmt::Display for ApprovedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which plans a runner's sync pass applies on its own (`[sync] approve`), as it
/// reports it with every pass.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Approve {
    /// Every plan the policies pass.
    Auto,
    /// Additions and in-place changes; a plan that replaces or destroys a resource
    /// waits for `stackpack-runner approve ID`.
    #[default]
    AutoUnlessDestructive,
    /// Every plan waits for `stackpack-runner approve ID`.
    Manual,
}

impl Approve {
    pub const ALL: [Approve; 3] = [
        Approve::Auto,
        Approve::AutoUnlessDestructive,
        Approve::Manual,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Approve::Auto => "auto",
            Approve::AutoUnlessDestructive => "auto-unless-destructive",
            Approve::Manual => "manual",
        }
    }

    /// True when a plan that replaces or destroys resources is applied without a person.
    pub fn applies_destructive_plans(self) -> bool {
        self == Approve::Auto
    }
}

impl fmt::Display for Approve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Approve {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Approve::ALL
            .into_iter()
            .find(|a| a.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not an approval policy (`auto`, `auto-unless-destructive` or `manual`)"))
    }
}

/// "Release `release` version `version` (index `digest`) is approved for `channel`."
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelStatement {
    pub format: u32,
    /// The channel (`stable`, `beta`, any name).
    pub channel: String,
    #[serde(default)]
    pub kind: ApprovedKind,
    /// The release's (or the stack's) name.
    pub release: String,
    pub version: semver::Version,
    /// The release index's digest (for a stack, the bundle manifest's).
    pub digest: Digest,
    /// A customer several versions behind passes through a required version rather
    /// than skipping it.
    #[serde(default)]
    pub required: bool,
    /// RFC 3339, UTC: when the vendor signed it. Informational: soak times run on
    /// the registry's clock, never on this one.
    pub promoted_at: String,
    /// Who promoted it (the CI job, a person), for the rollout's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_by: Option<String>,
    pub key_id: String,
}

/// A statement with the vendor's ed25519 signature over its canonical JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedChannelStatement {
    pub statement: ChannelStatement,
    /// Always `ed25519`.
    pub algorithm: String,
    /// Base64 of the 64-byte signature over the statement's canonical JSON.
    pub signature: String,
    /// Base64 of the signer's DER SubjectPublicKeyInfo.
    pub public_key: String,
}

/// Why a statement cannot be acted on.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StatementError {
    #[error("the channel statement is malformed: {0}")]
    Malformed(String),
    #[error("the channel statement's signature does not verify: {0}")]
    Signature(#[from] SignatureError),
    #[error("the channel statement approves `{release}@{version}` for channel `{found}`, not for this runner's channel `{expected}`")]
    OtherChannel {
        release: String,
        version: semver::Version,
        found: String,
        expected: String,
    },
    #[error("the channel statement approves `{release}@{version}` with digest `{signed}`, but the registry assigned digest `{assigned}`")]
    OtherDigest {
        release: String,
        version: semver::Version,
        signed: Digest,
        assigned: Digest,
    },
    #[error("channel statement format {0} is newer than this build reads")]
    NewerFormat(u32),
}

/// Why a channel statement by `key_id` is refused for `what` (`R@V`) signed by
/// `signers` (key ids): only a key that signed what a statement approves may
/// approve it. One wording for the registry's refusal and `stackpack promote`'s.
pub fn foreign_signer(what: &str, key_id: &str, signers: &[String]) -> String {
    let signed_by = if signers.is_empty() {
        "no signature the registry holds".to_string()
    } else {
        let mut ids: Vec<&String> = signers.iter().collect();
        ids.sort();
        ids.dedup();
        format!(
            "key {}",
            ids.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "the channel statement is signed by key `{key_id}`, but `{what}` is signed by {signed_by}: only a key that signed what a statement approves may approve it"
    )
}

/// The hint that goes with [`foreign_signer`].
pub const FOREIGN_SIGNER_HINT: &str =
    "promote with the key that signed the release (`stackpack promote --key`); after a key rotation, publish a version signed by the new key";

impl SignedChannelStatement {
    /// Signs `statement` with the vendor's key in memory (its `key_id` is set here).
    pub fn sign(statement: ChannelStatement, key: &PrivateKey) -> SignedChannelStatement {
        SignedChannelStatement::try_sign(statement, key)
            .expect("an ed25519 key in memory always signs")
    }

    /// Signs `statement` with any of the vendor's keys (a KMS's too).
    pub fn try_sign(
        mut statement: ChannelStatement,
        key: &dyn SigningKey,
    ) -> Result<SignedChannelStatement, SignError> {
        let public_key = key.public_key();
        statement.key_id = public_key.key_id();
        let signature = key.try_sign(&canonical_json(&statement))?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Ok(SignedChannelStatement {
            statement,
            algorithm: public_key.algorithm().into(),
            signature: b64.encode(signature),
            public_key: b64.encode(public_key.to_der()),
        })
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, StatementError> {
        let signed: SignedChannelStatement =
            serde_json::from_slice(bytes).map_err(|e| StatementError::Malformed(e.to_string()))?;
        if signed.statement.format > CHANNEL_STATEMENT_FORMAT {
            return Err(StatementError::NewerFormat(signed.statement.format));
        }
        Ok(signed)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a statement always serialises")
    }

    /// Checks the signature against the statement's own key: says nothing about
    /// trust. The registry does this on the way in; the runner calls [`Self::verify`].
    pub fn verify_integrity(&self) -> Result<PublicKey, StatementError> {
        let signer = PublicKey::verify_detached(
            &canonical_json(&self.statement),
            &self.algorithm,
            &self.signature,
            &self.public_key,
            &self.statement.key_id,
        )?;
        Ok(signer)
    }

    /// Integrity, then that the signer is one of `trusted` and the statement is for
    /// `channel`.
    pub fn verify(
        &self,
        trusted: &[PublicKey],
        channel: &str,
    ) -> Result<PublicKey, StatementError> {
        let signer = self.verify_integrity()?;
        if !trusted.contains(&signer) {
            return Err(SignatureError::Untrusted(signer.key_id()).into());
        }
        if self.statement.channel != channel {
            return Err(StatementError::OtherChannel {
                release: self.statement.release.clone(),
                version: self.statement.version.clone(),
                found: self.statement.channel.clone(),
                expected: channel.to_string(),
            });
        }
        Ok(signer)
    }
}

/// One thing the registry assigns a customer: the statement that approves it, for
/// the customer's channel, once the customer's wave is open.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    pub kind: ApprovedKind,
    pub release: String,
    pub version: semver::Version,
    pub digest: Digest,
    /// The registry's rollout this assignment comes from.
    pub rollout: i64,
    /// RFC 3339, UTC, on the registry's clock.
    pub assigned_at: String,
    /// The vendor's signed approval; the runner refuses an assignment without a
    /// statement it trusts for exactly this release, version, digest and channel.
    pub statement: SignedChannelStatement,
    /// The newest version the channel has for this release, when the assignment is a
    /// required step on the way to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_the_way_to: Option<semver::Version>,
    /// Set when the vendor's forecast for this customer replaces or destroys
    /// resources: the runner holds the plan for a person whatever its approval
    /// policy, and says why with these words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<String>,
}

impl Assignment {
    /// Checks the statement (trusted signer, this channel) and that it approves
    /// exactly what is assigned.
    pub fn verify(
        &self,
        trusted: &[PublicKey],
        channel: &str,
    ) -> Result<PublicKey, StatementError> {
        let signer = self.statement.verify(trusted, channel)?;
        let s = &self.statement.statement;
        if s.release != self.release || s.version != self.version || s.kind != self.kind {
            return Err(StatementError::Malformed(format!(
                "the registry assigned `{}@{}`, but its statement approves `{}@{}`",
                self.release, self.version, s.release, s.version
            )));
        }
        if s.digest != self.digest {
            return Err(StatementError::OtherDigest {
                release: s.release.clone(),
                version: s.version.clone(),
                signed: s.digest.clone(),
                assigned: self.digest.clone(),
            });
        }
        Ok(signer)
    }
}

/// `GET /api/v1/customers/{id}/assignment`: what a customer's runner should run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssignmentResponse {
    pub customer: String,
    /// None: the customer is in no channel, and nothing is assigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<String>,
    /// One per release (or stack) the channel carries and the customer's wave has
    /// reached; empty when nothing is assigned yet.
    pub assignments: Vec<Assignment>,
    /// The registry's clock when it answered.
    pub now: String,
}

/// How a sync pass ended for one release, as the runner reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyncState {
    /// Runs what is assigned; nothing to do.
    Converged,
    /// Applied the assignment in this pass.
    Applied,
    /// A plan waits for a person's approval (`stackpack-runner approve ID`).
    PendingApproval,
    /// Outside the maintenance window: the apply waits for it.
    OutsideWindow,
    /// Changes were found outside the runner (`on-drift = "report"`).
    Drifted,
    /// The pass failed for this release (pull, verify, plan or apply).
    Failed,
    /// Refused (a downgrade, an untrusted statement, a prerelease by policy).
    Refused,
}

impl SyncState {
    pub const ALL: [SyncState; 7] = [
        SyncState::Converged,
        SyncState::Applied,
        SyncState::PendingApproval,
        SyncState::OutsideWindow,
        SyncState::Drifted,
        SyncState::Failed,
        SyncState::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SyncState::Converged => "converged",
            SyncState::Applied => "applied",
            SyncState::PendingApproval => "pending-approval",
            SyncState::OutsideWindow => "outside-window",
            SyncState::Drifted => "drifted",
            SyncState::Failed => "failed",
            SyncState::Refused => "refused",
        }
    }
}

impl std::str::FromStr for SyncState {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SyncState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a sync state"))
    }
}

impl fmt::Display for SyncState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A plan waiting for approval, as reported (never the plan itself: it holds the
/// inputs' values).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// What `stackpack-runner approve` takes.
    pub id: String,
    /// RFC 3339, UTC: when the plan was first held.
    pub since: String,
    pub add: u64,
    pub change: u64,
    pub destroy: u64,
    /// Resources replaced or destroyed, by address (at most a few dozen).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destructive: Vec<String>,
}

/// One release in a sync report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncReleaseReport {
    pub release: String,
    #[serde(default)]
    pub kind: ApprovedKind,
    /// What the pass was asked to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned: Option<semver::Version>,
    /// What runs when the pass ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<semver::Version>,
    pub state: SyncState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingApproval>,
    /// One line: why it failed, was refused or waits. Never a secret value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The receipt this pass left for it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_id: Option<String>,
}

/// `POST /api/v1/customers/{id}/sync`: a runner's pass, sent after every pass (also
/// one that changed nothing: it updates last-seen without a receipt).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    pub customer: String,
    /// RFC 3339, UTC, on the runner's clock (shown, never used for soak times).
    pub started_at: String,
    pub finished_at: String,
    pub releases: Vec<SyncReleaseReport>,
    /// A pass killed earlier, found and reported by this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// The runner's approval policy (`[sync] approve`): promote reads it to know
    /// which customers would apply a destructive forecast without a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Approve>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement() -> ChannelStatement {
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: "stable".into(),
            kind: ApprovedKind::Release,
            release: "environment".into(),
            version: semver::Version::new(1, 3, 0),
            digest: Digest::of(b"index"),
            required: false,
            promoted_at: "2026-12-02T09:00:00Z".into(),
            promoted_by: None,
            key_id: String::new(),
        }
    }

    #[test]
    fn a_statement_verifies_for_its_channel_with_a_trusted_key_only() {
        let vendor = PrivateKey::from_secret_bytes([7; 32]);
        let other = PrivateKey::from_secret_bytes([8; 32]);
        let signed = SignedChannelStatement::sign(statement(), &vendor);
        let round = SignedChannelStatement::from_bytes(&signed.to_bytes()).unwrap();
        assert!(round.verify(&[vendor.public_key()], "stable").is_ok());
        assert!(matches!(
            round.verify(&[vendor.public_key()], "beta"),
            Err(StatementError::OtherChannel { .. })
        ));
        assert!(matches!(
            round.verify(&[other.public_key()], "stable"),
            Err(StatementError::Signature(SignatureError::Untrusted(_)))
        ));
        let mut forged = round.clone();
        forged.statement.version = semver::Version::new(9, 0, 0);
        assert!(matches!(
            forged.verify(&[vendor.public_key()], "stable"),
            Err(StatementError::Signature(SignatureError::Invalid))
        ));
    }

    #[test]
    fn an_assignment_must_be_exactly_what_the_statement_approves() {
        let vendor = PrivateKey::from_secret_bytes([7; 32]);
        let signed = SignedChannelStatement::sign(statement(), &vendor);
        let mut assignment = Assignment {
            kind: ApprovedKind::Release,
            release: "environment".into(),
            version: semver::Version::new(1, 3, 0),
            digest: Digest::of(b"index"),
            rollout: 1,
            assigned_at: "2026-12-02T09:00:00Z".into(),
            statement: signed,
            on_the_way_to: None,
            hold: None,
        };
        assert!(assignment.verify(&[vendor.public_key()], "stable").is_ok());
        assignment.digest = Digest::of(b"another index");
        assert!(matches!(
            assignment.verify(&[vendor.public_key()], "stable"),
            Err(StatementError::OtherDigest { .. })
        ));
    }
}
