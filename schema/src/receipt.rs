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
    /// The binary's digest when it was the engine the release carries (checked
    /// against the signed release before the run); none for the customer's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<crate::digest::Digest>,
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
    /// Why a failed run failed: the engine's first error (its summary and the
    /// resource it names), bounded and stripped of control characters. Absent from
    /// successes and from runners that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// What drifted, with the names of the attributes that changed (never their
    /// values), at most [`crate::plan::MAX_DRIFT_DETAILS`] resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<crate::plan::DriftedResource>,
    /// The runner's version, its platform and the providers the run used: support's
    /// first question about any failure. Absent from runners that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<RunnerRun>,
    /// What preflight checked of the account before this plan (quotas, instance
    /// types, network ranges); absent when it did not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<crate::preflight::PreflightCheck>,
    /// What the runner verified of the bundle before this run: the key that signed
    /// it, the provenance and SBOM it checked. Absent from runners that predate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<Verification>,
}

/// What a runner verified of a bundle before it ran it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// The trusted key whose signature checked.
    pub key_id: String,
    /// `ed25519` or `ecdsa-p256-sha256`.
    pub algorithm: String,
    /// The signed SLSA provenance, when the bundle carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<VerifiedProvenance>,
    /// The digest of the SBOM the provenance names, when the bundle carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sbom: Option<Digest>,
}

/// The part of a checked provenance a person asks about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedProvenance {
    pub repository: String,
    /// `refs/heads/main`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub commit: String,
    /// For people: `GitHub Actions run 123`, `a local build`.
    pub builder: String,
    /// SLSA `builder.id`.
    pub builder_id: String,
}

impl Verification {
    /// "built from `infra@3f9a12c` on `main` by GitHub Actions run 123, signed by
    /// key `…`": one wording for the runner, the registry's API, CLI and pages.
    pub fn summary(&self) -> String {
        let signed = format!("signed by key `{}` ({})", self.key_id, self.algorithm);
        let Some(p) = &self.provenance else {
            return format!("{signed}; no provenance");
        };
        let name = p
            .repository
            .trim_end_matches('/')
            .trim_end_matches(".git")
            .rsplit('/')
            .next()
            .unwrap_or(&p.repository);
        let commit: String = p.commit.chars().take(12).collect();
        let branch = p.git_ref.strip_prefix("refs/heads/").unwrap_or(&p.git_ref);
        let sbom = if self.sbom.is_some() {
            ", with its SBOM"
        } else {
            ""
        };
        format!(
            "built from `{name}@{commit}` on `{branch}` by {}, {signed}{sbom}",
            p.builder
        )
    }
}

/// The longest failure summary and resource address a receipt carries, in
/// characters: an engine error can be pages long, a receipt stays small.
pub const MAX_FAILURE_TEXT: usize = 1000;

/// The longest address or summary [`Failure::reason`] shows, in characters.
pub const REASON_SHOWN: usize = 300;

/// Why a run failed, as the engine said it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    /// The diagnostic's summary (`creating EKS Node Group (gpu): InsufficientInstanceCapacity`),
    /// or the runner's own error when the engine never got to say anything.
    pub summary: String,
    /// The resource the diagnostic names (`aws_eks_node_group.gpu`), when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

impl Failure {
    /// A failure with both texts bounded by [`MAX_FAILURE_TEXT`] and cleaned by
    /// [`plain_text`].
    pub fn new(summary: &str, address: Option<&str>) -> Failure {
        Failure {
            summary: plain_text(summary, MAX_FAILURE_TEXT),
            address: address
                .map(|a| plain_text(a, MAX_FAILURE_TEXT))
                .filter(|a| !a.is_empty()),
        }
    }

    /// "`aws_eks_node_group.gpu`: InsufficientInstanceCapacity", or the summary alone
    /// when the diagnostic names no resource: the one wording every interface gives
    /// a failure (runner, registry CLI, API, pages, alerts). Each text is cleaned and
    /// bounded again here (receipts come from other machines), backticks inside
    /// turned into quotes so the address stays one code span.
    pub fn reason(&self) -> String {
        let summary = plain_text(&self.summary, REASON_SHOWN).replace('`', "'");
        match &self.address {
            Some(address) => format!(
                "`{}`: {summary}",
                plain_text(address, REASON_SHOWN).replace('`', "'")
            ),
            None => summary,
        }
    }

    /// The first error diagnostic in what an engine printed to its error stream
    /// (boxed `│ Error: …` or plain), with the `with ADDRESS,` line that follows it.
    /// A failed condition (`Resource precondition failed`, a check's assertion)
    /// says only that in its summary: the vendor's `error_message`, the diagnostic's
    /// last line of text, is added to it, since that is what tells why.
    pub fn from_engine_output(text: &str) -> Option<Failure> {
        let mut summary: Option<String> = None;
        let mut address = None;
        let mut detail: Option<String> = None;
        for line in text.lines() {
            let line = strip_escapes(line);
            let line = line.trim_start_matches(['\u{2502}', '\u{256d}', '\u{2577}', ' ']);
            match &summary {
                None => {
                    if let Some(rest) = line.strip_prefix("Error: ") {
                        summary = Some(rest.trim().to_string());
                    }
                }
                Some(_) => {
                    if let Some(rest) = line.strip_prefix("with ") {
                        address = Some(rest.trim().trim_end_matches(',').to_string());
                        continue;
                    }
                    // The diagnostic ends at its box's bottom or at the next one.
                    if line.starts_with('\u{2575}') || line.starts_with("Error: ") {
                        break;
                    }
                    if is_diagnostic_text(line) {
                        detail = Some(line.trim().to_string());
                    }
                }
            }
        }
        let summary = summary?;
        let summary = match detail {
            Some(detail) if is_condition_failure(&summary) => format!("{summary}: {detail}"),
            _ => summary,
        };
        Some(Failure::new(&summary, address.as_deref()))
    }
}

/// A summary that names only the kind of condition that failed.
fn is_condition_failure(summary: &str) -> bool {
    let summary = summary.to_ascii_lowercase();
    summary.ends_with("condition failed") || summary.ends_with("assertion failed")
}

/// A line of a diagnostic's own words: not its source location (`on main.tf line
/// 3, …`), a quoted source line (`3:   condition = …`) or the values under it.
fn is_diagnostic_text(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && !line.starts_with("on ")
        && !line.starts_with(['\u{251c}', '\u{2502}', '\u{2514}'])
        && !line.split_once(':').is_some_and(|(number, _)| {
            !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
        })
}

/// Terminal escape sequences (`ESC [ … letter`) removed, as an engine's colours.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for next in chars.by_ref() {
                    if next.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// `text` on one line: escape sequences removed, every other control character (a
/// newline too) turned into a space, runs of spaces made one, and at most `max`
/// characters, the cut marked with `…`. What a page or an alert can show as it is
/// (once escaped for its format).
pub fn plain_text(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    let mut last_space = true;
    for c in strip_escapes(text).chars() {
        let c = if c.is_control() { ' ' } else { c };
        if c == ' ' && last_space {
            continue;
        }
        last_space = c == ' ';
        if count == max {
            out.pop();
            out.push('…');
            return out;
        }
        out.push(c);
        count += 1;
    }
    out.trim_end().to_string()
}

/// The runner a receipt came from and what it ran with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunnerRun {
    /// `stackpack-runner`'s version.
    pub version: String,
    /// `linux_amd64`, `darwin_arm64`: the platform names provider packages use.
    pub platform: String,
    /// The providers the bundle installed for this run, by source address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<ProviderRun>,
}

/// One provider a run used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRun {
    /// `registry.terraform.io/hashicorp/aws`.
    pub source: String,
    pub version: String,
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
                digest: None,
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
            failure: None,
            drift: Vec::new(),
            runner: None,
            preflight: Vec::new(),
            verified: None,
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

    #[test]
    fn a_receipt_signed_before_the_why_fields_still_verifies_and_reads_them_as_absent() {
        // A receipt as a runner without `failure`, `drift` and `runner` wrote it.
        let key = PrivateKey::from_secret_bytes([5; 32]);
        let signed = SignedReceipt::sign(sample(), &key);
        let text = String::from_utf8(signed.to_bytes()).unwrap();
        assert!(
            !text.contains("failure") && !text.contains("\"runner\""),
            "{text}"
        );
        let read = SignedReceipt::from_bytes(text.as_bytes()).unwrap();
        assert_eq!(read.receipt.failure, None);
        assert_eq!(read.verify_integrity().unwrap(), key.public_key());

        let mut with_why = sample();
        with_why.outcome = Outcome::Failed;
        with_why.failure = Some(Failure::new("boom", Some("aws_vpc.main")));
        with_why.runner = Some(RunnerRun {
            version: "0.1.0".into(),
            platform: "linux_amd64".into(),
            providers: vec![],
        });
        let signed = SignedReceipt::sign(with_why, &key);
        let read = SignedReceipt::from_bytes(&signed.to_bytes()).unwrap();
        assert_eq!(read.verify_integrity().unwrap(), key.public_key());
        assert_eq!(
            read.receipt.failure.unwrap().address.unwrap(),
            "aws_vpc.main"
        );
    }

    #[test]
    fn a_failed_condition_is_read_with_the_vendor_s_error_message() {
        let stderr = "╷\n│ Error: Resource precondition failed\n│ \n│   on main.tf line 14, in resource \"terraform_data\" \"guard\":\n│   14:       condition     = var.pool_size < 2\n│     ├────────────────\n│     │ var.pool_size is 3\n│ \n│ a pool of more than one GPU needs a bigger cluster\n╵\n";
        let failure = Failure::from_engine_output(stderr).unwrap();
        assert_eq!(
            failure.summary,
            "Resource precondition failed: a pool of more than one GPU needs a bigger cluster"
        );
        // Any other error keeps its own summary: its last line is not added.
        let other = "│ Error: creating VPC: denied\n│ \n│ some longer explanation\n╵\n";
        assert_eq!(
            Failure::from_engine_output(other).unwrap().summary,
            "creating VPC: denied"
        );
    }

    #[test]
    fn an_engine_error_is_read_to_its_summary_and_resource_bounded_and_on_one_line() {
        let stderr = "\u{1b}[31m╷\u{1b}[0m\n│ \u{1b}[1mError: \u{1b}[0mcreating EKS Node Group (gpu): InsufficientInstanceCapacity\n│ \n│   with aws_eks_node_group.gpu,\n│   on main.tf line 12, in resource \"aws_eks_node_group\" \"gpu\":\n╵\n";
        let failure = Failure::from_engine_output(stderr).unwrap();
        assert_eq!(
            failure.summary,
            "creating EKS Node Group (gpu): InsufficientInstanceCapacity"
        );
        assert_eq!(failure.address.as_deref(), Some("aws_eks_node_group.gpu"));
        assert_eq!(Failure::from_engine_output("all fine\n"), None);

        let huge = format!("<b>\u{7}bell</b>\r\n{}", "x".repeat(10_000));
        let bounded = Failure::new(&huge, None);
        assert_eq!(bounded.summary.chars().count(), MAX_FAILURE_TEXT);
        assert!(
            bounded.summary.starts_with("<b> bell</b> xxx"),
            "{}",
            &bounded.summary[..20]
        );
        assert!(bounded.summary.ends_with('…'));
        assert!(!bounded.summary.chars().any(char::is_control));
    }
}
