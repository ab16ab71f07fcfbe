//! The ledger API's JSON documents (`/api/v1/…`). Field names are camelCase, times
//! RFC 3339 UTC, digests whole.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a release was built from.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub branch: Option<String>,
}

/// A published bundle: recorded when its manifest is pushed.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub stack: String,
    pub version: String,
    /// The OCI repository it was pushed to (`acme/stacks/data-plane`).
    pub repository: String,
    /// The bundle manifest's digest.
    pub digest: String,
    pub source: Source,
    /// When the source commit was made (from the bundle config).
    pub created: Option<String>,
    /// When the registry received it.
    pub published_at: String,
    pub prerelease: bool,
}

/// A customer: one vendor environment in one customer's cloud account.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Customer {
    pub id: String,
    pub name: Option<String>,
    pub created: String,
}

/// Body of `POST /api/v1/customers`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCustomer {
    pub id: String,
    pub name: Option<String>,
}

/// One receipt as the ledger keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Deployment {
    pub receipt_id: String,
    pub customer: String,
    pub stack: String,
    pub version: String,
    /// The bundle manifest's digest.
    pub digest: String,
    /// `apply`, `rollback`, `drift` or `plan`.
    pub kind: String,
    /// `succeeded`, `failed`, `drifted` or `no-changes`.
    pub outcome: String,
    pub started_at: String,
    pub finished_at: String,
    /// Key id of the runner installation that signed the receipt.
    pub key_id: String,
    pub received_at: String,
}

/// What one customer runs of one stack, with support's questions answered.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Running {
    pub customer: String,
    pub stack: String,
    pub version: String,
    pub digest: String,
    /// When the apply or rollback that put this version in place finished.
    pub since: String,
    pub receipt_id: String,
    /// The highest stable version published for the stack, by semver precedence.
    pub latest_stable: Option<String>,
    /// Runs a version lower than `latestStable`.
    pub behind: bool,
    /// Runs a prerelease (`1.4.0-feat.2`).
    pub prerelease: bool,
    /// The last drift check after the last apply found drift.
    pub drifted: bool,
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
    pub latest_stable: Option<String>,
    pub latest: Option<String>,
    pub releases: u64,
}
