//! The last sync pass, kept in `<home>/last-sync.json` for `stackpack-runner status`:
//! when it ran and, per release, what it did and why it failed or was refused (the
//! same report the registry received), or why the pass could not run at all (no
//! assignment: the registry unreachable, a token refused). Overwritten by each pass;
//! a pass that cannot write it still runs (status is a view, never a gate).

use serde::{Deserialize, Serialize};
use stackpack_schema::rollout::SyncReport;

use crate::home::Home;
use crate::receipts;

/// What the last pass left for `status`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastSync {
    pub finished_at: String,
    /// Why the pass stopped before any release (it has no report then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<SyncReport>,
    /// Why its receipts or report did not reach the registry, when they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreported: Option<String>,
}

impl LastSync {
    /// A pass that stopped before any release, and why.
    pub fn stopped(error: &str) -> LastSync {
        LastSync {
            finished_at: receipts::now(),
            error: Some(error.to_string()),
            report: None,
            unreported: None,
        }
    }
}

fn path(home: &Home) -> std::path::PathBuf {
    home.root.join("last-sync.json")
}

/// Keeps `last` as the last pass; a failure to write is only warned about, through
/// `warn`.
pub fn record(home: &Home, last: &LastSync, warn: &dyn Fn(&str)) {
    let bytes = serde_json::to_vec_pretty(last).expect("a sync record serialises");
    if let Err(e) = stackpack_bundle::layout::write_atomically(&path(home), &bytes) {
        warn(&format!(
            "warning: cannot keep the last sync pass for `status`: {e}"
        ));
    }
}

/// The last pass, if one ran (and its record reads).
pub fn read(home: &Home) -> Option<LastSync> {
    let bytes = std::fs::read(path(home)).ok()?;
    serde_json::from_slice(&bytes).ok()
}
