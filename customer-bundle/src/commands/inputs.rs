//! `check-inputs`.

use serde_json::json;
use stackpack_runner::{deploy, inputs, store, Result};
use stackpack_terminal::ExitStatus;

use super::{open_home, parse_bundle, print_json};
use crate::cli::{CheckInputsArgs, GlobalArgs};

pub fn check_inputs(global: &GlobalArgs, args: &CheckInputsArgs) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let (stack, version) = parse_bundle(&args.bundle)?;
    let layout = home.store()?;
    let bundle = store::verify_in(&home, &layout, &stack, &version)?;
    let mut parsed = inputs::read_all(&args.inputs)?;
    parsed.add_environment(&bundle.config.interface);
    let findings = deploy::check_inputs(&home, &bundle, &parsed)?;
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
        }));
        return Ok(ExitStatus::success_if(findings.is_empty()));
    }
    if let Some(error) = deploy::findings_error(&findings) {
        return Err(error);
    }
    println!(
        "inputs `{}` fit `{stack}@{version}`: {} set, every required input present, every validation rule met",
        parsed.path,
        parsed.values.len()
    );
    Ok(ExitStatus::Success)
}
