//! `status`: what runs here, since when, and what newer version the store holds.

use semver::Version;
use serde_json::json;
use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::verify::{self, Trust};
use stackpack_runner::home::Home;
use stackpack_runner::ledger::{Deployment, Ledger, Note, StartedRun};
use stackpack_runner::Result;
use stackpack_schema::receipt::{ReceiptKind, SignedReceipt};
use stackpack_schema::signature::PublicKey;
use stackpack_terminal::ExitStatus;

use super::{open_home, print_json, status as progress, table};
use crate::cli::{GlobalArgs, StatusArgs};

/// One deployed stack as `status` shows it.
struct StackStatus {
    deployment: Deployment,
    since: String,
    newer: Option<Version>,
    drift: Option<SignedReceipt>,
    attempt: Option<SignedReceipt>,
    notes: Vec<Note>,
}

pub fn status(global: &GlobalArgs, args: &StatusArgs) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let ledger = Ledger::open(&home.ledger_path())?;
    let stacks = deployed(&home, &ledger)?;
    let interrupted = ledger.interrupted_runs()?;
    let releases = super::release_status::releases_status(&ledger)?;
    if args.json {
        let mut document = status_json(&home, &interrupted, &stacks);
        document["releases"] = releases;
        print_json(&document);
        return Ok(ExitStatus::Success);
    }
    for run in &interrupted {
        progress(&format!(
            "interrupted, state unknown — run plan: `{}` of `{}@{}` started at {} (work folder `{}`)",
            run.kind, run.stack, run.version, run.started_at, run.work
        ));
    }
    if stacks.is_empty() {
        progress("nothing has been applied by this runner yet");
    } else {
        print!("{}", status_table(&stacks));
    }
    print!("{}", super::release_status::releases_text(&releases));
    Ok(ExitStatus::Success)
}

/// Every stack deployed here, with what the ledger and the store know of it.
fn deployed(home: &Home, ledger: &Ledger) -> Result<Vec<StackStatus>> {
    let store = home.store()?;
    let keys: Vec<PublicKey> = home
        .trusted_keys()?
        .into_iter()
        .map(|(_, key, _)| key)
        .collect();
    let mut stacks = Vec::new();
    for deployment in ledger.current_all()? {
        let newer = newer_verified(home, &store, &keys, &deployment.stack, &deployment.version)?;
        let since = ledger
            .since(&deployment.stack)?
            .unwrap_or(deployment.applied_at.clone());
        let drift = ledger
            .last_receipt(&deployment.stack, ReceiptKind::Drift)?
            .filter(|d| {
                stackpack_runner::receipts::at_or_after(
                    &d.receipt.finished_at,
                    &deployment.applied_at,
                )
            });
        let attempt = ledger.last_attempt(&deployment.stack)?;
        let notes = match &attempt {
            Some(a) => ledger.notes(&a.receipt.id)?,
            None => vec![],
        };
        stacks.push(StackStatus {
            deployment,
            since,
            newer,
            drift,
            attempt,
            notes,
        });
    }
    Ok(stacks)
}

fn status_json(
    home: &Home,
    interrupted: &[StartedRun],
    stacks: &[StackStatus],
) -> serde_json::Value {
    json!({
        "customer": home.config.customer,
        "interrupted": interrupted.iter().map(|run| json!({
            "stack": run.stack,
            "version": run.version,
            "kind": run.kind,
            "startedAt": run.started_at,
            "workFolder": run.work,
            "state": "unknown: run plan",
        })).collect::<Vec<_>>(),
        "stacks": stacks.iter().map(|s| {
            let d = &s.deployment;
            json!({
                "stack": d.stack,
                "version": d.version.to_string(),
                "digest": d.digest,
                "since": s.since,
                "lastApplied": d.applied_at,
                "receiptId": d.receipt_id,
                "newerInStore": s.newer.as_ref().map(|v| v.to_string()),
                "lastDriftCheck": s.drift.as_ref().map(|r| json!({
                    "outcome": r.receipt.outcome,
                    "at": r.receipt.finished_at,
                })),
                "lastAttempt": s.attempt.as_ref().map(|r| json!({
                    "kind": r.receipt.kind,
                    "version": r.receipt.version.to_string(),
                    "outcome": r.receipt.outcome,
                    "at": r.receipt.finished_at,
                    "receiptId": r.receipt.id,
                    "failed": s.notes.iter().filter(|n| n.kind != "policy-warn").map(|n| json!({
                        "kind": n.kind,
                        "rule": n.rule,
                        "address": n.address,
                        "message": n.message,
                    })).collect::<Vec<_>>(),
                })),
            })
        }).collect::<Vec<_>>(),
    })
}

fn status_table(stacks: &[StackStatus]) -> String {
    let rows: Vec<Vec<String>> = stacks
        .iter()
        .map(|s| {
            vec![
                s.deployment.stack.clone(),
                s.deployment.version.to_string(),
                s.since.clone(),
                s.newer
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                s.drift
                    .as_ref()
                    .map(|r| format!("{} at {}", r.receipt.outcome, r.receipt.finished_at))
                    .unwrap_or_else(|| "not checked".into()),
                s.attempt
                    .as_ref()
                    .map(|r| {
                        format!(
                            "{} {} {} at {}",
                            r.receipt.kind,
                            r.receipt.version,
                            r.receipt.outcome,
                            r.receipt.finished_at
                        )
                    })
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    table(
        &[
            "STACK",
            "VERSION",
            "SINCE",
            "NEWER IN STORE",
            "DRIFT",
            "LAST ATTEMPT",
        ],
        &rows,
    )
}

/// The newest version of `stack` in the store, above `current` and allowed by the
/// policy, that verifies (signed by a trusted key, every digest matching). Index
/// annotations only say where to look: candidates are verified newest first, and the
/// first that verifies is the answer.
fn newer_verified(
    home: &Home,
    store: &ImageLayout,
    keys: &[PublicKey],
    stack: &str,
    current: &Version,
) -> Result<Option<Version>> {
    if keys.is_empty() {
        return Ok(None);
    }
    let mut versions = store.versions(stack)?;
    versions.retain(|v| v.pre.is_empty() || home.config.policy.allow_prereleases);
    versions.retain(|v| v.cmp_precedence(current) == std::cmp::Ordering::Greater);
    stackpack_schema::version::sort_by_precedence(&mut versions);
    let trust = Trust::Keys(keys.to_vec());
    Ok(versions.into_iter().rev().find(|version| {
        verify::verify_bundle(store, stack, version, &trust, &Limits::default()).is_ok()
    }))
}
