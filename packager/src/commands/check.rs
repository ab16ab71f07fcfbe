//! `stackpack check`: the interface contract of every changed stack and module, and
//! the repository lints.
//!
//! With `--witness`, the outcome witness (see `stackpack_packager::witness`) plans
//! each changed stack for every customer, and the bump is the larger of the rules'
//! and the plans'.
//!
//! It also proves every release of `stackpack.toml` (see
//! `stackpack_packager::release::graph`): its stacks, their dependencies and wiring,
//! and names the wirings the change breaks (a major change of the release).
//!
//! Exit codes: 0 when every change fits its version and no lint failed; 1 when a
//! requested bump (`--bump`) is lower than a change requires, a lint failed, a
//! release's graph is broken, or the witness refused its account or could not finish; 2 when the command itself was
//! wrong (bad flags, unknown ref, invalid `stackpack.toml`).

use stackpack_packager::Result;
use stackpack_terminal::ExitStatus;
use std::path::{Path, PathBuf};

use stackpack_packager::check::render::{self, CheckOutput};
use stackpack_packager::check::{
    self, lint_with, Cache, LintOptions, RuleConfig, Severity, Unit, UnitKind,
};
use stackpack_packager::config::RepoConfig;
use stackpack_packager::discover::{expand_globs, refuse_outside_modules};
use stackpack_packager::impact::{self, CustomerReport, StackTarget};
use stackpack_packager::release::graph::{self as release_graph, ReleaseGraph};
use stackpack_packager::release_view::ReleaseView;
use stackpack_packager::releases::ReleaseSource;
use stackpack_packager::witness::render as witness_render;
use stackpack_packager::witness::{StackJob, StackWitness, Witness};
use stackpack_packager::Error;
use stackpack_schema::version::{latest_stable, Bump};

/// How to print findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned tables.
    Human,
    /// GitHub workflow annotations (`::error file=…,line=…::…`).
    Github,
    /// One JSON document (same as `--json`).
    Json,
    /// GitHub markdown, for a pull request's summary.
    Markdown,
}

/// What `check` compares the work tree with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Against {
    /// Each stack's last stable release (the commit it was built from).
    LastRelease,
    /// One git ref for every stack and module.
    Ref(String),
}

impl std::str::FromStr for Against {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "last-release" => Against::LastRelease,
            other => Against::Ref(other.to_string()),
        })
    }
}

/// Check the interface contract of changed stacks and modules, and lint the repository.
#[derive(clap::Args, Debug, Clone)]
#[command(
    after_help = "Exit codes: 0 every change fits its version; 1 a requested bump is too small, a lint failed, a release's graph is broken (a missing stack, a dependency outside the release, a cycle, a wiring to a missing output or input, a type that does not fit, a service that is not an OCI reference), or the witness refused its account or failed, the registry refused the credentials or needs `--insecure` (a registry that cannot be reached at all is a warning: versions then come from the local layout); 2 the command was wrong (bad flags, an invalid `stackpack.toml` or `stack.toml`)."
)]
pub struct CheckArgs {
    /// The vendor repository (the folder holding `stackpack.toml`).
    #[arg(long, default_value = ".", value_name = "DIR", value_parser = stackpack_terminal::args::ExistingPath)]
    pub repo: PathBuf,
    /// Compare with this git ref, or with each stack's last stable release.
    #[arg(long, default_value = "last-release", value_name = "REF|last-release")]
    pub against: Against,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// The bump you intend to release; refused (exit 1) when a change needs more.
    #[arg(long, value_name = "BUMP")]
    pub bump: Option<Bump>,
    /// Only these stack or module folders (repeatable), changed or not.
    #[arg(long = "path", value_name = "DIR")]
    pub paths: Vec<String>,
    /// Skip the lints.
    #[arg(long)]
    pub no_lint: bool,
    /// Read last releases from this registry (`HOST[:PORT]/NAMESPACE`) [default:
    /// `registry` in `stackpack.toml`]; when it cannot be reached, from the local
    /// layout (a warning); when it refuses, an error.
    #[arg(long, value_name = "HOST/NAMESPACE")]
    pub registry: Option<String>,
    /// Plain HTTP, for registries on this machine's loopback only.
    #[arg(long)]
    pub insecure: bool,
    /// Accept that these customers' inputs no longer fit (a major release); must name
    /// exactly the customers affected.
    #[arg(long = "allow-breaking", value_name = "CUSTOMER", num_args = 1..)]
    pub allow_breaking: Vec<String>,
    /// Witness each changed stack: apply its last release with every customer's
    /// inputs in the `[witness]` account, plan this version on top; the plans and the
    /// rules together decide the bump.
    #[arg(long)]
    pub witness: bool,
}

/// The commit a stack's last stable release was built from, or `None` when it has
/// none, as `releases` (the registry, else the local layout) know it.
pub fn last_release_commit(
    releases: &dyn ReleaseSource,
    repo_root: &Path,
    stack_path: &str,
) -> Result<Option<String>> {
    let name = stack_name(repo_root, stack_path);
    let versions = releases.versions(&name)?;
    let Some(last) = latest_stable(&versions) else {
        return Ok(None);
    };
    Ok(releases
        .release(&name, last)?
        .map(|r| r.config.source.commit))
}

/// A stack's last stable version, from the same place as [`last_release_commit`].
fn last_stable_version(
    releases: &dyn ReleaseSource,
    repo_root: &Path,
    stack_path: &str,
) -> Result<Option<semver::Version>> {
    let versions = releases.versions(&stack_name(repo_root, stack_path))?;
    Ok(latest_stable(&versions).cloned())
}

/// The releases `check` compares with: the registry `publish` uses when it answers,
/// else the local layout, with a warning saying so.
fn release_view(root: &Path, args: &CheckArgs, config: &RepoConfig) -> Result<ReleaseView> {
    let address = args.registry.as_deref().or(config.registry.as_deref());
    let view = ReleaseView::open(
        address,
        args.insecure,
        &root.join(".stackpack").join("bundles"),
    )?;
    if let Some(note) = &view.note {
        eprintln!("warning: {note}");
    }
    Ok(view)
}

/// A stack's name: `name` in its `stack.toml`, else its folder's name.
fn stack_name(repo_root: &Path, stack_path: &str) -> String {
    let folder = stack_path
        .rsplit('/')
        .next()
        .unwrap_or(stack_path)
        .to_string();
    std::fs::read_to_string(repo_root.join(stack_path).join("stack.toml"))
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
        .and_then(|t| t.get("name").and_then(|n| n.as_str()).map(str::to_string))
        .unwrap_or(folder)
}

fn resolve_ref(repo_root: &Path, reference: &str) -> Result<String> {
    let git = stackpack_packager::git::Git::open(repo_root)?;
    git.resolve(reference).ok_or_else(|| {
        Error::usage(format!("`{reference}` is not a commit in this repository"))
            .at(repo_root.display())
            .hint("pass a branch, tag or commit to `--against`, or `last-release`")
    })
}

/// Runs the check: success when nothing refuses the change; a refusal for customers
/// it would break is the command's error, printed after the report.
pub fn run(args: &CheckArgs) -> Result<ExitStatus> {
    let root = args.repo.as_path();
    let config = RepoConfig::load(root)?;
    let rules = RuleConfig::from_table(&config.rules).map_err(|e| {
        Error::usage(format!("`[rules]` in `stackpack.toml`: {e}"))
            .at(root.join("stackpack.toml").display())
    })?;
    let stacks = expand_globs(root, &config.stacks);
    let modules = expand_globs(root, &config.modules);
    check_paths_exist(root, &args.paths, &stacks, &modules)?;
    // What `build` would refuse, `check` refuses first, before CI gets to publish.
    for stack in stacks
        .iter()
        .filter(|s| root.join(s).join("stack.toml").is_file())
    {
        refuse_outside_modules(root, stack)?;
    }
    let graph = ReleaseGraph::load(root, &config)?;

    let releases = release_view(root, args, &config)?;
    let mut cache = Cache::default();
    let (units, against_label) = match &args.against {
        Against::LastRelease => (
            units_since_last_release(&releases, root, args, &stacks, &mut cache)?,
            format!("each stack's last release, from {}", releases.describe()),
        ),
        Against::Ref(reference) => {
            let commit = resolve_ref(root, reference)?;
            let label = format!("{reference} ({})", &commit[..commit.len().min(12)]);
            let units = units_since_commit(root, args, &commit, &stacks, &modules, &mut cache)?;
            (units, label)
        }
    };

    let mut reports = check::check_units_with(root, &units, args.bump, &rules, &mut cache)?;
    let witnessed = if args.witness {
        Some(witness(root, &config, &releases, &mut reports)?)
    } else {
        None
    };
    let lints = if args.no_lint {
        Vec::new()
    } else {
        let options = LintOptions {
            modules,
            stacks: stacks.clone(),
            environments: config.environments.clone(),
            rules: rules.clone(),
        };
        lint_with(root, &options, &mut cache)?
    };
    let bases = wiring_bases(&releases, root, &args.against, &graph)?;
    let release_reports = release_graph::check_releases(root, &graph, &bases, &mut cache)?;
    let targets = customer_targets(&releases, root, args, &stacks, &graph);
    let mut customers = impact::check_customers(root, &targets, &config.customers, &mut |path| {
        cache.get(&root.join(path)).ok()
    });
    if args.paths.is_empty() {
        let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
        customers.extend(impact::stray_files(root, &names));
    }
    let breaking = customer_refusal(&customers, &args.allow_breaking, args.bump);
    let refused = reports.iter().any(|r| r.refused);
    let witness_failed = witnessed
        .iter()
        .flatten()
        .any(|s| s.failed().next().is_some());
    let lint_failed = lints.iter().any(|f| f.severity == Severity::Error);
    let release_refused = release_reports.iter().any(|r| r.refused);
    let output = CheckOutput {
        against: Some(against_label),
        units: reports,
        lints,
        allowed_breaking: if breaking.is_none() {
            args.allow_breaking.clone()
        } else {
            Vec::new()
        },
        customers,
        releases: release_reports,
        ok: !refused && !lint_failed && breaking.is_none() && !witness_failed && !release_refused,
    };
    print(args, &output, witnessed.as_deref());
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        append_step_summary(Path::new(&path), &render::step_summary(&output));
    }
    if let Some(refusal) = breaking {
        return Err(refusal);
    }
    Ok(ExitStatus::success_if(output.ok))
}

/// The selected stacks, with the release in which their deprecated aliases stop
/// working: the major after their last stable release.
fn customer_targets(
    releases: &dyn ReleaseSource,
    root: &Path,
    args: &CheckArgs,
    stacks: &[String],
    graph: &ReleaseGraph,
) -> Vec<StackTarget> {
    stacks
        .iter()
        .filter(|p| selected(args, p))
        .map(|path| {
            let name = stack_name(root, path);
            StackTarget {
                wired: release_graph::wired_inputs(graph, &name),
                name,
                path: path.clone(),
                aliases_end: last_stable_version(releases, root, path)
                    .ok()
                    .flatten()
                    .map(|v| semver::Version::new(v.major + 1, 0, 0)),
            }
        })
        .collect()
}

/// The base of every stack a wiring reads: the `--against` commit, or the stack's
/// last release. A wired output is judged removed or retyped against it.
fn wiring_bases(
    releases: &dyn ReleaseSource,
    root: &Path,
    against: &Against,
    graph: &ReleaseGraph,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut bases = std::collections::BTreeMap::new();
    for stack in release_graph::wired_upstreams(graph) {
        let base = match against {
            Against::Ref(reference) => Some(resolve_ref(root, reference)?),
            Against::LastRelease => last_release_commit(releases, root, &stack.path)?,
        };
        if let Some(base) = base {
            bases.insert(stack.name.clone(), base);
        }
    }
    Ok(bases)
}

/// The refusal when customers would break: unless `--allow-breaking` names exactly them.
/// Only a major release may break customers, so `--allow-breaking` with a smaller
/// `--bump` is refused too.
fn customer_refusal(
    customers: &[CustomerReport],
    allowed: &[String],
    bump: Option<Bump>,
) -> Option<Error> {
    if let Some(bump) = bump.filter(|b| *b < Bump::Major && !allowed.is_empty()) {
        return Some(
            Error::usage(format!(
                "`--allow-breaking` with `--bump {bump}`: only a major release may break customers"
            ))
            .hint("check with `--bump major`, or fix their inputs first"),
        );
    }
    impact::gate(customers, allowed).map(|(message, hint)| Error::refused(message).hint(hint))
}

/// `--path` names a folder that is neither a stack nor a module: say so, rather than
/// "nothing changed".
fn check_paths_exist(
    root: &Path,
    paths: &[String],
    stacks: &[String],
    modules: &[String],
) -> Result<()> {
    for path in paths {
        let path = path.trim_end_matches('/');
        if !stacks.iter().chain(modules).any(|known| known == path) {
            return Err(Error::usage(format!(
                "`{path}` is neither a stack nor a module of this repository"
            ))
            .at(root.join("stackpack.toml").display())
            .hint(format!(
                "stacks: {}; modules: {}",
                stacks.join(", "),
                modules.join(", ")
            )));
        }
    }
    Ok(())
}

fn selected(args: &CheckArgs, path: &str) -> bool {
    args.paths.is_empty() || args.paths.iter().any(|s| s.trim_end_matches('/') == path)
}

/// Every selected stack that changed since its own last stable release (or has none).
fn units_since_last_release(
    releases: &dyn ReleaseSource,
    root: &Path,
    args: &CheckArgs,
    stacks: &[String],
    cache: &mut Cache,
) -> Result<Vec<Unit>> {
    let mut units = Vec::new();
    for stack in stacks.iter().filter(|p| selected(args, p)) {
        let commit = last_release_commit(releases, root, stack)?;
        let changed = match &commit {
            Some(c) => {
                args.paths.contains(stack)
                    || check::unit_changed_with(
                        root,
                        stack,
                        &check::changed_files(root, c)?,
                        cache,
                    )?
            }
            None => true,
        };
        if changed {
            units.push(Unit {
                path: stack.clone(),
                kind: UnitKind::Stack,
                against: commit,
            });
        }
    }
    Ok(units)
}

/// Every selected stack and module that changed since `commit`.
fn units_since_commit(
    root: &Path,
    args: &CheckArgs,
    commit: &str,
    stacks: &[String],
    modules: &[String],
    cache: &mut Cache,
) -> Result<Vec<Unit>> {
    let changed = check::changed_files(root, commit)?;
    let mut units = Vec::new();
    let all = stacks
        .iter()
        .map(|s| (s, UnitKind::Stack))
        .chain(modules.iter().map(|m| (m, UnitKind::Module)));
    for (path, kind) in all.filter(|(path, _)| selected(args, path)) {
        if args.paths.contains(path) || check::unit_changed_with(root, path, &changed, cache)? {
            units.push(Unit {
                path: path.clone(),
                kind,
                against: Some(commit.to_string()),
            });
        }
    }
    Ok(units)
}

/// The pull request's view on the run's page; a summary that cannot be written is a
/// warning, not a failed check.
fn append_step_summary(path: &Path, markdown: &str) {
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, markdown.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "warning: cannot write the step summary `{}`: {e}",
            path.display()
        );
    }
}

/// Runs the witness for every changed stack with a stable release, and raises each
/// one's required bump to what the customers' plans need.
fn witness(
    root: &Path,
    config: &RepoConfig,
    releases: &dyn ReleaseSource,
    reports: &mut [render::UnitReport],
) -> Result<Vec<StackWitness>> {
    let prepared = Witness::prepare(root, config)?;
    let mut jobs = Vec::new();
    for report in reports.iter().filter(|r| r.kind == UnitKind::Stack) {
        let name = stack_name(root, &report.path);
        let release = match last_stable_version(releases, root, &report.path)? {
            Some(version) => releases.release(&name, &version)?,
            None => None,
        };
        let Some(release) = release else {
            stackpack_terminal::status(&format!(
                "witness: `{}` has no stable release yet: nothing to witness against",
                report.path
            ));
            continue;
        };
        jobs.push(StackJob {
            name,
            path: report.path.clone(),
            release,
            rules: report.required,
            gated_kinds: StackJob::gated(&report.findings),
        });
    }
    stackpack_terminal::status(&format!(
        "witness: {} stack{} in the {}",
        jobs.len(),
        if jobs.len() == 1 { "" } else { "s" },
        prepared.account().describe()
    ));
    let witnessed = prepared.run(&jobs)?;
    for stack in &witnessed {
        if let Some(report) = reports.iter_mut().find(|r| r.path == stack.path) {
            report.required = report.required.max(stack.required);
            report.refused = report.requested.is_some_and(|r| r < report.required);
        }
    }
    Ok(witnessed)
}

fn print(args: &CheckArgs, output: &CheckOutput, witnessed: Option<&[StackWitness]>) {
    let format = if args.json { Format::Json } else { args.format };
    match format {
        Format::Json => match witnessed {
            Some(stacks) => {
                let mut value: serde_json::Value =
                    serde_json::from_str(&render::json(output)).expect("our own JSON");
                value["witness"] = serde_json::to_value(stacks).expect("serialisable");
                println!("{value}");
            }
            None => println!("{}", render::json(output)),
        },
        Format::Markdown => print!(
            "{}",
            witness_render::markdown_check(output, witnessed.unwrap_or_default())
        ),
        Format::Github => print!(
            "{}{}",
            render::github(output),
            impact::github(&output.customers)
        ),
        Format::Human => print!(
            "{}\ncustomers:\n{}",
            render::human(output),
            impact::human(&output.customers)
        ),
    }
    if let (Some(stacks), Format::Human) = (witnessed, format) {
        print!("\nwitness:\n{}", witness_render::human(stacks));
    }
    for stack in witnessed.unwrap_or_default() {
        eprint!("{}", witness_render::failures(stack));
    }
    for unit in output.units.iter().filter(|u| u.refused) {
        let stack = witnessed
            .unwrap_or_default()
            .iter()
            .find(|s| s.path == unit.path);
        match (stack, unit.requested) {
            // The plans, not the rules, ask for more: name what breaks and for whom.
            (Some(stack), Some(requested)) if stack.witness > requested => {
                eprint!("{}", witness_render::refusal(stack, requested))
            }
            _ => eprint!(
                "{}",
                render::refusal(&unit.path, unit.required, unit.requested, &unit.findings)
            ),
        }
    }
    for release in output.releases.iter().filter(|r| r.refused) {
        eprint!("{}", release_graph::render::refusal(release));
    }
    let failed = output
        .lints
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    if failed > 0 {
        eprintln!(
            "error: {failed} lint finding{} failed the check",
            if failed == 1 { "" } else { "s" }
        );
        eprintln!(
            "hint: fix it, or add `# stackpack:ignore <rule> reason: <why>` on or above the line"
        );
    }
}
