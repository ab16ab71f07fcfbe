//! The registry address is checked before any work: a port that is not an OCI
//! registry, or a plain-HTTP registry asked for over HTTPS, gets a clear error and a
//! non-zero exit before anything is built or pushed (never a silent death by SIGPIPE).

use crate::common;

use std::process::{Child, Command, Stdio};

use common::servers::{free_port, wait_for, Distribution};
use common::TestRepo;

/// A web server that is not a registry: Python's, serving an empty folder.
struct WebServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl WebServer {
    fn start() -> WebServer {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for(port);
        WebServer {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn publish(repo: &TestRepo, registry: &str, insecure: bool) -> common::Run {
    let mut args = vec![
        "publish",
        "--registry",
        registry,
        "--key",
        repo.key.to_str().unwrap(),
    ];
    if insecure {
        args.push("--insecure");
    }
    repo.run(&args)
}

#[test]
fn a_port_that_is_not_an_oci_registry_is_named_before_anything_is_built() {
    let repo = TestRepo::new();
    let web = WebServer::start();
    let run = publish(&repo, &format!("127.0.0.1:{}/acme", web.port), true).code(1);
    assert!(
        run.stderr.contains("is not an OCI registry"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("HTTP 404"), "{}", run.stderr);
    assert!(!run.stderr.contains("<html"), "{}", run.stderr);
    assert!(
        !repo.layout().join("index.json").exists(),
        "something was built"
    );
}

#[test]
fn a_plain_http_registry_asked_for_over_https_says_to_add_insecure() {
    let repo = TestRepo::new();
    let registry = Distribution::require();
    let run = publish(&repo, &format!("{}/acme", registry.host()), false).code(1);
    assert!(run.stderr.contains("speaks plain HTTP"), "{}", run.stderr);
    assert!(run.stderr.contains("--insecure"), "{}", run.stderr);
    assert!(
        !repo.layout().join("index.json").exists(),
        "something was built"
    );
}

#[test]
fn a_token_that_may_only_read_is_refused_before_anything_is_built() {
    let registry = common::servers::OurRegistry::start();
    let reader = registry.token("reader", None);
    let repo = TestRepo::new();
    let run = common::Run::from_output(
        Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args([
                "publish",
                "--insecure",
                "--registry",
                &format!("{}/acme", registry.host()),
                "--key",
                repo.key.to_str().unwrap(),
            ])
            .env("STACKPACK_REGISTRY_TOKEN", &reader)
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    )
    .code(1);
    assert!(
        run.stderr.contains("may read but not push"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("publisher"), "{}", run.stderr);
    assert!(!run.stderr.contains(&reader), "the token was printed");
    assert!(
        !repo.layout().join("index.json").exists(),
        "something was built"
    );
}
