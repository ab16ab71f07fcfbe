//! The work folder: the engine located, the bundle unpacked with its providers, inputs
//! and backend, `init`, then the plan.

use std::path::{Path, PathBuf};

use stackpack_schema::receipt::Receipt;

use super::context::{Context, Step, Workspace, INPUTS_FILE};
use super::plan::plan_and_apply;
use super::record::Found;
use super::request::{Target, Ui};
use crate::engine::{self, Engine, PlanDetails};
use crate::error::{io, Result};
use crate::files;
use crate::home::Home;
use crate::ledger::StartedRun;
use crate::unpack;
use stackpack_bundle::verify::VerifiedBundle;

pub(super) fn execute(
    context: Context,
    ui: &mut Ui,
    receipt: &mut Receipt,
    plan: &mut PlanDetails,
    found: &mut Found,
    work_kept: &mut Option<PathBuf>,
) -> Result<Step> {
    let Context {
        home,
        bundle,
        inputs_text,
        request,
        ledger,
        lock_fd,
        ..
    } = context;
    let mut engine = Engine::locate_for(home, request.options.engine.as_ref(), ui.verbose)?;
    engine.inherit_fds.push(lock_fd);
    engine.transcript = crate::support_bundle::transcript_for(home, &receipt.id);
    engine.input_variables = bundle
        .config
        .interface
        .inputs
        .iter()
        .map(|i| i.name.clone())
        .collect();
    engine.secrets = crate::redact::Secrets::of_inputs(&bundle.config.interface, inputs_text);
    receipt.engine.version = engine.version.clone();
    receipt.engine.digest = engine.digest.clone();
    engine.check_required_version(bundle.config.engine.version_constraint.as_deref())?;
    if let Some(wanted) = bundle.config.engine.name {
        if wanted != engine.name {
            (ui.status)(&format!(
                "warning: `{}@{}` was built for `{wanted}`, and this runner uses `{}`",
                receipt.stack, receipt.version, engine.name
            ));
        }
    }
    let work = files::work_folder(
        &home.work_root(),
        &format!("{}-{}-", receipt.stack, receipt.version),
    )?;
    ledger.start_run(&StartedRun {
        id: receipt.id.clone(),
        stack: receipt.stack.clone(),
        version: receipt.version.to_string(),
        kind: receipt.kind,
        started_at: receipt.started_at.clone(),
        pid: std::process::id(),
        work: work.path().display().to_string(),
    })?;
    let result = prepare_work(home, bundle, inputs_text, &mut engine, work.path(), ui).and_then(
        |(dir, init, providers)| {
            if let Some(runner) = receipt.runner.as_mut() {
                runner.providers = providers
                    .installed
                    .iter()
                    .map(|p| stackpack_schema::receipt::ProviderRun {
                        source: p.source.clone(),
                        version: p.version.clone(),
                    })
                    .collect();
            }
            (ui.status)(&format!("{} init", engine.name));
            engine.run_ok(&dir, &init, ui.quiet, "init")?;
            crate::module_sources::refuse_installed_from_outside(&dir)?;
            // The plugin cache is filled: other runners may use it now.
            drop(providers.cache_lock);
            let run = Workspace {
                engine: &engine,
                dir: &dir,
            };
            plan_and_apply(&context, &run, ui, receipt, plan, found)
        },
    );
    if result.is_err() {
        let said = engine.errors.lock().map(|e| e.clone()).unwrap_or_default();
        receipt.failure = stackpack_schema::receipt::Failure::from_engine_output(&said);
    }
    if result.is_err()
        && matches!(
            request.target,
            Target::Apply { .. } | Target::Rollback { .. } | Target::Destroy
        )
    {
        // Keep a failed apply's work folder for the person who has to look into it.
        *work_kept = Some(work.keep());
    }
    result
}

/// Unpacks the bundle, lays out its providers, writes the inputs and the backend
/// override; returns the stack's folder, the `init` arguments, and the providers.
pub(crate) fn prepare_work(
    home: &Home,
    bundle: &VerifiedBundle,
    inputs_text: &str,
    engine: &mut Engine,
    work: &Path,
    ui: &mut Ui,
) -> Result<(PathBuf, Vec<String>, crate::providers::ProviderSetup)> {
    let dir = unpack::unpack_verified(home, bundle, work)?;
    crate::module_sources::refuse_outside_modules(&unpack::bundle_root(work), bundle)?;
    let providers = crate::providers::prepare(home, bundle, &dir, work)?;
    engine.cli_config = Some(providers.cli_config.clone());
    for package in &providers.installed {
        (ui.status)(&format!(
            "provider `{}` {} from the bundle ({})",
            package.source,
            package.version,
            package.digest.short()
        ));
    }
    files::write_private(&dir.join(INPUTS_FILE), inputs_text)?;
    engine.stack = Some(bundle.config.stack.clone());
    let (override_file, backend_args) = engine::backend_setup(home, engine, &bundle.config.stack)?;
    std::fs::write(dir.join("stackpack_backend_override.tf"), override_file)
        .map_err(|e| io("write in", &dir, e))?;
    let mut init = vec![
        "init".to_string(),
        "-input=false".into(),
        "-no-color".into(),
    ];
    if providers.locked {
        // The lock file travelled signed in the bundle: `init` must not change it.
        init.push("-lockfile=readonly".into());
    }
    init.extend(backend_args);
    Ok((dir, init, providers))
}
