use std::io::{IsTerminal, Write};
use std::sync::Arc;

use stackpack_customer_bundle::layout::ImageLayout;
use stackpack_customer_bundle::remote::Progress;
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
    let plan = plan(&repo, &releases, &plan_options(&args.plan))?;
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

    if let Ok(path) = std::env::var("GITHUB_STEP_SUMMARY") {
        if !path.is_empty() {
            append_step_summary(&path, &address.to_string(), &plan.branch, &results);
        }
    }
    let published = results.iter().filter(|r| r.published).count();
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
        output::print_json(&serde_json::json!({
            "registry": address.to_string(),
            "commit": plan.commit,
            "branch": plan.branch,
            "channel": channel_name(&plan.channel),
            "keyId": key.public_key().key_id(),
            "stacks": stacks,
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
        if published == 0 {
            output::status("nothing new to publish: every stack matches a published version");
        } else {
            output::status(&format!(
                "published {published} bundle{} to `{address}`",
                if published == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(0)
}

/// Appends a markdown table to the GitHub Actions step summary. A failure to write it
/// is a warning, never a failed publish.
fn append_step_summary(path: &str, registry: &str, branch: &str, results: &[PublishedStack]) {
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
