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

use super::{open_installation, print_json, status as progress, table};
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

/// How a stack that does not run here now was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Standing {
    /// Its last attempt destroyed it.
    Destroyed,
    /// Its last attempt failed, having created nothing that counts as deployed.
    Failed,
    /// Its last run was stopped half-way (a signal, or the runner killed).
    Interrupted,
}

impl Standing {
    fn as_str(self) -> &'static str {
        match self {
            Standing::Destroyed => "destroyed",
            Standing::Failed => "failed",
            Standing::Interrupted => "interrupted",
        }
    }
}

/// A stack the runner tried, that does not run here now: a failed or interrupted
/// first apply, or a destroy. Shown, not hidden: resources may still be there.
struct NotDeployed {
    stack: String,
    standing: Standing,
    attempt: Option<SignedReceipt>,
    /// Managed resource instances in the state, when the runner can read it.
    in_state: Option<usize>,
    /// The work folder an interrupted run left.
    work: Option<String>,
}

impl NotDeployed {
    /// What is known of the account, in words.
    fn state_text(&self) -> String {
        let known = match self.in_state {
            Some(0) if self.standing == Standing::Destroyed => return "destroyed".into(),
            Some(n) => format!("{n} resource(s) in state"),
            None => "state unknown — run plan".into(),
        };
        format!("{} ({known})", self.standing.as_str())
    }
}

pub fn status(global: &GlobalArgs, args: &StatusArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let home = &installation.home;
    let ledger = installation.ledger()?;
    let stacks = deployed(home, ledger)?;
    let interrupted = ledger.interrupted_runs()?;
    let others = not_deployed(home, ledger, &stacks, &interrupted)?;
    let releases = super::release_status::releases_status(ledger)?;
    let failures = failed_tries(ledger, &stacks, &others)?;
    let last_sync = stackpack_runner::sync::last::read(home);
    if args.json {
        let mut document = status_json(home, &interrupted, &stacks);
        document["notDeployed"] = not_deployed_json(&others);
        document["releases"] = releases;
        document["failed"] = json!(failures.iter().map(failure_json).collect::<Vec<_>>());
        document["lastSync"] = json!(last_sync);
        print_json(&document);
        return Ok(ExitStatus::Success);
    }
    for run in &interrupted {
        progress(&format!(
            "interrupted, state unknown — run plan: `{}` of `{}@{}` started at {} (work folder `{}`)",
            run.kind,
            run.stack,
            run.version,
            stackpack_terminal::words::time(&run.started_at),
            run.work
        ));
    }
    if stacks.is_empty() && others.is_empty() {
        progress("nothing has been applied or tried by this runner yet");
    } else {
        print!("{}", status_table(&stacks, &others));
    }
    print!("{}", super::release_status::releases_text(&releases));
    for failed in &failures {
        println!("{}", failure_text(failed));
    }
    if let Some(last) = &last_sync {
        print!("{}", sync_text(last));
    }
    Ok(ExitStatus::Success)
}

/// Each stack whose newest plan, apply, rollback or destroy failed, newest first.
fn failed_tries(
    ledger: &Ledger,
    stacks: &[StackStatus],
    others: &[NotDeployed],
) -> Result<Vec<SignedReceipt>> {
    let names = stacks
        .iter()
        .map(|s| &s.deployment.stack)
        .chain(others.iter().map(|o| &o.stack));
    let mut failed = Vec::new();
    for name in names {
        failed.extend(ledger.failed_try(name)?);
    }
    failed.sort_by(|a, b| b.receipt.finished_at.cmp(&a.receipt.finished_at));
    Ok(failed)
}

/// Why it failed, in the words the registry's pages and CLI give it.
fn reason(r: &SignedReceipt) -> String {
    r.receipt
        .failure
        .as_ref()
        .map(|f| f.reason())
        .unwrap_or_else(|| "no reason recorded".into())
}

fn failure_text(r: &SignedReceipt) -> String {
    let r_ = &r.receipt;
    format!(
        "failed: {} of `{}@{}` at {}: {} (receipt `{}`)",
        r_.kind,
        r_.stack,
        r_.version,
        stackpack_terminal::words::time(&r_.finished_at),
        reason(r),
        r_.id
    )
}

fn failure_json(r: &SignedReceipt) -> serde_json::Value {
    json!({
        "stack": r.receipt.stack,
        "version": r.receipt.version.to_string(),
        "kind": r.receipt.kind,
        "at": r.receipt.finished_at,
        "receiptId": r.receipt.id,
        "reason": reason(r),
    })
}

/// The last sync pass: when, and each release it did not converge, with why.
fn sync_text(last: &stackpack_runner::sync::last::LastSync) -> String {
    use stackpack_schema::rollout::SyncState;
    let at = stackpack_terminal::words::time(&last.finished_at);
    let mut out = String::new();
    if let Some(error) = &last.error {
        out.push_str(&format!("last sync at {at} stopped: {error}\n"));
        return out;
    }
    let releases = last
        .report
        .as_ref()
        .map(|r| r.releases.as_slice())
        .unwrap_or_default();
    let troubled: Vec<_> = releases
        .iter()
        .filter(|r| matches!(r.state, SyncState::Failed | SyncState::Refused))
        .collect();
    if troubled.is_empty() {
        out.push_str(&format!(
            "last sync at {at}: {}\n",
            stackpack_terminal::words::count(releases.len() as u64, "release")
        ));
    }
    for release in troubled {
        out.push_str(&format!(
            "last sync at {at}: `{}{}` {}: {}\n",
            release.release,
            release
                .assigned
                .as_ref()
                .map(|v| format!("@{v}"))
                .unwrap_or_default(),
            release.state.as_str(),
            release.message.as_deref().unwrap_or("no reason given")
        ));
    }
    if let Some(unreported) = &last.unreported {
        out.push_str(&format!(
            "  its report did not reach the registry: {unreported}\n"
        ));
    }
    out
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

/// Every stack the ledger knows of that does not run here now, and how it was left.
fn not_deployed(
    home: &Home,
    ledger: &Ledger,
    deployed: &[StackStatus],
    interrupted: &[StartedRun],
) -> Result<Vec<NotDeployed>> {
    let mut names: Vec<String> = ledger.attempted_stacks()?;
    names.extend(interrupted.iter().map(|run| run.stack.clone()));
    names.sort();
    names.dedup();
    names.retain(|name| deployed.iter().all(|s| &s.deployment.stack != name));
    let mut out = Vec::new();
    for stack in names {
        let attempt = ledger.last_attempt(&stack)?;
        let run = interrupted.iter().rev().find(|run| run.stack == stack);
        let stopped = match &attempt {
            Some(a) => ledger
                .notes(&a.receipt.id)?
                .iter()
                .any(|n| n.kind == stackpack_runner::ledger::INTERRUPTED_NOTE),
            None => false,
        };
        let standing = match &attempt {
            _ if run.is_some() || stopped => Standing::Interrupted,
            Some(a) if a.receipt.kind == ReceiptKind::Destroy && a.receipt.outcome.in_place() => {
                Standing::Destroyed
            }
            _ => Standing::Failed,
        };
        out.push(NotDeployed {
            in_state: home.resources_in_state(&stack),
            stack,
            standing,
            attempt,
            work: run.map(|run| run.work.clone()),
        });
    }
    Ok(out)
}

fn attempt_json(r: &SignedReceipt, notes: &[Note]) -> serde_json::Value {
    json!({
        "kind": r.receipt.kind,
        "version": r.receipt.version.to_string(),
        "outcome": r.receipt.outcome,
        "at": r.receipt.finished_at,
        "receiptId": r.receipt.id,
        "failed": notes.iter().filter(|n| n.kind != "policy-warn").map(|n| json!({
            "kind": n.kind,
            "rule": n.rule,
            "address": n.address,
            "message": n.message,
        })).collect::<Vec<_>>(),
    })
}

fn not_deployed_json(others: &[NotDeployed]) -> serde_json::Value {
    json!(others
        .iter()
        .map(|o| json!({
            "stack": o.stack,
            "state": o.standing.as_str(),
            "resourcesInState": o.in_state,
            "lastAttempt": o.attempt.as_ref().map(|r| attempt_json(r, &[])),
            "workFolder": o.work,
        }))
        .collect::<Vec<_>>())
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
                "lastAttempt": s.attempt.as_ref().map(|r| attempt_json(r, &s.notes)),
            })
        }).collect::<Vec<_>>(),
    })
}

fn attempt_text(attempt: Option<&SignedReceipt>) -> String {
    attempt
        .map(|r| {
            format!(
                "{} {} {} at {}",
                r.receipt.kind,
                r.receipt.version,
                r.receipt.outcome,
                stackpack_terminal::words::time(&r.receipt.finished_at)
            )
        })
        .unwrap_or_else(|| "-".into())
}

fn status_table(stacks: &[StackStatus], others: &[NotDeployed]) -> String {
    let mut rows: Vec<Vec<String>> = stacks
        .iter()
        .map(|s| {
            vec![
                s.deployment.stack.clone(),
                s.deployment.version.to_string(),
                "deployed".into(),
                stackpack_terminal::words::time(&s.since),
                s.newer
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                s.drift
                    .as_ref()
                    .map(|r| {
                        format!(
                            "{} at {}",
                            r.receipt.outcome,
                            stackpack_terminal::words::time(&r.receipt.finished_at)
                        )
                    })
                    .unwrap_or_else(|| "not checked".into()),
                attempt_text(s.attempt.as_ref()),
            ]
        })
        .collect();
    rows.extend(others.iter().map(|o| {
        vec![
            o.stack.clone(),
            "-".into(),
            o.state_text(),
            "-".into(),
            "-".into(),
            "-".into(),
            attempt_text(o.attempt.as_ref()),
        ]
    }));
    rows.sort_by(|a, b| a[0].cmp(&b[0]));
    table(
        &[
            "STACK",
            "VERSION",
            "STATE",
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
