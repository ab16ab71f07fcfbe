//! The vendor repository as the packager sees it: configuration, git, stacks.

use std::path::{Path, PathBuf};

use crate::config::RepoConfig;
use crate::discover::{discover_stacks, Stack};
use crate::error::{Error, Result};
use crate::git::{strip_credentials, Git};

pub struct Repository {
    pub root: PathBuf,
    pub config: RepoConfig,
    pub git: Git,
    pub stacks: Vec<Stack>,
}

impl Repository {
    /// Opens the repository whose `stackpack.toml` is in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::usage(format!("`{}` is not a folder", dir.display()))
                .hint("pass the vendor repository's folder with `--repo DIR`"));
        }
        let config = RepoConfig::load(dir)?;
        let git = Git::open(dir)?;
        let stacks = discover_stacks(dir, &config)?;
        Ok(Repository {
            root: dir.to_path_buf(),
            config,
            git,
            stacks,
        })
    }

    pub fn stack(&self, name: &str) -> Result<&Stack> {
        self.stacks.iter().find(|s| s.name == name).ok_or_else(|| {
            let known: Vec<String> = self
                .stacks
                .iter()
                .map(|s| format!("`{}`", s.name))
                .collect();
            Error::usage(format!("there is no stack named `{name}`"))
                .hint(format!("the stacks here are {}", known.join(", ")))
        })
    }

    /// The repository address recorded in bundles, never with credentials.
    pub fn source_address(&self) -> String {
        self.config
            .repository
            .clone()
            .or_else(|| self.git.remote_url())
            .map(|url| strip_credentials(&url))
            .unwrap_or_default()
    }
}
