//! Breaking a stuck state lock, safely: see who holds it, refuse while the run that
//! holds it is alive on this machine, require the lock's id, unlock through the
//! engine (`force-unlock`), and record a receipt.
//!
//! A state lock outlives its run when the run's machine or process is gone before
//! the engine could release it (a killed container, a lost host). The runner's own
//! per-stack lock (`locks/<stack>.lock`) is held by a live run and its engine, and
//! released by the operating system when they are gone: while it is held, the state
//! lock is not stuck, whatever it looks like.

use std::path::Path;

use stackpack_schema::receipt::{EngineRun, Outcome, PlanSummary, Receipt, ReceiptKind};

use super::engine::Engine;
use super::error::{io, Error, Result};
use super::home::Home;
use super::installation::Installation;
use super::lock::StackLock;
use super::state_bucket::{self, LockInfo};
use super::{files, receipts};

/// A stack's state lock as found, with this machine's own lock for the stack taken,
/// so no run here starts while it is broken.
pub struct Inspection {
    pub stack: String,
    /// The lock's own record; `None` when the state is not locked, or (for backends
    /// other than `s3`) when it cannot be read.
    pub info: Option<LockInfo>,
    /// Where the state lives, for messages (`s3://bucket/key`).
    pub state: String,
    /// True when the backend's lock record can be read (`s3`): then `info: None`
    /// means the state is not locked.
    pub record_readable: bool,
    /// The last run's record beside the state (any home sharing the bucket).
    pub run: Option<super::run_marker::RunMarker>,
    local: StackLock,
}

/// Looks at `stack`'s state lock. Refuses while a run here holds the stack.
pub fn inspect(home: &Home, stack: &str) -> Result<Inspection> {
    stackpack_schema::reference::validate_name(stack)
        .map_err(|e| Error::usage(format!("stack: {e}")))?;
    let backend = &home.config.backend;
    if backend.kind == "local" {
        return Err(Error::refused(format!(
            "stack `{stack}` keeps its state in this home (the `local` backend), whose lock the operating system releases when its run ends: there is no lock to break"
        ))
        .hint("if a run seems stuck, `stackpack-runner status` and the process named by a busy stack's error say which"));
    }
    let local = match StackLock::try_take(&home.locks_dir(), stack)? {
        Ok(lock) => lock,
        Err(holder) => {
            let who = if holder.is_empty() {
                "a runner".to_string()
            } else {
                format!("a runner (process {holder})")
            };
            return Err(Error::refused(format!(
                "stack `{stack}` is locked by a run that is alive on this machine: {who} is working on it, so its state lock is not stuck"
            ))
            .at(home.locks_dir().join(format!("{stack}.lock")).display())
            .hint("wait for that run to finish; breaking its lock now would let two runs write the state"));
        }
    };
    let (info, state) = match backend.s3() {
        Some(s3) => {
            let key = s3.state_key(&home.config.customer, stack);
            (
                state_bucket::held_lock(s3, &key)?,
                format!("s3://{}/{key}", s3.bucket),
            )
        }
        None => (None, format!("the `{}` backend", backend.kind)),
    };
    Ok(Inspection {
        stack: stack.to_string(),
        info,
        state,
        record_readable: backend.s3().is_some(),
        run: super::run_marker::read(home, stack),
        local,
    })
}

/// What breaking the lock did.
pub struct Unlocked {
    pub lock_id: String,
    /// The receipt recorded; `None` when this home never deployed the stack (a
    /// receipt names the version that runs, which only the ledger knows).
    pub receipt_id: Option<String>,
}

/// Breaks the lock `lock_id` through the engine and records an `unlock` receipt.
/// `lock_id` must be the held lock's own id when the lock's record could be read.
pub fn break_lock(
    installation: &Installation,
    inspection: Inspection,
    lock_id: &str,
    force: bool,
    verbose: bool,
) -> Result<Unlocked> {
    let home = &installation.home;
    let stack = &inspection.stack;
    let lock_id = lock_id.trim();
    if !force {
        refuse_live_holder(&inspection)?;
    }
    match &inspection.info {
        Some(info) if info.id != lock_id => {
            return Err(Error::refused(format!(
                "lock id `{lock_id}` is not the id of the lock held on stack `{stack}`'s state (`{}`): nothing was unlocked",
                info.id
            ))
            .at(&inspection.state)
            .hint("copy the id `stackpack-runner unlock` shows (the lock's `ID`), exactly"));
        }
        None if inspection.record_readable => {
            return Err(Error::refused(format!(
                "stack `{stack}`'s state is not locked: nothing to unlock"
            ))
            .at(&inspection.state));
        }
        _ => {}
    }
    let started_at = receipts::now();
    let mut engine = Engine::locate(home, verbose)?;
    engine.stack = Some(stack.clone());
    engine.inherit_fds = vec![inspection.local.raw_fd()];
    let work = files::work_folder(&home.work_root(), &format!("{stack}-unlock-"))?;
    let dir = work.path();
    let init = prepare(home, &mut engine, stack, dir)?;
    engine.run_ok(dir, &init, true, "init")?;
    let force_unlock = vec![
        "force-unlock".to_string(),
        "-force".into(),
        "-no-color".into(),
        lock_id.to_string(),
    ];
    let ran = engine.run_ok(dir, &force_unlock, true, "force-unlock");
    let receipt_id = record(
        installation,
        &engine,
        stack,
        started_at,
        if ran.is_ok() {
            Outcome::Succeeded
        } else {
            Outcome::Failed
        },
    )?;
    ran?;
    super::run_marker::clear(home, stack);
    Ok(Unlocked {
        lock_id: lock_id.to_string(),
        receipt_id,
    })
}

/// Refuses while the run recorded beside the state may still hold the lock: alive
/// on this machine (whichever home it ran from), or on another machine, where this
/// one cannot tell.
fn refuse_live_holder(inspection: &Inspection) -> Result<()> {
    let Some(run) = inspection.run.as_ref().filter(|r| r.may_be_running()) else {
        return Ok(());
    };
    let stack = &inspection.stack;
    let (what, hint) = if run.alive_here() {
        (
            format!(
                "stack `{stack}` is being run from the runner home `{}` (process {} on this machine, since {}): its state lock is not stuck",
                run.home, run.pid, run.since
            ),
            "wait for that run to finish; breaking its lock now would let two runs write one state".to_string(),
        )
    } else {
        (
            format!(
                "stack `{stack}` was being run from the runner home `{}` on host `{}` (process {}, since {}), and this machine cannot tell whether that run is alive",
                run.home, run.host, run.pid, run.since
            ),
            format!(
                "check on `{}` that the run has stopped; only then pass `--force`: breaking a live run's lock lets two runs write one state",
                run.host
            ),
        )
    };
    Err(Error::refused(format!("{what}: nothing was unlocked"))
        .at(&inspection.state)
        .hint(hint))
}

/// A work folder holding only the backend: `force-unlock` needs no provider, so
/// none is installed, and a CLI configuration of our own keeps the user's out.
fn prepare(home: &Home, engine: &mut Engine, stack: &str, dir: &Path) -> Result<Vec<String>> {
    let cli_config = dir.join("stackpack-unlock.tfrc");
    std::fs::write(&cli_config, "").map_err(|e| io("write", &cli_config, e))?;
    engine.cli_config = Some(cli_config);
    let (backend_file, backend_args) = super::engine::backend_setup(home, engine, stack)?;
    let file = dir.join("stackpack_backend.tf");
    std::fs::write(&file, backend_file).map_err(|e| io("write", &file, e))?;
    let mut init = vec![
        "init".to_string(),
        "-input=false".into(),
        "-no-color".into(),
    ];
    init.extend(backend_args);
    Ok(init)
}

/// The `unlock` receipt, naming the version installed here; none when this home
/// never deployed the stack.
fn record(
    installation: &Installation,
    engine: &Engine,
    stack: &str,
    started_at: String,
    outcome: Outcome,
) -> Result<Option<String>> {
    let ledger = installation.ledger()?;
    let Some(current) = ledger.current(stack)? else {
        return Ok(None);
    };
    let Some(base) = ledger.receipt(&current.receipt_id)? else {
        return Ok(None);
    };
    let key = receipts::installation_key(&installation.home.key_path())?;
    let receipt = Receipt {
        id: receipts::new_id(),
        engine: EngineRun {
            name: engine.name,
            version: engine.version.clone(),
            digest: None,
        },
        plan: PlanSummary::default(),
        kind: ReceiptKind::Unlock,
        outcome,
        started_at,
        finished_at: receipts::now(),
        release: None,
        changes: Vec::new(),
        changes_digest: None,
        drifted: Vec::new(),
        preflight: Vec::new(),
        verified: None,
        ..base.receipt
    };
    let id = receipt.id.clone();
    ledger.add_receipt(&receipts::sign(receipt, &key))?;
    Ok(Some(id))
}
