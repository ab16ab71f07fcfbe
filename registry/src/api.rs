//! The ledger API's JSON documents (`/api/v1/…`). Field names are camelCase, times
//! RFC 3339 UTC, digests whole.

use semver::Version;
use serde::{Deserialize, Serialize};
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::Digest;

use crate::timestamp::Timestamp;
use utoipa::ToSchema;

mod releases;
mod rollouts;
pub use releases::*;
pub use rollouts::*;

/// Where a release was built from.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
}

/// A published bundle (one *stack* version): recorded when its manifest is pushed.
/// Named before releases of a whole environment existed: those are
/// [`ReleaseVersion`] and [`ReleaseSnapshot`].
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub stack: String,
    #[schema(value_type = String)]
    pub version: Version,
    /// The OCI repository it was pushed to (`acme/stacks/data-plane`).
    pub repository: String,
    /// The bundle manifest's digest.
    #[schema(value_type = String)]
    pub digest: Digest,
    pub source: Source,
    /// When the source commit was made (from the bundle config).
    #[schema(value_type = Option<String>)]
    pub created: Option<Timestamp>,
    /// When the registry received it.
    #[schema(value_type = String)]
    pub published_at: Timestamp,
    pub prerelease: bool,
    /// The modules the bundle vendors, with their versions, when its config says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ReleaseModule>,
}

/// A customer: one vendor environment in one customer's cloud account.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    pub id: String,
    pub name: Option<String>,
    /// `production`, `staging`, … as registered; `None` until someone says.
    pub environment: Option<String>,
    #[schema(value_type = String)]
    pub created: Timestamp,
    /// When its last receipt finished; `None` if it never reported.
    #[schema(value_type = Option<String>)]
    pub last_seen: Option<Timestamp>,
    /// No receipt within the `staleAfter` age (or none at all). Only in listings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
    /// The cloud account its environment lives in (`customer set --account`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The cloud region (`customer set --region`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Who to call (`customer set --contact`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<String>,
    /// Free notes for support (`customer set --notes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// Body of `POST /api/v1/customers`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCustomer {
    pub id: String,
    pub name: Option<String>,
    /// `production`, `staging`, … (a name: `[a-z0-9]` with `.`, `_`, `-`).
    pub environment: Option<String>,
}

/// One receipt as the ledger keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    pub receipt_id: String,
    pub customer: String,
    pub stack: String,
    #[schema(value_type = String)]
    pub version: Version,
    /// The bundle manifest's digest.
    #[schema(value_type = String)]
    pub digest: Digest,
    /// `apply`, `rollback`, `drift`, `destroy` or `plan`.
    #[schema(value_type = String)]
    pub kind: ReceiptKind,
    /// `succeeded`, `failed`, `drifted` or `no-changes`.
    #[schema(value_type = String)]
    pub outcome: Outcome,
    #[schema(value_type = String)]
    pub started_at: Timestamp,
    #[schema(value_type = String)]
    pub finished_at: Timestamp,
    /// Key id of the runner installation that signed the receipt.
    pub key_id: String,
    #[schema(value_type = String)]
    pub received_at: Timestamp,
    /// The release the stack was applied as part of; absent when it was applied
    /// on its own (and for receipts from before releases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<DeployedRelease>,
    /// Why it failed, in `lastAttempt.reason`'s words; given in a customer's
    /// history, absent elsewhere and unless it failed and its runner said why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What one customer runs of one stack, with support's questions answered.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Running {
    pub customer: String,
    pub stack: String,
    #[schema(value_type = String)]
    pub version: Version,
    #[schema(value_type = String)]
    pub digest: Digest,
    /// When the apply or rollback that put this version in place finished.
    #[schema(value_type = String)]
    pub since: Timestamp,
    pub receipt_id: String,
    /// The highest stable version published for the stack, by semver precedence.
    #[schema(value_type = Option<String>)]
    pub latest_stable: Option<Version>,
    /// Runs a version lower than `latestStable`.
    pub behind: bool,
    /// Runs a prerelease (`1.4.0-feat.2`).
    pub prerelease: bool,
    /// The last drift check after the last apply found drift.
    pub drifted: bool,
}

/// What a customer's runner verified of the bundle in place before it applied it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedRun {
    pub stack: String,
    #[schema(value_type = String)]
    pub version: Version,
    /// The receipt of the apply (or rollback) that put it in place.
    pub receipt_id: String,
    /// Its signing key, provenance and SBOM, as the runner recorded them.
    #[schema(value_type = Object)]
    pub verification: stackpack_schema::receipt::Verification,
    /// The same in words: "built from `acme-infra@3f9a12c4e5d6` on `main` by GitHub
    /// Actions run 123, signed by key `…` (ed25519), with its SBOM".
    pub summary: String,
}

/// Answer to `POST /api/v1/receipts`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptAccepted {
    pub receipt_id: String,
    /// False when the same receipt had been stored before (posting is idempotent).
    pub created: bool,
}

/// A stack with its latest versions.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Stack {
    pub stack: String,
    #[schema(value_type = Option<String>)]
    pub latest_stable: Option<Version>,
    #[schema(value_type = Option<String>)]
    pub latest: Option<Version>,
    pub releases: u64,
}

/// A module vendored into a release's bundle, as its bundle config lists it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseModule {
    /// The module's name (`network`).
    pub name: String,
    /// Where it sits in the bundle (`modules/network`).
    pub path: String,
    /// The module package's version the vendored files match; `None` when the
    /// bundle did not record one (built without a registry, or an older packager).
    pub version: Option<String>,
    /// Digest over the module's files.
    pub digest: String,
}

/// Body of `POST /api/v1/releases`: a bundle published to another OCI registry
/// (ECR, Harbor), recorded here so the ledger knows it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewRelease {
    pub stack: String,
    pub version: String,
    /// Where the bundle lives (`registry.example/acme/stacks/data-plane`).
    pub repository: String,
    /// The bundle manifest's digest.
    pub digest: String,
    #[serde(default)]
    pub source: Source,
    /// When the source commit was made.
    pub created: Option<String>,
    /// The modules the bundle vendors, with their versions.
    #[serde(default)]
    pub modules: Vec<ReleaseModule>,
}

/// Body of `POST /api/v1/customers/{id}/keys`: another installation key of the
/// customer (a new runner, or a rotated key).
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewInstallationKey {
    /// The public key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
    pub public_key_pem: String,
}

/// An installation key the ledger trusts for a customer's receipts.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct InstallationKey {
    pub customer: String,
    pub key_id: String,
}

/// The last attempt to change a stack at a customer: an apply, rollback or destroy,
/// whatever its outcome.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// `apply`, `rollback`, `destroy` or `plan`.
    #[schema(value_type = String)]
    pub kind: ReceiptKind,
    /// `succeeded`, `failed`, `drifted` or `no-changes`.
    #[schema(value_type = String)]
    pub outcome: Outcome,
    #[schema(value_type = String)]
    pub version: Version,
    #[schema(value_type = String)]
    pub finished_at: Timestamp,
    pub receipt_id: String,
    /// Why it failed, from its receipt: "`aws_eks_node_group.gpu`: InsufficientInstanceCapacity"
    /// (the engine diagnostic's resource and summary, cleaned and bounded); absent
    /// unless it failed and its runner said why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One cell of the fleet matrix: what one customer runs of one stack. A customer
/// that never reported has one row without a stack.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FleetRow {
    pub customer: String,
    pub environment: Option<String>,
    pub stack: Option<String>,
    /// The version in place (last successful apply or rollback, not destroyed since).
    #[schema(value_type = Option<String>)]
    pub version: Option<Version>,
    #[schema(value_type = Option<String>)]
    pub digest: Option<Digest>,
    /// When that version was put in place.
    #[schema(value_type = Option<String>)]
    pub since: Option<Timestamp>,
    pub last_attempt: Option<Attempt>,
    /// The highest stable version published for the stack.
    #[schema(value_type = Option<String>)]
    pub latest_stable: Option<Version>,
    /// How many stable releases are newer than `version`.
    pub behind: u64,
    pub prerelease: bool,
    /// The last drift check after the last apply found drift.
    pub drifted: bool,
    /// The customer's last receipt, of any stack.
    #[schema(value_type = Option<String>)]
    pub last_seen: Option<Timestamp>,
    /// No receipt within `staleAfter`, or none ever.
    pub stale: bool,
    /// Registered by the vendor (`customer add`, a customer token); false for a
    /// customer known only from its receipts.
    #[serde(default = "registered_default")]
    pub registered: bool,
}

/// A registry from before `registered` existed listed only registered customers as such.
fn registered_default() -> bool {
    true
}

/// How many customers ran each version of one stack over time.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Adoption {
    pub stack: String,
    /// `day` or `week` (weeks start on Monday).
    pub bucket: String,
    /// Every version any customer ran, by semver precedence.
    #[schema(value_type = Vec<String>)]
    pub versions: Vec<Version>,
    /// One point per bucket in which something changed, oldest first; each holds
    /// until the next. The last one is what customers run now.
    pub points: Vec<AdoptionPoint>,
}

/// What customers ran at the end of one bucket.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AdoptionPoint {
    /// The bucket's first day (`2026-03-02`), UTC.
    pub at: String,
    /// Customers running each version at the end of the bucket; versions nobody ran
    /// then are left out.
    pub customers: std::collections::BTreeMap<String, u64>,
    /// Customers running any version of the stack.
    pub total: u64,
}
