use std::io::{IsTerminal, Write};

use serde::Serialize;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::progress::{Bar, Display};
use stackpack_bundle::remote::{Progress, RegistryAddress, Remote};
use stackpack_packager::module_package::{
    plan_modules, publish_modules, ModulePlan, PublishedModule,
};
use stackpack_packager::plan::{plan, Plan};
use stackpack_packager::publish::{publish, Destination, PublishedStack};
use stackpack_packager::release::publish::{check_releases, publish_releases, PublishedRelease};
use stackpack_packager::releases::RegistryReleases;
use stackpack_packager::repository::Repository;
use stackpack_packager::Result;
use stackpack_schema::digest::Digest;
use stackpack_schema::signature::SigningKey;
use stackpack_schema::version::Bump;
use stackpack_terminal::ExitStatus;

use crate::cli::{GlobalArgs, PublishArgs};
use crate::commands::version::{channel_name, plan_options};
use crate::commands::{connect, layout_path, registry_address, signing_key, Transport};
use crate::output;

/// What one publish did, for the step summary, the JSON document and the tables.
struct Published<'a> {
    address: &'a RegistryAddress,
    plan: &'a Plan,
    stacks: Vec<PublishedStack>,
    modules: Vec<PublishedModule>,
    releases: Vec<PublishedRelease>,
}

pub fn run(args: &PublishArgs, global: &GlobalArgs) -> Result<ExitStatus> {
    let repo = Repository::open(&args.plan.repo)?;
    crate::commands::gate::lints(&repo)?;
    // A release that cannot be published stops the run before anything is pushed.
    check_releases(&repo)?;
    let key = signing_key(&repo, args.key.as_deref())?;
    let address = registry_address(args.registry.registry.as_deref(), Some(&repo.config))?;
    let remote = connect(
        &address.host,
        Transport::from_insecure_flag(args.registry.insecure),
    )?;
    // Ask for push rights before planning, so a missing login fails first.
    remote.authenticate(
        &address.stack_repository("probe"),
        stackpack_bundle::remote::Access::Push,
    )?;
    let (mut plan, module_plans) = plan_stacks_and_modules(args, &repo, &remote, &address)?;
    stackpack_packager::module_package::record_versions(&mut plan, &module_plans);
    crate::commands::gate::customers(&repo, &mut plan, &args.allow_breaking)?;
    crate::commands::gate::witness(&repo, &mut plan, args.plan.bump)?;
    if plan.dirty {
        output::warning("publishing uncommitted changes (`--allow-dirty`)");
    }
    let layout = ImageLayout::create(layout_path(&repo, &args.plan))?;
    let destination = Destination {
        remote: &remote,
        address: &address,
        layout: &layout,
        progress: (!global.quiet).then_some(&progress_bar),
    };

    announce_stacks(&plan, &address);
    let stacks = publish(&repo, &plan, &destination, &key)?;
    announce_modules(&module_plans, &address);
    let modules = publish_modules(&repo, &plan, &module_plans, &destination)?;
    if matches!(plan.channel, stackpack_schema::version::Channel::Stable) {
        sign_latest_statements(&plan, &remote, &address, &key)?;
    }
    let transport = Transport::from_insecure_flag(args.registry.insecure);
    let releases = publish_releases(&repo, &plan, &stacks, &destination, &key, &|host: &str| {
        connect(host, transport)
    })?;

    let published = Published {
        address: &address,
        plan: &plan,
        stacks,
        modules,
        releases,
    };
    if let Ok(path) = std::env::var("GITHUB_STEP_SUMMARY") {
        if !path.is_empty() {
            append_step_summary(&path, &published);
        }
    }
    if args.plan.json {
        output::print_json(&json_document(&published, &key));
    } else {
        print_tables(&published);
    }
    Ok(ExitStatus::Success)
}

/// Signs, for every stack, "the newest stable version is V, as of now", so customers
/// can tell a fresh registry from a frozen one. Runs on every publish from the main
/// branch, whether or not anything new was published: CI running it on a schedule
/// keeps the statements fresh.
fn sign_latest_statements(
    plan: &Plan,
    remote: &Remote,
    address: &RegistryAddress,
    key: &dyn stackpack_schema::signature::SigningKey,
) -> Result<()> {
    let now = stackpack_packager::build::rfc3339(time::OffsetDateTime::now_utc().unix_timestamp());
    for stack in &plan.stacks {
        let repository = address.stack_repository(&stack.stack.name);
        let tags = remote.tags(&repository)?;
        let versions: Vec<semver::Version> = tags.iter().filter_map(|t| t.parse().ok()).collect();
        let Some(newest) = stackpack_schema::version::latest_stable(&versions) else {
            continue;
        };
        let Some(digest) = remote.tag_digest(&repository, &newest.to_string())? else {
            continue;
        };
        stackpack_bundle::freshness::push_statement(
            remote,
            &repository,
            newest,
            &digest,
            key,
            &now,
        )?;
        output::detail(&format!(
            "signed the latest statement of `{}`: `{newest}` as of {now}",
            stack.stack.name
        ));
    }
    Ok(())
}

/// Plans the stacks and then the modules. Modules are planned before anything is
/// pushed, so their refusals come first.
fn plan_stacks_and_modules(
    args: &PublishArgs,
    repo: &Repository,
    remote: &Remote,
    address: &RegistryAddress,
) -> Result<(Plan, Vec<ModulePlan>)> {
    let releases = RegistryReleases { remote, address };
    let options = plan_options(&args.plan);
    let plan = plan(repo, &releases, &options)?;
    let module_plans = if args.no_modules {
        Vec::new()
    } else {
        plan_modules(repo, &plan, &options, remote, address)?
    };
    Ok((plan, module_plans))
}

/// The progress of one stack's or module's uploads: a bar on a terminal, plain
/// lines in CI logs (none with `--quiet`).
fn progress_bar(name: &str) -> Progress {
    let display = if std::io::stderr().is_terminal() {
        Display::Terminal
    } else {
        Display::Lines
    };
    Bar::new(name, "pushed", display)
}

fn announce_stacks(plan: &Plan, address: &RegistryAddress) {
    for stack in plan.stacks.iter().filter(|s| s.changed) {
        output::status(&format!(
            "publishing `{}@{}` to `{address}`",
            stack.stack.name,
            stack.next.as_ref().expect("changed stacks have a version")
        ));
    }
}

fn announce_modules(module_plans: &[ModulePlan], address: &RegistryAddress) {
    for module in module_plans {
        match (&module.skipped, &module.next) {
            (Some(why), _) => output::warning(&format!("module `{}`: {why}", module.module)),
            (None, Some(version)) => output::status(&format!(
                "publishing module `{}@{version}` to `{address}`",
                module.module
            )),
            (None, None) => {}
        }
    }
}

/// The `--json` document: one object for the whole publish.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PublishReport<'a> {
    registry: String,
    commit: &'a str,
    branch: &'a str,
    channel: &'static str,
    key_id: String,
    stacks: Vec<StackReport<'a>>,
    modules: Vec<ModuleReport<'a>>,
    releases: Vec<ReleaseReport<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseReport<'a> {
    release: &'a str,
    published: bool,
    version: Option<String>,
    digest: Option<&'a Digest>,
    /// `HOST/NAMESPACE/releases/NAME:VERSION`, what a runner pulls.
    reference: Option<String>,
    bump: Bump,
    changes: &'a [stackpack_schema::release::ReleaseChange],
    bytes_sent: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StackReport<'a> {
    stack: &'a str,
    published: bool,
    version: Option<String>,
    digest: Option<&'a Digest>,
    /// `HOST/REPOSITORY:VERSION`, what a runner pulls.
    reference: Option<String>,
    bump: Bump,
    reason: &'a str,
    bytes_sent: u64,
    blobs_skipped: usize,
    /// Seconds spent sending blobs and the manifest (not building, signing or tagging).
    push_seconds: f64,
    collisions: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ModuleReport<'a> {
    module: &'a str,
    path: &'a str,
    published: bool,
    skipped: bool,
    version: Option<String>,
    digest: Option<&'a Digest>,
    /// `HOST/REPOSITORY:VERSION`, what an OpenTofu `source` names.
    reference: Option<String>,
    bump: Bump,
    reason: &'a str,
    bytes_sent: u64,
    collisions: usize,
}

fn json_document<'a>(published: &'a Published<'_>, key: &dyn SigningKey) -> PublishReport<'a> {
    let address = published.address;
    let reference = |repository: String, version: &Option<semver::Version>| {
        version
            .as_ref()
            .map(|v| format!("{}/{repository}:{v}", address.host))
    };
    let stacks = published
        .stacks
        .iter()
        .map(|r| StackReport {
            stack: &r.stack,
            published: r.published,
            version: r.version.as_ref().map(|v| v.to_string()),
            digest: r.digest.as_ref(),
            reference: reference(address.stack_repository(&r.stack), &r.version),
            bump: r.bump,
            reason: &r.reason,
            bytes_sent: r.bytes_sent,
            blobs_skipped: r.blobs_skipped,
            push_seconds: (r.push_seconds * 1000.0).round() / 1000.0,
            collisions: r.collisions,
        })
        .collect();
    let modules = published
        .modules
        .iter()
        .map(|m| ModuleReport {
            module: &m.module,
            path: &m.path,
            published: m.published,
            skipped: m.skipped,
            version: m.version.as_ref().map(|v| v.to_string()),
            digest: m.digest.as_ref(),
            reference: reference(address.module_repository(&m.module), &m.version),
            bump: m.bump,
            reason: &m.reason,
            bytes_sent: m.bytes_sent,
            collisions: m.collisions,
        })
        .collect();
    let releases = published
        .releases
        .iter()
        .map(|r| ReleaseReport {
            release: &r.name,
            published: r.published,
            version: r.version.as_ref().map(|v| v.to_string()),
            digest: r.digest.as_ref(),
            reference: r
                .version
                .as_ref()
                .map(|v| format!("{address}/releases/{}:{v}", r.name)),
            bump: r.bump,
            changes: &r.changes,
            bytes_sent: r.bytes_sent,
        })
        .collect();
    PublishReport {
        registry: address.to_string(),
        commit: &published.plan.commit,
        branch: &published.plan.branch,
        channel: channel_name(&published.plan.channel),
        key_id: key.public_key().key_id(),
        stacks,
        modules,
        releases,
    }
}

/// One table row. `published` holds the bump and the bytes sent of a new version;
/// without one, those columns say `-`.
fn row(
    name: &str,
    version: Option<&semver::Version>,
    digest: Option<&Digest>,
    published: Option<(String, u64)>,
    reason: &str,
) -> Vec<String> {
    vec![
        name.to_string(),
        version.map_or("-".into(), |v| v.to_string()),
        digest.map_or("-".into(), |d| d.short()),
        published
            .as_ref()
            .map_or("-".into(), |(bump, _)| bump.clone()),
        published.map_or("-".into(), |(_, sent)| output::human_size(sent)),
        reason.to_string(),
    ]
}

fn print_tables(published: &Published<'_>) {
    let stack_rows: Vec<Vec<String>> = published
        .stacks
        .iter()
        .map(|r| {
            let sent = r.published.then(|| (r.bump.to_string(), r.bytes_sent));
            row(
                &r.stack,
                r.version.as_ref(),
                r.digest.as_ref(),
                sent,
                &r.reason,
            )
        })
        .collect();
    print!(
        "{}",
        output::table(
            &["STACK", "VERSION", "DIGEST", "BUMP", "SENT", "REASON"],
            &stack_rows
        )
    );
    if !published.modules.is_empty() {
        let module_rows: Vec<Vec<String>> = published
            .modules
            .iter()
            .map(|m| {
                let sent = m.published.then(|| (m.bump.to_string(), m.bytes_sent));
                row(
                    &m.module,
                    m.version.as_ref(),
                    m.digest.as_ref(),
                    sent,
                    &m.reason,
                )
            })
            .collect();
        println!();
        print!(
            "{}",
            output::table(
                &["MODULE", "VERSION", "DIGEST", "BUMP", "SENT", "REASON"],
                &module_rows
            )
        );
    }
    print_totals(published);
    print_releases(published);
}

/// One line per release: the version published (with its bump), or the one that
/// still holds.
fn print_releases(published: &Published<'_>) {
    for release in &published.releases {
        let version = release
            .version
            .as_ref()
            .map_or("-".into(), |v| v.to_string());
        if release.published {
            output::status(&format!(
                "published release `{}@{version}` ({}, {} change{}) to `{}/releases/{}`",
                release.name,
                release.bump,
                release.changes.len(),
                if release.changes.len() == 1 { "" } else { "s" },
                published.address,
                release.name
            ));
        } else {
            output::status(&format!(
                "release `{}@{version}` is unchanged: its stacks, services and wiring match",
                release.name
            ));
        }
    }
}

fn print_totals(published: &Published<'_>) {
    let stacks = published.stacks.iter().filter(|r| r.published).count();
    let modules = published.modules.iter().filter(|m| m.published).count();
    if stacks == 0 && modules == 0 {
        output::status(
            "nothing new to publish: every stack and module matches a published version",
        );
    } else {
        output::status(&format!(
            "published {stacks} bundle{} and {modules} module package{} to `{}`",
            if stacks == 1 { "" } else { "s" },
            if modules == 1 { "" } else { "s" },
            published.address
        ));
    }
}

/// One markdown summary row; a new version in bold.
fn summary_row(
    name: &str,
    version: Option<&semver::Version>,
    digest: Option<&Digest>,
    bump: Option<String>,
    reason: &str,
) -> String {
    format!(
        "| {name} | {} | `{}` | {} | {} |\n",
        match (version, bump.is_some()) {
            (Some(v), true) => format!("**{v}** (new)"),
            (Some(v), false) => v.to_string(),
            (None, _) => "-".into(),
        },
        digest.map_or("-".into(), |d| d.short()),
        bump.unwrap_or_else(|| "-".into()),
        reason.replace('|', "\\|"),
    )
}

/// Appends a markdown table to the GitHub Actions step summary. A failure to write it
/// is a warning, never a failed publish.
fn append_step_summary(path: &str, published: &Published<'_>) {
    let mut text = format!(
        "### Stackpack publish to `{}` from `{}`\n\n",
        published.address, published.plan.branch
    );
    text.push_str("| stack | version | digest | bump | reason |\n|---|---|---|---|---|\n");
    for r in &published.stacks {
        let bump = r.published.then(|| r.bump.to_string());
        text.push_str(&summary_row(
            &r.stack,
            r.version.as_ref(),
            r.digest.as_ref(),
            bump,
            &r.reason,
        ));
    }
    if !published.modules.is_empty() {
        text.push_str("\n| module | version | digest | bump | reason |\n|---|---|---|---|---|\n");
        for m in &published.modules {
            let bump = m.published.then(|| m.bump.to_string());
            text.push_str(&summary_row(
                &m.module,
                m.version.as_ref(),
                m.digest.as_ref(),
                bump,
                &m.reason,
            ));
        }
    }
    if !published.releases.is_empty() {
        text.push_str("\n| release | version | digest | bump | changes |\n|---|---|---|---|---|\n");
        for r in &published.releases {
            let bump = r.published.then(|| r.bump.to_string());
            let changes: Vec<&str> = r.changes.iter().map(|c| c.detail.as_str()).collect();
            text.push_str(&summary_row(
                &r.name,
                r.version.as_ref(),
                r.digest.as_ref(),
                bump,
                &changes.join("; "),
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
