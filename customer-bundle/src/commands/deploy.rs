//! `plan`, `apply`, `rollback` and `drift`.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use serde_json::json;
use stackpack_runner::deploy::{self, Report, Request, Ui};
use stackpack_runner::engine::PlanDetails;
use stackpack_runner::{Error, Result};
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use super::{open_home, parse_bundle, parse_stack, print_json, quiet, status, verbose};
use crate::cli::{ApplyArgs, DeployArgs, DriftArgs, GlobalArgs, RollbackArgs};

pub fn plan(global: &GlobalArgs, args: &DeployArgs) -> Result<u8> {
    let home = open_home(global)?;
    let (stack, version) = parse_bundle(&args.bundle)?;
    let report = run(
        &home,
        Request {
            stack,
            version: Some(version),
            inputs: Some(args.inputs.clone()),
            kind: ReceiptKind::Plan,
            allow_downgrade: true,
            wait: Duration::from_secs(args.wait),
        },
        false,
    )?;
    print_report(&report, args.json);
    Ok(0)
}

pub fn apply(global: &GlobalArgs, args: &ApplyArgs) -> Result<u8> {
    let home = open_home(global)?;
    let (stack, version) = parse_bundle(&args.deploy.bundle)?;
    require_confirmation_possible(args.yes)?;
    let report = run(
        &home,
        Request {
            stack,
            version: Some(version),
            inputs: Some(args.deploy.inputs.clone()),
            kind: ReceiptKind::Apply,
            allow_downgrade: args.allow_downgrade,
            wait: Duration::from_secs(args.deploy.wait),
        },
        args.yes,
    )?;
    print_report(&report, args.deploy.json);
    Ok(0)
}

pub fn rollback(global: &GlobalArgs, args: &RollbackArgs) -> Result<u8> {
    let home = open_home(global)?;
    let stack = parse_stack(&args.stack)?;
    require_confirmation_possible(args.yes)?;
    let report = run(
        &home,
        Request {
            stack,
            version: None,
            inputs: args.inputs.clone(),
            kind: ReceiptKind::Rollback,
            allow_downgrade: true,
            wait: Duration::from_secs(args.wait),
        },
        args.yes,
    )?;
    print_report(&report, args.json);
    Ok(0)
}

pub fn drift(global: &GlobalArgs, args: &DriftArgs) -> Result<u8> {
    let home = open_home(global)?;
    let stack = parse_stack(&args.stack)?;
    let report = run(
        &home,
        Request {
            stack,
            version: None,
            inputs: None,
            kind: ReceiptKind::Drift,
            allow_downgrade: true,
            wait: Duration::from_secs(args.wait),
        },
        false,
    )?;
    print_report(&report, args.json);
    Ok(if report.receipt.receipt.outcome == Outcome::Drifted {
        1
    } else {
        0
    })
}

/// Without `--yes`, the plan is confirmed on a terminal; with no terminal, refuse
/// before doing anything.
fn require_confirmation_possible(yes: bool) -> Result<()> {
    if yes || std::io::stdin().is_terminal() {
        return Ok(());
    }
    Err(Error::usage(
        "there is no terminal to confirm the plan on, and `--yes` was not given: nothing was done",
    )
    .hint(
        "review the plan with `stackpack-runner plan`, then pass `--yes` to apply without asking",
    ))
}

fn run(home: &stackpack_runner::home::Home, request: Request, yes: bool) -> Result<Report> {
    let status_line = |line: &str| status(line);
    let mut confirm = |reference: &str, plan: &PlanDetails| -> bool {
        eprintln!(
            "plan for `{reference}`: {} to add, {} to change, {} to destroy, {} output(s) changed",
            plan.summary.add, plan.summary.change, plan.summary.destroy, plan.output_changes
        );
        if yes {
            return true;
        }
        eprint!("apply this plan? only `yes` is accepted: ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        answer.trim() == "yes"
    };
    let mut ui = Ui {
        verbose: verbose(),
        quiet: quiet(),
        status: &status_line,
        confirm: &mut confirm,
    };
    deploy::run(home, request, &mut ui)
}

/// Outputs as the engine gave them, with the value of every sensitive output removed.
fn redacted(outputs: &Option<serde_json::Value>) -> Option<serde_json::Value> {
    let mut outputs = outputs.clone()?;
    if let Some(map) = outputs.as_object_mut() {
        for output in map.values_mut() {
            if output["sensitive"] == true {
                output["value"] = serde_json::Value::Null;
            }
        }
    }
    Some(outputs)
}

fn print_report(report: &Report, json: bool) {
    let r = &report.receipt.receipt;
    if json {
        print_json(&json!({
            "stack": r.stack,
            "version": r.version.to_string(),
            "previousVersion": report.previous.as_ref().map(|v| v.to_string()),
            "kind": r.kind,
            "outcome": r.outcome,
            "plan": {
                "add": report.plan.summary.add,
                "change": report.plan.summary.change,
                "destroy": report.plan.summary.destroy,
                "outputChanges": report.plan.output_changes,
            },
            "outputs": redacted(&report.outputs),
            "receipt": report.receipt,
        }));
        return;
    }
    let summary = format!(
        "{} to add, {} to change, {} to destroy, {} output(s) changed",
        report.plan.summary.add,
        report.plan.summary.change,
        report.plan.summary.destroy,
        report.plan.output_changes
    );
    match (r.kind, r.outcome) {
        (ReceiptKind::Drift, Outcome::Drifted) => {
            println!("`{}@{}` has drifted: {summary}", r.stack, r.version)
        }
        (ReceiptKind::Drift, _) => println!("`{}@{}` has not drifted", r.stack, r.version),
        (ReceiptKind::Plan, _) => println!("planned `{}@{}`: {summary}", r.stack, r.version),
        (kind, _) => {
            let verb = if kind == ReceiptKind::Rollback {
                "rolled back to"
            } else {
                "applied"
            };
            match &report.previous {
                Some(previous) if previous != &r.version => {
                    println!(
                        "{verb} `{}@{}` (was `{previous}`): {summary}",
                        r.stack, r.version
                    )
                }
                _ => println!("{verb} `{}@{}`: {summary}", r.stack, r.version),
            }
        }
    }
    println!("receipt `{}` ({}, {})", r.id, r.kind, r.outcome);
    if let Some(outputs) = report.outputs.as_ref().and_then(|o| o.as_object()) {
        for (name, output) in outputs {
            let shown = if output["sensitive"] == true {
                "(sensitive)".to_string()
            } else {
                output["value"].to_string()
            };
            println!("  {name} = {shown}");
        }
    }
}
