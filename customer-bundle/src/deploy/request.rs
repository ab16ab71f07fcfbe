//! What a run is asked to do, how it talks to the person running it, and what it
//! reports.

use std::path::PathBuf;
use std::time::Duration;

use semver::Version;
use stackpack_schema::receipt::{ReceiptKind, SignedReceipt};

use crate::engine::PlanDetails;
use crate::policy::Verdict;
use crate::smoke;

/// How the caller talks to the person running it.
pub struct Ui<'a> {
    pub verbose: bool,
    pub quiet: bool,
    /// A progress line (stderr).
    pub status: &'a dyn Fn(&str),
    /// Asked after the plan of an apply, rollback or destroy; true to go ahead.
    pub confirm: &'a mut dyn FnMut(&str, ReceiptKind, &PlanDetails) -> bool,
}

/// What to run, with what it needs and nothing else.
#[derive(Clone, Debug)]
pub enum Target {
    /// Plan `version` with `inputs` (later files win); nothing changes.
    Plan {
        version: Version,
        inputs: Vec<PathBuf>,
    },
    /// Apply `version` with `inputs`; an older version than the installed one only
    /// with `allow_downgrade`.
    Apply {
        version: Version,
        inputs: Vec<PathBuf>,
        allow_downgrade: bool,
    },
    /// Back to the version before the current one, with the inputs saved then (or
    /// `inputs`, when any are given).
    Rollback { inputs: Vec<PathBuf> },
    /// Does what runs still match its plan?
    Drift,
    /// Destroy everything the current deployment manages.
    Destroy,
}

impl Target {
    pub fn kind(&self) -> ReceiptKind {
        match self {
            Target::Plan { .. } => ReceiptKind::Plan,
            Target::Apply { .. } => ReceiptKind::Apply,
            Target::Rollback { .. } => ReceiptKind::Rollback,
            Target::Drift => ReceiptKind::Drift,
            Target::Destroy => ReceiptKind::Destroy,
        }
    }
}

pub struct Request {
    pub stack: String,
    pub target: Target,
    /// How long to wait for another runner working on the same stack.
    pub wait: Duration,
    pub options: Options,
}

/// What the operator said beyond the target.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Addresses the policies may see destroyed or replaced (`--allow-replace`).
    pub allow_replace: Vec<String>,
    /// `plan --out FILE`: write a reviewed plan.
    pub plan_out: Option<PathBuf>,
    /// `apply --plan FILE`: apply exactly this reviewed plan.
    pub reviewed: Option<PathBuf>,
    /// The release this run is part of, recorded in its receipt.
    pub release: Option<stackpack_schema::receipt::ReleaseRef>,
    /// The engine that release carries (see `carried_engine`).
    pub engine: Option<stackpack_schema::release::ReleaseEngine>,
}

/// What a run did.
pub struct Report {
    pub receipt: SignedReceipt,
    pub plan: PlanDetails,
    pub outputs: Option<serde_json::Value>,
    pub previous: Option<Version>,
    /// What the policies said of the plan.
    pub verdict: Verdict,
    /// Smoke checks that failed after the apply (the receipt says `failed`).
    pub smoke: Vec<smoke::Failure>,
    /// The automatic rollback that followed failed smoke checks.
    pub rollback: Option<Box<Report>>,
}
