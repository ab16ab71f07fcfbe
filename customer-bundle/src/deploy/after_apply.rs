//! What an apply left: outputs, secrets in the state, smoke checks.

use std::path::Path;

use super::context::{Context, Workspace};
use super::record::Found;
use super::request::{Target, Ui};
use crate::error::Result;
use crate::secrets_in_state;
use crate::smoke;

/// What the apply left: its outputs (`None` after a destroy), the secrets in the
/// state and the smoke checks. One `show -json` of the state, where the engine can
/// show one, gives all three (it was three engine runs); older engines answer
/// `output -json` instead.
pub(super) fn after_apply(
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

/// The outputs as `output -json` gives them (`{name: {value, type, sensitive}}`),
/// read from the state's `show -json`, which holds them in the same shape under
/// `values.outputs` (none there: a state without outputs).
pub(super) fn outputs_of_state(state: &serde_json::Value) -> serde_json::Value {
    match &state["values"]["outputs"] {
        serde_json::Value::Object(outputs) => serde_json::Value::Object(outputs.clone()),
        _ => serde_json::json!({}),
    }
}

/// The stack's `check` blocks, as the apply left them in the state (`None`: an
/// engine before check blocks), and its `[[smoke]]` assertions on the outputs.
pub(super) fn smoke_checks(
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
