//! `approve ID`: applies exactly the plan a sync pass held, and reports it.

use serde_json::json;
use stackpack_runner::sync::pass;
use stackpack_runner::sync::registry::Registry;
use stackpack_runner::Result;
use stackpack_schema::rollout::SyncState;
use stackpack_terminal::ExitStatus;

use super::sync::{detail, ui, version};
use super::{open_installation, print_json, status};
use crate::cli::{ApproveArgs, GlobalArgs};

pub fn approve(global: &GlobalArgs, args: &ApproveArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let report = pass::approve(&installation, &args.id, &ui())?;
    // A connected home tells the registry at once: the rollout's gate waits on this
    // customer's receipt, not on its next scheduled pass.
    if let Some(address) = &installation.config.sync.registry {
        let insecure = args.insecure || installation.config.sync.insecure;
        let registry = Registry::new(address, insecure, args.token.clone())?;
        if let Err(error) = pass::report_approval(&installation, &registry, &report) {
            status(&format!(
                "warning: {}; the next `stackpack-runner sync` sends it",
                error.message
            ));
        }
    }
    if args.json {
        print_json(&json!({ "release": report }));
    } else {
        println!(
            "release `{}@{}` {}: {}",
            report.release,
            version(&report.assigned),
            match report.state {
                SyncState::Applied => "applied",
                other => other.as_str(),
            },
            detail(&report)
        );
    }
    Ok(ExitStatus::Success)
}
