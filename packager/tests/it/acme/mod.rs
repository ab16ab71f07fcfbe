//! A temporary git repository copied from `examples/acme-infra`.

use std::path::{Path, PathBuf};
use std::process::Command;

use stackpack_packager::check::required_bump;
use stackpack_schema::version::Bump;

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

pub struct Repo {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
}

impl Repo {
    pub fn new() -> Repo {
        Repo::at("acme-infra", "acme-infra")
    }

    /// The vendor repository in `examples/acme-infra` of a larger git repository.
    pub fn nested() -> Repo {
        Repo::at("monorepo", "monorepo/examples/acme-infra")
    }

    fn at(git_root: &str, vendor_root: &str) -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(vendor_root);
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/acme-infra"),
            &root,
        );
        let top = tmp.path().join(git_root);
        std::fs::write(top.join("README.md"), "monorepo\n").unwrap();
        git(&top, &["init", "-q", "-b", "main"]);
        git(&top, &["add", "-A"]);
        git(&top, &["commit", "-q", "-m", "initial"]);
        Repo { _tmp: tmp, root }
    }

    pub fn edit(&self, file: &str, f: impl FnOnce(String) -> String) {
        let path = self.root.join(file);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        std::fs::write(&path, f(text)).unwrap();
    }

    /// Commits the working tree; returns the commit before it.
    pub fn commit(&self, message: &str) -> String {
        let before = git(&self.root, &["rev-parse", "HEAD"]);
        git(&self.root, &["add", "-A"]);
        git(&self.root, &["commit", "-q", "-m", message]);
        before
    }

    pub fn bump(&self, stack: &str, before: &str) -> (Bump, Vec<String>) {
        let report = required_bump(&self.root, stack, before).unwrap();
        let rules = report
            .findings
            .iter()
            .map(|f| format!("{} {} {}", f.rule, f.item, f.location()))
            .collect();
        (report.bump, rules)
    }
}
