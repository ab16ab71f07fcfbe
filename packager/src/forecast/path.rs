//! One customer's real path in its own emulated account: the stacks it runs applied
//! in dependency order (outputs handed on to the inputs they are wired to), then each
//! version it passes through, stack by stack, planned on top and applied before its
//! dependents are planned; the last step's plans are the forecast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use stackpack_schema::plan::{self, ResourceChange};

use super::source::HopStack;
use super::Bundle;
use crate::witness::account::Session;
use crate::witness::engine::{input_args, write_tree, Engine, PluginCache};
use crate::witness::failed;

/// The file that carries the outputs wired into a stack's inputs.
const WIRED_INPUTS: &str = "stackpack_forecast_wired.tfvars.json";

/// One stack of one step: what to apply or plan, with its rebuilt files.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    pub stack: HopStack,
    pub bundle: Arc<Bundle>,
}

/// The plan of one stack of the last step.
pub(crate) struct Planned {
    pub changes: Vec<ResourceChange>,
    /// `terraform show -json` of the plan, for [`super::stateful`].
    pub json: String,
}

/// One customer's scratch account and states.
pub(crate) struct CustomerPath<'a> {
    pub engine: &'a Engine,
    pub plugins: &'a PluginCache,
    pub session: Session,
    /// `customers/<id>/<stack>.tfvars`, absolute, by stack.
    pub inputs: &'a BTreeMap<String, PathBuf>,
    pub dir: PathBuf,
    /// Each applied stack's outputs, by stack.
    outputs: BTreeMap<String, serde_json::Map<String, Value>>,
    /// Each applied stack's last tree, bundle and arguments, in the order first
    /// applied: what is destroyed afterwards, in reverse.
    applied: Vec<Applied>,
}

/// Where a stack was last applied from.
struct Applied {
    stack: String,
    work: PathBuf,
    digest: stackpack_schema::digest::Digest,
    args: Vec<String>,
}

impl<'a> CustomerPath<'a> {
    pub fn new(
        engine: &'a Engine,
        plugins: &'a PluginCache,
        session: Session,
        inputs: &'a BTreeMap<String, PathBuf>,
        dir: PathBuf,
    ) -> Self {
        CustomerPath {
            engine,
            plugins,
            session,
            inputs,
            dir,
            outputs: BTreeMap::new(),
            applied: Vec::new(),
        }
    }

    fn log(&self) -> PathBuf {
        self.dir.join("engine.log")
    }

    fn run(&self, work: &Path, args: &[String], label: &str) -> Result<String, String> {
        self.engine
            .run(work, args, &self.session, &self.log())
            .map_err(|f| failed(label, f))
    }

    /// Writes `step`'s tree for step number `hop`, its wired inputs, and runs `init`
    /// against the stack's one state file; the tree's folder and the input arguments.
    fn prepare(&self, hop: usize, step: &Step) -> Result<(PathBuf, Vec<String>), String> {
        let stack = &step.stack;
        // The same bundle as applied already (a stack this version does not change):
        // its tree is initialised; only the wired values may be new.
        if let Some(same) = self
            .applied
            .iter()
            .find(|a| a.stack == stack.name && a.digest == step.bundle.digest)
        {
            let wired = self.wired(stack)?;
            let file = same.work.join(WIRED_INPUTS);
            std::fs::write(&file, serde_json::to_vec(&wired).expect("JSON")).map_err(|e| {
                format!("cannot write the scratch folder `{}`: {e}", file.display())
            })?;
            return Ok((same.work.clone(), same.args.clone()));
        }
        let label = format!("`{}@{}`", stack.name, stack.version);
        let dir = self.dir.join(hop.to_string()).join(&stack.name);
        let io =
            |e: std::io::Error| format!("cannot write the scratch folder `{}`: {e}", dir.display());
        let work = write_tree(&dir, &step.bundle.files, &step.bundle.entrypoint).map_err(io)?;
        let wired = self.wired(stack)?;
        let wired_file = work.join(WIRED_INPUTS);
        std::fs::write(&wired_file, serde_json::to_vec(&wired).expect("JSON")).map_err(io)?;
        let inputs = self
            .inputs
            .get(&stack.name)
            .ok_or_else(|| format!("no inputs file for stack `{}`", stack.name))?;
        let mut args = if step.bundle.takes_account_input {
            input_args(&self.session, inputs)
        } else {
            // `-var` for an input a stack does not declare is an error to the engine.
            vec![format!("-var-file={}", inputs.display())]
        };
        args.push(format!("-var-file={}", wired_file.display()));
        let state = self
            .dir
            .join("state")
            .join(format!("{}.tfstate", stack.name));
        let init = [
            "init".to_string(),
            "-input=false".into(),
            "-no-color".into(),
            format!("-backend-config=path={}", state.display()),
        ];
        self.plugins.init(&step.bundle.digest.to_string(), || {
            self.run(&work, &init, &label)
        })?;
        Ok((work, args))
    }

    /// The values of `stack`'s wired inputs, from the outputs of what was applied.
    fn wired(&self, stack: &HopStack) -> Result<serde_json::Map<String, Value>, String> {
        let mut values = serde_json::Map::new();
        for (input, wire) in &stack.inputs_from {
            let value = self
                .outputs
                .get(&wire.stack)
                .and_then(|outputs| outputs.get(&wire.output))
                .ok_or_else(|| {
                    format!(
                        "input `{input}` of `{}@{}` is wired to `{}.{}`, which no applied stack put out",
                        stack.name, stack.version, wire.stack, wire.output
                    )
                })?;
            values.insert(input.clone(), value.clone());
        }
        Ok(values)
    }

    /// Applies `step` (a version the customer runs) directly.
    pub fn apply(&mut self, hop: usize, step: &Step) -> Result<(), String> {
        let (work, args) = self.prepare(hop, step)?;
        let label = format!("`{}@{}`", step.stack.name, step.stack.version);
        let mut apply: Vec<String> = ["apply", "-auto-approve", "-input=false", "-no-color"]
            .map(String::from)
            .to_vec();
        apply.extend(args.iter().cloned());
        self.run(&work, &apply, &label)?;
        self.applied(step, work, args, &label)
    }

    /// Plans `step` on top of what is applied, then applies that plan; the plan's
    /// changes and JSON when `record` asks for them (the last step).
    pub fn plan(
        &mut self,
        hop: usize,
        step: &Step,
        record: bool,
    ) -> Result<Option<Planned>, String> {
        let (work, args) = self.prepare(hop, step)?;
        let label = format!("`{}@{}`", step.stack.name, step.stack.version);
        let plan_file = work.join("stackpack-forecast.tfplan");
        let mut plan: Vec<String> = ["plan", "-input=false", "-no-color"]
            .map(String::from)
            .to_vec();
        plan.push(format!("-out={}", plan_file.display()));
        plan.extend(args.iter().cloned());
        self.run(&work, &plan, &label)?;
        let show = ["show", "-json", "-no-color"].map(String::from);
        let json = self.run(
            &work,
            &[show.to_vec(), vec![plan_file.display().to_string()]].concat(),
            &label,
        )?;
        let changes = plan::changes(&json)?;
        // An empty plan makes nothing and puts out what is already recorded: the
        // runner applies nothing there either.
        if !changes.is_empty() || changes_outputs(&json) {
            // Dependents are planned on what this step really made, as a runner applies.
            let apply = ["apply", "-auto-approve", "-input=false", "-no-color"].map(String::from);
            self.run(
                &work,
                &[apply.to_vec(), vec![plan_file.display().to_string()]].concat(),
                &label,
            )?;
            self.applied(step, work, args, &label)?;
        }
        Ok(record.then_some(Planned { changes, json }))
    }

    /// Records what `stack` put out, and where it was applied from.
    fn applied(
        &mut self,
        step: &Step,
        work: PathBuf,
        args: Vec<String>,
        label: &str,
    ) -> Result<(), String> {
        let stack = step.stack.name.as_str();
        let json = self.run(&work, &["output".into(), "-json".into()], label)?;
        let outputs: serde_json::Map<String, Value> = serde_json::from_str(&json)
            .map_err(|e| format!("`output -json` of {label} is not JSON: {e}"))?;
        let values = outputs
            .into_iter()
            .map(|(name, output)| (name, output.get("value").cloned().unwrap_or(Value::Null)))
            .collect();
        self.outputs.insert(stack.to_string(), values);
        let entry = Applied {
            stack: stack.to_string(),
            work,
            digest: step.bundle.digest.clone(),
            args,
        };
        match self.applied.iter_mut().find(|a| a.stack == stack) {
            Some(found) => *found = entry,
            None => self.applied.push(entry),
        }
        Ok(())
    }

    /// Destroys everything applied, dependents first; what could not be destroyed.
    /// Each customer has an account of its own, but some names (S3 buckets) are
    /// global even in an emulator, and a sandbox account is shared: nothing stays.
    pub fn destroy(&self) -> Option<String> {
        let mut left = None;
        for Applied {
            stack, work, args, ..
        } in self.applied.iter().rev()
        {
            let mut destroy: Vec<String> = [
                "destroy",
                "-auto-approve",
                "-input=false",
                "-no-color",
                "-refresh=false",
            ]
            .map(String::from)
            .to_vec();
            destroy.extend(args.iter().cloned());
            if let Err(e) = self.run(work, &destroy, &format!("stack `{stack}`")) {
                left.get_or_insert(e);
            }
        }
        left
    }
}

/// True when the plan in `json` (`show -json`) changes an output's value (one that
/// cannot be read is taken as changing them: applying is the safe side).
fn changes_outputs(json: &str) -> bool {
    serde_json::from_str::<Value>(json).map_or(true, |plan| plan::output_changes(&plan) > 0)
}

/// The last lines of an engine's failure, without a line that looks like a secret.
pub(crate) fn reason(text: &str) -> String {
    text.lines()
        .map(|line| match crate::secret_text::secret_in(line) {
            Some(_) => "(a line that looks like a secret is left out)",
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
