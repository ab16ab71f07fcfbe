//! Receipts reach the real `stackpack-registry` (started on 127.0.0.1) both ways:
//! `report` over HTTP (idempotent: a second report sends nothing), and files from
//! `receipts export --dir` imported with `stackpack-registry receipts import`.

use crate::common;

use common::{globex_inputs, Runner, Vendor};
use stackpack_test_support::servers::OurRegistry;

/// Our registry on 127.0.0.1, with the ledger query the tests need.
struct Registry(OurRegistry);

impl Registry {
    fn start() -> Registry {
        Registry(OurRegistry::start())
    }

    fn url(&self) -> String {
        self.0.url()
    }

    fn registry(&self, args: &[&str]) -> common::Run {
        self.0.run(args)
    }

    fn token(&self, role: &str, customer: Option<&str>) -> String {
        self.0.token(role, customer)
    }

    fn deployments(&self, token: &str) -> String {
        ureq::get(&format!("{}/api/v1/customers/globex", self.url()))
            .set("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap()
            .into_string()
            .unwrap()
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
            &registry.url(),
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
            &registry.url(),
            "--token",
            &token,
            "--json",
        ])
        .ok()
        .json();
    assert!(again["sent"].as_array().unwrap().is_empty(), "{again}");

    // Regression: with nothing pending, `report` to a registry nobody answers used to
    // say "the registry has every receipt" and exit 0. It asks, and says who did not answer.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let nobody = runner
        .run(&[
            "report",
            "--registry",
            &format!("http://127.0.0.1:{closed}"),
            "--token",
            &token,
        ])
        .code(1);
    assert!(
        nobody.stderr.contains("cannot reach the registry")
            && nobody.stderr.contains("no receipt was pending"),
        "{}",
        nobody.stderr
    );
    assert!(
        !nobody.stdout.contains("every receipt"),
        "{}",
        nobody.stdout
    );
    let wrong_token = runner
        .run(&[
            "report",
            "--registry",
            &registry.url(),
            "--token",
            "not-a-token",
        ])
        .code(1);
    assert!(
        wrong_token.stderr.contains("refused the token"),
        "{}",
        wrong_token.stderr
    );

    let support = registry.token("support", None);
    let seen = registry.deployments(&support);
    assert!(seen.contains(&version), "{seen}");

    // A wrong token is refused clearly, and the receipt stays unreported.
    runner.run(&["drift", "data-plane"]).ok();
    let refused = runner
        .run(&[
            "report",
            "--registry",
            &registry.url(),
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
    assert_eq!(imported["receipts"][0]["created"], true);
    // Importing it again is harmless, and so is the array file `receipts export -o`
    // writes, and so is reporting it afterwards.
    registry
        .registry(&["receipts", "import", files[0].to_str().unwrap()])
        .ok();
    let array_file = dir.join("all.json");
    runner
        .run(&["receipts", "export", "-o", array_file.to_str().unwrap()])
        .ok();
    let again = registry
        .registry(&["receipts", "import", array_file.to_str().unwrap(), "--json"])
        .ok()
        .json();
    let receipts = again["receipts"].as_array().unwrap();
    assert!(!receipts.is_empty());
    assert!(receipts.iter().all(|r| r["created"] == false), "{again}");
    let late = runner
        .run(&[
            "report",
            "--registry",
            &registry.url(),
            "--token",
            &token,
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(late["sent"][0]["created"], false, "{late}");
}
