//! What the packager asks git. It runs the `git` program rather than linking a
//! library: every CI image has it, and it reads every repository format and config
//! (worktrees, shallow clones, `safe.directory`) exactly as the user's own git does.

use std::path::{Path, PathBuf};

use std::process::Command;

use crate::error::{Error, Result};

/// A repository's work tree.
#[derive(Clone, Debug)]
pub struct Git {
    root: PathBuf,
}

/// A tracked file as the index records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackedFile {
    /// Path relative to the repository root, with `/`.
    pub path: String,
    pub executable: bool,
    pub symlink: bool,
}

/// How far a comparison with a base commit reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upto {
    /// The last commit.
    Head,
    /// The files as they are now, uncommitted changes included.
    WorkTree,
}

impl Git {
    /// Opens the repository whose work tree contains `dir`. Paths given to and
    /// returned by this type are relative to `dir`, which may be a sub-folder of the
    /// repository (a `stackpack.toml` below the top of a larger monorepo).
    pub fn open(dir: &Path) -> Result<Self> {
        let git = Git {
            root: dir.to_path_buf(),
        };
        git.run(&["rev-parse", "--show-toplevel"]).map_err(|e| {
            Error::usage(format!(
                "`{}` is not inside a git repository",
                dir.display()
            ))
            .hint(format!(
                "stackpack reads versions and changes from git ({})",
                e.message
            ))
        })?;
        Ok(git)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn run(&self, args: &[&str]) -> Result<String> {
        let stdout = self.run_bytes(args)?;
        String::from_utf8(stdout)
            .map_err(|_| Error::refused(format!("`git {}` printed non-UTF-8", args.join(" "))))
    }

    fn run_bytes(&self, args: &[&str]) -> Result<Vec<u8>> {
        let output = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| {
                Error::usage(format!("cannot run `git`: {e}"))
                    .hint("install git and make sure it is on `PATH`")
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(Error::refused(format!(
                "`git {}` failed: {}",
                args.join(" "),
                stderr.trim()
            )));
        }
        Ok(output.stdout)
    }

    /// The files of `commit` below the root, as a tar archive (`git archive`), with
    /// paths relative to the root.
    pub fn archive(&self, commit: &str) -> Result<Vec<u8>> {
        self.run_bytes(&["archive", "--format=tar", commit])
    }

    /// Files git does not track and does not ignore, relative to the root.
    pub fn untracked_files(&self) -> Result<Vec<String>> {
        Ok(split_nul(&self.run(&[
            "ls-files",
            "--others",
            "--exclude-standard",
            "-z",
        ])?))
    }

    /// The full commit id `rev` names, if it names one.
    pub fn resolve(&self, rev: &str) -> Option<String> {
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ])
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    }

    pub fn head(&self) -> Result<String> {
        self.resolve("HEAD").ok_or_else(|| {
            Error::usage("the repository has no commits yet")
                .at(self.root.display())
                .hint("commit the stacks first: bundles are built from commits")
        })
    }

    /// The commit time, seconds since the epoch (committer date, so a rebase that
    /// changes content also changes the time).
    pub fn commit_time(&self, commit: &str) -> Result<i64> {
        let out = self.run(&["show", "-s", "--format=%ct", commit])?;
        out.trim()
            .parse()
            .map_err(|_| Error::refused(format!("cannot read the time of commit `{commit}`")))
    }

    /// The checked-out branch, if HEAD is on one.
    pub fn current_branch(&self) -> Option<String> {
        self.run(&["symbolic-ref", "--short", "-q", "HEAD"])
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// `origin`'s address, if set.
    pub fn remote_url(&self) -> Option<String> {
        self.run(&["config", "--get", "remote.origin.url"])
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Files that differ between `base` and HEAD (or the work tree, when
    /// `include_worktree`), both sides of renames included.
    pub fn changed_files(&self, base: &str, upto: Upto) -> Result<Vec<String>> {
        let include_worktree = upto == Upto::WorkTree;
        let mut args = vec![
            "diff",
            "--name-only",
            "--relative",
            "--no-renames",
            "-z",
            base,
        ];
        if !include_worktree {
            args.push("HEAD");
        }
        args.push("--");
        Ok(split_nul(&self.run(&args)?))
    }

    /// Tracked files under `dir` (relative to the root), with their index modes.
    pub fn tracked_files(&self, dir: &str) -> Result<Vec<TrackedFile>> {
        let out = self.run(&["ls-files", "-s", "-z", "--", dir])?;
        let mut files = Vec::new();
        for record in split_nul(&out) {
            // `<mode> <object> <stage>\t<path>`
            let Some((meta, path)) = record.split_once('\t') else {
                continue;
            };
            let mode = meta.split(' ').next().unwrap_or("");
            files.push(TrackedFile {
                path: path.to_string(),
                executable: mode == "100755",
                symlink: mode == "120000",
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        files.dedup_by(|a, b| a.path == b.path);
        Ok(files)
    }

    /// Tracked files under `paths` that differ from HEAD in the index or work tree.
    pub fn dirty_files(&self, paths: &[&str]) -> Result<Vec<String>> {
        let mut args = vec!["status", "--porcelain", "-z", "--untracked-files=no", "--"];
        args.extend(paths);
        Ok(split_nul(&self.run(&args)?)
            .into_iter()
            .filter_map(|record| record.get(3..).map(str::to_string))
            .collect())
    }
}

fn split_nul(text: &str) -> Vec<String> {
    text.split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The branch CI says it is building, before asking git: pull requests first
/// (`GITHUB_HEAD_REF`), then the pushed ref (`GITHUB_REF_NAME`), then GitLab.
pub fn branch_from_ci_environment() -> Option<String> {
    ["GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"]
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
}

/// Removes what may carry a credential from a repository address: the userinfo
/// (`https://user:token@host/x`), the query (`?token=…`) and the fragment.
pub fn strip_credentials(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = match rest.split_once('/') {
            Some((authority, path)) => (authority, Some(path)),
            None => (rest, None),
        };
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        match path {
            Some(path) => format!("{scheme}://{host}/{path}"),
            None => format!("{scheme}://{host}"),
        }
    } else {
        url.to_string()
    }
}

/// What credential an address still seems to carry once stripped (a token in its
/// path, a `user:secret` part), if any: such an address is refused, not recorded.
pub fn credential_in(stripped: &str) -> Option<&'static str> {
    if let Some(what) = crate::secret_text::secret_in(stripped) {
        return Some(what);
    }
    let (_, rest) = stripped.split_once("://")?;
    let (_, path) = rest.split_once('/')?;
    path.split('/')
        .any(|part| part.contains(':'))
        .then_some("a `name:secret` pair in its path")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_a_bundle() {
        assert_eq!(
            strip_credentials("https://ci:s3cret@git.acme.example/platform/infra.git"),
            "https://git.acme.example/platform/infra.git"
        );
        assert_eq!(
            strip_credentials("git@github.com:acme/infra.git"),
            "git@github.com:acme/infra.git"
        );
        assert_eq!(strip_credentials("https://host"), "https://host");
        assert_eq!(
            strip_credentials("https://git.acme.example/infra.git?token=s3cret#main"),
            "https://git.acme.example/infra.git"
        );
    }

    #[test]
    fn an_address_that_still_carries_a_credential_is_told() {
        let token = format!("ghp_{}", "a".repeat(36));
        assert_eq!(
            credential_in(&format!("https://git.acme.example/{token}/infra.git")),
            Some("a GitHub token")
        );
        assert!(credential_in("https://git.acme.example/oauth2:abc123/infra.git").is_some());
        assert_eq!(
            credential_in("https://git.acme.example/platform/infra.git"),
            None
        );
        assert_eq!(credential_in("git@github.com:acme/infra.git"), None);
    }
}
