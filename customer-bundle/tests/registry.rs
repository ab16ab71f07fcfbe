//! Receipts reach the real `stackpack-registry` (started on 127.0.0.1) both ways:
//! `report` over HTTP (idempotent: a second report sends nothing), and files from
//! `receipts export --dir` imported with `stackpack-registry receipts import`.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{globex_inputs, Run, Runner, Vendor};

fn registry_bin() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_BIN_EXE_stackpack-runner")).with_file_name("stackpack-registry");
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-q",
                "-p",
                "stackpack-registry",
                "--bin",
                "stackpack-registry",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "cannot build `stackpack-registry`");
    }
    path
}

struct Registry {
    child: Child,
    data: PathBuf,
    url: String,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(registry_bin())
            .args(["serve", "--data"])
            .arg(&data)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        while ureq::get(&format!("{url}/healthz")).call().is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the registry did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Registry {
            child,
            data,
            url,
            _dir: dir,
        }
    }

    fn registry(&self, args: &[&str]) -> Run {
        Run::from(
            Command::new(registry_bin())
                .args(args)
                .arg("--data")
                .arg(&self.data)
                .output()
                .unwrap(),
        )
    }

    fn token(&self, role: &str, customer: Option<&str>) -> String {
        let mut args = vec!["token", "create", "--role", role];
        if let Some(customer) = customer {
            args.extend(["--customer", customer]);
        }
        self.registry(&args).ok().stdout.trim().to_string()
    }

    fn deployments(&self, token: &str) -> String {
        ureq::get(&format!("{}/api/v1/customers/globex", self.url))
            .set("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap()
            .into_string()
            .unwrap()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn receipts_reach_the_registry_online_and_through_an_exported_file() {
    let vendor = Vendor::new();
    let built = vendor.build();
    let version = built
        .iter()
        .find(|(s, _)| s == "data-plane")
        .unwrap()
        .1
        .clone();
    let runner = Runner::new("globex");
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout().to_str().unwrap()])
        .ok();
    let inputs = globex_inputs();
    let reference = format!("data-plane@{version}");
    runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();

    let registry = Registry::start();
    let token = registry.token("customer", Some("globex"));
    let report = runner
        .run(&[
            "report",
            "--registry",
            &registry.url,
            "--token",
            &token,
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(report["sent"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(report["sent"][0]["created"], true);
    let again = runner
        .run(&[
            "report",
            "--registry",
            &registry.url,
            "--token",
            &token,
            "--json",
        ])
        .ok()
        .json();
    assert!(again["sent"].as_array().unwrap().is_empty(), "{again}");

    let support = registry.token("support", None);
    let seen = registry.deployments(&support);
    assert!(seen.contains(&version), "{seen}");

    // A wrong token is refused clearly, and the receipt stays unreported.
    runner.run(&["drift", "data-plane"]).ok();
    let refused = runner
        .run(&[
            "report",
            "--registry",
            &registry.url,
            "--token",
            "not-a-token",
        ])
        .code(1);
    assert!(
        refused.stderr.contains("the registry refused receipt"),
        "{}",
        refused.stderr
    );

    // Airgapped: one file per receipt, imported by the registry's own command.
    let dir = runner.temp.path().join("carried");
    runner
        .run(&[
            "receipts",
            "export",
            "--dir",
            dir.to_str().unwrap(),
            "--unreported",
        ])
        .ok();
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let imported = registry
        .registry(&["receipts", "import", files[0].to_str().unwrap(), "--json"])
        .ok()
        .json();
    assert_eq!(imported["created"], true);
    // Importing it again is harmless, and so is reporting it afterwards.
    registry
        .registry(&["receipts", "import", files[0].to_str().unwrap()])
        .ok();
    let late = runner
        .run(&[
            "report",
            "--registry",
            &registry.url,
            "--token",
            &token,
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(late["sent"][0]["created"], false, "{late}");
}
