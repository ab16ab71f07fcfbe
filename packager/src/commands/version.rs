use stackpack_packager::plan::{plan, Plan, PlanOptions};
use stackpack_packager::release_view::ReleaseView;
use stackpack_packager::releases::ReleaseSource;
use stackpack_packager::repository::Repository;
use stackpack_packager::Result;
use stackpack_schema::version::Channel;
use stackpack_terminal::ExitStatus;

use crate::cli::{GlobalArgs, PlanArgs, RegistryArgs, VersionArgs};
use crate::commands::layout_path;
use crate::output;

pub fn plan_options(args: &PlanArgs) -> PlanOptions {
    PlanOptions {
        base: args.base.clone(),
        branch: args.branch.clone(),
        bump: args.bump,
        allow_dirty: args.allow_dirty,
        stacks: args.stacks.clone(),
    }
}

/// Plans against the registry `publish` would push to when it answers, else against
/// the layout of earlier builds (with a warning saying so).
pub fn make_plan(
    repo: &Repository,
    args: &PlanArgs,
    registry: &RegistryArgs,
) -> Result<(Plan, String)> {
    let flag = registry.registry.as_deref();
    let address = flag.or(repo.config.registry.as_deref());
    let view = ReleaseView::open(address, registry.insecure, &layout_path(repo, args))?;
    if let Some(note) = &view.note {
        output::warning(note);
    }
    let plan = plan(repo, &view, &plan_options(args))?;
    Ok((plan, view.describe()))
}

pub fn channel_name(channel: &Channel) -> &'static str {
    match channel {
        Channel::Stable => "stable",
        Channel::Prerelease { .. } => "prerelease",
    }
}

pub fn run(args: &VersionArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let repo = Repository::open(&args.plan.repo)?;
    let (plan, releases) = make_plan(&repo, &args.plan, &args.registry)?;
    if args.plan.json {
        let stacks: Vec<serde_json::Value> = plan
            .stacks
            .iter()
            .map(|s| {
                serde_json::json!({
                    "stack": s.stack.name,
                    "path": s.stack.path,
                    "changed": s.changed,
                    "reason": s.reason,
                    "lastStable": s.last_stable.as_ref().map(|v| v.to_string()),
                    "current": s.previous.as_ref().map(|r| r.version.to_string()),
                    "next": s.next.as_ref().map(|v| v.to_string()),
                    "bump": s.bump,
                    "requiredBump": s.required_bump,
                    "findings": s.findings,
                    "modules": s.stack.modules.iter().map(|m| &m.path).collect::<Vec<_>>(),
                })
            })
            .collect();
        output::print_json(&serde_json::json!({
            "commit": plan.commit,
            "branch": plan.branch,
            "channel": channel_name(&plan.channel),
            "releases": releases,
            "stacks": stacks,
        }));
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<Vec<String>> = plan
        .stacks
        .iter()
        .map(|s| {
            vec![
                s.stack.name.clone(),
                if s.changed { "yes" } else { "no" }.to_string(),
                s.last_stable
                    .as_ref()
                    .map_or("-".to_string(), |v| v.to_string()),
                s.next.as_ref().map_or_else(
                    || {
                        s.previous
                            .as_ref()
                            .map_or("-".into(), |r| r.version.to_string())
                    },
                    |v| v.to_string(),
                ),
                s.reason.clone(),
            ]
        })
        .collect();
    output::status(&format!(
        "branch `{}` ({}), commit {}, releases from {releases}",
        plan.branch,
        channel_name(&plan.channel),
        &plan.commit[..12.min(plan.commit.len())]
    ));
    print!(
        "{}",
        output::table(
            &["STACK", "CHANGED", "LAST STABLE", "VERSION", "REASON"],
            &rows
        )
    );
    Ok(ExitStatus::Success)
}
