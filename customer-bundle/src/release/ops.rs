//! Apply, rollback and destroy of a whole release, each ending in a signed release
//! receipt.

use std::path::PathBuf;
use std::time::Duration;

use semver::Version;
use stackpack_bundle::release::VerifiedRelease;
use stackpack_schema::receipt::{Outcome, ReceiptKind, ReleaseRef};

use super::history;
use super::receipt::{
    ReleaseReceipt, ReleaseReceiptService, ReleaseReceiptStack, SignedReleaseReceipt, StackResult,
    RELEASE_RECEIPT_FORMAT,
};
use super::run::{ReleaseUi, StackRun};
use crate::deploy::{self, Options, Request, Target};
use crate::error::{Error, Result};
use crate::home::OnFailure;
use crate::installation::Installation;
use crate::ledger::Ledger;
use crate::receipts;

/// What a release run did.
pub struct ReleaseReport {
    pub receipt: SignedReleaseReceipt,
    pub stacks: Vec<StackRun>,
}

/// Signs and records the release receipt of a run.
pub fn record(
    installation: &Installation,
    release: &VerifiedRelease,
    kind: ReceiptKind,
    started_at: String,
    stacks: &[StackRun],
) -> Result<SignedReleaseReceipt> {
    let ledger = installation.ledger()?;
    let failed = stacks.iter().any(|s| s.error.is_some());
    let mut listed = Vec::new();
    for s in stacks {
        listed.push(ReleaseReceiptStack {
            name: s.name.clone(),
            version: s.version.clone(),
            result: s.result,
            receipt_id: s.receipt_id.clone(),
            installed: ledger.current(&s.name)?.map(|d| d.version),
        });
    }
    let d = &release.description;
    let receipt = ReleaseReceipt {
        format: RELEASE_RECEIPT_FORMAT,
        id: receipts::new_id(),
        customer: installation.home.config.customer.clone(),
        release: d.name.clone(),
        version: d.version.clone(),
        digest: release.index_descriptor.digest.clone(),
        kind,
        outcome: if failed {
            Outcome::Failed
        } else {
            Outcome::Succeeded
        },
        stacks: listed,
        services: d
            .services
            .iter()
            .map(|s| ReleaseReceiptService {
                name: s.name.clone(),
                digest: s.digest.clone(),
            })
            .collect(),
        started_at,
        finished_at: receipts::now(),
        key_id: String::new(),
    };
    let key = receipts::installation_key(&installation.home.key_path())?;
    let signed = SignedReleaseReceipt::sign(receipt, &key);
    ledger.add_release_receipt(&signed)?;
    Ok(signed)
}

/// The error a run that stopped ends with: which stack failed, and where every
/// stack is now.
pub fn stopped(release: &VerifiedRelease, report: &ReleaseReport, what: &str) -> Error {
    let d = &release.description;
    let failed = report.stacks.iter().find(|s| s.error.is_some());
    let cause = failed
        .and_then(|s| s.error.as_ref())
        .map(|e| e.message.clone())
        .unwrap_or_default();
    let mut message = format!(
        "{what} `{}@{}` stopped at `{}`: {cause}\nstacks now (release receipt `{}`, outcome `failed`):",
        d.name,
        d.version,
        failed.map(|s| s.name.as_str()).unwrap_or("?"),
        report.receipt.receipt.id
    );
    for s in &report.receipt.receipt.stacks {
        message.push_str(&format!(
            "\n  {:<16} {} (release pins {}; {})",
            s.name,
            s.installed
                .as_ref()
                .map(|v| format!("at {v}"))
                .unwrap_or_else(|| "not installed".into()),
            s.version,
            s.result.as_str()
        ));
    }
    Error::refused(message).hint(format!(
        "fix the cause and run the same command again: stacks already at `{}@{}` are not applied again",
        d.name, d.version
    ))
}

/// Applies a release whose stacks and inputs are checked; with `[policy]
/// on-failure = "rollback"`, a failure rolls the stacks it changed back, in reverse
/// order.
pub fn apply(run: &super::run::ReleaseRun, ui: &ReleaseUi) -> Result<ReleaseReport> {
    let started_at = receipts::now();
    let stacks = apply_stacks(run, ui)?;
    let failed = stacks.iter().any(|s| s.error.is_some());
    let receipt = record(
        run.installation,
        run.release,
        ReceiptKind::Apply,
        started_at,
        &stacks,
    )?;
    let report = ReleaseReport { receipt, stacks };
    if failed {
        return Err(stopped(run.release, &report, "release"));
    }
    Ok(report)
}

/// Applies the run's stacks; when one fails and `[policy] on-failure =
/// "rollback"`, the stacks it changed go back. Every release apply goes through
/// here: the command, a sync pass, an approval.
pub fn apply_stacks(run: &super::run::ReleaseRun, ui: &ReleaseUi) -> Result<Vec<StackRun>> {
    let mut stacks = super::run::apply(run, ui)?;
    if stacks.iter().any(|s| s.error.is_some()) {
        roll_back_on_failure(run.installation, &mut stacks, run.wait, ui);
    }
    Ok(stacks)
}

/// After a failure, with `[policy] on-failure = "rollback"`: what
/// `roll_back_changed` does; otherwise nothing. True when something was rolled
/// back.
pub fn roll_back_on_failure(
    installation: &Installation,
    stacks: &mut [StackRun],
    wait: Duration,
    ui: &ReleaseUi,
) -> bool {
    if installation.home.config.policy.on_failure != OnFailure::Rollback {
        return false;
    }
    roll_back_changed(installation, stacks, wait, ui);
    stacks.iter().any(|s| s.result == StackResult::RolledBack)
}

/// After a failure: each stack this run changed goes back to the version it had,
/// newest-applied first.
fn roll_back_changed(
    installation: &Installation,
    stacks: &mut [StackRun],
    wait: Duration,
    ui: &ReleaseUi,
) {
    for stack in stacks.iter_mut().rev() {
        let changed = matches!(stack.result, StackResult::Applied | StackResult::Failed);
        let Some(before) = stack.before.clone().filter(|_| changed) else {
            continue;
        };
        (ui.status)(&format!("rolling back `{}` to `{before}`", stack.name));
        // The stack goes back into the release it was part of.
        let release = previous_release(installation, stack).unwrap_or_default();
        let request = Request {
            stack: stack.name.clone(),
            target: Target::Rollback { inputs: vec![] },
            wait,
            options: Options {
                release,
                ..Options::default()
            },
        };
        match ui_deploy(installation, request, ui) {
            Ok(report) => {
                stack.result = StackResult::RolledBack;
                stack.receipt_id = Some(report.receipt.receipt.id);
            }
            Err(error) => (ui.status)(&format!(
                "rolling back `{}` failed: {}",
                stack.name, error.message
            )),
        }
    }
}

/// The release the deployment a rollback of `stack` lands on was part of: the one
/// in place for a stack whose apply failed, the one before for a stack applied.
fn previous_release(installation: &Installation, stack: &StackRun) -> Result<Option<ReleaseRef>> {
    let ledger = installation.ledger()?;
    let landing = match stack.result {
        StackResult::Failed => ledger.current(&stack.name)?,
        _ => ledger.rollback_target(&stack.name)?,
    };
    let Some(landing) = landing else {
        return Ok(None);
    };
    Ok(ledger
        .receipt(&landing.receipt_id)?
        .and_then(|r| r.receipt.release))
}

fn ui_deploy(
    installation: &Installation,
    request: Request,
    ui: &ReleaseUi,
) -> Result<deploy::Report> {
    let mut yes = |_: &str, _: ReceiptKind, _: &crate::engine::PlanDetails| true;
    let status = |line: &str| (ui.status)(line);
    let mut deploy_ui = deploy::Ui {
        verbose: ui.verbose,
        quiet: ui.quiet,
        status: &status,
        confirm: &mut yes,
    };
    deploy::run(installation, request, &mut deploy_ui)
}

/// Where a rollback of `name` goes: the version below the one in place.
pub fn rollback_target(ledger: &Ledger, name: &str) -> Result<(Version, SignedReleaseReceipt)> {
    let receipts = ledger.release_receipts(Some(name))?;
    let mut versions = history::stack_of_versions(&receipts);
    let current = versions.pop().ok_or_else(|| {
        Error::refused(format!("release `{name}` is not applied by this runner")).hint(format!(
            "apply it first with `stackpack-runner apply {name}@VERSION --inputs-dir DIR`"
        ))
    })?;
    let target = versions.pop().ok_or_else(|| {
        Error::refused(format!(
            "release `{name}` has no earlier version to roll back to from `{}`",
            current.receipt.version
        ))
        .hint(format!(
            "to go to another version, run `stackpack-runner apply {name}@VERSION --inputs-dir DIR --allow-downgrade`"
        ))
    })?;
    Ok((current.receipt.version, target))
}

/// Returns every stack of `release` (the previous release, verified) to its version
/// there, with the inputs it had then, in reverse dependency order.
pub fn rollback(
    installation: &Installation,
    release: &VerifiedRelease,
    target: &SignedReleaseReceipt,
    wait: Duration,
    ui: &ReleaseUi,
) -> Result<ReleaseReport> {
    let started_at = receipts::now();
    let ledger = installation.ledger()?;
    let reference = ReleaseRef {
        name: release.description.name.clone(),
        version: release.description.version.clone(),
        digest: release.index_descriptor.digest.clone(),
    };
    let mut stacks = Vec::new();
    let mut failed = false;
    for stack in release.description.reverse_order() {
        let current = ledger.current(&stack.name)?;
        let mut run = StackRun {
            name: stack.name.clone(),
            version: stack.version.clone(),
            result: StackResult::NotReached,
            receipt_id: None,
            before: current.as_ref().map(|d| d.version.clone()),
            error: None,
            outputs: None,
        };
        if failed {
            stacks.push(run);
            continue;
        }
        if let Some(current) = current.filter(|d| d.digest == stack.digest.to_string()) {
            (ui.status)(&format!("`{}@{}` unchanged", stack.name, current.version));
            run.result = StackResult::Unchanged;
            run.receipt_id = Some(current.receipt_id);
            stacks.push(run);
            continue;
        }
        let inputs = saved_inputs(ledger, target, &stack.name)?;
        (ui.status)(&format!(
            "rolling back `{}` to `{}`",
            stack.name, stack.version
        ));
        let request = Request {
            stack: stack.name.clone(),
            target: Target::Apply {
                version: stack.version.clone(),
                inputs,
                allow_downgrade: true,
            },
            wait,
            options: Options {
                release: Some(reference.clone()),
                engine: release.description.engine.clone(),
                ..Options::default()
            },
        };
        failed |= !run.record(
            ui_deploy(installation, request, ui),
            StackResult::RolledBack,
        );
        stacks.push(run);
    }
    stacks.reverse();
    let receipt = record(
        installation,
        release,
        ReceiptKind::Rollback,
        started_at,
        &stacks,
    )?;
    let report = ReleaseReport { receipt, stacks };
    if failed {
        return Err(stopped(release, &report, "the rollback to"));
    }
    Ok(report)
}

/// The inputs a stack had in the release `target` recorded: the file kept with the
/// deployment its receipt names (wired values included).
fn saved_inputs(
    ledger: &Ledger,
    target: &SignedReleaseReceipt,
    stack: &str,
) -> Result<Vec<PathBuf>> {
    let receipt_id = target
        .receipt
        .stacks
        .iter()
        .find(|s| s.name == stack)
        .and_then(|s| s.receipt_id.clone());
    let deployment = ledger
        .history(stack)?
        .into_iter()
        .find(|d| Some(&d.receipt_id) == receipt_id.as_ref());
    match deployment {
        Some(d) => Ok(vec![PathBuf::from(d.inputs_file)]),
        None => Err(Error::refused(format!(
            "the inputs `{stack}` had in release `{}@{}` are not in the ledger",
            target.receipt.release, target.receipt.version
        ))
        .hint(format!(
            "apply `{}@{}` with `--inputs-dir DIR --allow-downgrade` instead",
            target.receipt.release, target.receipt.version
        ))),
    }
}

/// Destroys every installed stack of `release`, in reverse dependency order.
pub fn destroy(
    installation: &Installation,
    release: &VerifiedRelease,
    wait: Duration,
    ui: &ReleaseUi,
) -> Result<ReleaseReport> {
    let started_at = receipts::now();
    let ledger = installation.ledger()?;
    let mut stacks = Vec::new();
    let mut failed = false;
    for stack in release.description.reverse_order() {
        let current = ledger.current(&stack.name)?;
        let mut run = StackRun {
            name: stack.name.clone(),
            version: stack.version.clone(),
            result: StackResult::NotReached,
            receipt_id: None,
            before: current.as_ref().map(|d| d.version.clone()),
            error: None,
            outputs: None,
        };
        let claimed = history::claimed_by(ledger, &stack.name)?;
        let ours = claimed.is_none_or(|r| r.name == release.description.name);
        if failed || current.is_none() || !ours {
            stacks.push(run);
            continue;
        }
        (ui.status)(&format!("destroying `{}`", stack.name));
        let request = Request {
            stack: stack.name.clone(),
            target: Target::Destroy,
            wait,
            options: Options {
                engine: release.description.engine.clone(),
                ..Options::default()
            },
        };
        failed |= !run.record(ui_deploy(installation, request, ui), StackResult::Destroyed);
        stacks.push(run);
    }
    stacks.reverse();
    let receipt = record(
        installation,
        release,
        ReceiptKind::Destroy,
        started_at,
        &stacks,
    )?;
    let report = ReleaseReport { receipt, stacks };
    if failed {
        return Err(stopped(release, &report, "the destroy of"));
    }
    Ok(report)
}
