//! The interface contract: which version bump a change needs, and the repository lints.
//!
//! [`required_bump`] compares a stack (or module) in the working tree with the same
//! folder at an older commit, with every local module it vendors, and applies the
//! interface rules of `DESIGN.md`: each [`Finding`] names its rule, the item, the
//! `file:line` and the bump it needs; the report's bump is the largest. [`lint`](mod@lint) runs
//! the repository lints, and [`render`] prints findings for people, CI and scripts.

mod diff;
mod env_names;
pub(crate) mod finding;
pub mod lint;
pub mod render;
pub mod rule_config;
pub(crate) mod rule_id;
mod stored_secrets;
pub mod tree;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use stackpack_schema::version::Bump;

pub use finding::{Finding, Severity};
pub use lint::{lint, lint_with, LintOptions};
pub use rule_config::{Level, RuleConfig};
pub use rule_id::{Broken, Graph, Inputs, Lint, Rule, RuleId};
pub use tree::{Cache, Tree};

use crate::git::Git;
use stackpack_interface::InterfaceError;

/// What [`required_bump`] found for one stack or module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    /// The smallest bump that respects every finding: patch when nothing is flagged.
    pub bump: Bump,
    pub findings: Vec<Finding>,
    /// Advice that does not change the bump (an alias kept past one major release).
    pub warnings: Vec<String>,
    /// No earlier release to compare with: this is the first (patch, nothing to check).
    pub first: bool,
}

/// Why a check could not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error(transparent)]
    Interface(#[from] InterfaceError),
    #[error("git could not read commit `{commit}` in `{}`: {message}", repo.display())]
    Git {
        repo: PathBuf,
        commit: String,
        message: String,
    },
    #[error("cannot unpack commit `{commit}`: {source}")]
    Unpack {
        commit: String,
        #[source]
        source: std::io::Error,
    },
    /// Errors of the stack itself (a file that cannot be read, a call Terraform
    /// refuses): no version number can be judged until they are fixed.
    #[error("{}", broken_text(.0))]
    Broken(Vec<Finding>),
}

/// A check that could not run (a commit git cannot read, a stack whose files the
/// engine would refuse) refuses the command; the typed error stays its source.
impl From<CheckError> for crate::Error {
    fn from(error: CheckError) -> Self {
        let hint = match &error {
            CheckError::Broken(_) => {
                Some("fix these files first: no version can be judged until they parse")
            }
            CheckError::Git { .. } => {
                Some("fetch the full history (`git fetch --unshallow`) or pass another `--against`")
            }
            CheckError::Interface(_) | CheckError::Unpack { .. } => None,
        };
        let converted = crate::Error::refused_by(error);
        match hint {
            Some(hint) => converted.hint(hint),
            None => converted,
        }
    }
}

fn broken_text(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("`{}`: {} ({})", f.location(), f.message, f.rule))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Compares two loaded trees (old release, new) and returns the findings and bump.
pub fn compare_trees(old: &Tree, new: &Tree, rules: &RuleConfig) -> CheckReport {
    let mut findings = Vec::new();
    let mut warnings = Vec::new();
    for (caller, call, callee) in new.edges() {
        if let Some(module) = new.modules.get(&callee) {
            let before = old.modules.get(&callee).map(|m| &**m);
            diff::undeclared_arguments(caller, call, &callee, before, module, &mut findings);
        }
    }
    for u in &old.unread {
        warnings.push(format!(
            "`{}:{}` of the last release cannot be read ({}): compared with what its other files declare; \
             what that file declared counts as new",
            u.file, u.line, u.message
        ));
    }
    // A first release has nothing to compare with: said as `first release`, not
    // as a warning (nothing is wrong, and nothing needs doing).
    let first = !old.exists();
    if !first {
        diff::diff_module(old.root(), new.root(), &new.root_dir, &mut findings);
        // What the vendored modules do to their callers.
        for (caller, call, callee) in new.edges() {
            let (Some(old_callee), Some(new_callee)) =
                (old.modules.get(&callee), new.modules.get(&callee))
            else {
                continue;
            };
            diff::diff_call(caller, call, &callee, old_callee, new_callee, &mut findings);
        }
        let kinds_left: std::collections::BTreeSet<&str> = new
            .modules
            .values()
            .flat_map(|m| m.resources.iter().map(|r| r.kind.as_str()))
            .collect();
        for (dir, module) in &new.modules {
            if let Some(before) = old.modules.get(dir) {
                diff::diff_addresses(before, module, dir, &kinds_left, &mut findings);
            }
        }
        diff::diff_kinds(old, new, &mut findings);
        diff::diff_constraints(old, new, &mut findings, &mut warnings);
    }
    let mut findings = rules.apply(findings);
    findings.sort_by(|a, b| {
        (&a.file, a.line, &a.rule, &a.item).cmp(&(&b.file, b.line, &b.rule, &b.item))
    });
    findings.dedup();
    let bump = findings
        .iter()
        .filter_map(|f| f.bump)
        .max()
        .unwrap_or(Bump::Patch);
    // Say why: the findings whose bump is the unit's decided it.
    for f in &mut findings {
        f.decisive = bump > Bump::Patch && f.bump == Some(bump);
    }
    if bump == Bump::Major && old.exists() {
        // An alias may outlive one major release, no more.
        for var in &new.root().variables {
            let was_alias = old
                .root()
                .variable(&var.name)
                .is_some_and(|v| v.deprecated.is_some());
            if var.deprecated.is_some() && was_alias {
                warnings.push(format!(
                    "input `{}` in `{}` was already a deprecated alias in the last release: remove it in this major release",
                    var.name,
                    tree::join(&new.root_dir, &var.location.to_string())
                ));
            }
        }
    }
    CheckReport {
        bump,
        findings,
        warnings,
        first,
    }
}

/// Compares `dir` in two checked-out trees.
pub fn compare_dirs(
    old_base: &Path,
    new_base: &Path,
    dir: &str,
    rules: &RuleConfig,
) -> Result<CheckReport, CheckError> {
    compare_dirs_with(old_base, new_base, dir, rules, &mut Cache::default())
}

/// [`compare_dirs`], reusing interfaces already in `cache`.
pub fn compare_dirs_with(
    old_base: &Path,
    new_base: &Path,
    dir: &str,
    rules: &RuleConfig,
    cache: &mut Cache,
) -> Result<CheckReport, CheckError> {
    let old = Tree::load_lenient(tree::Source::Dir(old_base), dir, cache)?;
    let new = Tree::load_lenient(tree::Source::Dir(new_base), dir, cache)?;
    let mut report = compare_trees(&old, &new, rules);
    let old_text = |file: &str| std::fs::read_to_string(old_base.join(file)).ok();
    judge_unread(&new, new_base, &old_text, &mut report);
    Ok(report)
}

/// The work tree's files that cannot be read. One unchanged since the release is
/// left out of both sides, with a warning: it cannot wedge the stack. One that is
/// new or changed is an error of the stack: an unread file is never "no change".
fn judge_unread(
    new: &Tree,
    new_base: &Path,
    old_text: &dyn Fn(&str) -> Option<String>,
    report: &mut CheckReport,
) {
    for u in &new.unread {
        let unchanged = old_text(&u.file).is_some_and(|before| {
            std::fs::read_to_string(new_base.join(&u.file)).is_ok_and(|now| now == before)
        });
        if unchanged {
            report.warnings.push(format!(
                "`{}:{}` cannot be read ({}), as in the last release: what it declares is left out of both sides",
                u.file, u.line, u.message
            ));
        } else {
            report.findings.push(diff::unreadable(u));
        }
    }
    if report
        .findings
        .iter()
        .any(|f| f.rule == RuleId::Broken(Broken::UnreadableFile))
    {
        // What the unread file declares is missing from the comparison: any bump
        // found without it would be a guess.
        report.findings.retain(|f| f.severity == Severity::Error);
        report.bump = Bump::Patch;
    }
}

/// The `.tf` and `.tf.json` files of the repository at one commit, read from
/// `git archive` into memory: nothing is written to disk, and the old tree is read
/// once however many stacks are compared with it.
#[derive(Debug)]
pub struct Snapshot {
    pub commit: String,
    /// Repository-relative path → text.
    files: BTreeMap<String, String>,
}

impl Snapshot {
    /// Reads the files at `commit` (any ref git understands).
    pub fn at(repo_root: &Path, commit: &str) -> Result<Snapshot, CheckError> {
        let git_error = |message: String| CheckError::Git {
            repo: repo_root.to_path_buf(),
            commit: commit.to_string(),
            message,
        };
        // Run in `repo_root`: when the vendor repository is a sub-folder of the git
        // repository, `git archive` holds only that folder, with paths relative to it.
        let archive = Git::open(repo_root)
            .and_then(|git| git.archive(commit))
            .map_err(|e| git_error(e.message))?;
        let unpack = |source: std::io::Error| CheckError::Unpack {
            commit: commit.to_string(),
            source,
        };
        let mut files = BTreeMap::new();
        let mut archive = tar::Archive::new(archive.as_slice());
        for entry in archive.entries().map_err(unpack)? {
            let mut entry = entry.map_err(unpack)?;
            if entry.header().entry_type() != tar::EntryType::Regular {
                continue;
            }
            let path = entry
                .path()
                .map_err(unpack)?
                .to_string_lossy()
                .replace('\\', "/");
            if !(path.ends_with(".tf") || path.ends_with(".tf.json")) {
                continue;
            }
            let mut text = String::new();
            if std::io::Read::read_to_string(&mut entry, &mut text).is_ok() {
                files.insert(path, text);
            }
        }
        Ok(Snapshot {
            commit: commit.to_string(),
            files,
        })
    }

    /// The files directly in `dir` (names and texts, sorted), or `None` when the
    /// commit has no `.tf` file there.
    pub fn module_files(&self, dir: &str) -> Option<Vec<(String, String)>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{}/", dir.trim_end_matches('/'))
        };
        let files: Vec<(String, String)> = self
            .files
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter_map(|(p, text)| {
                let name = &p[prefix.len()..];
                (!name.contains('/')).then(|| (name.to_string(), text.clone()))
            })
            .collect();
        (!files.is_empty()).then_some(files)
    }
}

/// Compares `dir` at a commit with `dir` in the working tree at `repo_root`.
pub fn compare_snapshot_with(
    snapshot: &Snapshot,
    repo_root: &Path,
    dir: &str,
    rules: &RuleConfig,
    cache: &mut Cache,
) -> Result<CheckReport, CheckError> {
    let old = Tree::load_lenient(tree::Source::Snapshot(snapshot), dir, cache)?;
    let new = Tree::load_lenient(tree::Source::Dir(repo_root), dir, cache)?;
    let mut report = compare_trees(&old, &new, rules);
    let old_text = |file: &str| snapshot.files.get(file).cloned();
    judge_unread(&new, repo_root, &old_text, &mut report);
    Ok(report)
}

/// The bump `stack_dir_rel` (a stack or module folder, relative to the repository)
/// needs from its state at `old_commit` to the working tree, with the findings behind
/// it, under the default rule levels.
pub fn required_bump(
    repo_root: &Path,
    stack_dir_rel: &str,
    old_commit: &str,
) -> Result<CheckReport, CheckError> {
    required_bump_with(repo_root, stack_dir_rel, old_commit, &RuleConfig::default())
}

/// [`required_bump`] with the repository's rule levels.
pub fn required_bump_with(
    repo_root: &Path,
    stack_dir_rel: &str,
    old_commit: &str,
    rules: &RuleConfig,
) -> Result<CheckReport, CheckError> {
    let snapshot = Snapshot::at(repo_root, old_commit)?;
    let report = compare_snapshot_with(
        &snapshot,
        repo_root,
        stack_dir_rel,
        rules,
        &mut Cache::default(),
    )?;
    let errors: Vec<Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .cloned()
        .collect();
    if errors.is_empty() {
        Ok(report)
    } else {
        Err(CheckError::Broken(errors))
    }
}

/// What a checked folder is: a stack (deployed, versioned as a bundle) or a module
/// (a building block, versioned as a module package).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitKind {
    Stack,
    Module,
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitKind::Stack => "stack",
            UnitKind::Module => "module",
        })
    }
}

/// One folder to check, and the commit to compare it with (`None`: never released).
#[derive(Clone, Debug)]
pub struct Unit {
    /// Repository-relative folder.
    pub path: String,
    pub kind: UnitKind,
    pub against: Option<String>,
}

/// Checks many stacks and modules, unpacking each old commit once. `requested` is the
/// bump asked for (`--bump`); a unit is refused when it is lower than required.
pub fn check_units(
    repo_root: &Path,
    units: &[Unit],
    requested: Option<Bump>,
    rules: &RuleConfig,
) -> Result<Vec<render::UnitReport>, CheckError> {
    check_units_with(repo_root, units, requested, rules, &mut Cache::default())
}

/// [`check_units`], reusing interfaces already in `cache`.
pub fn check_units_with(
    repo_root: &Path,
    units: &[Unit],
    requested: Option<Bump>,
    rules: &RuleConfig,
    cache: &mut Cache,
) -> Result<Vec<render::UnitReport>, CheckError> {
    let mut snapshots: BTreeMap<String, Snapshot> = BTreeMap::new();
    let mut out = Vec::new();
    for unit in units {
        let report = match &unit.against {
            Some(commit) => {
                if !snapshots.contains_key(commit) {
                    snapshots.insert(commit.clone(), Snapshot::at(repo_root, commit)?);
                }
                compare_snapshot_with(&snapshots[commit], repo_root, &unit.path, rules, cache)?
            }
            None => {
                let new = Tree::load_lenient(tree::Source::Dir(repo_root), &unit.path, cache)?;
                let mut report = compare_trees(&Tree::default(), &new, rules);
                judge_unread(&new, repo_root, &|_| None, &mut report);
                report
            }
        };
        let broken = report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Error);
        out.push(render::UnitReport {
            path: unit.path.clone(),
            kind: unit.kind,
            required: report.bump,
            requested,
            refused: broken || requested.is_some_and(|r| r < report.bump),
            findings: report.findings,
            warnings: report.warnings,
            first: report.first,
        });
    }
    Ok(out)
}

/// Files changed between `commit` and the working tree (untracked ones included),
/// repository-relative.
pub fn changed_files(repo_root: &Path, commit: &str) -> Result<Vec<String>, CheckError> {
    let git_error = |e: crate::Error| CheckError::Git {
        repo: repo_root.to_path_buf(),
        commit: commit.to_string(),
        message: e.message,
    };
    let git = Git::open(repo_root).map_err(git_error)?;
    let mut files = git
        .changed_files(commit, crate::git::Upto::WorkTree)
        .map_err(git_error)?;
    files.extend(git.untracked_files().map_err(git_error)?);
    files.sort();
    files.dedup();
    Ok(files)
}

/// Does any changed file sit in `dir` or in one of the local modules it uses?
pub fn unit_changed(repo_root: &Path, dir: &str, changed: &[String]) -> Result<bool, CheckError> {
    unit_changed_with(repo_root, dir, changed, &mut Cache::default())
}

/// [`unit_changed`], reusing interfaces already in `cache`.
pub fn unit_changed_with(
    repo_root: &Path,
    dir: &str,
    changed: &[String],
    cache: &mut Cache,
) -> Result<bool, CheckError> {
    // Lenient: a broken file elsewhere in the tree must not hide which folders it spans.
    let tree = Tree::load_lenient(tree::Source::Dir(repo_root), dir, cache)?;
    let mut dirs: Vec<&String> = tree.modules.keys().collect();
    dirs.push(&tree.root_dir);
    Ok(changed
        .iter()
        .any(|f| dirs.iter().any(|d| f.starts_with(&format!("{d}/")))))
}
