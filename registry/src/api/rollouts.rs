//! The ledger's JSON documents about rollouts: channels and their waves, the
//! rollouts the registry schedules from the vendor's promotions, and their history.
//! What a runner is assigned is the schema's [`stackpack_schema::rollout`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a rollout stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RolloutState {
    /// Waves open as the previous one is healthy and has soaked.
    Running,
    /// Paused by a person: nobody else is assigned until `resume`.
    Paused,
    /// A customer failed: nobody else is assigned; `resume` re-checks the gate.
    Halted,
    /// Stopped for good; who was assigned keeps it.
    Aborted,
    /// Every wave is open and healthy.
    Completed,
    /// A newer version of the release was promoted to the channel.
    Superseded,
}

impl RolloutState {
    pub const ALL: [RolloutState; 6] = [
        RolloutState::Running,
        RolloutState::Paused,
        RolloutState::Halted,
        RolloutState::Aborted,
        RolloutState::Completed,
        RolloutState::Superseded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RolloutState::Running => "running",
            RolloutState::Paused => "paused",
            RolloutState::Halted => "halted",
            RolloutState::Aborted => "aborted",
            RolloutState::Completed => "completed",
            RolloutState::Superseded => "superseded",
        }
    }

    /// Still moving, or may again (`resume`).
    pub fn is_open(self) -> bool {
        matches!(
            self,
            RolloutState::Running | RolloutState::Paused | RolloutState::Halted
        )
    }
}

impl std::str::FromStr for RolloutState {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        RolloutState::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a rollout state"))
    }
}

impl std::fmt::Display for RolloutState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one assigned customer stands at the health gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    /// No receipt of the assigned version yet.
    Waiting,
    /// Its latest receipt applied the assigned version.
    Succeeded,
    /// A failed apply, failed smoke check, failed sync or drift: the rollout halts.
    Failed,
}

impl Gate {
    pub const ALL: [Gate; 3] = [Gate::Waiting, Gate::Succeeded, Gate::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Waiting => "waiting",
            Gate::Succeeded => "succeeded",
            Gate::Failed => "failed",
        }
    }
}

impl std::str::FromStr for Gate {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Gate::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a gate standing"))
    }
}

impl std::fmt::Display for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened in a rollout, for its history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    Promoted,
    WaveOpened,
    WaveSkipped,
    Assigned,
    Succeeded,
    Failed,
    Halted,
    Paused,
    Resumed,
    Aborted,
    Completed,
    Superseded,
}

impl EventKind {
    pub const ALL: [EventKind; 12] = [
        EventKind::Promoted,
        EventKind::WaveOpened,
        EventKind::WaveSkipped,
        EventKind::Assigned,
        EventKind::Succeeded,
        EventKind::Failed,
        EventKind::Halted,
        EventKind::Paused,
        EventKind::Resumed,
        EventKind::Aborted,
        EventKind::Completed,
        EventKind::Superseded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Promoted => "promoted",
            EventKind::WaveOpened => "wave-opened",
            EventKind::WaveSkipped => "wave-skipped",
            EventKind::Assigned => "assigned",
            EventKind::Succeeded => "succeeded",
            EventKind::Failed => "failed",
            EventKind::Halted => "halted",
            EventKind::Paused => "paused",
            EventKind::Resumed => "resumed",
            EventKind::Aborted => "aborted",
            EventKind::Completed => "completed",
            EventKind::Superseded => "superseded",
        }
    }
}

impl std::str::FromStr for EventKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        EventKind::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a rollout event"))
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A channel: its waves in order and how long each soaks before the next opens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    pub name: String,
    pub waves: Vec<String>,
    pub soak_seconds: u64,
    /// False: nobody set it, the defaults apply.
    pub configured: bool,
    /// Customers in it.
    pub customers: u64,
}

/// Body of `PUT /api/v1/channels/{name}`: what is not given keeps its value.
#[derive(Clone, Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewChannel {
    /// Ordered wave names (`["canary", "early", "general"]`).
    #[serde(default)]
    pub waves: Option<Vec<String>>,
    /// Soak time per wave: `24h`, `90m`, `30s`.
    #[serde(default)]
    pub soak: Option<String>,
}

/// Body of `PUT /api/v1/customers/{id}/rollout`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerPlacement {
    pub channel: String,
    /// None: the channel's last wave.
    #[serde(default)]
    pub wave: Option<String>,
}

/// A customer's place in the rollouts: channel and wave, as set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    pub customer: String,
    pub channel: Option<String>,
    pub wave: Option<String>,
    /// When its runner last reported a sync pass (registry clock).
    pub last_sync: Option<String>,
}

/// What a customer's runner said of one release in its last sync pass: the same
/// row the customer page shows, for `customer show`, `fleet --failed` and the API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerSync {
    pub customer: String,
    pub release: String,
    /// `converged`, `applied`, `pending-approval`, `outside-window`, `drifted`,
    /// `failed` or `refused`.
    #[schema(value_type = String)]
    pub state: stackpack_schema::rollout::SyncState,
    #[schema(value_type = Option<String>)]
    pub assigned: Option<semver::Version>,
    #[schema(value_type = Option<String>)]
    pub running: Option<semver::Version>,
    /// Why it failed, was refused or waits, in the runner's words (never a secret).
    pub message: Option<String>,
    /// When the registry received it.
    pub reported_at: String,
}

impl CustomerSync {
    /// "umbrella environment: sync of 1.0.1 failed: …", the line the CLI prints.
    pub fn line(&self) -> String {
        format!(
            "{} {}: sync of {} {}: {}",
            self.customer,
            self.release,
            self.assigned
                .as_ref()
                .map_or_else(|| "-".to_string(), ToString::to_string),
            self.state.as_str(),
            self.message.as_deref().unwrap_or("no reason given")
        )
    }
}

/// One rollout: the vendor's promotion of `release@version` to `channel`, as the
/// registry opens it wave by wave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    pub id: i64,
    pub channel: String,
    /// `release` or `stack`.
    #[schema(value_type = String)]
    pub kind: stackpack_schema::rollout::ApprovedKind,
    pub release: String,
    pub version: String,
    pub digest: String,
    pub required: bool,
    pub state: RolloutState,
    pub waves: Vec<String>,
    /// The wave open now (index into `waves`).
    pub wave_index: usize,
    pub soak_seconds: u64,
    /// When the current wave opened (registry clock).
    pub wave_opened_at: Option<String>,
    /// When the next wave may open, if the current one is healthy by then.
    pub next_wave_at: Option<String>,
    pub halted_reason: Option<String>,
    /// For a halted rollout, who it holds up and what to do: "`globex` fails the
    /// gate; waiting: `initech`", or, once no assigned customer fails any more,
    /// "… `stackpack-registry rollout resume 3` goes on".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_up: Option<String>,
    pub promoted_by: Option<String>,
    pub created: String,
    pub updated: String,
    pub assigned: u64,
    pub succeeded: u64,
    pub failed: u64,
}

/// One customer assigned by a rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutAssignment {
    pub customer: String,
    pub wave: String,
    pub assigned_at: String,
    pub gate: Gate,
    pub gate_reason: Option<String>,
    pub gate_at: String,
}

/// One line of a rollout's history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutEvent {
    pub at: String,
    pub kind: EventKind,
    pub customer: Option<String>,
    pub wave: Option<String>,
    pub detail: Option<String>,
}

/// A rollout with who got it when, who failed, and its history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutDetail {
    pub rollout: Rollout,
    pub assignments: Vec<RolloutAssignment>,
    pub events: Vec<RolloutEvent>,
    /// The one-line summary of the version's forecast, if the vendor sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forecast: Option<String>,
    /// Real plans that differed from their forecast (`ForecastMiss`), oldest first.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub misses: Vec<stackpack_schema::forecast::ForecastMiss>,
}
