//! Plan, apply, rollback and drift: verify (always), check inputs, unpack into a fresh
//! work folder, run the engine, and record a signed receipt of what happened.
//!
//! Once verification passed and the engine is about to run, every ending records a
//! receipt: a failure is recorded as `failed`, and only an apply the engine finished
//! is ever recorded as `succeeded`.

use std::collections::BTreeMap;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use semver::Version;
use stackpack_schema::receipt::{
    EngineRun, Outcome, PlanSummary, Receipt, ReceiptKind, SignedReceipt, RECEIPT_FORMAT,
};

use super::engine::{self, Engine, PlanDetails, PLAN_FILE};
use super::error::{io, Error, Result};
use super::home::Home;
use super::inputs;
use super::ledger::{Deployment, Ledger, StartedRun};
use super::lock::StackLock;
use super::receipts;
use super::store;
use stackpack_bundle::archive::{self, HashingReader, Limits};
use stackpack_bundle::verify::VerifiedBundle;

/// The name of the inputs file inside the work folder.
const INPUTS_FILE: &str = "stackpack.tfvars";

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
    /// Plan `version` with `inputs`; nothing changes.
    Plan { version: Version, inputs: PathBuf },
    /// Apply `version` with `inputs`; an older version than the installed one only
    /// with `allow_downgrade`.
    Apply {
        version: Version,
        inputs: PathBuf,
        allow_downgrade: bool,
    },
    /// Back to the version before the current one, with the inputs saved then (or
    /// `inputs`).
    Rollback { inputs: Option<PathBuf> },
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
}

/// What a run did.
pub struct Report {
    pub receipt: SignedReceipt,
    pub plan: PlanDetails,
    pub outputs: Option<serde_json::Value>,
    pub previous: Option<Version>,
}

/// The version and inputs a run resolved to, and what ran before.
struct Resolved {
    version: Version,
    inputs: PathBuf,
    previous: Option<Version>,
}

/// Runs one plan, apply, rollback, drift check or destroy.
pub fn run(home: &Home, request: Request, ui: &mut Ui) -> Result<Report> {
    let ledger = Ledger::open(&home.ledger_path())?;
    warn_interrupted(&ledger, ui)?;
    let lock = StackLock::acquire(&home.locks_dir(), &request.stack, request.wait, |who| {
        (ui.status)(&format!(
            "waiting for {who} to finish with stack `{}`…",
            request.stack
        ))
    })?;
    let resolved = resolve(&ledger, &request)?;
    check_policy(home, &request, &resolved)?;
    let stack = &request.stack;
    let version = &resolved.version;

    let store_layout = home.store()?;
    (ui.status)(&format!("verifying `{stack}@{version}`"));
    let bundle = store::verify_in(home, &store_layout, stack, version)?;
    (ui.status)(&format!(
        "verified `{stack}@{version}` ({}), signed by key `{}`",
        bundle.manifest_descriptor.digest.short(),
        bundle
            .signer
            .as_ref()
            .map(|k| k.key_id())
            .unwrap_or_default()
    ));

    let (parsed, text) = inputs::read(&resolved.inputs)?;
    let findings = inputs::check(&parsed, &bundle.config.interface);
    if let Some(error) = findings_error(&findings) {
        return Err(error);
    }
    // From here on every ending is recorded.
    let key = receipts::installation_key(&home.key_path())?;
    let inputs_hash = inputs::inputs_hash(&parsed, &receipts::inputs_secret(&key));
    let mut receipt = new_receipt(home, &request, &bundle, inputs_hash);
    let mut plan = PlanDetails::default();
    let mut work_kept = None;
    let result = execute(
        Context {
            home,
            bundle: &bundle,
            inputs_text: &text,
            request: &request,
            ledger: &ledger,
            lock_fd: lock.raw_fd(),
        },
        ui,
        &mut receipt,
        &mut plan,
        &mut work_kept,
    );
    receipt.plan = plan.summary;
    receipt.finished_at = receipts::now();
    let ending = Ending {
        home,
        ledger: &ledger,
        key: &key,
        inputs_text: &text,
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
            receipt.outcome = outcome;
            let signed = ending.record_success(receipt)?;
            Ok(Report {
                receipt: signed,
                plan,
                outputs,
                previous: resolved.previous,
            })
        }
        Err(error) => Err(ending.record_failure(receipt, error, work_kept)?),
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
                inputs: PathBuf::from(&current.inputs_file),
                previous: Some(current.version),
            }
        }
        Target::Rollback { inputs } => {
            let current = current_or_refuse()?;
            let target = ledger.rollback_target(stack)?.ok_or_else(|| {
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
                inputs: inputs
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(&target.inputs_file)),
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
            name: home.config.engine.name.clone(),
            version: "unknown".into(),
        },
        plan: PlanSummary::default(),
        kind: request.target.kind(),
        outcome: Outcome::Failed,
        started_at: receipts::now(),
        finished_at: String::new(),
        key_id: String::new(),
    }
}

/// Records how a run ended: a signed receipt always, a deployment when it changed
/// what runs.
struct Ending<'a> {
    home: &'a Home,
    ledger: &'a Ledger,
    key: &'a stackpack_schema::signature::PrivateKey,
    inputs_text: &'a str,
}

impl Ending<'_> {
    fn record_success(&self, receipt: Receipt) -> Result<SignedReceipt> {
        let signed = receipts::sign(receipt, self.key);
        self.ledger.add_receipt(&signed)?;
        self.ledger
            .finish_run(&signed.receipt.id, &signed.receipt.stack)?;
        let r = &signed.receipt;
        if r.kind.changes_deployment() {
            let saved = save_inputs(self.home, &r.id, &r.stack, self.inputs_text)?;
            self.ledger.add_deployment(&Deployment {
                kind: r.kind,
                stack: r.stack.clone(),
                version: r.version.clone(),
                digest: r.bundle_digest.to_string(),
                receipt_id: r.id.clone(),
                inputs_file: saved.display().to_string(),
                applied_at: r.finished_at.clone(),
            })?;
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
        let signed = receipts::sign(receipt, self.key);
        self.ledger.add_receipt(&signed)?;
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
    let mut message = first.message.clone();
    for other in &findings[1..] {
        message.push_str(&format!("\n  --> {}: {}", other.location, other.message));
        if let Some(hint) = &other.hint {
            message.push_str(&format!(" ({hint})"));
        }
    }
    let mut error = Error::refused(message).at(&first.location);
    error.hint = first.hint.clone();
    Some(error)
}

/// What one run works with.
struct Context<'a> {
    home: &'a Home,
    bundle: &'a VerifiedBundle,
    inputs_text: &'a str,
    request: &'a Request,
    ledger: &'a Ledger,
    lock_fd: std::os::fd::RawFd,
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
    work_kept: &mut Option<PathBuf>,
) -> Result<Step> {
    let Context {
        home,
        bundle,
        inputs_text,
        request,
        ledger,
        lock_fd,
    } = context;
    let mut engine = Engine::locate(home, ui.verbose)?;
    engine.inherit_fds.push(lock_fd);
    receipt.engine.version = engine.version.clone();
    engine.check_required_version(bundle.config.engine.version_constraint.as_deref())?;
    if let Some(wanted) = bundle.config.engine.name.as_deref() {
        if wanted != engine.name {
            (ui.status)(&format!(
                "warning: `{}@{}` was built for `{wanted}`, and this runner uses `{}`",
                receipt.stack, receipt.version, engine.name
            ));
        }
    }
    let work_root = home.work_root();
    std::fs::create_dir_all(&work_root).map_err(|e| io("create", &work_root, e))?;
    let work = tempfile::Builder::new()
        .prefix(&format!("{}-{}-", receipt.stack, receipt.version))
        .tempdir_in(&work_root)
        .map_err(|e| io("create a work folder in", &work_root, e))?;
    ledger.start_run(&StartedRun {
        id: receipt.id.clone(),
        stack: receipt.stack.clone(),
        version: receipt.version.to_string(),
        kind: receipt.kind.to_string(),
        started_at: receipt.started_at.clone(),
        pid: std::process::id(),
        work: work.path().display().to_string(),
    })?;
    let result = prepare_work(home, bundle, inputs_text, &mut engine, work.path(), ui).and_then(
        |(dir, init, providers)| {
            (ui.status)(&format!("{} init", engine.name));
            engine.run_ok(&dir, &init, ui.quiet, "init")?;
            // The plugin cache is filled: other runners may use it now.
            drop(providers.cache_lock);
            plan_and_apply(&engine, &dir, request, ui, receipt, plan)
        },
    );
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
fn prepare_work(
    home: &Home,
    bundle: &VerifiedBundle,
    inputs_text: &str,
    engine: &mut Engine,
    work: &Path,
    ui: &mut Ui,
) -> Result<(PathBuf, Vec<String>, super::providers::ProviderSetup)> {
    let dir = unpack_verified(home, bundle, work)?;
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
    write_private(&dir.join(INPUTS_FILE), inputs_text)?;
    let (override_file, backend_args) = engine::backend_setup(home, &bundle.config.stack)?;
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

/// Plans (for destroy, a destroy plan), and for apply, rollback and destroy asks and
/// applies exactly the plan file that was shown.
fn plan_and_apply(
    engine: &Engine,
    dir: &Path,
    request: &Request,
    ui: &mut Ui,
    receipt: &Receipt,
    plan: &mut PlanDetails,
) -> Result<Step> {
    let quiet = ui.quiet;
    (ui.status)(&format!("{} plan", engine.name));
    let mut plan_args = vec![
        "plan".to_string(),
        "-input=false".into(),
        "-no-color".into(),
        format!("-out={PLAN_FILE}"),
        format!("-var-file={INPUTS_FILE}"),
    ];
    match request.target {
        Target::Drift => return drift(engine, dir, plan_args, quiet, plan),
        Target::Destroy => plan_args.push("-destroy".into()),
        _ => {}
    }
    engine.run_ok(dir, &plan_args, quiet, "plan")?;
    *plan = engine.show_plan(dir)?;
    if let Target::Plan { .. } = request.target {
        let outcome = if plan.is_empty() {
            Outcome::NoChanges
        } else {
            Outcome::Succeeded
        };
        return Ok(Step::Done(outcome, None));
    }
    let reference = format!("{}@{}", receipt.stack, receipt.version);
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
            PLAN_FILE.into(),
        ],
        quiet,
        "apply",
    )?;
    let outputs = match request.target {
        Target::Destroy => None,
        _ => Some(engine.outputs(dir)?),
    };
    Ok(Step::Done(Outcome::Succeeded, outputs))
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

/// Unpacks the verified stack layer into `work/bundle`, hashing the compressed bytes
/// on the way and checking every file against the signed list again, so that a blob
/// changed between verification and unpacking is caught. Returns the entrypoint.
pub fn unpack_verified(home: &Home, bundle: &VerifiedBundle, work: &Path) -> Result<PathBuf> {
    let store = home.store()?;
    let layer = &bundle.stack_layer;
    let destination = work.join("bundle");
    let file = store.open_blob(&layer.digest)?;
    let mut hashing = HashingReader::new(BufReader::with_capacity(1 << 20, file));
    let unpacked = archive::unpack(
        &mut hashing,
        Some(layer.size),
        &destination,
        &Limits::default(),
    );
    let _ = io::copy(&mut hashing, &mut io::sink());
    let size = hashing.hasher.len();
    let digest = hashing.hasher.finish();
    let refuse = |message: String| {
        let _ = std::fs::remove_dir_all(&destination);
        Error::refused(message)
            .hint("the store was changed after verification; import the bundle again")
    };
    if digest != layer.digest || size != layer.size {
        return Err(refuse(format!(
            "the stack layer changed after it was verified: it now hashes to `{digest}`"
        )));
    }
    let files = unpacked.map_err(|e| match e {
        archive::ArchiveError::Write { path, source } => {
            let _ = std::fs::remove_dir_all(&destination);
            Error::refused(format!(
                "cannot unpack the bundle into the work folder: `{}`: {source}",
                path.display()
            ))
            .hint(
                "free space in the work folder, or set `work` in `runner.toml` to a roomier place",
            )
        }
        other => refuse(format!("the bundle's archive is refused: {other}")),
    })?;
    let signed: BTreeMap<&str, _> = bundle
        .config
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    if files.len() != signed.len()
        || files.iter().any(|f| {
            signed
                .get(f.path.as_str())
                .is_none_or(|s| s.digest != f.digest || s.size != f.size)
        })
    {
        return Err(refuse(
            "the unpacked files do not match the signed file list".into(),
        ));
    }
    // A `VerifiedBundle`'s entrypoint is a plain relative path: verification
    // refuses any other (`stackpack_bundle::verify`).
    let entrypoint = &bundle.config.entrypoint;
    let dir = destination.join(entrypoint);
    if !dir.is_dir() {
        return Err(refuse(format!(
            "the bundle's entrypoint `{entrypoint}` is not a folder in it"
        )));
    }
    Ok(dir)
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).map_err(|e| io("create", path, e))?;
    file.write_all(text.as_bytes())
        .map_err(|e| io("write", path, e))
}

/// Keeps the inputs a deployment used, so rollback and drift run with them.
fn save_inputs(home: &Home, receipt_id: &str, stack: &str, text: &str) -> Result<PathBuf> {
    let dir = home.inputs_dir();
    std::fs::create_dir_all(&dir).map_err(|e| io("create", &dir, e))?;
    let path = dir.join(format!("{stack}-{receipt_id}.tfvars"));
    write_private(&path, text)?;
    Ok(path)
}
