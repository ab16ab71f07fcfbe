use std::path::Path;

use serde::Serialize;
use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::verify::{verify_bundle, Trust};
use stackpack_packager::build::{build_stack, BuiltBundle};
use stackpack_packager::plan::{plan, Plan, PlanOptions, StackPlan};
use stackpack_packager::repository::Repository;
use stackpack_packager::Error;
use stackpack_packager::Result;
use stackpack_schema::signature::SigningKey;
use stackpack_schema::version::Bump;
use stackpack_terminal::ExitStatus;

use crate::cli::{BuildArgs, GlobalArgs};
use crate::commands::version::{channel_name, plan_options};
use crate::commands::{layout_path, signing_key};
use crate::output;

pub fn run(args: &BuildArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let repo = Repository::open(&args.plan.repo)?;
    crate::commands::gate::lints(&repo)?;
    let key = signing_key(&repo, args.key.as_deref())?;
    let layout_dir = layout_path(&repo, &args.plan);
    let layout = ImageLayout::create(&layout_dir)?;
    let options: PlanOptions = plan_options(&args.plan);
    let plan = plan(&repo, &layout, &options)?;
    if plan.dirty {
        output::warning(
            "packing uncommitted changes (`--allow-dirty`): these bundles do not match any commit",
        );
    }
    let results = plan
        .stacks
        .iter()
        .map(|stack_plan| {
            let built = build_and_verify(&repo, &plan, stack_plan, &key, &layout, &layout_dir)?;
            Ok((stack_plan, built))
        })
        .collect::<Result<Vec<_>>>()?;
    if args.plan.json {
        output::print_json(&json_document(&plan, &results, &layout_dir, &key));
    } else {
        print_table(&results, &layout_dir, &key);
    }
    Ok(ExitStatus::Success)
}

/// One stack planned, and its bundle if it was built.
type Built<'p> = (&'p StackPlan, Option<BuiltBundle>);

/// Builds a changed stack and checks the bundle with the code the customer runs;
/// `None` for an unchanged stack.
fn build_and_verify(
    repo: &Repository,
    plan: &Plan,
    stack_plan: &StackPlan,
    key: &dyn SigningKey,
    layout: &ImageLayout,
    layout_dir: &Path,
) -> Result<Option<BuiltBundle>> {
    let Some(version) = &stack_plan.next else {
        return Ok(None);
    };
    output::status(&format!("building `{}@{version}`", stack_plan.stack.name));
    let namespace = repo.config.namespace();
    let built = build_stack(repo, plan, stack_plan, version, namespace, key, layout)?;
    verify_bundle(
        layout,
        &built.stack,
        version,
        &Trust::Keys(vec![key.public_key()]),
        &Limits::default(),
    )
    .map_err(|e| {
        Error::refused(format!("the bundle just built does not verify: {e}"))
            .at(layout_dir.display())
    })?;
    output::detail(&format!(
        "verified `{}@{version}` with the customer's verifier",
        built.stack
    ));
    Ok(Some(built))
}

/// The `--json` document: one object for the whole build.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BuildReport<'a> {
    commit: &'a str,
    branch: &'a str,
    channel: &'static str,
    layout: &'a Path,
    key_id: String,
    stacks: Vec<StackReport<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StackReport<'a> {
    stack: &'a str,
    built: bool,
    /// The new version, or the existing one an unchanged stack keeps.
    version: Option<String>,
    digest: Option<String>,
    layer_digest: Option<String>,
    layer_size: Option<u64>,
    /// Every layer of the bundle: the stack layer, file layers, provider packages.
    bundle_size: Option<u64>,
    bump: Bump,
    reason: &'a str,
}

fn json_document<'a>(
    plan: &'a Plan,
    results: &'a [Built<'_>],
    layout_dir: &'a Path,
    key: &dyn SigningKey,
) -> BuildReport<'a> {
    let stacks = results
        .iter()
        .map(|(plan, built)| StackReport {
            stack: &plan.stack.name,
            built: built.is_some(),
            version: built
                .as_ref()
                .map(|b| b.version.to_string())
                .or_else(|| plan.previous.as_ref().map(|r| r.version.to_string())),
            digest: built
                .as_ref()
                .map(|b| b.manifest.digest.to_string())
                .or_else(|| {
                    plan.previous
                        .as_ref()
                        .map(|r| r.manifest_digest.to_string())
                }),
            layer_digest: built.as_ref().map(|b| b.layer.digest.to_string()),
            layer_size: built.as_ref().map(|b| b.layer.size),
            bundle_size: built.as_ref().map(|b| b.size()),
            bump: plan.bump,
            reason: &plan.reason,
        })
        .collect();
    BuildReport {
        commit: &plan.commit,
        branch: &plan.branch,
        channel: channel_name(&plan.channel),
        layout: layout_dir,
        key_id: key.public_key().key_id(),
        stacks,
    }
}

fn print_table(results: &[Built<'_>], layout_dir: &Path, key: &dyn SigningKey) {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(plan, built)| match built {
            Some(built) => vec![
                plan.stack.name.clone(),
                built.version.to_string(),
                built.manifest.digest.short(),
                output::human_size(built.size()),
                plan.reason.clone(),
            ],
            None => vec![
                plan.stack.name.clone(),
                plan.previous
                    .as_ref()
                    .map_or("-".into(), |r| r.version.to_string()),
                plan.previous
                    .as_ref()
                    .map_or("-".into(), |r| r.manifest_digest.short()),
                "-".into(),
                plan.reason.clone(),
            ],
        })
        .collect();
    print!(
        "{}",
        output::table(&["STACK", "VERSION", "DIGEST", "SIZE", "REASON"], &rows)
    );
    let built = results.iter().filter(|(_, b)| b.is_some()).count();
    if built == 0 {
        output::status("nothing new to build: every stack matches an existing release");
    } else {
        output::status(&format!(
            "{built} bundle{} built into `{}`, signed by key `{}`",
            if built == 1 { "" } else { "s" },
            layout_dir.display(),
            key.public_key().key_id()
        ));
    }
}
