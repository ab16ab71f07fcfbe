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

    /// The repository address recorded in bundles, never with credentials: without
    /// userinfo, query or fragment, and refused when what is left still looks like
    /// it carries one (the address is not printed).
    pub fn source_address(&self) -> Result<String> {
        let (url, from) = match &self.config.repository {
            Some(url) => (url.clone(), "`repository` in `stackpack.toml`"),
            None => match self.git.remote_url() {
                Some(url) => (url, "git's `remote.origin.url`"),
                None => return Ok(String::new()),
            },
        };
        let stripped = strip_credentials(&url);
        if let Some(what) = crate::git::credential_in(&stripped) {
            return Err(Error::usage(format!(
                "the repository address in {from} looks like it holds {what} (not shown): it would be signed into every bundle"
            ))
            .hint("give the address without credentials (`https://git.example.com/acme/infra.git`), and let git take them from a credential helper"));
        }
        Ok(stripped)
    }
}
