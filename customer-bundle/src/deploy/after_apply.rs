//! What an apply left: outputs, secrets in the state, smoke checks.

use std::path::Path;

use super::context::{Context, Workspace};
use super::record::Found;
use super::request::{Target, Ui};
use crate::applied_state::AppliedState;
use crate::error::Result;
use crate::secrets_in_state;
use crate::smoke;

/// What the apply left: its outputs (`None` after a destroy), the secrets in the
/// state and the smoke checks. One `state pull` gives all three (it was three
/// engine runs, then a `show -json` that started every provider once more).
pub(super) fn after_apply(
    context: &Context,
    run: &Workspace,
    ui: &mut Ui,
    found: &mut Found,
) -> Result<Option<serde_json::Value>> {
    let Workspace { engine, dir, .. } = *run;
    let request = context.request;
    if let Target::Destroy = request.target {
        return Ok(None);
    }
    let state = engine.applied_state(dir)?;
    let policy = context.home.config.policy.secrets_in_state;
    found.secrets = secrets_in_state::after_apply(&state, context.secrets, policy, ui.status);
    if let Target::Apply { .. } = request.target {
        found.smoke = smoke_checks(&state, dir, ui, &engine.secrets)?;
    }
    Ok(Some(state.outputs))
}

/// The stack's `check` blocks, as the apply left them in the state (none before
/// Terraform 1.5), and its `[[smoke]]` assertions on the outputs.
pub(super) fn smoke_checks(
    state: &AppliedState,
    dir: &Path,
    ui: &mut Ui,
    engine_secrets: &crate::redact::Secrets,
) -> Result<Vec<smoke::Failure>> {
    let outputs = &state.outputs;
    let assertions = smoke::assertions(dir)?;
    let mut failures = smoke::check_blocks(&state.checks);
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
    let checks = state.checks.iter().filter(|c| c.kind == "check").count();
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
