//! What each stack of a release runs with: the customer's file from the inputs
//! folder, and the values wired from its upstream stacks' outputs (written to a
//! private `.tfvars.json` beside it, never printed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stackpack_bundle::verify::VerifiedBundle;
use stackpack_schema::digest::Digest;
use stackpack_schema::release::{ReleaseDescription, ReleaseStack};

use crate::deploy::Ui;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::installation::Installation;
use crate::ledger::Deployment;
use crate::{engine, files, inputs, receipts, store};

/// Outputs of stacks as `terraform output -json` gives them, by stack.
pub type Outputs = BTreeMap<String, serde_json::Value>;

/// One stack of a release, checked before anything runs.
pub struct StackInputs {
    pub stack: ReleaseStack,
    pub bundle: VerifiedBundle,
    /// The customer's files for it, from the inputs folder (none when it needs none).
    pub files: Vec<PathBuf>,
}

/// The customer's files for every stack of the release: `<stack>.tfvars` and/or
/// `<stack>.tfvars.json` in `dir`. Refuses, before anything runs, a stack that needs
/// inputs and has no file, and a file that sets an input the release wires.
pub fn check_inputs_dir(
    home: &Home,
    description: &ReleaseDescription,
    dir: &Path,
) -> Result<Vec<StackInputs>> {
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "the inputs folder `{}` does not exist",
            dir.display()
        ))
        .hint(
            "give the folder that holds one `STACK.tfvars` per stack, as `customers/<id>/` does",
        ));
    }
    let store_layout = home.store()?;
    let mut out = Vec::new();
    for stack in &description.stacks {
        let bundle = store::verify_in(home, &store_layout, &stack.name, &stack.version)?;
        let files: Vec<PathBuf> = [".tfvars", ".tfvars.json"]
            .iter()
            .map(|ext| dir.join(format!("{}{ext}", stack.name)))
            .filter(|p| p.is_file())
            .collect();
        let needed: Vec<String> = bundle
            .config
            .interface
            .inputs
            .iter()
            .filter(|i| i.required && !stack.inputs_from.contains_key(&i.name))
            .map(|i| format!("`{}`", i.name))
            .collect();
        if files.is_empty() && !needed.is_empty() {
            return Err(Error::refused(format!(
                "nothing was run: the inputs folder has no `{}.tfvars` for stack `{}`, which needs {}",
                stack.name,
                stack.name,
                needed.join(", ")
            ))
            .at(format!("inputs folder `{}`", dir.display()))
            .hint(format!(
                "write `{}` with those inputs (`stackpack-runner check-inputs {}@{} --inputs FILE` checks it)",
                dir.join(format!("{}.tfvars", stack.name)).display(),
                stack.name,
                stack.version
            )));
        }
        let given = inputs::read_all(&files)?;
        for (input, wire) in &stack.inputs_from {
            if let Some(value) = given.get(input) {
                return Err(Error::refused(format!(
                    "nothing was run: `{}` sets `{input}`, which release `{}` wires from `{wire}`",
                    value.file, description.name
                ))
                .at(value.location())
                .hint(format!(
                    "remove `{input}` from the file: the runner passes `{wire}` after `{}` is applied",
                    wire.stack
                )));
            }
        }
        out.push(StackInputs {
            stack: stack.clone(),
            bundle,
            files,
        });
    }
    Ok(out)
}

/// The values `stack` gets from its upstreams' outputs.
pub fn wired_values(stack: &ReleaseStack, outputs: &Outputs) -> Result<serde_json::Value> {
    let mut map = serde_json::Map::new();
    for (input, wire) in &stack.inputs_from {
        let value = outputs
            .get(&wire.stack)
            .and_then(|o| o.get(&wire.output))
            .map(|o| o["value"].clone())
            .ok_or_else(|| {
                Error::refused(format!(
                    "stack `{}` has no output `{}`, which `{}` needs for `{input}`",
                    wire.stack, wire.output, stack.name
                ))
                .hint(format!(
                    "apply `{}` first; if it is applied, ask the vendor: the release wires an output the stack does not have",
                    wire.stack
                ))
            })?;
        map.insert(input.clone(), value);
    }
    Ok(serde_json::Value::Object(map))
}

/// The files a stack runs with: the customer's, then the wired values (written
/// private, in `scratch`) when it has any.
pub fn run_files(stack: &StackInputs, outputs: &Outputs, scratch: &Path) -> Result<Vec<PathBuf>> {
    let mut files = stack.files.clone();
    if !stack.stack.inputs_from.is_empty() {
        let wired = wired_values(&stack.stack, outputs)?;
        let path = scratch.join(format!("{}.wired.tfvars.json", stack.stack.name));
        files::write_private(
            &path,
            &serde_json::to_string_pretty(&wired).unwrap_or_default(),
        )?;
        files.push(path);
    }
    Ok(files)
}

/// The inputs hash a run with `files` records (as `deploy` computes it).
pub fn inputs_hash(home: &Home, bundle: &VerifiedBundle, files: &[PathBuf]) -> Result<Digest> {
    let mut parsed = inputs::read_all(files)?;
    parsed.add_environment(&bundle.config.interface);
    let key = receipts::installation_key(&home.key_path())?;
    Ok(inputs::inputs_hash(&parsed, &receipts::inputs_secret(&key)))
}

/// The deployment in place when it is this bundle with these inputs: the stack
/// needs no apply.
pub fn unchanged(
    installation: &Installation,
    stack: &StackInputs,
    files: &[PathBuf],
) -> Result<Option<Deployment>> {
    let ledger = installation.ledger()?;
    let Some(current) = ledger.current(&stack.stack.name)? else {
        return Ok(None);
    };
    if current.digest != stack.stack.digest.to_string() {
        return Ok(None);
    }
    let Some(receipt) = ledger.receipt(&current.receipt_id)? else {
        return Ok(None);
    };
    let hash = inputs_hash(&installation.home, &stack.bundle, files)?;
    Ok((receipt.receipt.inputs_hash == hash).then_some(current))
}

/// The outputs of the installed `stack`, read from its engine state.
pub fn installed_outputs(
    installation: &Installation,
    stack: &str,
    ui: &mut Ui,
) -> Result<serde_json::Value> {
    let home = &installation.home;
    let ledger = installation.ledger()?;
    let current = ledger.current(stack)?.ok_or_else(|| {
        Error::refused(format!(
            "stack `{stack}` is not installed, so its outputs cannot be read"
        ))
        .hint(format!("apply `{stack}` first"))
    })?;
    if let Some(path) = home.local_state_file(stack) {
        // The state is a file in the home: read its outputs without starting the
        // engine (the same document `output -json` prints, less the types).
        if let Ok(text) = std::fs::read_to_string(&path) {
            let state: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Error::refused(format!("cannot read `{}`: {e}", path.display())))?;
            return Ok(state["outputs"].clone());
        }
    }
    let store_layout = home.store()?;
    let bundle = store::verify_in(home, &store_layout, stack, &current.version)?;
    let mut engine = engine::Engine::locate(home, ui.verbose)?;
    let work = files::work_folder(&home.work_root(), &format!("{stack}-outputs-"))?;
    let (dir, init, providers) =
        crate::deploy::prepare_work(home, &bundle, "{}\n", &mut engine, work.path(), ui)?;
    engine.run_ok(&dir, &init, true, "init")?;
    drop(providers.cache_lock);
    engine.outputs(&dir)
}
