//! A vendor's repository made from a fixture under `tests/fixtures/`: copied into a
//! temporary folder, committed on `main`, with a signing key made by `stackpack
//! keygen`. The scenarios that run the programs end to end start from one.

use std::path::PathBuf;
use std::process::Command;

use super::{binary, copy_dir, git, repository_root, Run};

pub struct FixtureVendor {
    /// Holds the repository, the keys and whatever a test puts beside them.
    pub temp: tempfile::TempDir,
    pub repo: PathBuf,
    /// The private signing key (PKCS#8 PEM) and its public half.
    pub key: PathBuf,
    pub public_key: PathBuf,
}

impl FixtureVendor {
    /// `tests/fixtures/<fixture>` as a fresh repository with one commit.
    pub fn new(fixture: &str) -> FixtureVendor {
        let temp = tempfile::tempdir().unwrap();
        let repo = temp.path().join("infra");
        copy_dir(
            &repository_root().join("tests/fixtures").join(fixture),
            &repo,
        );
        std::fs::write(repo.join(".gitignore"), ".stackpack/\n").unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "initial"]);
        let keys = temp.path().join("vendor");
        let keygen = Command::new(binary("stackpack"))
            .args(["keygen", "--out"])
            .arg(&keys)
            .output()
            .expect("stackpack runs");
        Run::from(keygen).ok();
        FixtureVendor {
            repo,
            key: keys.with_extension("key"),
            public_key: keys.with_extension("pub"),
            temp,
        }
    }

    /// Replaces the first `from` with `to` in `path` and commits.
    pub fn commit(&self, path: &str, from: &str, to: &str, message: &str) {
        let file = self.repo.join(path);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(from), "{path}: {text}");
        std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
        git(&self.repo, &["commit", "-q", "-am", message]);
    }
}
