//! Plan, apply, rollback and drift: verify (always), check inputs, unpack into a fresh
//! work folder, run the engine, and record a signed receipt of what happened.
//!
//! Once verification passed and the engine is about to run, every ending records a
//! receipt: a failure is recorded as `failed`, and only an apply the engine finished
//! is ever recorded as `succeeded`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use semver::Version;
use stackpack_schema::receipt::{
    EngineRun, Outcome, PlanSummary, Receipt, ReceiptKind, SignedReceipt, Verification,
    MAX_RECEIPT_CHANGES, RECEIPT_FORMAT,
};

use super::deployment_record;
use super::engine::{self, Engine, PlanDetails, PLAN_FILE};
use super::error::{io, Error, Result};
use super::files;
use super::home::Home;
use super::home::{OnFailure, SecretsInState};
use super::inputs;
use super::installation::Installation;
use super::ledger::Note;
use super::ledger::{Deployment, Ledger, StartedRun};
use super::lock::StackLock;
use super::policy::{self, Verdict};
use super::receipts;
use super::review;
use super::secrets_in_state;
use super::smoke;
use super::store;
use super::unpack;
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_schema::signature::PrivateKey;

/// The name of the inputs file inside the work folder: the merged values of the
/// user's files (never a `TF_VAR_` value, which stays in the environment).
const INPUTS_FILE: &str = "stackpack.tfvars.json";

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

/// The version and inputs a run resolved to, and what ran before.
struct Resolved {
    version: Version,
    inputs: Vec<PathBuf>,
    previous: Option<Version>,
}

/// What a run found on its way, beside the plan: recorded with its receipt.
#[derive(Default)]
struct Found {
    verdict: Verdict,
    smoke: Vec<smoke::Failure>,
    /// Sensitive inputs' values the state holds after the apply.
    secrets: Vec<secrets_in_state::Found>,
    /// What preflight checked of the account on the plan.
    preflight: Vec<stackpack_schema::preflight::PreflightCheck>,
}

impl Found {
    fn notes(&self) -> Vec<Note> {
        let policy = |kind: &str, r: &policy::PolicyResult| Note {
            kind: kind.into(),
            rule: r.rule.clone(),
            address: r.address.clone(),
            message: r.message.clone(),
        };
        self.verdict
            .denied
            .iter()
            .map(|r| policy("policy-deny", r))
            .chain(
                self.verdict
                    .warnings
                    .iter()
                    .map(|r| policy("policy-warn", r)),
            )
            .chain(self.smoke.iter().map(|f| Note {
                kind: "smoke-failed".into(),
                rule: f.check.clone(),
                address: None,
                message: f.message.clone(),
            }))
            .chain(self.secrets.iter().map(|f| Note {
                kind: "secret-in-state".into(),
                rule: f.input.clone(),
                address: Some(f.address.clone()),
                message: secrets_in_state::describe(f),
            }))
            .collect()
    }
}

/// Runs one plan, apply, rollback, drift check or destroy. An apply whose smoke
/// checks fail is followed at once by a rollback when `runner.toml` says
/// `on-failure = "rollback"`; either way it ends in an error naming what failed.
pub fn run(installation: &Installation, request: Request, ui: &mut Ui) -> Result<Report> {
    let home = &installation.home;
    let stack = request.stack.clone();
    let wait = request.wait;
    let mut report = run_once(installation, request, ui)?;
    if report.smoke.is_empty() {
        return Ok(report);
    }
    let r = &report.receipt.receipt;
    let failed = report
        .smoke
        .iter()
        .map(|f| format!("\n  {}: {}", f.check, f.message))
        .collect::<String>();
    let applied = format!(
        "smoke checks failed after applying `{stack}@{}` (receipt `{}`, outcome `failed`):{failed}",
        r.version, r.id
    );
    let can_roll_back = report.previous.as_ref().is_some_and(|p| *p != r.version);
    if home.config.policy.on_failure != OnFailure::Rollback || !can_roll_back {
        let hint = if can_roll_back {
            format!("run `stackpack-runner rollback {stack}` to go back, or set `on-failure = \"rollback\"` under `[policy]` in `runner.toml` to do it at once")
        } else {
            "there is no earlier version to roll back to; fix the inputs or ask the vendor".into()
        };
        return Err(Error::refused(applied).hint(hint));
    }
    (ui.status)(&format!(
        "smoke checks failed: rolling back `{stack}` to `{}` at once",
        report
            .previous
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default()
    ));
    let mut confirm_rollback = |_: &str, _: ReceiptKind, _: &PlanDetails| true;
    let mut rollback_ui = Ui {
        verbose: ui.verbose,
        quiet: ui.quiet,
        status: ui.status,
        confirm: &mut confirm_rollback,
    };
    let rollback = run_once(
        installation,
        Request {
            stack: stack.clone(),
            target: Target::Rollback { inputs: vec![] },
            wait,
            // What the failed apply created may go again, buckets included: the
            // policies see those addresses as named by the operator.
            options: Options {
                allow_replace: report
                    .plan
                    .changes
                    .iter()
                    .filter(|c| c.action == stackpack_schema::plan::Action::Create)
                    .map(|c| c.address.clone())
                    .collect(),
                ..Options::default()
            },
        },
        &mut rollback_ui,
    );
    match rollback {
        Ok(done) => {
            let message = format!(
                "{applied}\nrolled back to `{stack}@{}` (receipt `{}`, outcome `{}`)",
                done.receipt.receipt.version, done.receipt.receipt.id, done.receipt.receipt.outcome
            );
            report.rollback = Some(Box::new(done));
            Err(Error::refused(message).hint(
                "`stackpack-runner status` shows the last attempt; `stackpack-runner receipts list` both receipts",
            ))
        }
        Err(error) => Err(Error::refused(format!(
            "{applied}\nthe automatic rollback failed too: {}",
            error.message
        ))
        .hint(format!(
            "the stack is at `{stack}@{}`: run `stackpack-runner rollback {stack}` once the cause is fixed",
            r.version
        ))),
    }
}

/// The stack's lock in this home (waiting up to `request.wait`), and beside a
/// bucket's state the record of who runs it, for `unlock` from any home: marked
/// finished when the returned value is dropped.
fn take_stack(
    home: &Home,
    request: &Request,
    ui: &mut Ui,
) -> Result<(StackLock, Option<super::run_marker::Running>)> {
    let lock = StackLock::acquire(&home.locks_dir(), &request.stack, request.wait, |who| {
        (ui.status)(&format!(
            "waiting for {who} to finish with stack `{}`…",
            request.stack
        ))
    })?;
    Ok((lock, super::run_marker::start(home, &request.stack)))
}

/// Runs one plan, apply, rollback, drift check or destroy, under the stack's lock.
fn run_once(installation: &Installation, request: Request, ui: &mut Ui) -> Result<Report> {
    let home = &installation.home;
    let ledger = installation.ledger()?;
    warn_interrupted(ledger, ui)?;
    let (lock, _running) = take_stack(home, &request, ui)?;
    let resolved = resolve(ledger, &request)?;
    check_policy(home, &request, &resolved)?;
    let stack = &request.stack;
    let version = &resolved.version;
    let (bundle, verified) = verify(home, stack, version, ui)?;
    let parsed = read_inputs(home, &bundle, &resolved.inputs)?;
    let text = parsed.to_engine_json();
    let secrets = secrets_in_state::sensitive_values(&parsed, &bundle.config.interface);
    let key = receipts::installation_key(&home.key_path())?;
    let inputs_hash = inputs::inputs_hash(&parsed, &receipts::inputs_secret(&key));
    let reviewed = match &request.options.reviewed {
        Some(path) => Some(check_reviewed(path, &key, &bundle, &inputs_hash)?),
        None => None,
    };
    // From here on every ending is recorded.
    let mut receipt = new_receipt(home, &request, &bundle, inputs_hash);
    receipt.verified = Some(verified);
    let mut plan = PlanDetails::default();
    let mut found = Found::default();
    let mut work_kept = None;
    let result = execute(
        Context {
            home,
            bundle: &bundle,
            inputs_text: &text,
            secrets: &secrets,
            inputs: &parsed,
            request: &request,
            ledger,
            lock_fd: lock.raw_fd(),
            key: &key,
            reviewed: reviewed.as_ref(),
        },
        ui,
        &mut receipt,
        &mut plan,
        &mut found,
        &mut work_kept,
    );
    receipt.plan = plan.summary;
    record_changes(&mut receipt, &plan);
    receipt.preflight = std::mem::take(&mut found.preflight);
    receipt.finished_at = receipts::now();
    let ending = Ending {
        home,
        ledger,
        key: &key,
        inputs_text: &text,
        notes: found.notes(),
        record: deployment_record::RecordInputs::of(&parsed, &bundle.config.interface),
        status: ui.status,
    };
    match result {
        Ok(Step::Declined) => Err({
            ledger.finish_run(&receipt.id, stack)?;
            Error::refused(format!(
                "nothing was {}: the plan for `{stack}@{version}` was not confirmed",
                match request.target {
                    Target::Destroy => "destroyed",
                    Target::Rollback { .. } => "rolled back",
                    _ => "applied",
                }
            ))
        }),
        Ok(Step::Done(outcome, outputs)) => {
            // An apply the engine finished changed what runs, even when its smoke
            // checks failed: it is recorded as deployed, and as `failed`.
            let secrets_denied = !found.secrets.is_empty()
                && home.config.policy.secrets_in_state == SecretsInState::Deny;
            receipt.outcome = if found.smoke.is_empty() && !secrets_denied {
                outcome
            } else {
                Outcome::Failed
            };
            let signed = ending.record_success(receipt)?;
            if secrets_denied {
                return Err(secrets_in_state::refusal(&found.secrets, &signed.receipt));
            }
            Ok(Report {
                receipt: signed,
                plan,
                outputs,
                previous: resolved.previous,
                verdict: found.verdict,
                smoke: found.smoke,
                rollback: None,
            })
        }
        Err(error) => Err(ending.record_failure(receipt, error, work_kept)?),
    }
}

/// Verifies `stack@version` in the store (signature, attestations, policy), saying
/// so; returns the record of what was verified.
fn verify(
    home: &Home,
    stack: &str,
    version: &Version,
    ui: &Ui,
) -> Result<(VerifiedBundle, Verification)> {
    let store_layout = home.store()?;
    (ui.status)(&format!("verifying `{stack}@{version}`"));
    let (bundle, verified) = store::verify_recorded(home, &store_layout, stack, version)?;
    (ui.status)(&format!(
        "verified `{stack}@{version}` ({}): {}",
        bundle.manifest_descriptor.digest.short(),
        verified.summary()
    ));
    Ok((bundle, verified))
}

/// Reads the inputs files (later ones win) and the `TF_VAR_` environment, and
/// refuses them, naming every finding, when they do not fit the bundle.
fn read_inputs(home: &Home, bundle: &VerifiedBundle, files: &[PathBuf]) -> Result<inputs::Inputs> {
    let mut parsed = inputs::read_all(files)?;
    parsed.add_environment(&bundle.config.interface);
    // When the bundle cannot be unpacked to read its rules (a full disk, a store
    // changed since verification), the unpack into the work folder below fails the
    // same way, and there it is recorded; the names and types are checked still.
    let findings = check_inputs(home, bundle, &parsed)
        .map(|checked| checked.findings)
        .unwrap_or_else(|_| inputs::check(&parsed, &bundle.config.interface));
    match findings_error(&findings) {
        Some(error) => Err(error),
        None => Ok(parsed),
    }
}

/// The version to run and the inputs to run it with, from the request or the ledger.
fn resolve(ledger: &Ledger, request: &Request) -> Result<Resolved> {
    let stack = &request.stack;
    let current = ledger.current(stack)?;
    let installed = current.as_ref().map(|d| d.version.clone());
    let current_or_refuse = || current.clone().ok_or_else(|| not_deployed(stack));
    Ok(match &request.target {
        Target::Plan { version, inputs }
        | Target::Apply {
            version, inputs, ..
        } => Resolved {
            version: version.clone(),
            inputs: inputs.clone(),
            previous: installed,
        },
        Target::Drift | Target::Destroy => {
            let current = current_or_refuse()?;
            Resolved {
                version: current.version.clone(),
                inputs: vec![PathBuf::from(&current.inputs_file)],
                previous: Some(current.version),
            }
        }
        Target::Rollback { inputs } => {
            let current = current_or_refuse()?;
            // An upgrade that failed part-way left some of the newer version in the
            // state while the version in place is still the current one: going back
            // means re-applying that, the last version that applied cleanly, not the
            // one before it.
            let failed_upgrade = ledger.last_attempt(stack)?.is_some_and(|last| {
                last.receipt.kind == ReceiptKind::Apply
                    && last.receipt.outcome == Outcome::Failed
                    && last.receipt.version != current.version
            });
            let target = if failed_upgrade {
                Some(current.clone())
            } else {
                ledger.rollback_target(stack)?
            };
            let target = target.ok_or_else(|| {
                Error::refused(format!(
                    "stack `{stack}` has no earlier version to roll back to from `{}`",
                    current.version
                ))
                .hint(format!(
                    "to go to another version, run `stackpack-runner apply {stack}@VERSION --allow-downgrade`"
                ))
            })?;
            Resolved {
                version: target.version,
                inputs: if inputs.is_empty() {
                    vec![PathBuf::from(&target.inputs_file)]
                } else {
                    inputs.clone()
                },
                previous: Some(current.version),
            }
        }
    })
}

/// Stable-only customers get no prerelease; nobody downgrades by accident.
fn check_policy(home: &Home, request: &Request, resolved: &Resolved) -> Result<()> {
    let stack = &request.stack;
    let version = &resolved.version;
    if !version.pre.is_empty() && !home.config.policy.allow_prereleases {
        return Err(Error::refused(format!(
            "`{stack}@{version}` is a prerelease, and this runner's policy allows stable versions only"
        ))
        .at(format!("`{}`", home.root.join("runner.toml").display()))
        .hint("set `allow-prereleases = true` under `[policy]` in `runner.toml` to allow prereleases"));
    }
    if let (
        Target::Apply {
            allow_downgrade: false,
            ..
        },
        Some(installed),
    ) = (&request.target, &resolved.previous)
    {
        if version.cmp_precedence(installed) == std::cmp::Ordering::Less {
            return Err(Error::refused(format!(
                "`{stack}@{version}` is older than the installed `{installed}`: refusing to downgrade"
            ))
            .hint(format!(
                "run `stackpack-runner rollback {stack}` to go back, or pass `--allow-downgrade`"
            )));
        }
    }
    Ok(())
}

fn new_receipt(
    home: &Home,
    request: &Request,
    bundle: &VerifiedBundle,
    inputs_hash: stackpack_schema::digest::Digest,
) -> Receipt {
    Receipt {
        format: RECEIPT_FORMAT,
        id: receipts::new_id(),
        customer: home.config.customer.clone(),
        stack: request.stack.clone(),
        version: bundle.config.version.clone(),
        bundle_digest: bundle.manifest_descriptor.digest.clone(),
        inputs_hash,
        engine: EngineRun {
            name: home.config.engine.name,
            version: "unknown".into(),
            digest: None,
        },
        plan: PlanSummary::default(),
        kind: request.target.kind(),
        outcome: Outcome::Failed,
        started_at: receipts::now(),
        finished_at: String::new(),
        key_id: String::new(),
        release: request.options.release.clone(),
        changes: Vec::new(),
        changes_digest: None,
        failure: None,
        drift: Vec::new(),
        runner: Some(stackpack_schema::receipt::RunnerRun {
            version: env!("CARGO_PKG_VERSION").into(),
            platform: stackpack_bundle::provider::current_platform(),
            providers: Vec::new(),
        }),
        drifted: Vec::new(),
        preflight: Vec::new(),
        verified: None,
    }
}

/// The plan's actions in the receipt, for the registry to hold against the
/// forecast: every resource change (capped, the digest covering them all) and what
/// the refresh found changed outside the engine. Only when a plan was read (a run
/// that failed before planning has none); a drift check records what drifted, not
/// a plan to compare with a forecast.
fn record_changes(receipt: &mut Receipt, plan: &PlanDetails) {
    if plan.json.is_empty() {
        return;
    }
    receipt.drifted = stackpack_schema::plan::drifted(&plan.json);
    receipt.drift = plan.drift.clone();
    if receipt.kind == ReceiptKind::Drift {
        return;
    }
    let changes = plan.planned();
    receipt.changes_digest = Some(stackpack_schema::plan::changes_digest(&changes));
    let mut listed = changes;
    listed.sort();
    listed.truncate(MAX_RECEIPT_CHANGES);
    receipt.changes = listed;
}

/// Records how a run ended: a signed receipt always, a deployment when it changed
/// what runs.
struct Ending<'a> {
    home: &'a Home,
    ledger: &'a Ledger,
    key: &'a stackpack_schema::signature::PrivateKey,
    inputs_text: &'a str,
    notes: Vec<Note>,
    /// What the deployment record beside a bucket's state keeps of the inputs.
    record: deployment_record::RecordInputs,
    status: &'a dyn Fn(&str),
}

impl Ending<'_> {
    fn record_success(&self, receipt: Receipt) -> Result<SignedReceipt> {
        let signed = receipts::sign(receipt, self.key);
        self.ledger.add_receipt(&signed)?;
        self.ledger.add_notes(&signed.receipt.id, &self.notes)?;
        self.ledger
            .finish_run(&signed.receipt.id, &signed.receipt.stack)?;
        let r = &signed.receipt;
        if r.kind.changes_deployment() {
            let saved =
                deployment_record::save_inputs(self.home, &r.id, &r.stack, self.inputs_text)?;
            self.ledger.add_deployment(&Deployment {
                kind: r.kind,
                stack: r.stack.clone(),
                version: r.version.clone(),
                digest: r.bundle_digest.to_string(),
                receipt_id: r.id.clone(),
                inputs_file: saved.display().to_string(),
                applied_at: r.finished_at.clone(),
            })?;
            if let Some(warning) = deployment_record::after_run(self.home, r, &self.record) {
                (self.status)(&warning);
            }
        }
        Ok(signed)
    }

    fn record_failure(
        &self,
        mut receipt: Receipt,
        mut error: Error,
        work_kept: Option<PathBuf>,
    ) -> Result<Error> {
        receipt.outcome = Outcome::Failed;
        // The engine's own error when it printed one, else the runner's (a refused
        // input, an interrupted run).
        if receipt.failure.is_none() {
            receipt.failure = Some(stackpack_schema::receipt::Failure::new(
                &error.message,
                None,
            ));
        }
        let signed = receipts::sign(receipt, self.key);
        self.ledger.add_receipt(&signed)?;
        self.ledger.add_notes(&signed.receipt.id, &self.notes)?;
        // `status` tells a run stopped half-way from one the engine failed.
        if let Some(signal) = super::interrupt::received() {
            let note = Note {
                kind: crate::ledger::INTERRUPTED_NOTE.into(),
                rule: super::interrupt::name(signal),
                address: None,
                message: error.message.clone(),
            };
            self.ledger.add_notes(&signed.receipt.id, &[note])?;
        }
        self.ledger
            .finish_run(&signed.receipt.id, &signed.receipt.stack)?;
        error.message = format!(
            "{} (recorded as `{}` receipt `{}`, outcome `failed`)",
            error.message, signed.receipt.kind, signed.receipt.id
        );
        if let Some(work) = work_kept {
            error.location = Some(format!("work folder `{}`", Path::display(&work)));
        }
        Ok(error)
    }
}

enum Step {
    Declined,
    Done(Outcome, Option<serde_json::Value>),
}

fn not_deployed(stack: &str) -> Error {
    Error::refused(format!(
        "stack `{stack}` is not deployed by this runner: it was never applied, or was destroyed"
    ))
    .hint(format!(
        "apply it first with `stackpack-runner apply {stack}@VERSION --inputs FILE`"
    ))
}

/// One error naming every finding; `None` when there are none.
pub fn findings_error(findings: &[inputs::Finding]) -> Option<Error> {
    let first = findings.first()?;
    if findings.len() == 1 {
        let mut error = Error::refused(first.message.clone()).at(&first.location);
        error.hint = first.hint.clone();
        return Some(error);
    }
    // Each problem with its own location and hint, in the order of the files (then
    // the inputs no file sets), as a compiler lists its errors.
    let mut message = format!(
        "{} with the inputs, in file order:",
        stackpack_terminal::words::count(findings.len() as u64, "problem")
    );
    for (number, finding) in findings.iter().enumerate() {
        message.push_str(&format!(
            "\n  {}. {}\n     --> {}",
            number + 1,
            finding.message,
            finding.location
        ));
        if let Some(hint) = &finding.hint {
            message.push_str(&format!("\n     hint: {hint}"));
        }
    }
    Some(Error::refused(message))
}

/// What one run works with.
struct Context<'a> {
    home: &'a Home,
    bundle: &'a VerifiedBundle,
    inputs_text: &'a str,
    /// The sensitive inputs' values, looked for in the state after an apply.
    secrets: &'a [(String, String)],
    /// The inputs as read (files and `TF_VAR_`), for preflight.
    inputs: &'a inputs::Inputs,
    request: &'a Request,
    ledger: &'a Ledger,
    lock_fd: std::os::fd::RawFd,
    key: &'a PrivateKey,
    /// `apply --plan`: the reviewed plan's record and the engine's plan file.
    reviewed: Option<&'a (review::Record, Vec<u8>)>,
}

/// Says which earlier runs were interrupted (their process is gone and they never
/// recorded an ending): the state of those stacks is unknown until someone plans.
pub fn warn_interrupted(ledger: &Ledger, ui: &mut Ui) -> Result<()> {
    for run in ledger.interrupted_runs()? {
        (ui.status)(&format!(
            "warning: `{}` of `{}@{}` started at {} was interrupted, state unknown — run `stackpack-runner plan`; its work folder `{}` is kept",
            run.kind, run.stack, run.version, run.started_at, run.work
        ));
    }
    Ok(())
}

fn execute(
    context: Context,
    ui: &mut Ui,
    receipt: &mut Receipt,
    plan: &mut PlanDetails,
    found: &mut Found,
    work_kept: &mut Option<PathBuf>,
) -> Result<Step> {
    let Context {
        home,
        bundle,
        inputs_text,
        request,
        ledger,
        lock_fd,
        ..
    } = context;
    let mut engine = Engine::locate_for(home, request.options.engine.as_ref(), ui.verbose)?;
    engine.inherit_fds.push(lock_fd);
    engine.transcript = super::support_bundle::transcript_for(home, &receipt.id);
    engine.input_variables = bundle
        .config
        .interface
        .inputs
        .iter()
        .map(|i| i.name.clone())
        .collect();
    engine.secrets = crate::redact::Secrets::of_inputs(&bundle.config.interface, inputs_text);
    receipt.engine.version = engine.version.clone();
    receipt.engine.digest = engine.digest.clone();
    engine.check_required_version(bundle.config.engine.version_constraint.as_deref())?;
    if let Some(wanted) = bundle.config.engine.name {
        if wanted != engine.name {
            (ui.status)(&format!(
                "warning: `{}@{}` was built for `{wanted}`, and this runner uses `{}`",
                receipt.stack, receipt.version, engine.name
            ));
        }
    }
    let work = files::work_folder(
        &home.work_root(),
        &format!("{}-{}-", receipt.stack, receipt.version),
    )?;
    ledger.start_run(&StartedRun {
        id: receipt.id.clone(),
        stack: receipt.stack.clone(),
        version: receipt.version.to_string(),
        kind: receipt.kind,
        started_at: receipt.started_at.clone(),
        pid: std::process::id(),
        work: work.path().display().to_string(),
    })?;
    let result = prepare_work(home, bundle, inputs_text, &mut engine, work.path(), ui).and_then(
        |(dir, init, providers)| {
            if let Some(runner) = receipt.runner.as_mut() {
                runner.providers = providers
                    .installed
                    .iter()
                    .map(|p| stackpack_schema::receipt::ProviderRun {
                        source: p.source.clone(),
                        version: p.version.clone(),
                    })
                    .collect();
            }
            (ui.status)(&format!("{} init", engine.name));
            engine.run_ok(&dir, &init, ui.quiet, "init")?;
            super::module_sources::refuse_installed_from_outside(&dir)?;
            // The plugin cache is filled: other runners may use it now.
            drop(providers.cache_lock);
            let run = Workspace {
                engine: &engine,
                dir: &dir,
            };
            plan_and_apply(&context, &run, ui, receipt, plan, found)
        },
    );
    if result.is_err() {
        let said = engine.errors.lock().map(|e| e.clone()).unwrap_or_default();
        receipt.failure = stackpack_schema::receipt::Failure::from_engine_output(&said);
    }
    if result.is_err()
        && matches!(
            request.target,
            Target::Apply { .. } | Target::Rollback { .. } | Target::Destroy
        )
    {
        // Keep a failed apply's work folder for the person who has to look into it.
        *work_kept = Some(work.keep());
    }
    result
}

/// Unpacks the bundle, lays out its providers, writes the inputs and the backend
/// override; returns the stack's folder, the `init` arguments, and the providers.
pub(crate) fn prepare_work(
    home: &Home,
    bundle: &VerifiedBundle,
    inputs_text: &str,
    engine: &mut Engine,
    work: &Path,
    ui: &mut Ui,
) -> Result<(PathBuf, Vec<String>, super::providers::ProviderSetup)> {
    let dir = unpack::unpack_verified(home, bundle, work)?;
    super::module_sources::refuse_outside_modules(&unpack::bundle_root(work), bundle)?;
    let providers = super::providers::prepare(home, bundle, &dir, work)?;
    engine.cli_config = Some(providers.cli_config.clone());
    for package in &providers.installed {
        (ui.status)(&format!(
            "provider `{}` {} from the bundle ({})",
            package.source,
            package.version,
            package.digest.short()
        ));
    }
    files::write_private(&dir.join(INPUTS_FILE), inputs_text)?;
    engine.stack = Some(bundle.config.stack.clone());
    let (override_file, backend_args) = engine::backend_setup(home, engine, &bundle.config.stack)?;
    std::fs::write(dir.join("stackpack_backend_override.tf"), override_file)
        .map_err(|e| io("write in", &dir, e))?;
    let mut init = vec![
        "init".to_string(),
        "-input=false".into(),
        "-no-color".into(),
    ];
    if providers.locked {
        // The lock file travelled signed in the bundle: `init` must not change it.
        init.push("-lockfile=readonly".into());
    }
    init.extend(backend_args);
    Ok((dir, init, providers))
}

/// The engine, ready in its work folder.
struct Workspace<'a> {
    engine: &'a Engine,
    /// The stack's folder.
    dir: &'a Path,
}

/// Plans (for destroy, a destroy plan; for `apply --plan`, takes the reviewed plan),
/// evaluates the policies on it, and for apply, rollback and destroy asks and applies
/// exactly the plan file that was shown, then runs the smoke checks of an apply.
fn plan_and_apply(
    context: &Context,
    run: &Workspace,
    ui: &mut Ui,
    receipt: &Receipt,
    plan: &mut PlanDetails,
    found: &mut Found,
) -> Result<Step> {
    let Workspace { engine, dir, .. } = *run;
    let request = context.request;
    let quiet = ui.quiet;
    // A run elsewhere holding the state's lock (a shared backend) is waited for as
    // long as one of this home is.
    let lock_timeout = format!("-lock-timeout={}s", request.wait.as_secs());
    let mut plan_args = vec![
        "plan".to_string(),
        "-input=false".into(),
        "-no-color".into(),
        format!("-out={PLAN_FILE}"),
        format!("-var-file={INPUTS_FILE}"),
        lock_timeout.clone(),
    ];
    match request.target {
        Target::Drift => return drift(engine, dir, plan_args, quiet, plan),
        Target::Destroy => plan_args.push("-destroy".into()),
        _ => {}
    }
    let wants_state = request.options.plan_out.is_some() || context.reviewed.is_some();
    let state = if wants_state {
        Some(engine.state_fingerprint(dir)?)
    } else {
        None
    };
    match context.reviewed {
        Some(reviewed) => take_reviewed(reviewed, state.as_deref(), run, ui, receipt)?,
        None => {
            (ui.status)(&format!("{} plan", engine.name));
            engine.run_ok(dir, &plan_args, quiet, "plan")?;
        }
    }
    *plan = engine.show_plan(dir)?;
    if request.target.kind() != ReceiptKind::Destroy {
        let config = &context.bundle.config;
        found.preflight = super::preflight::for_plan(config, dir, context.inputs, plan, ui.status);
        super::preflight::refuse_failed(receipt, &found.preflight)?;
        found.verdict = evaluate_policies(context, run, ui, plan)?;
    }
    let reference = format!("{}@{}", receipt.stack, receipt.version);
    if let Target::Plan { .. } = request.target {
        if let Some(out) = &request.options.plan_out {
            let state = state.unwrap_or_default();
            write_reviewed(out, context, run, receipt, plan, &found.verdict, state)?;
            (ui.status)(&format!("reviewed plan written to `{}`", out.display()));
        }
        let outcome = if plan.is_empty() {
            Outcome::NoChanges
        } else {
            Outcome::Succeeded
        };
        return Ok(Step::Done(outcome, None));
    }
    if let Some(refusal) = found.verdict.refusal(&reference) {
        return Err(refusal);
    }
    if !(ui.confirm)(&reference, request.target.kind(), plan) {
        return Ok(Step::Declined);
    }
    (ui.status)(&format!("{} apply", engine.name));
    engine.run_ok(
        dir,
        &[
            "apply".into(),
            "-input=false".into(),
            "-no-color".into(),
            lock_timeout,
            PLAN_FILE.into(),
        ],
        quiet,
        "apply",
    )?;
    let outputs = after_apply(context, run, ui, found)?;
    Ok(Step::Done(Outcome::Succeeded, outputs))
}

/// What the apply left: its outputs (`None` after a destroy), the secrets in the
/// state and the smoke checks. One `show -json` of the state, where the engine can
/// show one, gives all three (it was three engine runs); older engines answer
/// `output -json` instead.
fn after_apply(
    context: &Context,
    run: &Workspace,
    ui: &mut Ui,
    found: &mut Found,
) -> Result<Option<serde_json::Value>> {
    let Workspace { engine, dir, .. } = *run;
    let request = context.request;
    let state = match request.target {
        Target::Destroy => None,
        _ if engine.has_check_blocks() => Some(engine.show_state(dir)?),
        _ => None,
    };
    let outputs = match (&request.target, &state) {
        (Target::Destroy, _) => None,
        (_, Some(state)) => Some(outputs_of_state(state)),
        (_, None) => Some(engine.outputs(dir)?),
    };
    if outputs.is_some() {
        let policy = context.home.config.policy.secrets_in_state;
        found.secrets = secrets_in_state::after_apply(
            engine,
            dir,
            state.as_ref(),
            context.secrets,
            policy,
            ui.status,
        )?;
    }
    if let (Target::Apply { .. }, Some(outputs)) = (&request.target, &outputs) {
        found.smoke = smoke_checks(state.as_ref(), dir, outputs, ui, &engine.secrets)?;
    }
    Ok(outputs)
}

/// `apply --plan`: puts the reviewed plan's file where the engine applies it, once the
/// state is still the one it was made against.
fn take_reviewed(
    (record, bytes): &(review::Record, Vec<u8>),
    state: Option<&str>,
    run: &Workspace,
    ui: &Ui,
    receipt: &Receipt,
) -> Result<()> {
    if state != Some(record.state.as_str()) {
        return Err(Error::refused(format!(
            "the state of `{}` changed since the plan was reviewed (it was `{}`, it is `{}`): nothing was applied",
            receipt.stack,
            record.state,
            state.unwrap_or_default()
        ))
        .hint("make and review a new plan with `stackpack-runner plan … --out FILE`"));
    }
    (ui.status)("applying the reviewed plan: no new plan is made");
    let path = run.dir.join(PLAN_FILE);
    std::fs::write(&path, bytes).map_err(|e| io("write", &path, e))
}

/// The vendor's and the customer's policies on the plan, warnings said at once.
fn evaluate_policies(
    context: &Context,
    run: &Workspace,
    ui: &Ui,
    plan: &PlanDetails,
) -> Result<Verdict> {
    // Said before any verdict: a policy may let it through, the person should not.
    if !plan.runs_commands.is_empty() {
        (ui.status)(&format!(
            "warning: this stack runs commands on the runner's machine: {}",
            plan.runs_commands.join(", ")
        ));
    }
    let files = policy_files(context, run)?;
    if !files.is_empty() {
        (ui.status)(&format!(
            "evaluating {} policy file(s) on the plan",
            files.len()
        ));
    }
    let started = std::time::Instant::now();
    let verdict = policy::evaluate(&files, &plan.json, &context.request.options.allow_replace)?;
    if !files.is_empty() {
        (ui.status)(&format!(
            "policies: {} denied, {} warning(s), evaluated in {} ms",
            verdict.denied.len(),
            verdict.warnings.len(),
            started.elapsed().as_millis()
        ));
    }
    for warning in &verdict.warnings {
        (ui.status)(&format!("warning: policy: {}", policy::line(warning)));
    }
    Ok(verdict)
}

/// `plan --out FILE`: the engine's plan file with the record of what it was made
/// from, signed by the installation key.
fn write_reviewed(
    out: &Path,
    context: &Context,
    run: &Workspace,
    receipt: &Receipt,
    plan: &PlanDetails,
    verdict: &Verdict,
    state: String,
) -> Result<()> {
    let bytes = review::read_plan_file(&run.dir.join(PLAN_FILE))?;
    let record = review::Record {
        format: review::REVIEW_FORMAT,
        customer: receipt.customer.clone(),
        stack: receipt.stack.clone(),
        version: receipt.version.to_string(),
        bundle_digest: receipt.bundle_digest.clone(),
        inputs_hash: receipt.inputs_hash.clone(),
        state,
        plan_hash: stackpack_schema::digest::Digest::of(&bytes),
        summary: plan.summary,
        policy: verdict.clone(),
        created_at: receipts::now(),
        key_id: String::new(),
    };
    review::write(out, record, &bytes, context.key)
}

/// The outputs as `output -json` gives them (`{name: {value, type, sensitive}}`),
/// read from the state's `show -json`, which holds them in the same shape under
/// `values.outputs` (none there: a state without outputs).
fn outputs_of_state(state: &serde_json::Value) -> serde_json::Value {
    match &state["values"]["outputs"] {
        serde_json::Value::Object(outputs) => serde_json::Value::Object(outputs.clone()),
        _ => serde_json::json!({}),
    }
}

/// The stack's `check` blocks, as the apply left them in the state (`None`: an
/// engine before check blocks), and its `[[smoke]]` assertions on the outputs.
fn smoke_checks(
    state: Option<&serde_json::Value>,
    dir: &Path,
    outputs: &serde_json::Value,
    ui: &mut Ui,
    engine_secrets: &crate::redact::Secrets,
) -> Result<Vec<smoke::Failure>> {
    let assertions = smoke::assertions(dir)?;
    let mut failures = smoke::check_blocks(state.unwrap_or(&serde_json::Value::Null));
    failures.extend(smoke::check_outputs(&assertions, outputs));
    // A check's message is the vendor's text, and may quote a sensitive input
    // (`nonsensitive(var.db_password)`) or output: it is printed, kept in the
    // receipt and the support bundle, so each such value is replaced first.
    let mut secrets = engine_secrets.clone();
    for output in outputs.as_object().into_iter().flat_map(|o| o.values()) {
        if output["sensitive"] == true {
            secrets.add(&output["value"]);
        }
    }
    for failure in &mut failures {
        failure.message = secrets.redact(&failure.message);
    }
    let checks = state
        .and_then(|state| state["checks"].as_array())
        .map(|c| c.iter().filter(|c| c["address"]["kind"] == "check").count())
        .unwrap_or(0);
    if checks + assertions.len() > 0 {
        (ui.status)(&format!(
            "smoke checks: {} check block(s), {} output assertion(s), {} failed",
            checks,
            assertions.len(),
            failures.len()
        ));
    }
    Ok(failures)
}

/// The vendor's policies (the stack's own `policies/`, inside the signed bundle),
/// then the customer's folder.
fn policy_files(context: &Context, run: &Workspace) -> Result<Vec<policy::PolicyFile>> {
    let entrypoint = &context.bundle.config.entrypoint;
    let mut files = policy::read_folder(
        &run.dir.join("policies"),
        "vendor",
        &format!("{entrypoint}/policies"),
    )?;
    let home = context.home;
    if let Some(folder) = &home.config.policy.policies {
        let dir = home.root.join(folder);
        if !dir.is_dir() {
            return Err(Error::refused(format!(
                "the customer policy folder `{}` does not exist",
                dir.display()
            ))
            .at(format!("`{}`", home.root.join("runner.toml").display()))
            .hint("create it, or fix `policies` under `[policy]` in `runner.toml`"));
        }
        files.extend(policy::read_folder(
            &dir,
            "customer",
            &dir.display().to_string(),
        )?);
    }
    Ok(files)
}

/// Refuses a reviewed plan that is not this installation's, or whose bundle or
/// inputs differ from this run's, before any engine runs.
fn check_reviewed(
    path: &Path,
    key: &PrivateKey,
    bundle: &VerifiedBundle,
    inputs_hash: &stackpack_schema::digest::Digest,
) -> Result<(review::Record, Vec<u8>)> {
    let (record, bytes) = review::read(path, key)?;
    let digest = &bundle.manifest_descriptor.digest;
    let hint = "make and review a new plan with `stackpack-runner plan STACK@VERSION --inputs FILE --out FILE`";
    if record.stack != bundle.config.stack
        || record.version != bundle.config.version.to_string()
        || &record.bundle_digest != digest
    {
        return Err(Error::refused(format!(
            "the reviewed plan `{}` was made for `{}@{}` ({}), not for `{}@{}` ({}): nothing was applied",
            path.display(),
            record.stack,
            record.version,
            record.bundle_digest.short(),
            bundle.config.stack,
            bundle.config.version,
            digest.short()
        ))
        .hint(hint));
    }
    if &record.inputs_hash != inputs_hash {
        return Err(Error::refused(format!(
            "the inputs changed since the plan `{}` was reviewed: nothing was applied",
            path.display()
        ))
        .hint(hint));
    }
    Ok((record, bytes))
}

/// What checking inputs against a bundle found.
#[derive(Debug, Default)]
pub struct InputsChecked {
    /// Every mistake, at once: three mistakes take one run to see, not three.
    pub findings: Vec<inputs::Finding>,
    /// The rules only the engine can decide, which it checks when it plans.
    pub left_to_engine: Vec<inputs::RuleLeft>,
}

/// Checks inputs against the bundle: the interface's names and types, and the
/// stack's own `validation` rules, read from the verified, unpacked bundle.
pub fn check_inputs(
    home: &Home,
    bundle: &VerifiedBundle,
    inputs: &inputs::Inputs,
) -> Result<InputsChecked> {
    let mut checked = InputsChecked {
        findings: inputs::check(inputs, &bundle.config.interface),
        left_to_engine: Vec::new(),
    };
    let has_rules = bundle
        .config
        .interface
        .inputs
        .iter()
        .any(|i| !i.validations.is_empty());
    if !has_rules {
        return Ok(checked);
    }
    let scratch = files::work_folder(&home.work_root(), "check-inputs-")?;
    let dir = unpack::unpack_verified(home, bundle, scratch.path())?;
    let module = stackpack_interface::extract_module(&dir)
        .map_err(|e| Error::refused(format!("cannot read the stack's variables: {e}")))?;
    let stack = &bundle.config.entrypoint;
    let rules = inputs::validate(inputs, &module, stack);
    let rules = without_inputs_already_found(rules, &checked.findings);
    checked.findings.extend(rules);
    checked.left_to_engine = inputs::left_to_engine(inputs, &module, stack)
        .into_iter()
        .filter(|rule| checked.findings.iter().all(|f| f.input != rule.input))
        .collect();
    Ok(checked)
}

/// The rule findings for inputs the interface check found nothing wrong with: a
/// value of the wrong type has already been reported, and a rule run on it would
/// only repeat that in the stack's words (or judge a value the engine would never
/// have accepted).
fn without_inputs_already_found(
    rules: Vec<inputs::Finding>,
    found: &[inputs::Finding],
) -> Vec<inputs::Finding> {
    rules
        .into_iter()
        .filter(|rule| found.iter().all(|f| f.input != rule.input))
        .collect()
}

/// `plan -detailed-exitcode`: 0 nothing to do, 2 drifted.
fn drift(
    engine: &Engine,
    dir: &Path,
    mut plan_args: Vec<String>,
    quiet: bool,
    plan: &mut PlanDetails,
) -> Result<Step> {
    plan_args.push("-detailed-exitcode".into());
    let output = engine.run(dir, &plan_args, quiet)?;
    match output.code {
        Some(0) => Ok(Step::Done(Outcome::NoChanges, None)),
        Some(2) => {
            *plan = engine.show_plan(dir)?;
            Ok(Step::Done(Outcome::Drifted, None))
        }
        code => Err(Error::refused(format!(
            "`{} plan` failed ({})",
            engine.name,
            code.map(|c| format!("exit code {c}"))
                .unwrap_or_else(|| "killed by a signal".into())
        ))
        .hint("the engine's messages are above")),
    }
}
