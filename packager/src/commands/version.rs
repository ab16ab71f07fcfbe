use stackpack_packager::plan::{plan, Plan, PlanOptions};
use stackpack_packager::releases::{NoReleases, ReleaseSource};
use stackpack_packager::repository::Repository;
use stackpack_schema::version::Channel;

use crate::cli::{GlobalArgs, PlanArgs, VersionArgs};
use crate::commands::{existing_layout, layout_path};
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

/// Plans against the layout of earlier builds, if there is one.
pub fn make_plan(repo: &Repository, args: &PlanArgs) -> anyhow::Result<Plan> {
    let layout = existing_layout(&layout_path(repo, args));
    let releases: &dyn ReleaseSource = match &layout {
        Some(layout) => layout,
        None => &NoReleases,
    };
    Ok(plan(repo, releases, &plan_options(args))?)
}

pub fn channel_name(channel: &Channel) -> &'static str {
    match channel {
        Channel::Stable => "stable",
        Channel::Prerelease { .. } => "prerelease",
    }
}

pub fn run(args: &VersionArgs, _global: &GlobalArgs) -> anyhow::Result<u8> {
    let repo = Repository::open(&args.plan.repo)?;
    let plan = make_plan(&repo, &args.plan)?;
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
            "stacks": stacks,
        }));
        return Ok(0);
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
        "branch `{}` ({}), commit {}",
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
    Ok(0)
}
