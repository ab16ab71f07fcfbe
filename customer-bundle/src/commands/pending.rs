//! `pending`: the plans a sync pass held for approval.

use serde_json::json;
use stackpack_runner::sync::pending;
use stackpack_runner::Result;

use stackpack_terminal::ExitStatus;

use super::sync::named;
use super::{open_installation, print_json, table};
use crate::cli::{GlobalArgs, PendingArgs};

pub fn pending(global: &GlobalArgs, args: &PendingArgs) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let held = pending::list(&home)?;
    if args.json {
        print_json(&json!({
            "pending": held.iter().map(|p| json!({
                "id": p.id,
                "kind": p.kind,
                "release": p.release,
                "version": p.version.to_string(),
                "digest": p.digest.to_string(),
                "since": p.since,
                "approval": p.report(),
                "stacks": p.stacks,
                "waiting": p.waiting,
                "reason": p.reason,
                "review": pending::dir(&home, &p.id).join(pending::REVIEW),
            })).collect::<Vec<_>>()
        }));
        return Ok(ExitStatus::Success);
    }
    if held.is_empty() {
        println!("no plan waits for approval");
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<Vec<String>> = held
        .iter()
        .map(|p| {
            let s = p.summary();
            let destructive: usize = p.stacks.iter().map(|s| s.destructive.len()).sum();
            let mut detail = Vec::new();
            if let Some(reason) = &p.reason {
                detail.push(format!("held: {reason}"));
            }
            if destructive > 0 {
                detail.push(format!("{destructive} replaced or destroyed"));
            }
            detail.push(format!(
                "review {}",
                pending::dir(&home, &p.id).join(pending::REVIEW).display()
            ));
            vec![
                p.id.clone(),
                format!("{}@{}", named(p.kind, &p.release), p.version),
                p.since.clone(),
                format!(
                    "{} to add, {} to change, {} to destroy",
                    s.add, s.change, s.destroy
                ),
                detail.join("; "),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["ID", "RELEASE", "SINCE", "PLAN", "DETAIL"], &rows)
    );
    Ok(ExitStatus::Success)
}
