//! One reconcile pass: read what should run, and for each release pull if needed,
//! verify, plan, then follow the home's approval policy (apply, or hold the exact
//! plan as a pending approval); leave a receipt when something happened, and
//! report the pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use semver::Version;
use stackpack_bundle::release::VerifiedRelease;
use stackpack_schema::receipt::ReceiptKind;
use stackpack_schema::rollout::{ApprovedKind, SyncReleaseReport, SyncReport, SyncState};

use super::deployable;
use super::last::{self, LastSync};
use super::lock::SyncLock;
use super::pending::{self, Fingerprint, HoldReason, Pending, PendingStack};
use super::registry::Registry;
use super::source::{self, Assigned, Target};
use super::window::Window;
use crate::deploy::{self, Options, Request, Target as DeployTarget, Ui};
use crate::engine::PlanDetails;
use crate::error::{Error, Result};
use crate::home::{Approve, Home, OnDrift, OnRemoval, SyncSource};
use crate::installation::Installation;
use crate::ledger::Ledger;
use crate::release::run::{self, Planned, ReleaseRun, ReleaseUi, StackRun};
use crate::release::{history, ops, stored};
use crate::{receipts, review};
use stackpack_schema::receipt::Outcome as ReceiptOutcome;

/// What a pass is asked to do, beyond `runner.toml`.
pub struct Pass {
    pub source: SyncSource,
    /// The desired-state file (for `desired`).
    pub desired: Option<PathBuf>,
    /// The inputs folder every release uses unless the desired state names one.
    pub inputs: Option<PathBuf>,
    /// The registry, when one is set: the source for `registry`, where releases
    /// are pulled from, and where the pass is reported.
    pub registry: Option<Registry>,
    pub now: time::OffsetDateTime,
}

impl Pass {
    /// The pass `runner.toml` describes, with the flags' overrides applied by the
    /// caller.
    pub fn from_home(home: &Home) -> Pass {
        let sync = &home.config.sync;
        Pass {
            source: sync.source(),
            desired: sync.desired.as_ref().map(|p| home.resolve(p)),
            inputs: source::default_inputs(home, None),
            registry: None,
            now: time::OffsetDateTime::now_utc(),
        }
    }
}

/// How a pass ended, and what it sent.
pub struct Outcome {
    pub report: SyncReport,
    /// Receipts sent to the registry in this pass.
    pub sent: usize,
    /// Why the report could not be sent, when it could not.
    pub unreported: Option<String>,
}

impl Outcome {
    /// Whether something failed or was refused (exit 1).
    pub fn failed(&self) -> bool {
        self.unreported.is_some()
            || self
                .report
                .releases
                .iter()
                .any(|r| matches!(r.state, SyncState::Failed | SyncState::Refused))
    }
}

fn release_report(
    release: &str,
    assigned: Option<&Version>,
    state: SyncState,
) -> SyncReleaseReport {
    SyncReleaseReport {
        release: release.to_string(),
        kind: ApprovedKind::Release,
        assigned: assigned.cloned(),
        running: None,
        state,
        pending: None,
        message: None,
        receipt_id: None,
    }
}

/// Runs one pass under the home's sync lock.
pub fn run_pass(installation: &Installation, pass: &Pass, ui: &ReleaseUi) -> Result<Outcome> {
    let _lock = SyncLock::acquire(installation)?;
    let started_at = receipts::now();
    let ledger = installation.ledger()?;
    let interrupted: Vec<String> = ledger
        .interrupted_runs()?
        .into_iter()
        .map(|r| {
            format!(
                "`{}` of `{}@{}` started at {} was interrupted (work folder `{}` kept)",
                r.kind, r.stack, r.version, r.started_at, r.work
            )
        })
        .collect();
    for line in &interrupted {
        (ui.status)(&format!("warning: {line}; this pass plans it again"));
    }
    let window = match &installation.config.sync.window {
        Some(text) => Some(text.parse::<Window>().map_err(|e| {
            Error::refused(e).at(format!(
                "`{}`",
                installation.root.join("runner.toml").display()
            ))
        })?),
        None => None,
    };
    let assigned = match assignment(installation, pass) {
        Ok(assigned) => assigned,
        Err(error) => {
            last::record(installation, &LastSync::stopped(&error.message), ui.status);
            return Err(error);
        }
    };
    let mut releases = Vec::new();
    let named: BTreeSet<String> = assigned
        .targets
        .iter()
        .map(|t| t.release.clone())
        .chain(assigned.refused.iter().map(|r| r.release.clone()))
        .collect();
    for target in &assigned.targets {
        (ui.status)(&format!("syncing `{}@{}`", target.release, target.version));
        let in_window = window.as_ref().is_none_or(|w| w.contains(pass.now));
        let report = match sync_release(installation, target, in_window, ui) {
            Ok(report) => report,
            Err(error) => {
                let mut report =
                    release_report(&target.release, Some(&target.version), SyncState::Failed);
                report.kind = target.kind;
                report.message = Some(error.message);
                report.running = running(ledger, target.kind, &target.release)?;
                report
            }
        };
        releases.push(report);
    }
    for refused in assigned.refused {
        let mut report = release_report(&refused.release, refused.assigned.as_ref(), refused.state);
        report.kind = refused.kind;
        report.running = running(ledger, refused.kind, &refused.release)?;
        report.message = Some(refused.message);
        releases.push(report);
    }
    if pass.source != SyncSource::Store {
        releases.extend(removed(installation, ledger, &named, ui)?);
    }
    let report = SyncReport {
        customer: installation.config.customer.clone(),
        started_at,
        finished_at: receipts::now(),
        releases,
        interrupted: (!interrupted.is_empty()).then(|| interrupted.join("; ")),
        approve: Some(installation.config.sync.approve),
    };
    Ok(send_and_keep(installation, pass, ledger, report, ui))
}

/// Sends the pass's receipts and report (connected), and keeps it for `status`.
fn send_and_keep(
    installation: &Installation,
    pass: &Pass,
    ledger: &Ledger,
    report: SyncReport,
    ui: &ReleaseUi,
) -> Outcome {
    let (mut sent, mut unreported) = (0, None);
    if let Some(registry) = &pass.registry {
        let sending = registry
            .send_receipts(ledger)
            .and_then(|n| registry.send_report(&report).map(|()| n));
        match sending {
            Ok(n) => sent = n,
            Err(error) => {
                (ui.status)(&format!("warning: {}", error.message));
                unreported = Some(error.message);
            }
        }
    }
    let kept = LastSync {
        finished_at: report.finished_at.clone(),
        error: None,
        report: Some(report.clone()),
        unreported: unreported.clone(),
    };
    last::record(installation, &kept, ui.status);
    Outcome {
        report,
        sent,
        unreported,
    }
}

fn assignment(installation: &Installation, pass: &Pass) -> Result<Assigned> {
    match pass.source {
        SyncSource::Registry => {
            let registry = pass.registry.as_ref().ok_or_else(|| {
                Error::usage("`source = \"registry\"` needs a registry: set `registry` under `[sync]` in `runner.toml`, or pass `--registry HOST/NAMESPACE`")
            })?;
            source::from_registry(installation, registry, pass.inputs.clone())
        }
        SyncSource::Desired => {
            let path = pass.desired.as_ref().ok_or_else(|| {
                Error::usage("`source = \"desired\"` needs a desired-state file: set `desired` under `[sync]` in `runner.toml`, or pass `--desired FILE`")
            })?;
            source::from_desired(
                installation,
                path,
                pass.inputs.clone(),
                pass.registry.as_ref(),
            )
        }
        SyncSource::Store => source::from_store(installation, pass.inputs.clone()),
    }
}

/// Releases applied here that the source no longer names: kept unless
/// `on-removal = "destroy"`.
fn removed(
    installation: &Installation,
    ledger: &Ledger,
    named: &BTreeSet<String>,
    ui: &ReleaseUi,
) -> Result<Vec<SyncReleaseReport>> {
    let mut out = Vec::new();
    let applied: BTreeSet<String> = ledger
        .release_receipts(None)?
        .into_iter()
        .map(|r| r.receipt.release)
        .collect();
    for name in applied.difference(named) {
        let Some(running) = history::current(ledger, name)? else {
            continue;
        };
        let mut report = release_report(name, None, SyncState::Converged);
        report.running = Some(running.clone());
        match installation.config.sync.on_removal {
            OnRemoval::Keep => {
                report.message = Some(format!(
                    "no longer assigned: `{name}@{running}` is kept running (`on-removal = \"keep\"`)"
                ));
            }
            OnRemoval::Destroy if installation.config.sync.approve == Approve::Auto => {
                (ui.status)(&format!(
                    "destroying `{name}@{running}`: no longer assigned"
                ));
                let release = stored::load(installation, name, &running)?;
                match ops::destroy(installation, &release, Duration::ZERO, ui) {
                    Ok(done) => {
                        report.state = SyncState::Applied;
                        report.running = None;
                        report.receipt_id = Some(done.receipt.receipt.id);
                        report.message = Some("destroyed: no longer assigned".into());
                    }
                    Err(error) => {
                        report.state = SyncState::Failed;
                        report.message = Some(error.message);
                    }
                }
            }
            OnRemoval::Destroy => {
                report.state = SyncState::Refused;
                report.message = Some(format!(
                    "no longer assigned: destroying it needs a person (`approve = \"{}\"`): run `stackpack-runner destroy {name}`",
                    installation.config.sync.approve.as_str()
                ));
            }
        }
        out.push(report);
    }
    Ok(out)
}

/// The version of release (or single stack) `name` in place.
fn running(ledger: &Ledger, kind: ApprovedKind, name: &str) -> Result<Option<Version>> {
    deployable::of(kind).running(ledger, name)
}

/// The release (or single stack) `name@version` as the store holds it, verified.
fn load(
    installation: &Installation,
    kind: ApprovedKind,
    name: &str,
    version: &Version,
) -> Result<VerifiedRelease> {
    deployable::of(kind).load(installation, name, version)
}

/// Whether every stack of `release` runs the version it pins, as the latest
/// release receipt says (a single stack: its bundle is in place).
fn at_target(ledger: &Ledger, kind: ApprovedKind, release: &VerifiedRelease) -> Result<bool> {
    let d = &release.description;
    for stack in &d.stacks {
        match ledger.current(&stack.name)? {
            Some(current) if current.digest == stack.digest.to_string() => {}
            _ => return Ok(false),
        }
    }
    Ok(running(ledger, kind, &d.name)? == Some(d.version.clone()))
}

/// One release: checks, plan, the approval policy, apply or hold.
fn sync_release(
    installation: &Installation,
    target: &Target,
    in_window: bool,
    ui: &ReleaseUi,
) -> Result<SyncReleaseReport> {
    let sync = &installation.config.sync;
    let ledger = installation.ledger()?;
    let name = &target.release;
    let version = &target.version;
    let running = running(ledger, target.kind, name)?;
    let mut report = release_report(name, Some(version), SyncState::Refused);
    report.kind = target.kind;
    report.running = running.clone();
    if let Some(running) = &running {
        if version.cmp_precedence(running) == std::cmp::Ordering::Less && !sync.allow_downgrade {
            report.message = Some(format!(
                "`{name}@{version}` is older than the running `{running}`: a downgrade is refused (set `allow-downgrade = true` under `[sync]` to allow it)"
            ));
            return Ok(report);
        }
    }
    if !version.pre.is_empty() && !installation.config.policy.allow_prereleases {
        report.message = Some(format!(
            "`{name}@{version}` is a prerelease, and this runner's policy allows stable versions only"
        ));
        return Ok(report);
    }
    let release = load(installation, target.kind, name, version)?;
    if let Some(digest) = &target.digest {
        if *digest != release.index_descriptor.digest {
            report.message = Some(format!(
                "the store's `{name}@{version}` is `{}`, not the `{}` the vendor approved",
                release.index_descriptor.digest.short(),
                digest.short()
            ));
            return Ok(report);
        }
    }
    if let Some(why) = deployable::of(target.kind).held_back(ledger, name, &release)? {
        report.message = Some(why);
        return Ok(report);
    }
    if !in_window {
        report.state = if at_target(ledger, target.kind, &release)? {
            SyncState::Converged
        } else {
            report.message = Some(format!(
                "outside the maintenance window `{}`: nothing is planned or applied until it opens",
                sync.window.as_deref().unwrap_or_default()
            ));
            SyncState::OutsideWindow
        };
        return Ok(report);
    }
    let report = converge(installation, &release, target, report, BTreeSet::new(), ui)?;
    match (report.state, sync.on_drift) {
        (SyncState::Converged, Some(on_drift)) => {
            drift(installation, &release, target, report, on_drift, ui)
        }
        _ => Ok(report),
    }
}

/// A converged release checked for changes made outside the runner: reported
/// (drift receipts, state `drifted`), or corrected by applying the installed
/// version again through the approval policy.
fn drift(
    installation: &Installation,
    release: &VerifiedRelease,
    target: &Target,
    mut report: SyncReleaseReport,
    on_drift: OnDrift,
    ui: &ReleaseUi,
) -> Result<SyncReleaseReport> {
    let mut drifted = BTreeSet::new();
    let mut receipt = None;
    for stack in &release.description.stacks {
        let request = Request {
            stack: stack.name.clone(),
            target: DeployTarget::Drift,
            wait: Duration::ZERO,
            options: Options::default(),
        };
        let mut yes = |_: &str, _: ReceiptKind, _: &PlanDetails| true;
        let status = |line: &str| (ui.status)(line);
        let mut deploy_ui = Ui {
            verbose: ui.verbose,
            quiet: ui.quiet,
            status: &status,
            confirm: &mut yes,
        };
        let done = deploy::run(installation, request, &mut deploy_ui)?;
        if done.receipt.receipt.outcome == ReceiptOutcome::Drifted {
            drifted.insert(stack.name.clone());
            receipt.get_or_insert(done.receipt.receipt.id);
        }
    }
    if drifted.is_empty() {
        return Ok(report);
    }
    let names = drifted
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ");
    match on_drift {
        OnDrift::Report => {
            report.state = SyncState::Drifted;
            report.message = Some(format!(
                "changed outside the runner: {names} (`on-drift = \"report\"`)"
            ));
            report.receipt_id = receipt;
            Ok(report)
        }
        OnDrift::Correct => {
            (ui.status)(&format!("correcting drift in {names}"));
            let mut corrected = converge(installation, release, target, report, drifted, ui)?;
            if corrected.state == SyncState::Applied {
                corrected.message = Some(format!("drift corrected in {names}"));
            }
            Ok(corrected)
        }
    }
}

/// Plans and applies (or holds) until nothing is left to plan: stacks waiting on
/// an upstream are planned once it is applied, within the same pass.
fn converge(
    installation: &Installation,
    release: &VerifiedRelease,
    target: &Target,
    mut report: SyncReleaseReport,
    mut force: BTreeSet<String>,
    ui: &ReleaseUi,
) -> Result<SyncReleaseReport> {
    let sync = &installation.config.sync;
    let name = &target.release;
    let started_at = receipts::now();
    let mut ran: BTreeMap<String, StackRun> = BTreeMap::new();
    let ledger = installation.ledger()?;
    let was_at_target = at_target(ledger, target.kind, release)?;
    for _ in 0..=release.description.stacks.len() {
        // Forced stacks are planned once; after their apply the ledger knows them.
        let run = release_run(
            installation,
            release,
            target.kind,
            &target.inputs,
            BTreeMap::new(),
            std::mem::take(&mut force),
        )?;
        let staging = pending::staging(installation)?;
        let planned = match run::plan_to(&run, ui, Some(staging.path())) {
            Ok(planned) => planned,
            // A stack waiting on one this pass applied failed to plan: the pass
            // stops there, as a failed apply does.
            Err(error) if !ran.is_empty() => {
                report.state = SyncState::Failed;
                report.message = Some(error.message);
                roll_back(installation, release, &mut ran, &mut report, ui);
                return finish(installation, release, started_at, ran, report);
            }
            Err(error) => return Err(error),
        };
        let changed: Vec<(&String, &crate::deploy::Report)> = planned
            .iter()
            .filter_map(|(stack, p)| match p {
                Planned::Changes(r) => Some((stack, r.as_ref())),
                _ => None,
            })
            .collect();
        if changed.is_empty() {
            break;
        }
        let reference = format!("{name}@{}", target.version);
        if let Some(refusal) = changed
            .iter()
            .find_map(|(_, r)| r.verdict.refusal(&reference))
        {
            report.state = SyncState::Failed;
            report.message = Some(refusal.message);
            report.receipt_id = Some(changed[0].1.receipt.receipt.id.clone());
            return finish(installation, release, started_at, ran, report);
        }
        let destructive = changed
            .iter()
            .any(|(_, r)| !pending::destructive(&r.plan).is_empty());
        if let Some(reason) = HoldReason::of(sync.approve, destructive, target.hold.as_deref()) {
            let held = Held {
                planned: &planned,
                reason,
            };
            hold_for_approval(installation, release, target, held, staging, &mut report)?;
            report.receipt_id = Some(changed[0].1.receipt.receipt.id.clone());
            return finish(installation, release, started_at, ran, report);
        }
        let names: Vec<String> = changed.iter().map(|(stack, _)| stack.to_string()).collect();
        let stacks = apply_planned(installation, release, target, staging.path(), &names, ui)?;
        let failed = first_failure(&stacks);
        for stack in stacks {
            ran.insert(stack.name.clone(), stack);
        }
        if let Some((stack, message)) = failed {
            report.state = SyncState::Failed;
            report.message = Some(format!("`{stack}` failed: {message}"));
            roll_back(installation, release, &mut ran, &mut report, ui);
            return finish(installation, release, started_at, ran, report);
        }
        if let Some(old) = pending::of_release(installation, name)? {
            pending::remove(installation, &old.id)?;
        }
    }
    report.state = if ran.is_empty() && was_at_target {
        SyncState::Converged
    } else {
        SyncState::Applied
    };
    if let Some(old) = pending::of_release(installation, name)? {
        pending::remove(installation, &old.id)?;
    }
    finish(installation, release, started_at, ran, report)
}

/// This round's plans, and why they wait.
struct Held<'a> {
    planned: &'a [(String, Planned)],
    reason: HoldReason,
}

/// Holds this round's plans as a pending approval and says so, and why, in the
/// report.
fn hold_for_approval(
    installation: &Installation,
    release: &VerifiedRelease,
    target: &Target,
    held: Held,
    staging: tempfile::TempDir,
    report: &mut SyncReleaseReport,
) -> Result<()> {
    let held = hold_plan(installation, release, target, held, staging)?;
    report.state = SyncState::PendingApproval;
    report.message = Some(format!(
        "held for approval ({}): review `{}`, then run `stackpack-runner approve {}`",
        held.reason
            .as_ref()
            .map(|r| r.to_string())
            .unwrap_or_default(),
        pending::dir(installation, &held.id)
            .join(pending::REVIEW)
            .display(),
        held.id
    ));
    report.pending = Some(held.report());
    Ok(())
}

/// Applies exactly the plans the policy was applied to (the reviewed plans this
/// round staged for `stacks`); returns each stack's run and the first failure.
fn apply_planned(
    installation: &Installation,
    release: &VerifiedRelease,
    target: &Target,
    staging: &Path,
    stacks: &[String],
    ui: &ReleaseUi,
) -> Result<Vec<StackRun>> {
    let reviewed: BTreeMap<String, PathBuf> = stacks
        .iter()
        .map(|stack| (stack.clone(), run::reviewed_plan_path(staging, stack)))
        .collect();
    let run = release_run(
        installation,
        release,
        target.kind,
        &target.inputs,
        reviewed,
        BTreeSet::new(),
    )?;
    run::apply(&run, ui)
}

/// The first stack of a run that failed, with why.
fn first_failure(stacks: &[StackRun]) -> Option<(String, String)> {
    stacks.iter().find_map(|s| {
        s.error
            .as_ref()
            .map(|e| (s.name.clone(), e.message.clone()))
    })
}

/// After a failure, with `[policy] on-failure = "rollback"`: every stack this
/// pass changed goes back, the last applied first, as `apply` does.
fn roll_back(
    installation: &Installation,
    release: &VerifiedRelease,
    ran: &mut BTreeMap<String, StackRun>,
    report: &mut SyncReleaseReport,
    ui: &ReleaseUi,
) {
    // The release's order is the order its stacks were applied in.
    let mut stacks: Vec<StackRun> = release
        .description
        .stacks
        .iter()
        .filter_map(|s| ran.remove(&s.name))
        .collect();
    if ops::roll_back_on_failure(installation, &mut stacks, Duration::ZERO, ui) {
        if let Some(message) = report.message.as_mut() {
            message
                .push_str("; what this pass changed was rolled back (`on-failure = \"rollback\"`)");
        }
    }
    ran.extend(stacks.into_iter().map(|s| (s.name.clone(), s)));
}

/// The release's stacks with their inputs checked (`inputs` is the folder, or a
/// single stack's file); with `reviewed`, only those stacks, each applied from its
/// reviewed plan.
pub fn release_run<'a>(
    installation: &'a Installation,
    release: &'a VerifiedRelease,
    kind: ApprovedKind,
    inputs: &Path,
    reviewed: BTreeMap<String, PathBuf>,
    force: BTreeSet<String>,
) -> Result<ReleaseRun<'a>> {
    let deployable = deployable::of(kind);
    let mut stacks = deployable.stacks(installation, release, inputs)?;
    if !reviewed.is_empty() {
        stacks.retain(|s| reviewed.contains_key(&s.stack.name));
    }
    Ok(ReleaseRun {
        installation,
        release,
        stacks,
        wait: Duration::ZERO,
        parallel: 1,
        allow_downgrade: installation.config.sync.allow_downgrade,
        reviewed,
        force,
        part_of: deployable.part_of(release),
    })
}

/// Records the release receipt when the pass changed something (or put the
/// release in place), and finishes its report. A single stack has no release
/// receipt: its report points at the stack's own.
fn finish(
    installation: &Installation,
    release: &VerifiedRelease,
    started_at: String,
    ran: BTreeMap<String, StackRun>,
    mut report: SyncReleaseReport,
) -> Result<SyncReleaseReport> {
    let ledger = installation.ledger()?;
    let placed = report.state == SyncState::Applied;
    let deployable = deployable::of(report.kind);
    if let Some(id) = deployable.receipt_id(installation, release, started_at, ran, placed)? {
        report.receipt_id = Some(id);
    }
    report.running = running(ledger, report.kind, &release.description.name)?;
    Ok(report)
}

/// Keeps the plan as a pending approval, or keeps the one already held when it is
/// the same plan (same id).
fn hold_plan(
    installation: &Installation,
    release: &VerifiedRelease,
    target: &Target,
    Held { planned, reason }: Held,
    staging: tempfile::TempDir,
) -> Result<Pending> {
    let key = receipts::installation_key(&installation.key_path())?;
    let mut records = Vec::new();
    for (stack, p) in planned {
        if let Planned::Changes(r) = p {
            let (record, _) = review::read(&run::reviewed_plan_path(staging.path(), stack), &key)?;
            records.push((stack, r, record));
        }
    }
    let fingerprints: Vec<Fingerprint> = records
        .iter()
        .map(|(stack, r, record)| Fingerprint {
            stack,
            bundle: &record.bundle_digest,
            inputs_hash: &record.inputs_hash,
            state: &record.state,
            plan: &r.plan,
        })
        .collect();
    let id = pending::id(&release.index_descriptor.digest, &fingerprints);
    let existing = pending::of_release(installation, &target.release)?;
    if let Some(existing) = existing {
        if existing.id == id && pending::exists(&pending::dir(installation, &id)) {
            // The same change against the same state: the plan already held stays
            // the one to approve, with why it waits now.
            let mut existing = existing;
            if existing.reason.as_ref() != Some(&reason) {
                existing.reason = Some(reason);
                pending::rewrite(installation, &existing)?;
            }
            return Ok(existing);
        }
        pending::remove(installation, &existing.id)?;
    }
    let pending = Pending {
        id,
        kind: target.kind,
        release: target.release.clone(),
        version: target.version.clone(),
        digest: release.index_descriptor.digest.clone(),
        inputs: target.inputs.clone(),
        since: receipts::now(),
        stacks: records
            .iter()
            .map(|(stack, r, _)| PendingStack {
                stack: stack.to_string(),
                version: release
                    .description
                    .stacks
                    .iter()
                    .find(|s| &s.name == *stack)
                    .map(|s| s.version.clone())
                    .unwrap_or_else(|| target.version.clone()),
                plan: format!("{stack}.plan.json"),
                summary: r.plan.summary,
                destructive: pending::destructive(&r.plan),
                changes: r.plan.planned(),
            })
            .collect(),
        waiting: planned
            .iter()
            .filter(|(_, p)| matches!(p, Planned::Waiting(_)))
            .map(|(s, _)| s.clone())
            .collect(),
        reason: Some(reason),
    };
    pending::hold(installation, staging, &pending)?;
    Ok(pending)
}

/// After `approve`: sends the receipts it left and a sync report of that one
/// release, so the registry's gate need not wait for the next pass.
pub fn report_approval(
    installation: &Installation,
    registry: &Registry,
    report: &SyncReleaseReport,
) -> Result<()> {
    let ledger = installation.ledger()?;
    registry.send_receipts(ledger)?;
    let now = receipts::now();
    registry.send_report(&SyncReport {
        customer: installation.config.customer.clone(),
        started_at: now.clone(),
        finished_at: now,
        releases: vec![report.clone()],
        interrupted: None,
        approve: Some(installation.config.sync.approve),
    })
}

/// `approve ID`: applies exactly the held plans, under the home's sync lock;
/// refused when the release, the inputs or a stack's state moved since.
pub fn approve(installation: &Installation, id: &str, ui: &ReleaseUi) -> Result<SyncReleaseReport> {
    let _lock = SyncLock::acquire(installation)?;
    let held = pending::find(installation, id)?;
    let moved = |what: String| {
        Error::refused(format!(
            "pending approval `{}` cannot be applied: {what}; nothing was applied",
            held.id
        ))
        .hint("the next `stackpack-runner sync` pass plans again and holds the new plan under a new id")
    };
    let release = load(installation, held.kind, &held.release, &held.version)?;
    if release.index_descriptor.digest != held.digest {
        pending::remove(installation, &held.id)?;
        return Err(moved(format!(
            "the store's `{}@{}` is not the release it was planned for",
            held.release, held.version
        )));
    }
    let reviewed: BTreeMap<String, PathBuf> = held
        .stacks
        .iter()
        .map(|s| (s.stack.clone(), held.plan_path(installation, s)))
        .collect();
    let started_at = receipts::now();
    let run = release_run(
        installation,
        &release,
        held.kind,
        &held.inputs,
        reviewed,
        BTreeSet::new(),
    )?;
    let stacks = ops::apply_stacks(&run, ui)?;
    let failed = first_failure(&stacks);
    let ran: BTreeMap<String, StackRun> = stacks.into_iter().map(|s| (s.name.clone(), s)).collect();
    // A single stack's own receipt is the record; a release gets its release
    // receipt.
    let receipt_id =
        deployable::of(held.kind).receipt_id(installation, &release, started_at, ran, true)?;
    pending::remove(installation, &held.id)?;
    if let Some((stack, message)) = failed {
        let mut error = moved(format!("`{stack}`: {message}"));
        if let Some(id) = &receipt_id {
            error.message.push_str(&format!(" (receipt `{id}`)"));
        }
        return Err(error);
    }
    let ledger = installation.ledger()?;
    let mut report = release_report(&held.release, Some(&held.version), SyncState::Applied);
    report.kind = held.kind;
    report.running = running(ledger, held.kind, &held.release)?;
    report.receipt_id = receipt_id;
    if !held.waiting.is_empty() {
        report.message = Some(format!(
            "applied; {} wait on their upstream and are planned by the next `sync` pass",
            held.waiting.join(", ")
        ));
    }
    Ok(report)
}
