//! Planning and applying a release: every stack in dependency order, each with its
//! upstreams' outputs; a stack already at the release's bundle with the same inputs
//! is left alone, which is also how a rerun continues where an interrupted one
//! stopped.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use semver::Version;
use stackpack_bundle::release::VerifiedRelease;
use stackpack_schema::receipt::{ReceiptKind, ReleaseRef};

use super::receipt::StackResult;
use super::wiring::{self, Outputs, StackInputs};
use crate::deploy::{self, Options, Request, Target, Ui};
use crate::engine::PlanDetails;
use crate::error::{Error, Result};
use crate::installation::Installation;

/// How a release run talks to the person running it; shared by parallel stacks.
pub struct ReleaseUi<'a> {
    pub verbose: bool,
    pub quiet: bool,
    pub status: &'a (dyn Fn(&str) + Sync),
}

impl ReleaseUi<'_> {
    /// A stack run's Ui: the release was confirmed once, before any stack ran.
    fn with_deploy<T>(&self, f: impl FnOnce(&mut Ui) -> T) -> T {
        let mut yes = |_: &str, _: ReceiptKind, _: &PlanDetails| true;
        let status = |line: &str| (self.status)(line);
        let mut ui = Ui {
            verbose: self.verbose,
            quiet: self.quiet,
            status: &status,
            confirm: &mut yes,
        };
        f(&mut ui)
    }
}

/// A release about to be planned or applied, its inputs checked.
pub struct ReleaseRun<'a> {
    pub installation: &'a Installation,
    pub release: &'a VerifiedRelease,
    pub stacks: Vec<StackInputs>,
    pub wait: Duration,
    pub parallel: usize,
    pub allow_downgrade: bool,
    /// Reviewed plans (`plan --out`) by stack: such a stack is applied exactly as
    /// its plan says, or refused when the bundle, the inputs or the state moved.
    pub reviewed: std::collections::BTreeMap<String, PathBuf>,
    /// Stacks planned even when the ledger says they already run this bundle with
    /// these inputs (to correct drift).
    pub force: BTreeSet<String>,
    /// The release its stacks' receipts are part of; none for a single stack
    /// synced as a release of one (see `sync::single`).
    pub part_of: Option<ReleaseRef>,
}

/// The reference a receipt of one of `release`'s stacks names it by.
pub fn reference(release: &VerifiedRelease) -> ReleaseRef {
    ReleaseRef {
        name: release.description.name.clone(),
        version: release.description.version.clone(),
        digest: release.index_descriptor.digest.clone(),
    }
}

impl ReleaseRun<'_> {
    fn upstreams<'s>(&self, stack: &'s StackInputs) -> BTreeSet<&'s str> {
        stack
            .stack
            .depends_on
            .iter()
            .map(String::as_str)
            .chain(stack.stack.inputs_from.values().map(|w| w.stack.as_str()))
            .collect()
    }

    /// The outputs `stack` reads: from this run's applies, else from the installed
    /// upstream's state.
    fn upstream_outputs(
        &self,
        stack: &StackInputs,
        fresh: &Outputs,
        ui: &ReleaseUi,
    ) -> Result<Outputs> {
        let mut out = Outputs::new();
        for wire in stack.stack.inputs_from.values() {
            if out.contains_key(&wire.stack) {
                continue;
            }
            let outputs = match fresh.get(&wire.stack) {
                Some(outputs) => outputs.clone(),
                None => ui.with_deploy(|ui| {
                    wiring::installed_outputs(self.installation, &wire.stack, ui)
                })?,
            };
            out.insert(wire.stack.clone(), outputs);
        }
        Ok(out)
    }
}

/// What a plan found for one stack.
pub enum Planned {
    Unchanged,
    Changes(Box<deploy::Report>),
    /// An upstream changes in this release: its outputs are not known until it is
    /// applied, and a guessed value is never planned with.
    Waiting(String),
}

/// Plans every stack in order.
pub fn plan(run: &ReleaseRun, ui: &ReleaseUi) -> Result<Vec<(String, Planned)>> {
    plan_to(run, ui, None)
}

/// Plans every stack in order; with `out`, each stack with changes leaves a
/// reviewed plan there (`<stack>.plan.json`, as `plan --out` writes it).
pub fn plan_to(
    run: &ReleaseRun,
    ui: &ReleaseUi,
    plans_to: Option<&std::path::Path>,
) -> Result<Vec<(String, Planned)>> {
    let scratch = crate::files::work_folder(&run.installation.home.work_root(), "release-")?;
    let mut changing: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for stack in &run.stacks {
        let name = stack.stack.name.clone();
        if let Some(upstream) = run
            .upstreams(stack)
            .into_iter()
            .find(|u| changing.contains(*u))
        {
            changing.insert(name.clone());
            out.push((name, Planned::Waiting(upstream.to_string())));
            continue;
        }
        let outputs = run.upstream_outputs(stack, &Outputs::new(), ui)?;
        let files = wiring::run_files(stack, &outputs, scratch.path())?;
        if !run.force.contains(&name)
            && wiring::unchanged(run.installation, stack, &files)?.is_some()
        {
            out.push((name, Planned::Unchanged));
            continue;
        }
        let request = Request {
            stack: name.clone(),
            target: Target::Plan {
                version: stack.stack.version.clone(),
                inputs: files,
            },
            wait: run.wait,
            options: Options {
                release: run.part_of.clone(),
                plan_out: plans_to.map(|dir| reviewed_plan_path(dir, &name)),
                engine: run.release.description.engine.clone(),
                ..Options::default()
            },
        };
        let report = ui.with_deploy(|u| deploy::run(run.installation, request, u))?;
        changing.insert(name.clone());
        out.push((name, Planned::Changes(Box::new(report))));
    }
    Ok(out)
}

/// Where [`plan_to`] writes a stack's reviewed plan in `dir`.
pub fn reviewed_plan_path(dir: &std::path::Path, stack: &str) -> PathBuf {
    dir.join(format!("{stack}.plan.json"))
}

/// What an apply did with one stack.
#[derive(Debug)]
pub struct StackRun {
    pub name: String,
    pub version: Version,
    pub result: StackResult,
    pub receipt_id: Option<String>,
    /// The version installed before the run.
    pub before: Option<Version>,
    pub error: Option<Error>,
    pub outputs: Option<serde_json::Value>,
}

impl StackRun {
    /// Records how this stack's run ended: `done` with its receipt, or failed with
    /// the error. True when it succeeded.
    pub fn record(&mut self, ran: Result<crate::deploy::Report>, done: StackResult) -> bool {
        match ran {
            Ok(report) => {
                self.result = done;
                self.receipt_id = Some(report.receipt.receipt.id);
                true
            }
            Err(error) => {
                self.result = StackResult::Failed;
                self.error = Some(error);
                false
            }
        }
    }
}

/// Applies every stack that is not already as the release wants it, in waves of
/// stacks whose upstreams are done (up to `parallel` at once); stops after the wave
/// in which a stack failed.
pub fn apply(run: &ReleaseRun, ui: &ReleaseUi) -> Result<Vec<StackRun>> {
    let scratch = crate::files::work_folder(&run.installation.home.work_root(), "release-")?;
    let mut fresh = Outputs::new();
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut results: Vec<StackRun> = Vec::new();
    let mut failed = false;
    // Between stacks, SIGINT and SIGTERM stop the release before the next stack
    // starts (during an engine run, the stack's own run records them), so the
    // release receipt says where each stack is.
    let _guard = crate::interrupt::Guard::install();
    while !failed && done.len() < run.stacks.len() {
        if let Some(signal) = crate::interrupt::received() {
            if let Some(next) = run.stacks.iter().find(|s| !done.contains(&s.stack.name)) {
                let ledger = run.installation.ledger()?;
                results.push(StackRun {
                    name: next.stack.name.clone(),
                    version: next.stack.version.clone(),
                    result: StackResult::NotReached,
                    receipt_id: None,
                    before: ledger.current(&next.stack.name)?.map(|d| d.version),
                    error: Some(Error::refused(format!(
                        "stopped by {} before it started",
                        crate::interrupt::name(signal)
                    ))),
                    outputs: None,
                });
                done.insert(next.stack.name.clone());
            }
            break;
        }
        let ready: Vec<&StackInputs> = run
            .stacks
            .iter()
            .filter(|s| !done.contains(&s.stack.name))
            .filter(|s| {
                run.upstreams(s)
                    .iter()
                    .all(|u| done.contains(*u) || run.stacks.iter().all(|o| o.stack.name != *u))
            })
            .take(run.parallel.max(1))
            .collect();
        let wave: Vec<StackRun> = if ready.len() == 1 {
            vec![apply_stack(run, ready[0], &fresh, scratch.path(), ui)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = ready
                    .iter()
                    .map(|stack| {
                        let fresh = &fresh;
                        let path = scratch.path();
                        scope.spawn(move || apply_stack(run, stack, fresh, path, ui))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a stack's run does not panic"))
                    .collect()
            })
        };
        for result in wave {
            done.insert(result.name.clone());
            failed |= result.result == StackResult::Failed;
            if let Some(outputs) = &result.outputs {
                fresh.insert(result.name.clone(), outputs.clone());
            }
            results.push(result);
        }
    }
    for stack in &run.stacks {
        if !done.contains(&stack.stack.name) {
            let ledger = run.installation.ledger()?;
            results.push(StackRun {
                name: stack.stack.name.clone(),
                version: stack.stack.version.clone(),
                result: StackResult::NotReached,
                receipt_id: None,
                before: ledger.current(&stack.stack.name)?.map(|d| d.version),
                error: None,
                outputs: None,
            });
        }
    }
    Ok(results)
}

fn apply_stack(
    run: &ReleaseRun,
    stack: &StackInputs,
    fresh: &Outputs,
    scratch: &std::path::Path,
    ui: &ReleaseUi,
) -> StackRun {
    let name = stack.stack.name.clone();
    let mut result = StackRun {
        name: name.clone(),
        version: stack.stack.version.clone(),
        result: StackResult::Failed,
        receipt_id: None,
        before: None,
        error: None,
        outputs: None,
    };
    match try_apply_stack(run, stack, fresh, scratch, ui, &mut result) {
        Ok(()) => {}
        Err(error) => {
            (ui.status)(&format!("`{name}` failed: {}", error.message));
            result.result = StackResult::Failed;
            result.error = Some(error);
        }
    }
    result
}

fn try_apply_stack(
    run: &ReleaseRun,
    stack: &StackInputs,
    fresh: &Outputs,
    scratch: &std::path::Path,
    ui: &ReleaseUi,
    result: &mut StackRun,
) -> Result<()> {
    let name = &stack.stack.name;
    let ledger = run.installation.ledger()?;
    result.before = ledger.current(name)?.map(|d| d.version);
    let outputs = run.upstream_outputs(stack, fresh, ui)?;
    let files: Vec<PathBuf> = wiring::run_files(stack, &outputs, scratch)?;
    // A reviewed plan is applied as reviewed (or refused when the state moved),
    // never skipped: it may correct drift the ledger cannot see.
    let unchanged = match run.reviewed.contains_key(name) || run.force.contains(name) {
        true => None,
        false => wiring::unchanged(run.installation, stack, &files)?,
    };
    if let Some(current) = unchanged {
        (ui.status)(&format!(
            "`{name}@{}` unchanged: already applied with these inputs",
            current.version
        ));
        result.result = StackResult::Unchanged;
        result.receipt_id = Some(current.receipt_id);
        return Ok(());
    }
    (ui.status)(&format!("applying `{name}@{}`", stack.stack.version));
    let request = Request {
        stack: name.clone(),
        target: Target::Apply {
            version: stack.stack.version.clone(),
            inputs: files,
            allow_downgrade: run.allow_downgrade,
        },
        wait: run.wait,
        options: Options {
            release: run.part_of.clone(),
            reviewed: run.reviewed.get(name).cloned(),
            engine: run.release.description.engine.clone(),
            ..Options::default()
        },
    };
    let report = ui.with_deploy(|u| deploy::run(run.installation, request, u))?;
    result.result = StackResult::Applied;
    result.receipt_id = Some(report.receipt.receipt.id.clone());
    result.outputs = report.outputs;
    Ok(())
}
