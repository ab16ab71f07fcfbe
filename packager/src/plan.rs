//! Deciding, per stack, whether it changed and which version a build gets.
//!
//! A stack changed when its files, or those of any local module it uses, differ from
//! its latest release on this channel (the branch's prerelease line, falling back to
//! the latest stable), or, with `--base`, when git shows a change since that commit.
//! A stack whose files are identical to an existing release is never given a new
//! version: publishing the same commit twice publishes nothing new.

use semver::Version;
use stackpack_schema::bundle::FileEntry;
use stackpack_schema::rules::InterfaceChanges;
use stackpack_schema::version::{self, branch_slug, Bump, Channel};

use crate::check::{self, Finding, RuleConfig};
use crate::discover::Stack;
use crate::error::{Error, Result};
use crate::git;
use crate::pack::{self, SourceFile};
use crate::releases::{Release, ReleaseSource};
use crate::repository::Repository;

#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Compare against this commit instead of the latest release.
    pub base: Option<String>,
    /// The branch being built; CI's variables and then git when absent.
    pub branch: Option<String>,
    /// A bump asked for by a human; never lower than the required one.
    pub bump: Option<Bump>,
    pub allow_dirty: bool,
    /// Only these stacks (and they are planned even when git shows no change).
    pub stacks: Vec<String>,
}

/// The plan for one stack.
#[derive(Clone, Debug)]
pub struct StackPlan {
    pub stack: Stack,
    pub files: Vec<SourceFile>,
    pub entries: Vec<FileEntry>,
    /// True when a build would make a new version.
    pub changed: bool,
    pub reason: String,
    pub last_stable: Option<Version>,
    /// The latest release of this stack on this channel, if any.
    pub previous: Option<Release>,
    /// The version a build gets (`None` when unchanged).
    pub next: Option<Version>,
    /// The bump this build gets: the larger of what the interface changes require
    /// and what was asked for.
    pub bump: Bump,
    /// The bump the interface changes since the last stable release require.
    pub required_bump: Bump,
    /// What the interface checker found since the last stable release.
    pub findings: Vec<Finding>,
    /// The same findings as the bundle config records them, with the release they
    /// were compared with; `None` when nothing was compared (no stable release, or
    /// the stack did not change).
    pub changes: Option<InterfaceChanges>,
    /// The customers this release may break (`publish --allow-breaking`), recorded in
    /// the bundle config; empty unless publish checked them.
    pub allowed_breaking: Vec<String>,
    /// What the outcome witness saw, recorded in the bundle config; `None` unless it ran.
    pub witness: Option<stackpack_schema::bundle::WitnessSummary>,
    /// The published version of each module package, with the tree digest of its
    /// files: a vendored module whose files match records that version in the
    /// bundle config. Empty unless publish planned the modules.
    pub module_versions: Vec<(String, stackpack_schema::Digest, Version)>,
}

/// The plan for a whole repository at one commit.
#[derive(Clone, Debug)]
pub struct Plan {
    pub commit: String,
    /// Seconds since the epoch: the commit's time.
    pub commit_time: i64,
    pub branch: String,
    pub channel: Channel,
    pub dirty: bool,
    pub stacks: Vec<StackPlan>,
}

/// Resolves the branch: the flag, then CI's variables, then git.
pub fn resolve_branch(repo: &Repository, flag: Option<&str>) -> Result<String> {
    flag.map(str::to_string)
        .or_else(git::branch_from_ci_environment)
        .or_else(|| repo.git.current_branch())
        .ok_or_else(|| {
            Error::usage("cannot tell which branch this build is for: HEAD is detached and no CI variable names it")
                .hint("pass `--branch NAME`")
        })
}

pub fn plan(
    repo: &Repository,
    releases: &dyn ReleaseSource,
    options: &PlanOptions,
) -> Result<Plan> {
    let commit = repo.git.head()?;
    let commit_time = repo.git.commit_time(&commit)?;
    let branch = resolve_branch(repo, options.branch.as_deref())?;
    let channel = if branch == repo.config.main_branch {
        Channel::Stable
    } else {
        Channel::Prerelease {
            slug: branch_slug(&branch),
        }
    };
    for name in &options.stacks {
        repo.stack(name)?;
    }
    let planning = Planning {
        repo,
        releases,
        options,
        changed_since_base: changed_since_base(repo, options)?,
        rules: rule_config(repo)?,
        channel: &channel,
    };
    let mut dirty = false;
    let mut stacks = Vec::new();
    for stack in &repo.stacks {
        if !options.stacks.is_empty() && !options.stacks.contains(&stack.name) {
            continue;
        }
        let stack_dirty = uncommitted(repo, stack, options.allow_dirty)?;
        dirty |= stack_dirty;
        stacks.push(planning.stack(stack, stack_dirty)?);
    }
    Ok(Plan {
        commit,
        commit_time,
        branch,
        channel,
        dirty,
        stacks,
    })
}

/// With `--base`, the files git shows changed since that commit (up to the work
/// tree with `--allow-dirty`, else up to `HEAD`).
fn changed_since_base(repo: &Repository, options: &PlanOptions) -> Result<Option<Vec<String>>> {
    let Some(base) = &options.base else {
        return Ok(None);
    };
    let base = repo.git.resolve(base).ok_or_else(|| {
        Error::usage(format!("`--base {base}` does not name a commit"))
            .hint("fetch enough history (`git fetch --unshallow`) or pass another ref")
    })?;
    let upto = if options.allow_dirty {
        crate::git::Upto::WorkTree
    } else {
        crate::git::Upto::Head
    };
    Ok(Some(repo.git.changed_files(&base, upto)?))
}

/// The repository's rule levels (`stackpack.toml` `[rules]`).
fn rule_config(repo: &Repository) -> Result<RuleConfig> {
    RuleConfig::from_table(&repo.config.rules).map_err(|message| {
        Error::usage(format!("`stackpack.toml` `[rules]`: {message}"))
            .at(repo.root.join("stackpack.toml").display())
            .hint("levels are `major`, `minor`, `patch` or `off` (lints: `error`, `warn`, `off`); see `docs/check.md`")
    })
}

/// Does `stack` have uncommitted changes? Refused unless `allow_dirty`.
fn uncommitted(repo: &Repository, stack: &Stack, allow_dirty: bool) -> Result<bool> {
    let dirty_files = repo.git.dirty_files(&stack.packed_paths())?;
    if dirty_files.is_empty() {
        return Ok(false);
    }
    if !allow_dirty {
        let shown: Vec<String> = dirty_files
            .iter()
            .take(5)
            .map(|f| format!("`{f}`"))
            .collect();
        return Err(Error::refused(format!(
            "stack `{}` has uncommitted changes: {}{}",
            stack.name,
            shown.join(", "),
            if dirty_files.len() > 5 { ", …" } else { "" }
        ))
        .at(repo.root.display())
        .hint("commit or stash them: bundles are built from commits (`--allow-dirty` packs them anyway, for local tries only)"));
    }
    Ok(true)
}

/// What every stack of one plan is planned with.
struct Planning<'a> {
    repo: &'a Repository,
    releases: &'a dyn ReleaseSource,
    options: &'a PlanOptions,
    changed_since_base: Option<Vec<String>>,
    rules: RuleConfig,
    channel: &'a Channel,
}

impl Planning<'_> {
    /// Whether `stack` changed since its latest release on the channel, the bump the
    /// change needs, and the version a build gets.
    fn stack(&self, stack: &Stack, stack_dirty: bool) -> Result<StackPlan> {
        let Planning {
            repo,
            releases,
            options,
            ..
        } = *self;
        let files = pack::collect_files(&repo.git, stack)?;
        let entries = pack::hash_stack_files(&files)?;
        let existing = releases.versions(&stack.name)?;
        let last_stable = version::latest_stable(&existing).cloned();
        let previous_version = latest_on_channel(&existing, self.channel);
        let previous = match &previous_version {
            Some(v) => releases.release(&stack.name, v)?,
            None => None,
        };
        let (changed, reason) = self.changed(stack, previous.as_ref(), &entries);
        let (required_bump, findings, changes) = match (&last_stable, changed) {
            (Some(last), true) => required_bump(repo, releases, stack, last, &self.rules)?,
            _ => (Bump::Patch, Vec::new(), None),
        };
        if let Some(requested) = options.bump {
            if changed && requested < required_bump {
                return Err(refuse_bump(stack, required_bump, requested, &findings));
            }
        }
        let bump = options.bump.map_or(required_bump, |b| b.max(required_bump));
        // Uncommitted changes never get a plain version: a `-dirty` prerelease says
        // that the bundle matches no commit.
        let stack_channel = if stack_dirty {
            dirty_channel(self.channel)
        } else {
            self.channel.clone()
        };
        let next = changed.then(|| {
            version::next_version(
                &existing,
                bump,
                &stack.config.initial_version(),
                &stack_channel,
            )
        });
        Ok(StackPlan {
            stack: stack.clone(),
            files,
            entries,
            changed,
            reason,
            last_stable,
            previous,
            next,
            bump,
            required_bump,
            findings,
            changes,
            allowed_breaking: Vec::new(),
            witness: None,
            module_versions: Vec::new(),
        })
    }

    /// Did `stack` change since `previous` (its files, or with `--base` what git
    /// shows, unless the stack was named), and why, in words.
    fn changed(
        &self,
        stack: &Stack,
        previous: Option<&Release>,
        entries: &[FileEntry],
    ) -> (bool, String) {
        let named = self.options.stacks.contains(&stack.name);
        match (previous, &self.changed_since_base) {
            (Some(previous), _) if same_files(&previous.config.files, entries) => (
                false,
                format!("unchanged: same files as `{}`", previous.version),
            ),
            (None, _) => (true, "first release".to_string()),
            (Some(_), Some(changed)) if !named => {
                let touched: Vec<&String> = changed
                    .iter()
                    .filter(|path| stack.packed_paths().iter().any(|dir| under(path, dir)))
                    .collect();
                if touched.is_empty() {
                    (
                        false,
                        format!(
                            "unchanged since `{}`",
                            self.options.base.as_deref().unwrap_or("")
                        ),
                    )
                } else {
                    (
                        true,
                        describe_changes(stack, touched.into_iter().cloned().collect()),
                    )
                }
            }
            (Some(previous), _) => {
                let paths = differing_paths(&previous.config.files, entries);
                (true, describe_changes(stack, paths))
            }
        }
    }
}

/// The prerelease line of a build with uncommitted changes: `X.Y.Z-dirty.<n>` on the
/// main branch, `X.Y.Z-<slug>-dirty.<n>` on another.
pub(crate) fn dirty_channel(channel: &Channel) -> Channel {
    let slug = match channel {
        Channel::Stable => "dirty".to_string(),
        Channel::Prerelease { slug } => format!("{slug}-dirty"),
    };
    Channel::Prerelease { slug }
}

/// The latest version on the channel's line: the branch's prereleases (any base),
/// else the latest stable.
pub fn latest_on_channel(existing: &[Version], channel: &Channel) -> Option<Version> {
    if let Channel::Prerelease { slug } = channel {
        let on_line = existing.iter().filter(|v| {
            v.pre
                .as_str()
                .rsplit_once('.')
                .is_some_and(|(head, n)| head == slug && n.parse::<u64>().is_ok())
        });
        if let Some(latest) = version::latest(on_line) {
            return Some(latest.clone());
        }
    }
    version::latest_stable(existing).cloned()
}

fn under(path: &str, dir: &str) -> bool {
    path == dir || path.starts_with(&format!("{dir}/"))
}

/// The same files with the same contents and modes. Whether a file travels as a
/// layer of its own is how it is carried, not what it is: a release built before file
/// layers existed is not changed by them, so no version is made for that alone.
fn same_files(old: &[FileEntry], new: &[FileEntry]) -> bool {
    old.len() == new.len()
        && old.iter().zip(new).all(|(a, b)| {
            a.path == b.path
                && a.digest == b.digest
                && a.size == b.size
                && a.executable == b.executable
        })
}

fn differing_paths(old: &[FileEntry], new: &[FileEntry]) -> Vec<String> {
    let old_map: std::collections::BTreeMap<&str, &FileEntry> =
        old.iter().map(|e| (e.path.as_str(), e)).collect();
    let new_map: std::collections::BTreeMap<&str, &FileEntry> =
        new.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut paths: Vec<String> = old_map
        .keys()
        .chain(new_map.keys())
        .filter(|path| old_map.get(*path) != new_map.get(*path))
        .map(|path| path.to_string())
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn describe_changes(stack: &Stack, paths: Vec<String>) -> String {
    let modules: Vec<&str> = stack
        .modules
        .iter()
        .filter(|m| paths.iter().any(|p| under(p, &m.path)))
        .map(|m| m.name.as_str())
        .collect();
    let own = paths.iter().filter(|p| under(p, &stack.path)).count();
    let mut parts = Vec::new();
    if own > 0 {
        parts.push(format!(
            "{own} file{} changed",
            if own == 1 { "" } else { "s" }
        ));
    }
    if !modules.is_empty() {
        let names: Vec<String> = modules.iter().map(|m| format!("`{m}`")).collect();
        parts.push(format!(
            "module{} {} changed",
            if modules.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
    }
    if parts.is_empty() {
        "changed".to_string()
    } else {
        parts.join("; ")
    }
}

/// What the interface changes since `last` (a stable release) require, the findings
/// behind it, and those findings as the bundle config records them.
fn required_bump(
    repo: &Repository,
    releases: &dyn ReleaseSource,
    stack: &Stack,
    last: &Version,
    rules: &RuleConfig,
) -> Result<(Bump, Vec<Finding>, Option<InterfaceChanges>)> {
    let Some(release) = releases.release(&stack.name, last)? else {
        return Ok((Bump::Patch, Vec::new(), None));
    };
    let commit = release.config.source.commit.trim_end_matches("-dirty");
    if repo.git.resolve(commit).is_none() {
        return Err(Error::refused(format!(
            "cannot compare `{}` with its last release `{last}`: its commit `{}` is not in this clone",
            stack.name,
            &commit[..12.min(commit.len())]
        ))
        .hint("fetch the full history (`git fetch --unshallow`, or `fetch-depth: 0` in GitHub Actions)"));
    }
    let report =
        check::required_bump_with(&repo.root, &stack.path, commit, rules).map_err(|e| {
            Error::refused(format!(
                "cannot check the interface of `{}`: {e}",
                stack.name
            ))
            .at(&stack.path)
        })?;
    let changes = InterfaceChanges {
        since: last.clone(),
        findings: report
            .findings
            .iter()
            .filter_map(Finding::recorded)
            .collect(),
    };
    Ok((report.bump, report.findings, Some(changes)))
}

fn refuse_bump(stack: &Stack, required: Bump, requested: Bump, findings: &[Finding]) -> Error {
    let mut message = format!(
        "stack `{}` needs a {required} release, but `--bump {requested}` was asked for",
        stack.name
    );
    for finding in findings.iter().filter(|f| f.bump > Some(requested)) {
        message.push_str(&format!(
            "\n  --> `{}`: {}\n      rule: {} (requires a {} release)",
            finding.location(),
            finding.message,
            finding.rule,
            finding.bump.map_or("-".to_string(), |b| b.to_string())
        ));
    }
    Error::refused(message).hint(format!(
        "publish with `--bump {required}`, or undo the change"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackpack_schema::digest::Digest;

    fn entry(path: &str, content: &[u8], layer: bool) -> FileEntry {
        FileEntry {
            path: path.into(),
            digest: Digest::of(content),
            size: content.len() as u64,
            executable: false,
            layer,
        }
    }

    #[test]
    fn a_release_built_before_file_layers_is_not_changed_by_them_alone() {
        let before = vec![entry("a.tf", b"a", false), entry("b.zip", b"zip", false)];
        let now = vec![entry("a.tf", b"a", false), entry("b.zip", b"zip", true)];
        assert!(same_files(&before, &now));
        let edited = vec![entry("a.tf", b"a2", false), entry("b.zip", b"zip", true)];
        assert!(!same_files(&before, &edited));
        assert!(!same_files(&before, &now[..1]));
    }
}
