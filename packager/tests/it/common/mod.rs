//! A temporary vendor repository, copied from `examples/acme-infra`, with real git
//! commits, and the real `stackpack` binary to run against it.

pub mod servers;

use std::path::{Path, PathBuf};
use std::process::Command;

pub use stackpack_test_support::{copy_dir, example_dir, git, Run};

pub fn stackpack(dir: &Path, args: &[&str]) -> Run {
    Run::from(
        Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(dir)
            .args(args)
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("CI_COMMIT_REF_NAME")
            .env("NO_COLOR", "1")
            .output()
            .expect("stackpack runs"),
    )
}

/// The rules of a customer's error-level findings in `check --json`, in order.
pub fn customer_error_rules(json: &serde_json::Value, customer: &str) -> Vec<String> {
    json["customers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["customer"] == customer)
        .flat_map(|c| c["findings"].as_array().unwrap().clone())
        .filter(|f| f["severity"] == "error")
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

/// A vendor repository in a temporary folder, on branch `main`, with one commit.
pub struct TestRepo {
    pub temp: tempfile::TempDir,
    pub dir: PathBuf,
    pub key: PathBuf,
    pub public_key: PathBuf,
}

impl TestRepo {
    pub fn new() -> TestRepo {
        stackpack_test_support::use_provider_mirror();
        TestRepo::copied_from(&example_dir(), "acme-infra")
    }

    /// `tests/fixtures/<fixture>` instead of the example: the small repositories of
    /// built-in `terraform_data` stacks, for scenarios the AWS example would only
    /// make minutes longer.
    pub fn fixture(fixture: &str) -> TestRepo {
        let source = stackpack_test_support::repository_root()
            .join("tests/fixtures")
            .join(fixture);
        let repo = TestRepo::copied_from(&source, fixture);
        // The fixtures lock no provider: their mirror is empty, and not committed.
        std::fs::create_dir_all(repo.dir.join(".stackpack/providers")).unwrap();
        repo
    }

    fn copied_from(source: &Path, name: &str) -> TestRepo {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join(name);
        copy_dir(source, &dir);
        std::fs::write(dir.join(".gitignore"), ".stackpack/\n").unwrap();
        git(&dir, &["init", "-q", "-b", "main"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", "initial"]);
        let keys = temp.path().join("keys");
        let run = stackpack(
            temp.path(),
            &["keygen", "--out", keys.join("vendor").to_str().unwrap()],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        TestRepo {
            dir,
            key: keys.join("vendor.key"),
            public_key: keys.join("vendor.pub"),
            temp,
        }
    }

    pub fn write(&self, path: &str, content: &str) {
        let path = self.dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn append(&self, path: &str, content: &str) {
        let existing = std::fs::read_to_string(self.dir.join(path)).unwrap_or_default();
        self.write(path, &format!("{existing}{content}"));
    }

    pub fn commit(&self, message: &str) {
        git(&self.dir, &["add", "-A"]);
        git(&self.dir, &["commit", "-q", "-m", message]);
    }

    pub fn checkout_new(&self, branch: &str) {
        git(&self.dir, &["checkout", "-q", "-b", branch]);
    }

    pub fn checkout(&self, branch: &str) {
        git(&self.dir, &["checkout", "-q", branch]);
    }

    pub fn run(&self, args: &[&str]) -> Run {
        stackpack(&self.dir, args)
    }

    pub fn build(&self, extra: &[&str]) -> serde_json::Value {
        let mut args = vec!["build", "--json", "--key", self.key.to_str().unwrap()];
        args.extend_from_slice(extra);
        self.run(&args).ok().json()
    }

    /// `stack -> version` for the stacks a build actually built.
    pub fn built(report: &serde_json::Value) -> Vec<(String, String)> {
        report["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["built"] == true)
            .map(|s| {
                (
                    s["stack"].as_str().unwrap().to_string(),
                    s["version"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    pub fn layout(&self) -> PathBuf {
        self.dir.join(".stackpack").join("bundles")
    }
}
