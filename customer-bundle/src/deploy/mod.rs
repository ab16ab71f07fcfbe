//! Plan, apply, rollback and drift: verify (always), check inputs, unpack into a fresh
//! work folder, run the engine, and record a signed receipt of what happened.
//!
//! Once verification passed and the engine is about to run, every ending records a
//! receipt: a failure is recorded as `failed`, and only an apply the engine finished
//! is ever recorded as `succeeded`.
//!
//! Each step is a file of its own, in the order a run takes them: `resolve` (the
//! version and inputs), `verify`, `inputs`, `record` (the receipt), `work` (the work
//! folder and the engine), `plan`, `after_apply`, and `rollback` after failed smoke
//! checks; `request` holds what a run is asked and reports, `context` what its steps
//! share.

mod after_apply;
mod context;
mod inputs;
mod plan;
mod record;
mod request;
mod resolve;
mod rollback;
mod verify;
mod work;

use crate::deployment_record;
use crate::engine::PlanDetails;
use crate::error::Result;
use crate::home::Home;
use crate::installation::Installation;
use crate::lock::StackLock;
use crate::receipts;
use crate::secrets_in_state;
use context::Context;
use inputs::read_inputs;
use record::{new_receipt, Ending, Found, Ran};
use resolve::{check_policy, resolve};
use verify::{check_reviewed, verify};
use work::execute;

pub use inputs::{check_inputs, findings_error, InputsChecked};
pub use record::warn_interrupted;
pub use request::{Options, Report, Request, Target, Ui};
pub(crate) use work::prepare_work;

/// Runs one plan, apply, rollback, drift check or destroy. An apply whose smoke
/// checks fail is followed at once by a rollback when `runner.toml` says
/// `on-failure = "rollback"`; either way it ends in an error naming what failed.
pub fn run(installation: &Installation, request: Request, ui: &mut Ui) -> Result<Report> {
    let stack = request.stack.clone();
    let wait = request.wait;
    let report = run_once(installation, request, ui)?;
    if report.smoke.is_empty() {
        return Ok(report);
    }
    rollback::after_failed_smoke(installation, stack, wait, report, ui)
}

/// The stack's lock in this home (waiting up to `request.wait`), and beside a
/// bucket's state the record of who runs it, for `unlock` from any home: marked
/// finished when the returned value is dropped.
fn take_stack(
    home: &Home,
    request: &Request,
    ui: &mut Ui,
) -> Result<(StackLock, Option<crate::run_marker::Running>)> {
    let lock = StackLock::acquire(&home.locks_dir(), &request.stack, request.wait, |who| {
        (ui.status)(&format!(
            "waiting for {who} to finish with stack `{}`…",
            request.stack
        ))
    })?;
    Ok((lock, crate::run_marker::start(home, &request.stack)))
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
    let inputs_hash = crate::inputs::inputs_hash(&parsed, &receipts::inputs_secret(&key));
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
    let ending = Ending {
        home,
        ledger,
        key: &key,
        inputs_text: &text,
        notes: found.notes(),
        record: deployment_record::RecordInputs::of(&parsed, &bundle.config.interface),
        status: ui.status,
    };
    let ran = Ran {
        result,
        receipt,
        plan,
        found,
        work_kept,
    };
    ending.conclude(ran, &request, &resolved)
}
