//! The receipt of a run, and how its ending is recorded in the ledger.

use std::path::{Path, PathBuf};

use stackpack_schema::receipt::{
    EngineRun, Outcome, PlanSummary, Receipt, ReceiptKind, SignedReceipt, MAX_RECEIPT_CHANGES,
    RECEIPT_FORMAT,
};

use super::context::Step;
use super::request::{Report, Request, Target, Ui};
use super::resolve::Resolved;
use crate::deployment_record;
use crate::engine::PlanDetails;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::home::SecretsInState;
use crate::ledger::Note;
use crate::ledger::{Deployment, Ledger};
use crate::policy::{self, Verdict};
use crate::receipts;
use crate::secrets_in_state;
use crate::smoke;
use stackpack_bundle::verify::VerifiedBundle;

/// What a run found on its way, beside the plan: recorded with its receipt.
#[derive(Default)]
pub(super) struct Found {
    pub(super) verdict: Verdict,
    pub(super) smoke: Vec<smoke::Failure>,
    /// Sensitive inputs' values the state holds after the apply.
    pub(super) secrets: Vec<secrets_in_state::Found>,
    /// What preflight checked of the account on the plan.
    pub(super) preflight: Vec<stackpack_schema::preflight::PreflightCheck>,
}

impl Found {
    pub(super) fn notes(&self) -> Vec<Note> {
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

pub(super) fn new_receipt(
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
pub(super) fn record_changes(receipt: &mut Receipt, plan: &PlanDetails) {
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
/// What the engine steps left, for the ending to record.
pub(super) struct Ran {
    pub(super) result: Result<Step>,
    pub(super) receipt: Receipt,
    pub(super) plan: PlanDetails,
    pub(super) found: Found,
    pub(super) work_kept: Option<PathBuf>,
}

pub(super) struct Ending<'a> {
    pub(super) home: &'a Home,
    pub(super) ledger: &'a Ledger,
    pub(super) key: &'a stackpack_schema::signature::PrivateKey,
    pub(super) inputs_text: &'a str,
    pub(super) notes: Vec<Note>,
    /// What the deployment record beside a bucket's state keeps of the inputs.
    pub(super) record: deployment_record::RecordInputs,
    pub(super) status: &'a dyn Fn(&str),
}

impl Ending<'_> {
    /// Records how the run ended and makes its report: declined (nothing changed),
    /// done (a deployment too when it changed what runs), or failed (the error, with
    /// the receipt that records it).
    pub(super) fn conclude(
        &self,
        ran: Ran,
        request: &Request,
        resolved: &Resolved,
    ) -> Result<Report> {
        let Ran {
            result,
            mut receipt,
            plan,
            mut found,
            work_kept,
        } = ran;
        let stack = &request.stack;
        let version = &resolved.version;
        receipt.plan = plan.summary;
        record_changes(&mut receipt, &plan);
        receipt.preflight = std::mem::take(&mut found.preflight);
        receipt.finished_at = receipts::now();
        match result {
            Ok(Step::Declined) => Err({
                self.ledger.finish_run(&receipt.id, stack)?;
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
                    && self.home.config.policy.secrets_in_state == SecretsInState::Deny;
                receipt.outcome = if found.smoke.is_empty() && !secrets_denied {
                    outcome
                } else {
                    Outcome::Failed
                };
                let signed = self.record_success(receipt)?;
                if secrets_denied {
                    return Err(secrets_in_state::refusal(&found.secrets, &signed.receipt));
                }
                Ok(Report {
                    receipt: signed,
                    plan,
                    outputs,
                    previous: resolved.previous.clone(),
                    verdict: found.verdict,
                    smoke: found.smoke,
                    rollback: None,
                })
            }
            Err(error) => Err(self.record_failure(receipt, error, work_kept)?),
        }
    }

    pub(super) fn record_success(&self, receipt: Receipt) -> Result<SignedReceipt> {
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

    pub(super) fn record_failure(
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
        if let Some(signal) = crate::interrupt::received() {
            let note = Note {
                kind: crate::ledger::INTERRUPTED_NOTE.into(),
                rule: crate::interrupt::name(signal),
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
