use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::verify::{verify_bundle, Trust};
use stackpack_packager::build::build_stack;
use stackpack_packager::plan::{plan, PlanOptions};
use stackpack_packager::repository::Repository;
use stackpack_packager::Error;

use crate::cli::{BuildArgs, GlobalArgs};
use crate::commands::version::{channel_name, plan_options};
use crate::commands::{layout_path, signing_key};
use crate::output;

pub fn run(args: &BuildArgs, _global: &GlobalArgs) -> anyhow::Result<u8> {
    let repo = Repository::open(&args.plan.repo)?;
    let key = signing_key(&repo, args.key.as_deref())?;
    let layout_dir = layout_path(&repo, &args.plan);
    let layout = ImageLayout::create(&layout_dir)?;
    let options: PlanOptions = plan_options(&args.plan);
    let plan = plan(&repo, &layout, &options)?;
    let namespace = repo.config.namespace().map(str::to_string);
    if plan.dirty {
        output::warning(
            "packing uncommitted changes (`--allow-dirty`): these bundles do not match any commit",
        );
    }

    let mut results = Vec::new();
    for stack_plan in &plan.stacks {
        let Some(version) = &stack_plan.next else {
            results.push((stack_plan, None));
            continue;
        };
        output::status(&format!("building `{}@{version}`", stack_plan.stack.name));
        let built = build_stack(
            &repo,
            &plan,
            stack_plan,
            version,
            namespace.as_deref(),
            &key,
            &layout,
        )?;
        // Check what we made with the code the customer runs.
        verify_bundle(
            &layout,
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
        results.push((stack_plan, Some(built)));
    }

    if args.plan.json {
        let stacks: Vec<serde_json::Value> = results
            .iter()
            .map(|(plan, built)| {
                serde_json::json!({
                    "stack": plan.stack.name,
                    "built": built.is_some(),
                    "version": built.as_ref().map(|b| b.version.to_string())
                        .or_else(|| plan.previous.as_ref().map(|r| r.version.to_string())),
                    "digest": built.as_ref().map(|b| b.manifest.digest.to_string())
                        .or_else(|| plan.previous.as_ref().map(|r| r.manifest_digest.to_string())),
                    "layerDigest": built.as_ref().map(|b| b.layer.digest.to_string()),
                    "layerSize": built.as_ref().map(|b| b.layer.size),
                    "bump": plan.bump,
                    "reason": plan.reason,
                })
            })
            .collect();
        output::print_json(&serde_json::json!({
            "commit": plan.commit,
            "branch": plan.branch,
            "channel": channel_name(&plan.channel),
            "layout": layout_dir,
            "keyId": key.public_key().key_id(),
            "stacks": stacks,
        }));
        return Ok(0);
    }
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(plan, built)| match built {
            Some(built) => vec![
                plan.stack.name.clone(),
                built.version.to_string(),
                built.manifest.digest.short(),
                output::human_size(built.layer.size),
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
    Ok(0)
}
