//! The ledger end to end: bundles pushed over the OCI API become releases; runners'
//! signed receipts become deployments; support's questions are answered; receipts
//! carried out of an airgapped site are imported; the OpenAPI file describes it all.

mod common;

use std::process::Command;

use common::*;
use stackpack_schema::bundle::{BundleConfig, Engine, Source};
use stackpack_schema::receipt::{
    EngineRun, Outcome, PlanSummary, Receipt, ReceiptKind, SignedReceipt,
};
use stackpack_schema::signature::PrivateKey;

/// Pushes a bundle the way the packager does: config blob, stack layer, manifest
/// with the bundle artifact type, tagged with the version. Returns the digest.
fn push_bundle(client: &Client, stack: &str, version: &str) -> String {
    let repo = format!("acme/stacks/{stack}");
    let config = BundleConfig {
        format: 1,
        stack: stack.into(),
        version: semver::Version::parse(version).unwrap(),
        source: Source {
            repository: "https://git.example/acme/infra".into(),
            commit: format!("c0ffee{version}"),
            branch: if version.contains('-') {
                "feature/gpu".into()
            } else {
                "main".into()
            },
        },
        created: "2026-01-01T00:00:00Z".into(),
        engine: Engine {
            name: Some(stackpack_schema::bundle::EngineName::Tofu),
            version_constraint: None,
        },
        entrypoint: format!("stacks/{stack}"),
        interface: Default::default(),
        modules: vec![],
        files: vec![],
        providers: vec![],
        allowed_breaking: vec![],
        witness: None,
        changes: None,
    }
    .to_bytes();
    client.push_bundle_config(&repo, version, &config).1
}

struct Runner {
    key: PrivateKey,
    n: u32,
}

impl Runner {
    fn receipt(
        &mut self,
        customer: &str,
        stack: &str,
        version: &str,
        digest: &str,
        kind: ReceiptKind,
        outcome: Outcome,
    ) -> SignedReceipt {
        self.n += 1;
        let minute = self.n;
        SignedReceipt::sign(
            Receipt {
                format: 1,
                id: format!("{customer}-{}", self.n),
                customer: customer.into(),
                stack: stack.into(),
                version: semver::Version::parse(version).unwrap(),
                bundle_digest: digest.parse().unwrap(),
                inputs_hash: stackpack_schema::Digest::of(customer.as_bytes()),
                engine: EngineRun {
                    name: stackpack_schema::bundle::EngineName::Tofu,
                    version: "1.8.0".into(),
                },
                plan: PlanSummary {
                    add: 2,
                    change: 1,
                    destroy: 0,
                },
                kind,
                outcome,
                started_at: format!("2026-02-01T10:{minute:02}:00Z"),
                finished_at: format!("2026-02-01T10:{minute:02}:30Z"),
                key_id: String::new(),
            },
            &self.key,
        )
    }
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}@{}",
                r["customer"].as_str().unwrap(),
                r["stack"].as_str().unwrap(),
                r["version"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn releases_deployments_and_support_questions() {
    let server = Server::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let globex = Client::new(server.url(), Some(server.token("customer", Some("globex"))));
    let initech = Client::new(
        server.url(),
        Some(server.token("customer", Some("initech"))),
    );
    let hooli = Client::new(server.url(), Some(server.token("customer", Some("hooli"))));

    let d140 = push_bundle(&publisher, "data-plane", "1.4.0");
    let d150 = push_bundle(&publisher, "data-plane", "1.5.0");
    let d_pre = push_bundle(&publisher, "data-plane", "1.6.0-feature-gpu.2");
    // Version 1.10.0 beats 1.9.0 by precedence, not by string order.
    push_bundle(&publisher, "control-plane", "1.9.0");
    let c1100 = push_bundle(&publisher, "control-plane", "1.10.0");

    let releases = support
        .req("GET", "/api/v1/releases?stack=data-plane", &[], None)
        .json();
    let releases = releases.as_array().unwrap();
    assert_eq!(releases.len(), 3);
    let pre = releases
        .iter()
        .find(|r| r["version"] == "1.6.0-feature-gpu.2")
        .unwrap();
    assert_eq!(pre["prerelease"], true);
    assert_eq!(pre["source"]["branch"], "feature/gpu");
    assert_eq!(pre["digest"], d_pre.as_str());
    assert_eq!(pre["repository"], "acme/stacks/data-plane");
    let stacks = support.req("GET", "/api/v1/stacks", &[], None).json();
    let control = stacks
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "control-plane")
        .unwrap();
    assert_eq!(control["latestStable"], "1.10.0");

    let mut globex_runner = Runner {
        key: PrivateKey::from_secret_bytes([1; 32]),
        n: 0,
    };
    let mut initech_runner = Runner {
        key: PrivateKey::from_secret_bytes([2; 32]),
        n: 0,
    };
    let mut hooli_runner = Runner {
        key: PrivateKey::from_secret_bytes([3; 32]),
        n: 0,
    };
    let post = |client: &Client, r: &SignedReceipt| {
        client.req(
            "POST",
            "/api/v1/receipts",
            &[("Content-Type", "application/json")],
            Some(&r.to_bytes()),
        )
    };

    // globex: 1.4.0 then 1.5.0 (current, latest stable); a failed apply of the
    // prerelease changes nothing. Then a drift check finds drift.
    let r = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&globex, &r).status, 201);
    assert_eq!(
        post(&globex, &r).status,
        200,
        "posting the same receipt again is harmless"
    );
    let r = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&globex, &r).status, 201);
    let r = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.6.0-feature-gpu.2",
        &d_pre,
        ReceiptKind::Apply,
        Outcome::Failed,
    );
    assert_eq!(post(&globex, &r).status, 201);
    let r = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Drift,
        Outcome::Drifted,
    );
    assert_eq!(post(&globex, &r).status, 201);
    let r = globex_runner.receipt(
        "globex",
        "control-plane",
        "1.10.0",
        &c1100,
        ReceiptKind::Apply,
        Outcome::NoChanges,
    );
    assert_eq!(post(&globex, &r).status, 201);

    // initech: still on 1.4.0 (behind); drifted once, then re-applied (not drifted).
    let r = initech_runner.receipt(
        "initech",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Drift,
        Outcome::Drifted,
    );
    assert_eq!(post(&initech, &r).status, 201);
    let r = initech_runner.receipt(
        "initech",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&initech, &r).status, 201);

    // hooli: runs the prerelease; a rollback receipt later puts 1.5.0 back... no: hooli
    // stays on the prerelease.
    let r = hooli_runner.receipt(
        "hooli",
        "data-plane",
        "1.6.0-feature-gpu.2",
        &d_pre,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&hooli, &r).status, 201);

    // Refusals: another customer's receipt, an altered receipt, another key, a reused id.
    let r = hooli_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&hooli, &r).status, 403);
    let mut altered = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    altered.receipt.version = semver::Version::parse("9.9.9").unwrap();
    let r = post(&globex, &altered);
    assert_eq!((r.status, r.error_code().as_str()), (400, "BAD_REQUEST"));
    let stranger = Runner {
        key: PrivateKey::from_secret_bytes([7; 32]),
        n: 50,
    }
    .receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    let r = post(&globex, &stranger);
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (403, "DENIED"),
        "a key other than the pinned one"
    );
    // An admin trusts the new key (a second runner); then it is accepted.
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let pem = PrivateKey::from_secret_bytes([7; 32]).public_key().to_pem();
    let body = serde_json::to_vec(&serde_json::json!({ "publicKeyPem": pem })).unwrap();
    assert_eq!(
        support
            .req("POST", "/api/v1/customers/globex/keys", &[], Some(&body))
            .status,
        403
    );
    assert_eq!(
        admin
            .req("POST", "/api/v1/customers/nobody/keys", &[], Some(&body))
            .status,
        404
    );
    assert_eq!(
        admin
            .req(
                "POST",
                "/api/v1/customers/globex/keys",
                &[],
                Some(br#"{"publicKeyPem":"junk"}"#)
            )
            .status,
        400
    );
    let r = admin.req("POST", "/api/v1/customers/globex/keys", &[], Some(&body));
    assert_eq!(r.status, 201);
    assert_eq!(
        r.json()["keyId"],
        PrivateKey::from_secret_bytes([7; 32]).public_key().key_id()
    );
    let mut second = stranger.receipt.clone();
    second.id = "globex-second-runner".into();
    second.kind = ReceiptKind::Plan;
    let second = SignedReceipt::sign(second, &PrivateKey::from_secret_bytes([7; 32]));
    assert_eq!(post(&globex, &second).status, 201);
    let mut reused = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    reused.receipt.id = "globex-1".into();
    let reused = SignedReceipt::sign(reused.receipt, &globex_runner.key);
    assert_eq!(post(&globex, &reused).status, 409);
    assert_eq!(
        post(
            &globex,
            &SignedReceipt {
                signature: "AAAA".into(),
                ..reused.clone()
            }
        )
        .status,
        400
    );
    assert_eq!(
        globex
            .req("POST", "/api/v1/receipts", &[], Some(b"{not json"))
            .status,
        400
    );

    let versions = support
        .req("GET", "/api/v1/support/versions", &[], None)
        .json();
    assert_eq!(
        names(&versions),
        [
            "globex:control-plane@1.10.0",
            "globex:data-plane@1.5.0",
            "hooli:data-plane@1.6.0-feature-gpu.2",
            "initech:data-plane@1.4.0"
        ]
    );
    let behind = support
        .req("GET", "/api/v1/support/behind", &[], None)
        .json();
    assert_eq!(names(&behind), ["initech:data-plane@1.4.0"]);
    assert_eq!(behind[0]["latestStable"], "1.5.0");
    let prerelease = support
        .req("GET", "/api/v1/support/prerelease", &[], None)
        .json();
    assert_eq!(names(&prerelease), ["hooli:data-plane@1.6.0-feature-gpu.2"]);
    let drifted = support
        .req("GET", "/api/v1/support/drifted", &[], None)
        .json();
    assert_eq!(names(&drifted), ["globex:data-plane@1.5.0"]);

    let detail = globex
        .req("GET", "/api/v1/customers/globex", &[], None)
        .json();
    assert_eq!(detail["customer"]["id"], "globex");
    assert_eq!(detail["running"].as_array().unwrap().len(), 2);
    assert_eq!(detail["recent"].as_array().unwrap().len(), 6);
    let deployments = support
        .req("GET", "/api/v1/deployments?customer=initech", &[], None)
        .json();
    assert_eq!(deployments.as_array().unwrap().len(), 2);
    assert_eq!(deployments[0]["kind"], "apply", "newest first");
    assert_eq!(
        support
            .req("GET", "/api/v1/customers/nobody", &[], None)
            .status,
        404
    );

    // Metrics saw all of it.
    let metrics = String::from_utf8(support.req("GET", "/metrics", &[], None).body).unwrap();
    assert!(metrics.contains("stackpack_registry_requests_total{route=\"manifests\",method=\"PUT\",status=\"201\"} 5"), "{metrics}");
    assert!(metrics
        .contains("stackpack_registry_request_duration_seconds_bucket{route=\"api\",le=\"+Inf\"}"));
    assert!(!metrics.contains("stackpack_registry_blob_bytes_received_total 0\n"));
}

#[test]
fn stable_tags_are_immutable_and_prerelease_tags_follow_the_policy() {
    let server = Server::start();
    let c = Client::new(server.url(), Some(server.token("publisher", None)));
    let (_, first) = c.push_image("acme/stacks/x", "2.0.0", 1);
    let (other, _) = c.push_image("acme/stacks/x", "scratch", 2);
    let r = c.push_manifest("acme/stacks/x", "2.0.0", &other, OCI_MANIFEST);
    assert_eq!((r.status, r.error_code().as_str()), (403, "DENIED"));
    let r = c.req("GET", "/v2/acme/stacks/x/manifests/2.0.0", &[], None);
    assert_eq!(
        r.header("docker-content-digest"),
        Some(first.as_str()),
        "the tag did not move"
    );
    // The same digest again is fine (idempotent publish).
    let (same, _) = (
        c.req("GET", "/v2/acme/stacks/x/manifests/2.0.0", &[], None)
            .body,
        (),
    );
    assert_eq!(
        c.push_manifest("acme/stacks/x", "2.0.0", &same, OCI_MANIFEST)
            .status,
        201
    );
    // Prerelease tags move by default.
    c.push_image("acme/stacks/x", "2.1.0-pr.1", 3);
    assert_eq!(
        c.push_manifest("acme/stacks/x", "2.1.0-pr.1", &other, OCI_MANIFEST)
            .status,
        201
    );

    let strict = Server::start_with(&["--prerelease-tags", "immutable"]);
    let c = Client::new(strict.url(), Some(strict.token("publisher", None)));
    c.push_image("acme/stacks/x", "2.1.0-pr.1", 3);
    let (other, _) = c.push_image("acme/stacks/x", "scratch", 2);
    assert_eq!(
        c.push_manifest("acme/stacks/x", "2.1.0-pr.1", &other, OCI_MANIFEST)
            .status,
        403
    );
    assert_eq!(
        c.push_manifest("acme/stacks/x", "latest", &other, OCI_MANIFEST)
            .status,
        201
    );
}

#[test]
fn receipts_import_cli_openapi_and_gc() {
    let mut server = Server::start();
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let digest = push_bundle(&publisher, "data-plane", "1.0.0");

    // OpenAPI names every ledger path.
    let api = support.req("GET", "/api/v1/openapi.json", &[], None).json();
    assert!(api["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/api/v1/releases",
        "/api/v1/receipts",
        "/api/v1/customers/{id}",
        "/api/v1/support/behind",
        "/api/v1/support/drifted",
        "/api/v1/fleet",
        "/api/v1/adoption",
        "/api/v1/customers/{id}/history",
    ] {
        assert!(
            api["paths"][path].is_object(),
            "{path} missing from the OpenAPI file"
        );
    }

    // A bundle kept in another registry (ECR, Harbor) is recorded through the API.
    let elsewhere = |version: &str, digest: &str| {
        serde_json::to_vec(&serde_json::json!({
            "stack": "data-plane", "version": version, "digest": digest,
            "repository": "123456789.dkr.ecr.example/acme/stacks/data-plane",
            "source": {"repository": "https://git.example/acme/infra", "commit": "abc", "branch": "main"}
        }))
        .unwrap()
    };
    let ecr_digest = sha256(b"bundle in ecr");
    let reader = Client::new(server.url(), Some(server.token("reader", None)));
    assert_eq!(
        reader
            .req(
                "POST",
                "/api/v1/releases",
                &[],
                Some(&elsewhere("1.1.0", &ecr_digest))
            )
            .status,
        403
    );
    assert_eq!(
        publisher
            .req(
                "POST",
                "/api/v1/releases",
                &[],
                Some(&elsewhere("1.1.0", &ecr_digest))
            )
            .status,
        201
    );
    assert_eq!(
        publisher
            .req(
                "POST",
                "/api/v1/releases",
                &[],
                Some(&elsewhere("1.1.0", &ecr_digest))
            )
            .status,
        201,
        "idempotent"
    );
    let r = publisher.req(
        "POST",
        "/api/v1/releases",
        &[],
        Some(&elsewhere("1.1.0", &sha256(b"other"))),
    );
    assert_eq!((r.status, r.error_code().as_str()), (409, "CONFLICT"));
    assert_eq!(
        publisher
            .req(
                "POST",
                "/api/v1/releases",
                &[],
                Some(&elsewhere("1.1", &ecr_digest))
            )
            .status,
        400
    );
    assert_eq!(
        publisher
            .req(
                "POST",
                "/api/v1/releases",
                &[],
                Some(&elsewhere("1.2.0", "sha256:nope"))
            )
            .status,
        400
    );
    let stacks = support.req("GET", "/api/v1/stacks", &[], None).json();
    assert_eq!(stacks[0]["latestStable"], "1.1.0");

    // A receipt file carried out of an airgapped site.
    let mut runner = Runner {
        key: PrivateKey::from_secret_bytes([5; 32]),
        n: 0,
    };
    let receipt = runner.receipt(
        "umbrella",
        "data-plane",
        "1.0.0",
        &digest,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receipt.json");
    std::fs::write(&file, receipt.to_bytes()).unwrap();
    let import = |json: bool| {
        let mut cmd = Command::new(BIN);
        cmd.args(["receipts", "import"])
            .arg(&file)
            .arg("--data")
            .arg(&server.data);
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    let out = import(true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["receipts"][0]["created"],
        true
    );
    let out = import(true);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["receipts"][0]["created"],
        false
    );
    let versions = support
        .req("GET", "/api/v1/support/versions", &[], None)
        .json();
    assert_eq!(names(&versions), ["umbrella:data-plane@1.0.0"]);
    std::fs::write(&file, b"garbage").unwrap();
    let out = import(false);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    let out = Command::new(BIN)
        .args(["token", "create", "--role", "customer", "--data"])
        .arg(&server.data)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a customer token without --customer is a usage error"
    );

    // gc: an unreferenced blob and an abandoned upload go; what a manifest needs stays.
    let loose = bytes(99, 4096);
    let loose_digest = publisher.push_blob("acme/stacks/data-plane", &loose);
    let r = publisher.req(
        "POST",
        "/v2/acme/stacks/data-plane/blobs/uploads/",
        &[],
        None,
    );
    assert_eq!(r.status, 202);
    server.kill();
    let out = Command::new(BIN)
        .args([
            "gc",
            "--json",
            "--grace-secs",
            "0",
            "--upload-lifetime-secs",
            "0",
            "--data",
        ])
        .arg(&server.data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["blobsDeleted"], 1, "{report}");
    assert_eq!(report["expiredUploads"], 1, "{report}");
    server.spawn();
    let publisher = Client::new(server.url(), publisher.token.clone());
    assert_eq!(
        publisher
            .req(
                "HEAD",
                &format!("/v2/acme/stacks/data-plane/blobs/{loose_digest}"),
                &[],
                None
            )
            .status,
        404
    );
    let manifest = publisher
        .req(
            "GET",
            "/v2/acme/stacks/data-plane/manifests/1.0.0",
            &[],
            None,
        )
        .json();
    for d in [&manifest["config"], &manifest["layers"][0]] {
        let r = publisher.req(
            "GET",
            &format!(
                "/v2/acme/stacks/data-plane/blobs/{}",
                d["digest"].as_str().unwrap()
            ),
            &[],
            None,
        );
        assert_eq!(r.status, 200);
        assert_eq!(sha256(&r.body), d["digest"].as_str().unwrap());
    }
}

#[test]
fn a_destroyed_stack_no_longer_counts_as_running() {
    let server = Server::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let globex = Client::new(server.url(), Some(server.token("customer", Some("globex"))));
    let digest = push_bundle(&publisher, "data-plane", "1.4.0");
    let mut runner = Runner {
        key: PrivateKey::from_secret_bytes([4; 32]),
        n: 0,
    };
    for kind in [ReceiptKind::Apply, ReceiptKind::Destroy] {
        let receipt = runner.receipt(
            "globex",
            "data-plane",
            "1.4.0",
            &digest,
            kind,
            Outcome::Succeeded,
        );
        let posted = globex.req(
            "POST",
            "/api/v1/receipts",
            &[("Content-Type", "application/json")],
            Some(&receipt.to_bytes()),
        );
        assert_eq!(posted.status, 201, "{kind}");
        let versions = support
            .req("GET", "/api/v1/support/versions", &[], None)
            .json();
        let expected: Vec<String> = match kind {
            ReceiptKind::Destroy => vec![],
            _ => vec!["globex:data-plane@1.4.0".into()],
        };
        assert_eq!(names(&versions), expected, "after {kind}");
    }
}
