//! `preflight STACK@VERSION --inputs F`: the account checked against what the
//! stack needs, without planning (runbook: `docs/runner.md`, "Preflight failures").

use serde_json::json;
use stackpack_runner::preflight;
use stackpack_runner::Result;
use stackpack_terminal::ExitStatus;

use super::{open_installation, parse_bundle, print_json, status, table};
use crate::cli::{GlobalArgs, PreflightArgs};

pub fn preflight(global: &GlobalArgs, args: &PreflightArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let (stack, version) = parse_bundle(&args.reference)?;
    let checks = preflight::alone(&installation, &stack, &version, &args.inputs)?;
    let reference = format!("{stack}@{version}");
    if args.json {
        print_json(&json!({"stack": stack, "version": version.to_string(), "checks": checks}));
    } else if checks.is_empty() {
        println!(
            "`{reference}` manages no AWS resource and declares no `[preflight]`: nothing to check"
        );
    } else {
        let rows: Vec<Vec<String>> = checks
            .iter()
            .map(|c| {
                vec![
                    c.kind.to_string(),
                    c.subject.clone(),
                    c.status.to_string(),
                    c.message.clone(),
                ]
            })
            .collect();
        print!(
            "{}",
            table(&["CHECK", "SUBJECT", "STATUS", "DETAIL"], &rows)
        );
    }
    match preflight::refusal(&reference, &checks) {
        Some(error) => Err(error),
        None => {
            let unchecked = checks
                .iter()
                .filter(|c| c.status == stackpack_schema::preflight::PreflightStatus::NotChecked)
                .count();
            if unchecked > 0 && !args.json {
                status(&format!(
                    "warning: {unchecked} check(s) could not be made: not passed, unknown"
                ));
            }
            Ok(ExitStatus::Success)
        }
    }
}
