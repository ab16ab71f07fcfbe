//! `plan`, `apply`, `rollback`, `drift` and `destroy`.

use stackpack_terminal::ExitStatus;
use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use semver::Version;
use serde_json::json;
use stackpack_runner::deploy::{self, Options, Report, Request, Target, Ui};
use stackpack_runner::engine::PlanDetails;
use stackpack_runner::installation::Installation;
use stackpack_runner::policy;
use stackpack_runner::{Error, Result};
use stackpack_schema::plan::Action;
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use super::{open_installation, parse_bundle, parse_stack, print_json, quiet, status, verbose};
use crate::cli::{
    ApplyArgs, DestroyArgs, DriftArgs, GlobalArgs, PlanArgs, PlanFormat, RollbackArgs,
};

/// What `plan`, `apply`, `rollback` and `destroy` act on: a stack, or a release
/// ([`super::release::Release`]); [`of`] chooses which, once per command.
pub(super) trait Deployed {
    fn plan(
        &self,
        installation: &Installation,
        args: &PlanArgs,
        name: String,
        version: Version,
    ) -> Result<ExitStatus>;

    fn apply(
        &self,
        installation: &Installation,
        args: &ApplyArgs,
        name: String,
        version: Version,
    ) -> Result<ExitStatus>;

    fn rollback(
        &self,
        installation: &Installation,
        args: &RollbackArgs,
        name: String,
    ) -> Result<ExitStatus>;

    fn destroy(
        &self,
        installation: &Installation,
        args: &DestroyArgs,
        name: String,
    ) -> Result<ExitStatus>;
}

/// A single stack.
struct Stack;

/// What `name` is here: a release when this home knows it as one (release and
/// stack names share one namespace), else a stack.
fn of(installation: &Installation, name: &str) -> Result<&'static dyn Deployed> {
    Ok(if super::release::is_release(installation, name)? {
        &super::release::Release
    } else {
        &Stack
    })
}

pub fn plan(global: &GlobalArgs, args: &PlanArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let (name, version) = parse_bundle(&args.deploy.bundle)?;
    of(&installation, &name)?.plan(&installation, args, name, version)
}

pub fn apply(global: &GlobalArgs, args: &ApplyArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let (name, version) = parse_bundle(&args.deploy.bundle)?;
    of(&installation, &name)?.apply(&installation, args, name, version)
}

pub fn rollback(global: &GlobalArgs, args: &RollbackArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let name = parse_stack(&args.stack)?;
    of(&installation, &name)?.rollback(&installation, args, name)
}

/// `destroy`: the person types the customer id (or passes it to `--confirm`), so
/// that a stack is never destroyed in the wrong account by a slip of the keyboard.
pub fn destroy(global: &GlobalArgs, args: &DestroyArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let name = parse_stack(&args.stack)?;
    of(&installation, &name)?.destroy(&installation, args, name)
}

impl Deployed for Stack {
    fn plan(
        &self,
        installation: &Installation,
        args: &PlanArgs,
        stack: String,
        version: Version,
    ) -> Result<ExitStatus> {
        let deploy = &args.deploy;
        let target = Target::Plan {
            version,
            inputs: deploy.inputs.clone(),
        };
        let mut request = request(stack, target, deploy.wait);
        request.options = Options {
            allow_replace: deploy.allow_replace.clone(),
            plan_out: args.out.clone(),
            reviewed: None,
            release: None,
            engine: None,
        };
        let report = run(installation, request, Confirm::NotAsked)?;
        if args.format == PlanFormat::Markdown {
            print!("{}", markdown(&report));
        } else {
            print_report(&report, deploy.json);
        }
        Ok(ExitStatus::success_if(report.verdict.passed()))
    }

    fn apply(
        &self,
        installation: &Installation,
        args: &ApplyArgs,
        stack: String,
        version: Version,
    ) -> Result<ExitStatus> {
        let confirm = Confirm::from_flag(args.yes)?;
        let target = Target::Apply {
            version,
            inputs: args.deploy.inputs.clone(),
            allow_downgrade: args.allow_downgrade,
        };
        let mut request = request(stack, target, args.deploy.wait);
        request.options = Options {
            allow_replace: args.deploy.allow_replace.clone(),
            plan_out: None,
            reviewed: args.plan.clone(),
            release: None,
            engine: None,
        };
        let report = run(installation, request, confirm)?;
        print_report(&report, args.deploy.json);
        Ok(ExitStatus::Success)
    }

    fn rollback(
        &self,
        installation: &Installation,
        args: &RollbackArgs,
        stack: String,
    ) -> Result<ExitStatus> {
        let confirm = Confirm::from_flag(args.yes)?;
        let target = Target::Rollback {
            inputs: args.inputs.clone(),
        };
        let report = run(installation, request(stack, target, args.wait), confirm)?;
        print_report(&report, args.json);
        Ok(ExitStatus::Success)
    }

    fn destroy(
        &self,
        installation: &Installation,
        args: &DestroyArgs,
        stack: String,
    ) -> Result<ExitStatus> {
        let customer = installation.config.customer.clone();
        let confirm = match &args.confirm {
        Some(given) if *given == customer => Confirm::Yes,
        Some(given) => {
            return Err(Error::refused(format!(
                "`--confirm {given}` does not name this runner's customer: nothing was destroyed"
            ))
            .at(format!("`{}`", installation.root.join("runner.toml").display()))
            .hint("`--confirm` takes the customer id this runner was initialised for; `stackpack-runner status` names the runner's customer"))
        }
        None if std::io::stdin().is_terminal() => Confirm::TypeCustomer(customer),
        None => {
            return Err(Error::refused(
                "there is no terminal to confirm the destroy on, and `--confirm CUSTOMER` was not given: nothing was destroyed",
            )
            .hint(format!("pass `--confirm {customer}` to destroy without asking")))
        }
    };
        let report = run(
            installation,
            request(stack, Target::Destroy, args.wait),
            confirm,
        )?;
        print_report(&report, args.json);
        Ok(ExitStatus::Success)
    }
}

/// A summary for a change request: the bundle, what the plan does to which
/// resource, and what the policies said.
fn markdown(report: &Report) -> String {
    use std::fmt::Write;
    let r = &report.receipt.receipt;
    let p = &report.plan;
    let mut out = format!("## Plan: `{}@{}`\n\n", r.stack, r.version);
    let _ = writeln!(out, "- bundle: `{}`", r.bundle_digest);
    let _ = writeln!(out, "- inputs hash: `{}`", r.inputs_hash);
    let _ = writeln!(out, "- engine: {} {}", r.engine.name, r.engine.version);
    let _ = writeln!(
        out,
        "\n| add | change | replace | destroy | outputs changed |\n|---|---|---|---|---|\n| {} | {} | {} | {} | {} |",
        p.count(Action::Create),
        p.count(Action::Update),
        p.count(Action::Replace),
        p.count(Action::Destroy),
        p.output_changes
    );
    for action in [
        Action::Replace,
        Action::Destroy,
        Action::Update,
        Action::Create,
    ] {
        let addresses: Vec<&str> = p
            .changes
            .iter()
            .filter(|c| c.action == action)
            .map(|c| c.address.as_str())
            .collect();
        if addresses.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n### {} ({})\n", action.as_str(), addresses.len());
        for address in addresses {
            let _ = writeln!(out, "- `{address}`");
        }
    }
    let v = &report.verdict;
    let _ = writeln!(
        out,
        "\n### Policies\n\n{} file(s): {}",
        v.files,
        if v.passed() { "passed" } else { "**denied**" }
    );
    for (label, results) in [("deny", &v.denied), ("warn", &v.warnings)] {
        for result in results {
            let _ = writeln!(out, "- {label}: {}", policy::line(result));
        }
    }
    out
}

pub fn drift(global: &GlobalArgs, args: &DriftArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let stack = parse_stack(&args.stack)?;
    let report = run(
        &installation,
        request(stack, Target::Drift, args.wait),
        Confirm::NotAsked,
    )?;
    print_report(&report, args.json);
    // A drift found is not a failure to check: a scheduled check tells the two apart.
    Ok(if report.receipt.receipt.outcome == Outcome::Drifted {
        ExitStatus::Found
    } else {
        ExitStatus::Success
    })
}

fn request(stack: String, target: Target, wait: u64) -> Request {
    Request {
        stack,
        target,
        wait: Duration::from_secs(wait),
        options: Options::default(),
    }
}

/// How a plan is confirmed before anything changes.
enum Confirm {
    /// Plans and drift checks change nothing.
    NotAsked,
    /// `--yes`.
    Yes,
    /// Ask on the terminal; only `yes` goes ahead.
    Ask,
    /// Ask on the terminal; only the customer id goes ahead.
    TypeCustomer(String),
}

impl Confirm {
    /// Without `--yes`, the plan is confirmed on a terminal; with no terminal, refuse
    /// before doing anything.
    fn from_flag(yes: bool) -> Result<Confirm> {
        if yes {
            return Ok(Confirm::Yes);
        }
        if std::io::stdin().is_terminal() {
            return Ok(Confirm::Ask);
        }
        Err(Error::refused(
            "there is no terminal to confirm the plan on, and `--yes` was not given: nothing was done",
        )
        .hint(
            "review the plan with `stackpack-runner plan`, then pass `--yes` to apply without asking",
        ))
    }

    fn ask(&self, reference: &str, kind: ReceiptKind, plan: &PlanDetails) -> bool {
        eprintln!(
            "plan for `{reference}` ({kind}): {}, {} changed",
            plan.counts(),
            stackpack_terminal::words::count(plan.output_changes, "output")
        );
        for line in destructive_lines(plan) {
            eprintln!("{line}");
        }
        if !plan.runs_commands.is_empty() {
            eprintln!(
                "it runs commands on the runner's machine: {}",
                plan.runs_commands.join(", ")
            );
        }
        let expected = match self {
            Confirm::NotAsked | Confirm::Yes => return true,
            Confirm::Ask => {
                eprint!("apply this plan? only `yes` is accepted: ");
                "yes"
            }
            Confirm::TypeCustomer(customer) => {
                eprint!("this destroys everything `{reference}` manages; type the customer id `{customer}` to go ahead: ");
                customer.as_str()
            }
        };
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        answer.trim() == expected
    }
}

/// `  replace  `address`` for each replacement, then each destruction.
pub(super) fn destructive_lines(plan: &PlanDetails) -> Vec<String> {
    plan.destructive()
        .into_iter()
        .map(|(action, address)| format!("  {:<8} `{address}`", action.as_str()))
        .collect()
}

fn run(installation: &Installation, request: Request, confirm: Confirm) -> Result<Report> {
    let status_line = |line: &str| status(line);
    let mut ask = |reference: &str, kind: ReceiptKind, plan: &PlanDetails| -> bool {
        confirm.ask(reference, kind, plan)
    };
    let mut ui = Ui {
        verbose: verbose(),
        quiet: quiet(),
        status: &status_line,
        confirm: &mut ask,
    };
    deploy::run(installation, request, &mut ui)
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
                "runsCommands": report.plan.runs_commands,
            },
            "outputs": redacted(&report.outputs),
            "policy": report.verdict,
            "receipt": report.receipt,
        }));
        return;
    }
    let v = &report.verdict;
    if v.files > 0 {
        println!(
            "policies: {} file(s), {} denied, {} warning(s)",
            v.files,
            v.denied.len(),
            v.warnings.len()
        );
        for result in &v.denied {
            println!("  deny: {}", policy::line(result));
        }
        for result in &v.warnings {
            println!("  warn: {}", policy::line(result));
        }
    }
    let mut summary = format!(
        "{} to add, {} to change, {} to destroy, {} output(s) changed",
        report.plan.summary.add,
        report.plan.summary.change,
        report.plan.summary.destroy,
        report.plan.output_changes
    );
    if !report.plan.runs_commands.is_empty() {
        summary.push_str(&format!(
            "; runs commands on the runner's machine: {}",
            report.plan.runs_commands.join(", ")
        ));
    }
    match (r.kind, r.outcome) {
        (ReceiptKind::Drift, Outcome::Drifted) => {
            println!("`{}@{}` has drifted: {summary}", r.stack, r.version);
            // What changed outside the runner, by address and attribute name (never
            // a value), as the receipt and the customer page name it.
            for drifted in &r.drift {
                if drifted.attributes.is_empty() {
                    println!("  {}", drifted.address);
                } else {
                    println!("  {}: {}", drifted.address, drifted.attributes.join(", "));
                }
            }
        }
        (ReceiptKind::Drift, _) => println!("`{}@{}` has not drifted", r.stack, r.version),
        (ReceiptKind::Plan, _) => println!("planned `{}@{}`: {summary}", r.stack, r.version),
        (ReceiptKind::Destroy, _) => {
            println!("destroyed `{}@{}`: {summary}", r.stack, r.version)
        }
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
