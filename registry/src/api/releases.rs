//! The ledger's JSON documents about releases: a customer's whole environment as one
//! version (an OCI index in `<namespace>/releases/<name>`, see
//! [`stackpack_schema::release`]). Not [`super::Release`], which is older and names
//! one *stack* version (a published bundle).

use semver::Version;
use serde::{Deserialize, Serialize};
use stackpack_schema::Digest;
use utoipa::ToSchema;

use crate::timestamp::Timestamp;

/// One version of a release, as recorded when its index was pushed.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseVersion {
    pub name: String,
    #[schema(value_type = String)]
    pub version: Version,
    /// The OCI repository the index was pushed to (`acme/releases/data-plane`).
    pub repository: String,
    /// The release index's digest.
    #[schema(value_type = String)]
    pub digest: Digest,
    pub prerelease: bool,
    /// When the registry received the index.
    #[schema(value_type = String)]
    pub published_at: Timestamp,
}

/// A stack as one release version pins it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseStackPart {
    pub stack: String,
    #[schema(value_type = String)]
    pub version: Version,
    /// The bundle manifest's digest.
    #[schema(value_type = String)]
    pub digest: Digest,
}

/// A service (a container image, a Helm chart) as one release version pins it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseServicePart {
    pub service: String,
    /// Where the vendor took it from, as written in `stackpack.toml`.
    pub reference: String,
    /// The manifest's digest the release pins.
    #[schema(value_type = String)]
    pub digest: Digest,
}

/// One release version with its parts, in apply order, and who runs it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseSnapshot {
    #[serde(flatten)]
    pub release: ReleaseVersion,
    pub stacks: Vec<ReleaseStackPart>,
    pub services: Vec<ReleaseServicePart>,
    /// The customers whose latest deployments carry this version, each with the
    /// stacks that deviate from it.
    pub customers: Vec<ReleaseFleetRow>,
}

/// The release a deployment was part of, as its receipt names it.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeployedRelease {
    pub name: String,
    #[schema(value_type = String)]
    pub version: Version,
    /// The release index's digest.
    #[schema(value_type = String)]
    pub digest: Digest,
}

/// What one customer runs of one release: the version its latest deployments carry,
/// and every stack of that version that runs something else.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseFleetRow {
    pub customer: String,
    pub environment: Option<String>,
    pub release: String,
    /// The release version of the customer's most recent deployment that carried
    /// the release.
    #[schema(value_type = String)]
    pub version: Version,
    /// That release index's digest.
    #[schema(value_type = String)]
    pub digest: Digest,
    /// False when this registry has no record of that version (its index was pushed
    /// elsewhere): then only the stacks deployed as part of some version of the
    /// release can be compared, and a missing stack cannot be told.
    pub recorded: bool,
    /// The stacks of the release that do not run the bundle it pins: empty when the
    /// customer runs exactly the release.
    pub mixed: Vec<MixedStack>,
}

/// A stack of a release that runs something other than what the release pins.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct MixedStack {
    pub stack: String,
    /// The version the release pins; `None` when the release is not recorded here.
    #[schema(value_type = Option<String>)]
    pub expected: Option<Version>,
    /// The version in place; `None` when none is (never deployed, or destroyed).
    #[schema(value_type = Option<String>)]
    pub running: Option<Version>,
    /// The bundle digest in place.
    #[schema(value_type = Option<String>)]
    pub digest: Option<Digest>,
    /// The release version the deployment in place was part of; `None` when the
    /// stack was applied on its own.
    #[schema(value_type = Option<String>)]
    pub deployed_with: Option<Version>,
    pub reason: MixedReason,
}

/// Why a stack deviates from its customer's release.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum MixedReason {
    /// Its latest deployment was not part of a release.
    AppliedOnItsOwn,
    /// Its latest deployment was part of another version of the release, with
    /// another bundle.
    OtherReleaseVersion,
    /// It runs nothing: never deployed, or destroyed.
    NotDeployed,
}

impl MixedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            MixedReason::AppliedOnItsOwn => "applied on its own",
            MixedReason::OtherReleaseVersion => "from another release version",
            MixedReason::NotDeployed => "not deployed",
        }
    }
}

/// One release a customer runs, with what its version pins: the customer's standing
/// (version, mixed stacks) and the version's stacks and services by digest. One
/// snapshot of what runs, in `GET /api/v1/customers/{id}`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CustomerRelease {
    #[serde(flatten)]
    pub standing: ReleaseFleetRow,
    /// The stacks the version pins, in apply order; empty when the version is not
    /// recorded here (`recorded` is false).
    pub stacks: Vec<ReleaseStackPart>,
    /// The services the version pins, with their digests; empty when not recorded.
    pub services: Vec<ReleaseServicePart>,
}
