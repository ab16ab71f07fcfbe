//! `check-inputs`.

use serde_json::json;
use stackpack_runner::{deploy, inputs, store, Result};
use stackpack_terminal::ExitStatus;

use super::{open_installation, parse_bundle, print_json};
use crate::cli::{CheckInputsArgs, GlobalArgs};

pub fn check_inputs(global: &GlobalArgs, args: &CheckInputsArgs) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let (stack, version) = parse_bundle(&args.bundle)?;
    let layout = home.store()?;
    let bundle = store::verify_in(&home, &layout, &stack, &version)?;
    let mut parsed = inputs::read_all(&args.inputs)?;
    parsed.add_environment(&bundle.config.interface);
    let checked = deploy::check_inputs(&home, &bundle, &parsed)?;
    let findings = &checked.findings;
    if args.json {
        print_json(&json!({
            "stack": stack,
            "version": version.to_string(),
            "ok": findings.is_empty(),
            "findings": findings.iter().map(|f| json!({
                "location": f.location,
                "input": f.input,
                "message": f.message,
                "hint": f.hint,
            })).collect::<Vec<_>>(),
            "leftToEngine": checked.left_to_engine.iter().map(|r| json!({
                "input": r.input,
                "condition": r.condition,
                "location": r.location,
            })).collect::<Vec<_>>(),
        }));
        return Ok(ExitStatus::success_if(findings.is_empty()));
    }
    if let Some(error) = deploy::findings_error(findings) {
        return Err(error);
    }
    let rules = if checked.left_to_engine.is_empty() {
        "every validation rule met".to_string()
    } else {
        format!(
            "every validation rule met except {} left to the engine",
            checked.left_to_engine.len()
        )
    };
    println!(
        "inputs `{}` fit `{stack}@{version}`: {} set, every required input present, {rules}",
        parsed.path,
        parsed.values.len()
    );
    // Said, not hidden: these the engine decides when it plans, so a value may
    // still be refused there.
    for rule in &checked.left_to_engine {
        println!(
            "  left to the engine: `{}` (input `{}`, at `{}`): the runner cannot evaluate it; `plan` checks it",
            rule.condition, rule.input, rule.location
        );
    }
    Ok(ExitStatus::Success)
}
