//! `plan`, `apply`, `rollback` and `destroy` of a release: the same verbs as for a
//! stack; a name that is a release in this home is a release (release and stack
//! names share one namespace).

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use semver::Version;
use serde_json::json;
use stackpack_bundle::release::VerifiedRelease;
use stackpack_runner::installation::Installation;
use stackpack_runner::release::ops::{self, ReleaseReport};
use stackpack_runner::release::run::{self, Planned, ReleaseRun, ReleaseUi};
use stackpack_runner::release::{history, stored, wiring};
use stackpack_runner::{Error, Result};
use stackpack_schema::plan::Action;
use stackpack_terminal::ExitStatus;

use super::deploy::Deployed;
use super::{print_json, quiet, status, table, verbose};
use crate::cli::{
    ApplyArgs, DeployArgs, DestroyArgs, GlobalArgs, MirrorServicesArgs, PlanArgs, RollbackArgs,
};
use stackpack_bundle::remote::RegistryAddress;

/// Whether `name` is a release here: the store holds one, or the ledger has run one.
pub fn is_release(installation: &Installation, name: &str) -> Result<bool> {
    if stored::is_release(installation, name)? {
        return Ok(true);
    }
    let ledger = installation.ledger()?;
    Ok(!ledger.release_receipts(Some(name))?.is_empty())
}

/// A release: its stacks planned, applied, rolled back or destroyed together.
pub(super) struct Release;

impl Deployed for Release {
    fn plan(
        &self,
        installation: &Installation,
        args: &PlanArgs,
        name: String,
        version: Version,
    ) -> Result<ExitStatus> {
        plan(installation, args, &name, &version)
    }

    fn apply(
        &self,
        installation: &Installation,
        args: &ApplyArgs,
        name: String,
        version: Version,
    ) -> Result<ExitStatus> {
        apply(installation, args, &name, &version)
    }

    fn rollback(
        &self,
        installation: &Installation,
        args: &RollbackArgs,
        _name: String,
    ) -> Result<ExitStatus> {
        rollback(installation, args)
    }

    fn destroy(
        &self,
        installation: &Installation,
        args: &DestroyArgs,
        _name: String,
    ) -> Result<ExitStatus> {
        destroy(installation, args)
    }
}

fn status_line(line: &str) {
    status(line)
}

fn ui() -> ReleaseUi<'static> {
    ReleaseUi {
        verbose: verbose(),
        quiet: quiet(),
        status: &status_line,
    }
}

/// The release, verified, and its stacks' inputs checked: nothing runs before.
fn prepare<'a>(
    installation: &'a Installation,
    release: &'a VerifiedRelease,
    deploy: &DeployArgs,
) -> Result<ReleaseRun<'a>> {
    let d = &release.description;
    let Some(dir) = &deploy.inputs_dir else {
        return Err(Error::usage(format!(
            "`{}` is a release: give its inputs with `--inputs-dir DIR`, not `--inputs`",
            d.name
        ))
        .hint("the folder holds one `STACK.tfvars` per stack of the release"));
    };
    if !d.version.pre.is_empty() && !installation.config.policy.allow_prereleases {
        return Err(Error::refused(format!(
            "`{}@{}` is a prerelease, and this runner's policy allows stable versions only",
            d.name, d.version
        ))
        .at(format!(
            "`{}`",
            installation.root.join("runner.toml").display()
        ))
        .hint(
            "set `allow-prereleases = true` under `[policy]` in `runner.toml` to allow prereleases",
        ));
    }
    let stacks = wiring::check_inputs_dir(installation, d, dir)?;
    Ok(ReleaseRun {
        installation,
        release,
        stacks,
        wait: Duration::from_secs(deploy.wait),
        parallel: 1,
        allow_downgrade: false,
        reviewed: Default::default(),
        force: Default::default(),
        part_of: Some(run::reference(release)),
    })
}

fn load(installation: &Installation, name: &str, version: &Version) -> Result<VerifiedRelease> {
    status(&format!(
        "verifying release `{name}@{version}` and its bundles"
    ));
    stored::load(installation, name, version)
}

fn plan(
    installation: &Installation,
    args: &PlanArgs,
    name: &str,
    version: &Version,
) -> Result<ExitStatus> {
    let release = load(installation, name, version)?;
    let run = prepare(installation, &release, &args.deploy)?;
    let planned = run::plan(&run, &ui())?;
    show_plans(&planned, args.deploy.json);
    Ok(ExitStatus::Success)
}

fn show_plans(planned: &[(String, Planned)], json: bool) {
    let describe = |p: &Planned| match p {
        Planned::Unchanged => ("unchanged".to_string(), None),
        Planned::Waiting(upstream) => (format!("waiting on `{upstream}`"), None),
        Planned::Changes(report) => (
            report.plan.counts(),
            Some(report.receipt.receipt.id.clone()),
        ),
    };
    let addresses = |p: &Planned, wanted: Action| -> Vec<String> {
        match p {
            Planned::Changes(report) => report
                .plan
                .destructive()
                .into_iter()
                .filter(|(action, _)| *action == wanted)
                .map(|(_, address)| address.to_string())
                .collect(),
            _ => Vec::new(),
        }
    };
    if json {
        print_json(&json!({
            "stacks": planned.iter().map(|(name, p)| {
                let (plan, receipt) = describe(p);
                json!({
                    "stack": name,
                    "state": match p {
                        Planned::Unchanged => "unchanged",
                        Planned::Waiting(_) => "waiting",
                        Planned::Changes(_) => "changes",
                    },
                    "waitingOn": match p { Planned::Waiting(u) => Some(u.clone()), _ => None },
                    "plan": plan,
                    "replace": addresses(p, Action::Replace),
                    "destroy": addresses(p, Action::Destroy),
                    "receipt": receipt,
                })
            }).collect::<Vec<_>>()
        }));
        return;
    }
    let rows: Vec<Vec<String>> = planned
        .iter()
        .map(|(name, p)| vec![name.clone(), describe(p).0])
        .collect();
    print!("{}", table(&["STACK", "PLAN"], &rows));
    // Every replacement and destruction by address, stack by stack: what the
    // operator is asked to say yes to.
    for (name, p) in planned {
        if let Planned::Changes(report) = p {
            let lines = super::deploy::destructive_lines(&report.plan);
            if !lines.is_empty() {
                println!("`{name}`:");
                for line in lines {
                    println!("{line}");
                }
            }
        }
    }
}

fn apply(
    installation: &Installation,
    args: &ApplyArgs,
    name: &str,
    version: &Version,
) -> Result<ExitStatus> {
    let release = load(installation, name, version)?;
    let mut run = prepare(installation, &release, &args.deploy)?;
    run.parallel = args.parallel.max(1);
    run.allow_downgrade = args.allow_downgrade;
    let ledger = installation.ledger()?;
    history::check_claims(ledger, &release.description)?;
    history::check_downgrades(ledger, &release.description, args.allow_downgrade)?;
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(Error::refused(
                "there is no terminal to confirm the plans on, and `--yes` was not given: nothing was done",
            )
            .hint(format!(
                "review the plans with `stackpack-runner plan {name}@{version} --inputs-dir DIR`, then pass `--yes`"
            )));
        }
        let planned = run::plan(&run, &ui())?;
        show_plans(&planned, false);
        let destructive: usize = planned
            .iter()
            .map(|(_, p)| match p {
                Planned::Changes(report) => report.plan.destructive().len(),
                _ => 0,
            })
            .sum();
        let listed = if destructive == 0 {
            String::new()
        } else {
            format!(
                " it replaces or destroys the {} listed above;",
                stackpack_terminal::words::count(destructive as u64, "resource")
            )
        };
        if !ask(
            &format!("apply release `{name}@{version}`?{listed} only `yes` is accepted: "),
            "yes",
        ) {
            return Err(Error::refused(format!(
                "nothing was applied: release `{name}@{version}` was not confirmed"
            )));
        }
    }
    let report = ops::apply(&run, &ui())?;
    show_report(&report, args.deploy.json);
    if let Some(to) = &args.mirror_services_to {
        mirror(installation, &release, to, args.insecure, false)?;
    }
    Ok(ExitStatus::Success)
}

/// `mirror-services NAME@VERSION --to HOST/NS`: a command of its own (and an
/// `apply` flag calling it) because mirroring needs the customer's registry, not
/// the cloud account, and is retried or done ahead of an apply on its own.
pub fn mirror_services(global: &GlobalArgs, args: &MirrorServicesArgs) -> Result<ExitStatus> {
    let installation = super::open_installation(global)?;
    let (name, version) = super::parse_bundle(&args.release)?;
    let release = load(&installation, &name, &version)?;
    mirror(&installation, &release, &args.to, args.insecure, args.json)?;
    Ok(ExitStatus::Success)
}

fn mirror(
    installation: &Installation,
    release: &VerifiedRelease,
    to: &str,
    insecure: bool,
    json: bool,
) -> Result<()> {
    let address: RegistryAddress = to
        .parse()
        .map_err(|e| Error::usage_by(e).hint("give the registry as `HOST[:PORT]/NAMESPACE`"))?;
    let d = &release.description;
    status(&format!(
        "mirroring {} service(s) of `{}@{}` to `{address}`",
        d.services.len(),
        d.name,
        d.version
    ));
    let mirrored =
        stackpack_runner::release::mirror::mirror(installation, release, &address, insecure)?;
    if json {
        print_json(&json!({
            "mirrored": mirrored.iter().map(|m| json!({
                "service": m.service,
                "reference": m.reference,
                "bytesSent": m.bytes_sent,
            })).collect::<Vec<_>>()
        }));
    } else {
        let rows: Vec<Vec<String>> = mirrored
            .iter()
            .map(|m| vec![m.service.clone(), m.reference.clone()])
            .collect();
        print!("{}", table(&["SERVICE", "MIRRORED TO"], &rows));
    }
    Ok(())
}

fn ask(prompt: &str, expected: &str) -> bool {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer.trim() == expected
}

fn rollback(installation: &Installation, args: &RollbackArgs) -> Result<ExitStatus> {
    let name = &args.stack;
    if !args.inputs.is_empty() {
        return Err(Error::usage(format!(
            "`{name}` is a release: its rollback uses the inputs each stack had, `--inputs` does not apply"
        )));
    }
    let ledger = installation.ledger()?;
    let (current, target) = ops::rollback_target(ledger, name)?;
    let version = target.receipt.version.clone();
    let release = load(installation, name, &version)?;
    if !args.yes {
        let terminal = std::io::stdin().is_terminal();
        if !terminal
            || !ask(
                &format!("roll release `{name}` back from `{current}` to `{version}`? only `yes` is accepted: "),
                "yes",
            )
        {
            return Err(Error::refused(format!(
                "nothing was rolled back: the rollback of `{name}` to `{version}` was not confirmed"
            ))
            .hint("pass `--yes` to roll back without asking"));
        }
    }
    let report = ops::rollback(
        installation,
        &release,
        &target,
        Duration::from_secs(args.wait),
        &ui(),
    )?;
    show_report(&report, args.json);
    Ok(ExitStatus::Success)
}

fn destroy(installation: &Installation, args: &DestroyArgs) -> Result<ExitStatus> {
    let name = &args.stack;
    let ledger = installation.ledger()?;
    let version = history::current(ledger, name)?
        .or_else(|| {
            ledger
                .release_receipts(Some(name))
                .ok()
                .and_then(|r| r.first().map(|r| r.receipt.version.clone()))
        })
        .ok_or_else(|| Error::refused(format!("release `{name}` is not applied by this runner")))?;
    let release = load(installation, name, &version)?;
    let customer = installation.config.customer.clone();
    let confirmed = match &args.confirm {
        Some(given) => given == &customer,
        None if std::io::stdin().is_terminal() => ask(
            &format!("this destroys every stack of release `{name}@{version}`; type the customer id `{customer}` to go ahead: "),
            &customer,
        ),
        None => {
            return Err(Error::refused(
                "there is no terminal to confirm the destroy on, and `--confirm CUSTOMER` was not given: nothing was destroyed",
            )
            .hint(format!("pass `--confirm {customer}` to destroy without asking")))
        }
    };
    if !confirmed {
        return Err(Error::refused(format!(
            "the customer id was not confirmed: nothing of release `{name}` was destroyed"
        ))
        .at(format!(
            "`{}`",
            installation.root.join("runner.toml").display()
        ))
        .hint("type (or pass to `--confirm`) the customer id this runner was initialised for"));
    }
    let report = ops::destroy(
        installation,
        &release,
        Duration::from_secs(args.wait),
        &ui(),
    )?;
    show_report(&report, args.json);
    Ok(ExitStatus::Success)
}

fn show_report(report: &ReleaseReport, json: bool) {
    let r = &report.receipt.receipt;
    if json {
        print_json(&json!({ "releaseReceipt": report.receipt }));
        return;
    }
    let rows: Vec<Vec<String>> = r
        .stacks
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.version.to_string(),
                s.result.as_str().to_string(),
                s.installed
                    .as_ref()
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                s.receipt_id.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["STACK", "VERSION", "RESULT", "INSTALLED", "RECEIPT"],
            &rows
        )
    );
    println!(
        "release `{}@{}` {}: release receipt `{}` ({}, {})",
        r.release,
        r.version,
        match r.kind {
            stackpack_schema::receipt::ReceiptKind::Rollback => "rolled back to",
            stackpack_schema::receipt::ReceiptKind::Destroy => "destroyed",
            _ => "applied",
        },
        r.id,
        r.kind,
        r.outcome
    );
}
