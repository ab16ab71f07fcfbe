//! `status`: what runs here, since when, and what newer version the store holds.

use serde_json::json;
use stackpack_runner::ledger::Ledger;
use stackpack_runner::Result;

use super::{open_home, print_json, status as progress, table};
use crate::cli::{GlobalArgs, StatusArgs};

pub fn status(global: &GlobalArgs, args: &StatusArgs) -> Result<u8> {
    let home = open_home(global)?;
    let ledger = Ledger::open(&home.ledger_path())?;
    let store = home.store()?;
    let mut stacks = Vec::new();
    for deployment in ledger.current_all()? {
        let mut versions = store.versions(&deployment.stack)?;
        versions.retain(|v| v.pre.is_empty() || home.config.policy.allow_prereleases);
        let newer = stackpack_schema::version::latest(versions.iter())
            .filter(|v| v.cmp_precedence(&deployment.version) == std::cmp::Ordering::Greater)
            .cloned();
        let since = ledger
            .since(&deployment.stack)?
            .unwrap_or(deployment.applied_at.clone());
        let drift = ledger
            .last_receipt(&deployment.stack, "drift")?
            .filter(|d| d.receipt.finished_at >= deployment.applied_at);
        stacks.push((deployment, since, newer, drift));
    }
    let interrupted = ledger.interrupted_runs()?;
    if args.json {
        print_json(&json!({
            "customer": home.config.customer,
            "interrupted": interrupted.iter().map(|run| json!({
                "stack": run.stack,
                "version": run.version,
                "kind": run.kind,
                "startedAt": run.started_at,
                "workFolder": run.work,
                "state": "unknown: run plan",
            })).collect::<Vec<_>>(),
            "stacks": stacks.iter().map(|(d, since, newer, drift)| json!({
                "stack": d.stack,
                "version": d.version.to_string(),
                "digest": d.digest,
                "since": since,
                "lastApplied": d.applied_at,
                "receiptId": d.receipt_id,
                "newerInStore": newer.as_ref().map(|v| v.to_string()),
                "lastDriftCheck": drift.as_ref().map(|r| json!({
                    "outcome": r.receipt.outcome,
                    "at": r.receipt.finished_at,
                })),
            })).collect::<Vec<_>>(),
        }));
        return Ok(0);
    }
    for run in &interrupted {
        progress(&format!(
            "interrupted, state unknown — run plan: `{}` of `{}@{}` started at {} (work folder `{}`)",
            run.kind, run.stack, run.version, run.started_at, run.work
        ));
    }
    if stacks.is_empty() {
        progress("nothing has been applied by this runner yet");
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = stacks
        .iter()
        .map(|(d, since, newer, drift)| {
            vec![
                d.stack.clone(),
                d.version.to_string(),
                since.clone(),
                newer
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                drift
                    .as_ref()
                    .map(|r| format!("{} at {}", r.receipt.outcome, r.receipt.finished_at))
                    .unwrap_or_else(|| "not checked".into()),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["STACK", "VERSION", "SINCE", "NEWER IN STORE", "DRIFT"],
            &rows
        )
    );
    Ok(0)
}
