use std::io::{IsTerminal, Write};
use std::sync::Arc;

use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::Progress;
use stackpack_packager::module_package::{plan_modules, publish_modules, PublishedModule};
use stackpack_packager::plan::plan;
use stackpack_packager::publish::{publish, PublishedStack};
use stackpack_packager::releases::{from_remote, RegistryReleases};
use stackpack_packager::repository::Repository;

use crate::cli::{GlobalArgs, PublishArgs};
use crate::commands::version::{channel_name, plan_options};
use crate::commands::{connect, layout_path, registry_address, signing_key};
use crate::output;

pub fn run(args: &PublishArgs, global: &GlobalArgs) -> anyhow::Result<u8> {
    let repo = Repository::open(&args.plan.repo)?;
    let key = signing_key(&repo, args.key.as_deref())?;
    let address = registry_address(args.registry.registry.as_deref(), Some(&repo.config))?;
    let remote = connect(&address.host, args.registry.insecure)?;
    remote
        .authenticate(&address.stack_repository("probe"), true)
        .map_err(from_remote)?;
    let releases = RegistryReleases {
        remote: &remote,
        address: &address,
    };
    let options = plan_options(&args.plan);
    let plan = plan(&repo, &releases, &options)?;
    // Modules are planned before anything is pushed, so their refusals come first.
    let module_plans = if args.no_modules {
        Vec::new()
    } else {
        plan_modules(&repo, &plan, &options, &remote, &address)?
    };
    if plan.dirty {
        output::warning("publishing uncommitted changes (`--allow-dirty`)");
    }
    let layout = ImageLayout::create(layout_path(&repo, &args.plan))?;

    let bars = !global.quiet && std::io::stderr().is_terminal();
    let make_progress = |stack: &str| -> Progress {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg:20} {bar:30} {bytes:>10}/{total_bytes:10} {bytes_per_sec}",
            )
            .expect("valid template"),
        );
        bar.set_message(stack.to_string());
        Arc::new(move |sent| {
            bar.set_length(bar.length().unwrap_or(0).max(sent));
            bar.set_position(sent);
        })
    };
    for stack in plan.stacks.iter().filter(|s| s.changed) {
        output::status(&format!(
            "publishing `{}@{}` to `{address}`",
            stack.stack.name,
            stack.next.as_ref().expect("changed stacks have a version")
        ));
    }
    let results = publish(
        &repo,
        &plan,
        &remote,
        &address,
        &key,
        &layout,
        if bars { Some(&make_progress) } else { None },
    )?;
    for module in &module_plans {
        match (&module.skipped, &module.next) {
            (Some(why), _) => output::warning(&format!("module `{}`: {why}", module.module)),
            (None, Some(version)) => output::status(&format!(
                "publishing module `{}@{version}` to `{address}`",
                module.module
            )),
            (None, None) => {}
        }
    }
    let modules = publish_modules(
        &repo,
        &plan,
        &module_plans,
        &remote,
        &address,
        &layout,
        if bars { Some(&make_progress) } else { None },
    )?;

    if let Ok(path) = std::env::var("GITHUB_STEP_SUMMARY") {
        if !path.is_empty() {
            append_step_summary(
                &path,
                &address.to_string(),
                &plan.branch,
                &results,
                &modules,
            );
        }
    }
    let published = results.iter().filter(|r| r.published).count();
    let published_modules = modules.iter().filter(|m| m.published).count();
    if args.plan.json {
        let stacks: Vec<_> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "stack": r.stack,
                    "published": r.published,
                    "version": r.version.as_ref().map(|v| v.to_string()),
                    "digest": r.digest,
                    "reference": r.version.as_ref().map(|v| format!("{}/{}:{v}", address.host, address.stack_repository(&r.stack))),
                    "bump": r.bump,
                    "reason": r.reason,
                    "bytesSent": r.bytes_sent,
                    "blobsSkipped": r.blobs_skipped,
                    "collisions": r.collisions,
                })
            })
            .collect();
        let module_rows: Vec<_> = modules
            .iter()
            .map(|m| {
                serde_json::json!({
                    "module": m.module,
                    "path": m.path,
                    "published": m.published,
                    "skipped": m.skipped,
                    "version": m.version.as_ref().map(|v| v.to_string()),
                    "digest": m.digest,
                    "reference": m.version.as_ref().map(|v| format!("{}/{}:{v}", address.host, address.module_repository(&m.module))),
                    "bump": m.bump,
                    "reason": m.reason,
                    "bytesSent": m.bytes_sent,
                    "collisions": m.collisions,
                })
            })
            .collect();
        output::print_json(&serde_json::json!({
            "registry": address.to_string(),
            "commit": plan.commit,
            "branch": plan.branch,
            "channel": channel_name(&plan.channel),
            "keyId": key.public_key().key_id(),
            "stacks": stacks,
            "modules": module_rows,
        }));
    } else {
        let rows: Vec<Vec<String>> = results
            .iter()
            .map(|r| {
                vec![
                    r.stack.clone(),
                    r.version.as_ref().map_or("-".into(), |v| v.to_string()),
                    r.digest.as_ref().map_or("-".into(), |d| d.short()),
                    if r.published {
                        r.bump.to_string()
                    } else {
                        "-".into()
                    },
                    if r.published {
                        output::human_size(r.bytes_sent)
                    } else {
                        "-".into()
                    },
                    r.reason.clone(),
                ]
            })
            .collect();
        print!(
            "{}",
            output::table(
                &["STACK", "VERSION", "DIGEST", "BUMP", "SENT", "REASON"],
                &rows
            )
        );
        if !modules.is_empty() {
            let rows: Vec<Vec<String>> = modules
                .iter()
                .map(|m| {
                    vec![
                        m.module.clone(),
                        m.version.as_ref().map_or("-".into(), |v| v.to_string()),
                        m.digest.as_ref().map_or("-".into(), |d| d.short()),
                        if m.published {
                            m.bump.to_string()
                        } else {
                            "-".into()
                        },
                        if m.published {
                            output::human_size(m.bytes_sent)
                        } else {
                            "-".into()
                        },
                        m.reason.clone(),
                    ]
                })
                .collect();
            println!();
            print!(
                "{}",
                output::table(
                    &["MODULE", "VERSION", "DIGEST", "BUMP", "SENT", "REASON"],
                    &rows
                )
            );
        }
        if published == 0 && published_modules == 0 {
            output::status(
                "nothing new to publish: every stack and module matches a published version",
            );
        } else {
            output::status(&format!(
                "published {published} bundle{} and {published_modules} module package{} to `{address}`",
                if published == 1 { "" } else { "s" },
                if published_modules == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(0)
}

/// Appends a markdown table to the GitHub Actions step summary. A failure to write it
/// is a warning, never a failed publish.
fn append_step_summary(
    path: &str,
    registry: &str,
    branch: &str,
    results: &[PublishedStack],
    modules: &[PublishedModule],
) {
    let mut text = format!("### Stackpack publish to `{registry}` from `{branch}`\n\n");
    text.push_str("| stack | version | digest | bump | reason |\n|---|---|---|---|---|\n");
    for r in results {
        text.push_str(&format!(
            "| {} | {} | `{}` | {} | {} |\n",
            r.stack,
            match (&r.version, r.published) {
                (Some(v), true) => format!("**{v}** (new)"),
                (Some(v), false) => v.to_string(),
                (None, _) => "-".into(),
            },
            r.digest.as_ref().map_or("-".into(), |d| d.short()),
            if r.published {
                r.bump.to_string()
            } else {
                "-".into()
            },
            r.reason.replace('|', "\\|"),
        ));
    }
    if !modules.is_empty() {
        text.push_str("\n| module | version | digest | bump | reason |\n|---|---|---|---|---|\n");
        for m in modules {
            text.push_str(&format!(
                "| {} | {} | `{}` | {} | {} |\n",
                m.module,
                match (&m.version, m.published) {
                    (Some(v), true) => format!("**{v}** (new)"),
                    (Some(v), false) => v.to_string(),
                    (None, _) => "-".into(),
                },
                m.digest.as_ref().map_or("-".into(), |d| d.short()),
                if m.published {
                    m.bump.to_string()
                } else {
                    "-".into()
                },
                m.reason.replace('|', "\\|"),
            ));
        }
    }
    text.push('\n');
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()));
    if let Err(e) = written {
        output::warning(&format!("cannot write the step summary `{path}`: {e}"));
    }
}
