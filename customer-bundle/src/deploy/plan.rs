//! Plan (or drift check), preflight, policies, the reviewed plan, confirmation and
//! apply.

use std::path::Path;

use stackpack_schema::receipt::{Outcome, Receipt, ReceiptKind};

use super::after_apply::after_apply;
use super::context::{Context, Step, Workspace, INPUTS_FILE};
use super::record::Found;
use super::request::{Target, Ui};
use crate::engine::{Engine, PlanDetails, PLAN_FILE};
use crate::error::{io, Error, Result};
use crate::policy::{self, Verdict};
use crate::receipts;
use crate::review;

/// Plans (for destroy, a destroy plan; for `apply --plan`, takes the reviewed plan),
/// evaluates the policies on it, and for apply, rollback and destroy asks and applies
/// exactly the plan file that was shown, then runs the smoke checks of an apply.
pub(super) fn plan_and_apply(
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
        Some(engine.applied_state(dir)?.fingerprint)
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
        found.preflight = crate::preflight::for_plan(config, dir, context.inputs, plan, ui.status);
        crate::preflight::refuse_failed(receipt, &found.preflight)?;
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

/// `apply --plan`: puts the reviewed plan's file where the engine applies it, once the
/// state is still the one it was made against.
pub(super) fn take_reviewed(
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
pub(super) fn evaluate_policies(
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
pub(super) fn write_reviewed(
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

/// The vendor's policies (the stack's own `policies/`, inside the signed bundle),
/// then the customer's folder.
pub(super) fn policy_files(context: &Context, run: &Workspace) -> Result<Vec<policy::PolicyFile>> {
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

/// `plan -detailed-exitcode`: 0 nothing to do, 2 drifted.
pub(super) fn drift(
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
