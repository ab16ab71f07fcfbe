//! The ledger end to end: bundles pushed over the OCI API become releases; runners'
//! signed receipts become deployments; support's questions are answered; receipts
//! carried out of an airgapped site are imported; the OpenAPI file describes it all.

use crate::common;

use std::process::Command;

use common::*;
use stackpack_schema::bundle::{BundleConfig, Engine, Source};
use stackpack_schema::receipt::{Outcome, ReceiptKind, SignedReceipt};
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

/// Pushes a bundle the way the packager does: config blob, stack layer, manifest
/// with the bundle artifact type, tagged with the version. Returns the digest.
pub(crate) fn push_bundle(client: &Client, stack: &str, version: &str) -> String {
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

pub(crate) struct Runner {
    pub(crate) key: PrivateKey,
    pub(crate) n: u32,
}

impl Runner {
    pub(crate) fn receipt(
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
        ReceiptBuilder::new(customer, stack, version)
            .id(format!("{customer}-{}", self.n))
            .kind(kind, outcome)
            .bundle_digest(digest.parse().unwrap())
            .inputs_hash(stackpack_schema::Digest::of(customer.as_bytes()))
            .plan(2, 1, 0)
            .started_at(&format!("2026-02-01T10:{minute:02}:00Z"))
            .finished_at(&format!("2026-02-01T10:{minute:02}:30Z"))
            .sign(&self.key)
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

/// A registry where a publisher pushed `data-plane` 1.4.0, 1.5.0 and the prerelease
/// 1.6.0-feature-gpu.2, and `control-plane` 1.9.0 and 1.10.0; with support and three
/// customers (globex, initech, hooli) signed in, each customer with its runner.
struct Fleet {
    registry: OurRegistry,
    support: Client,
    globex: Client,
    initech: Client,
    hooli: Client,
    globex_runner: Runner,
    initech_runner: Runner,
    hooli_runner: Runner,
    d140: String,
    d150: String,
    d_pre: String,
    c1100: String,
}

impl Fleet {
    fn published() -> Fleet {
        let registry = OurRegistry::start();
        let publisher = Client::new(registry.url(), Some(registry.token("publisher", None)));
        let customer =
            |id: &str| Client::new(registry.url(), Some(registry.token("customer", Some(id))));
        let runner = |secret: u8| Runner {
            key: PrivateKey::from_secret_bytes([secret; 32]),
            n: 0,
        };
        let d140 = push_bundle(&publisher, "data-plane", "1.4.0");
        let d150 = push_bundle(&publisher, "data-plane", "1.5.0");
        let d_pre = push_bundle(&publisher, "data-plane", "1.6.0-feature-gpu.2");
        // Version 1.10.0 beats 1.9.0 by precedence, not by string order.
        push_bundle(&publisher, "control-plane", "1.9.0");
        let c1100 = push_bundle(&publisher, "control-plane", "1.10.0");
        Fleet {
            support: Client::new(registry.url(), Some(registry.token("support", None))),
            globex: customer("globex"),
            initech: customer("initech"),
            hooli: customer("hooli"),
            globex_runner: runner(1),
            initech_runner: runner(2),
            hooli_runner: runner(3),
            registry,
            d140,
            d150,
            d_pre,
            c1100,
        }
    }

    fn get(&self, path: &str) -> serde_json::Value {
        self.support.req("GET", path, &[], None).json()
    }
}

/// Posts a signed receipt as `client` (a customer's runner reporting).
pub(crate) fn post(client: &Client, receipt: &SignedReceipt) -> Resp {
    client.req(
        "POST",
        "/api/v1/receipts",
        &[("Content-Type", "application/json")],
        Some(&receipt.to_bytes()),
    )
}

#[test]
fn releases_carry_their_source_and_stacks_know_their_latest_stable_by_precedence() {
    let fleet = Fleet::published();
    let releases = fleet.get("/api/v1/releases?stack=data-plane");
    let releases = releases.as_array().unwrap();
    assert_eq!(releases.len(), 3);
    let pre = releases
        .iter()
        .find(|r| r["version"] == "1.6.0-feature-gpu.2")
        .unwrap();
    assert_eq!(pre["prerelease"], true);
    assert_eq!(pre["source"]["branch"], "feature/gpu");
    assert_eq!(pre["digest"], fleet.d_pre.as_str());
    assert_eq!(pre["repository"], "acme/stacks/data-plane");
    let stacks = fleet.get("/api/v1/stacks");
    let control = stacks
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "control-plane")
        .unwrap();
    assert_eq!(control["latestStable"], "1.10.0");
}

#[test]
fn receipts_become_deployments_that_answer_supports_questions() {
    let mut fleet = Fleet::published();
    let (d140, d150, d_pre, c1100) = (
        fleet.d140.clone(),
        fleet.d150.clone(),
        fleet.d_pre.clone(),
        fleet.c1100.clone(),
    );
    let (globex, initech, hooli) = (
        fleet.globex.clone(),
        fleet.initech.clone(),
        fleet.hooli.clone(),
    );

    // globex: 1.4.0 then 1.5.0 (current, latest stable); a failed apply of the
    // prerelease changes nothing. Then a drift check finds drift.
    let r = fleet.globex_runner.receipt(
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
    for (version, digest, kind, outcome) in [
        ("1.5.0", &d150, ReceiptKind::Apply, Outcome::Succeeded),
        (
            "1.6.0-feature-gpu.2",
            &d_pre,
            ReceiptKind::Apply,
            Outcome::Failed,
        ),
        ("1.5.0", &d150, ReceiptKind::Drift, Outcome::Drifted),
    ] {
        let r = fleet
            .globex_runner
            .receipt("globex", "data-plane", version, digest, kind, outcome);
        assert_eq!(post(&globex, &r).status, 201);
    }
    let r = fleet.globex_runner.receipt(
        "globex",
        "control-plane",
        "1.10.0",
        &c1100,
        ReceiptKind::Apply,
        Outcome::NoChanges,
    );
    assert_eq!(post(&globex, &r).status, 201);

    // initech: still on 1.4.0 (behind); drifted once, then re-applied (not drifted).
    for (kind, outcome) in [
        (ReceiptKind::Drift, Outcome::Drifted),
        (ReceiptKind::Apply, Outcome::Succeeded),
    ] {
        let r =
            fleet
                .initech_runner
                .receipt("initech", "data-plane", "1.4.0", &d140, kind, outcome);
        assert_eq!(post(&initech, &r).status, 201);
    }

    // hooli: runs the prerelease.
    let r = fleet.hooli_runner.receipt(
        "hooli",
        "data-plane",
        "1.6.0-feature-gpu.2",
        &d_pre,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&hooli, &r).status, 201);

    assert_eq!(
        names(&fleet.get("/api/v1/support/versions")),
        [
            "globex:control-plane@1.10.0",
            "globex:data-plane@1.5.0",
            "hooli:data-plane@1.6.0-feature-gpu.2",
            "initech:data-plane@1.4.0"
        ]
    );
    let behind = fleet.get("/api/v1/support/behind");
    assert_eq!(names(&behind), ["initech:data-plane@1.4.0"]);
    assert_eq!(behind[0]["latestStable"], "1.5.0");
    assert_eq!(
        names(&fleet.get("/api/v1/support/prerelease")),
        ["hooli:data-plane@1.6.0-feature-gpu.2"]
    );
    assert_eq!(
        names(&fleet.get("/api/v1/support/drifted")),
        ["globex:data-plane@1.5.0"]
    );

    let detail = globex
        .req("GET", "/api/v1/customers/globex", &[], None)
        .json();
    assert_eq!(detail["customer"]["id"], "globex");
    assert_eq!(detail["running"].as_array().unwrap().len(), 2);
    assert_eq!(
        detail["recent"].as_array().unwrap().len(),
        5,
        "every attempt of globex"
    );
    let deployments = fleet.get("/api/v1/deployments?customer=initech");
    assert_eq!(deployments.as_array().unwrap().len(), 2);
    assert_eq!(deployments[0]["kind"], "apply", "newest first");
    assert_eq!(
        fleet
            .support
            .req("GET", "/api/v1/customers/nobody", &[], None)
            .status,
        404
    );
}

/// The fleet with globex's runner having reported once (its key is now pinned for
/// globex); returns that receipt.
fn globex_reported(fleet: &mut Fleet) -> SignedReceipt {
    let d140 = fleet.d140.clone();
    let r = fleet.globex_runner.receipt(
        "globex",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(post(&fleet.globex, &r).status, 201);
    r
}

/// A receipt signed with a key globex never used (a second runner installation).
fn from_a_second_runner(fleet: &Fleet) -> SignedReceipt {
    Runner {
        key: PrivateKey::from_secret_bytes([7; 32]),
        n: 50,
    }
    .receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &fleet.d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    )
}

#[test]
fn receipts_for_another_customer_altered_or_signed_by_an_unpinned_key_are_refused() {
    let mut fleet = Fleet::published();
    globex_reported(&mut fleet);
    let d150 = fleet.d150.clone();
    let r = fleet.hooli_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    assert_eq!(
        post(&fleet.hooli, &r).status,
        403,
        "hooli reporting for globex"
    );
    let mut altered = fleet.globex_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    altered.receipt.version = semver::Version::parse("9.9.9").unwrap();
    let r = post(&fleet.globex, &altered);
    assert_eq!((r.status, r.error_code().as_str()), (400, "BAD_REQUEST"));
    let r = post(&fleet.globex, &from_a_second_runner(&fleet));
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (403, "DENIED"),
        "a key other than the pinned one"
    );
}

#[test]
fn an_admin_trusts_a_second_runner_key_and_then_its_receipts_count() {
    let mut fleet = Fleet::published();
    globex_reported(&mut fleet);
    let stranger = from_a_second_runner(&fleet);
    let admin = Client::new(
        fleet.registry.url(),
        Some(fleet.registry.token("admin", None)),
    );
    let pem = PrivateKey::from_secret_bytes([7; 32]).public_key().to_pem();
    let body = serde_json::to_vec(&serde_json::json!({ "publicKeyPem": pem })).unwrap();
    assert_eq!(
        fleet
            .support
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
    assert_eq!(post(&fleet.globex, &second).status, 201);
}

#[test]
fn a_reused_receipt_id_a_bad_signature_or_a_body_that_is_not_json_is_refused() {
    let mut fleet = Fleet::published();
    let first = globex_reported(&mut fleet);
    assert_eq!(first.receipt.id, "globex-1");
    let d140 = fleet.d140.clone();
    let mut reused = fleet.globex_runner.receipt(
        "globex",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    reused.receipt.id = "globex-1".into();
    let reused = SignedReceipt::sign(reused.receipt, &fleet.globex_runner.key);
    assert_eq!(post(&fleet.globex, &reused).status, 409);
    assert_eq!(
        post(
            &fleet.globex,
            &SignedReceipt {
                signature: "AAAA".into(),
                ..reused.clone()
            }
        )
        .status,
        400
    );
    assert_eq!(
        fleet
            .globex
            .req("POST", "/api/v1/receipts", &[], Some(b"{not json"))
            .status,
        400
    );
}

#[test]
fn metrics_count_requests_by_route_method_and_status() {
    let fleet = Fleet::published();
    fleet.get("/api/v1/releases");
    let metrics = String::from_utf8(fleet.support.req("GET", "/metrics", &[], None).body).unwrap();
    assert!(metrics.contains("stackpack_registry_requests_total{route=\"manifests\",method=\"PUT\",status=\"201\"} 5"), "{metrics}");
    assert!(metrics
        .contains("stackpack_registry_request_duration_seconds_bucket{route=\"api\",le=\"+Inf\"}"));
    assert!(!metrics.contains("stackpack_registry_blob_bytes_received_total 0\n"));
}

/// An operator tells a slow database from a slow blob store or a slow network by
/// the database's own histogram, per backend and kind of call.
#[test]
fn metrics_time_the_database_per_backend_and_kind_of_call() {
    let fleet = Fleet::published();
    let count = |metrics: &str, call: &str| -> u64 {
        let line = format!(
            "stackpack_registry_database_duration_seconds_count{{backend=\"sqlite\",call=\"{call}\"}} "
        );
        // A kind of call not made yet has no line at all.
        let Some(at) = metrics.find(&line) else {
            return 0;
        };
        let rest = &metrics[at + line.len()..];
        rest[..rest.find('\n').unwrap()].parse().unwrap()
    };
    let before = String::from_utf8(fleet.support.req("GET", "/metrics", &[], None).body).unwrap();
    // Publishing wrote the manifests; reading a release's fleet is support's query.
    assert!(count(&before, "write") >= 5, "{before}");
    fleet.get("/api/v1/releases");
    let after = String::from_utf8(fleet.support.req("GET", "/metrics", &[], None).body).unwrap();
    assert!(
        count(&after, "read") + count(&after, "scan") + count(&after, "support")
            > count(&before, "read") + count(&before, "scan") + count(&before, "support"),
        "{after}"
    );
    assert!(after.contains(
        "stackpack_registry_database_duration_seconds_bucket{backend=\"sqlite\",call=\"write\",le=\"+Inf\"}"
    ));
}

#[test]
fn stable_tags_are_immutable_and_prerelease_tags_follow_the_policy() {
    let server = OurRegistry::start();
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

    let strict = OurRegistry::start_with(&["--prerelease-tags", "immutable"]);
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
fn the_openapi_file_names_every_ledger_path() {
    let registry = OurRegistry::start();
    let support = Client::new(registry.url(), Some(registry.token("support", None)));
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
        "/api/v1/releases/{name}",
        "/api/v1/releases/{name}/{version}",
        "/api/v1/releases/{name}/fleet",
    ] {
        assert!(
            api["paths"][path].is_object(),
            "{path} missing from the OpenAPI file"
        );
    }
}

#[test]
fn a_bundle_kept_in_another_registry_is_recorded_through_the_api() {
    let registry = OurRegistry::start();
    let support = Client::new(registry.url(), Some(registry.token("support", None)));
    let publisher = Client::new(registry.url(), Some(registry.token("publisher", None)));
    let reader = Client::new(registry.url(), Some(registry.token("reader", None)));
    push_bundle(&publisher, "data-plane", "1.0.0");
    // A release kept in ECR or Harbor: `POST /api/v1/releases` with this body.
    let elsewhere = |version: &str, digest: &str| {
        serde_json::to_vec(&serde_json::json!({
            "stack": "data-plane", "version": version, "digest": digest,
            "repository": "123456789.dkr.ecr.example/acme/stacks/data-plane",
            "source": {"repository": "https://git.example/acme/infra", "commit": "abc", "branch": "main"}
        }))
        .unwrap()
    };
    let record =
        |client: &Client, body: Vec<u8>| client.req("POST", "/api/v1/releases", &[], Some(&body));
    let ecr_digest = sha256(b"bundle in ecr");
    assert_eq!(record(&reader, elsewhere("1.1.0", &ecr_digest)).status, 403);
    assert_eq!(
        record(&publisher, elsewhere("1.1.0", &ecr_digest)).status,
        201
    );
    assert_eq!(
        record(&publisher, elsewhere("1.1.0", &ecr_digest)).status,
        201,
        "idempotent"
    );
    let r = record(&publisher, elsewhere("1.1.0", &sha256(b"other")));
    assert_eq!((r.status, r.error_code().as_str()), (409, "CONFLICT"));
    assert_eq!(
        record(&publisher, elsewhere("1.1", &ecr_digest)).status,
        400
    );
    assert_eq!(
        record(&publisher, elsewhere("1.2.0", "sha256:nope")).status,
        400
    );
    let stacks = support.req("GET", "/api/v1/stacks", &[], None).json();
    assert_eq!(stacks[0]["latestStable"], "1.1.0");
}

#[test]
fn a_receipt_file_carried_out_of_an_airgapped_site_is_imported_once() {
    let registry = OurRegistry::start();
    register_customers(&registry, ["umbrella"]);
    let support = Client::new(registry.url(), Some(registry.token("support", None)));
    let publisher = Client::new(registry.url(), Some(registry.token("publisher", None)));
    let digest = push_bundle(&publisher, "data-plane", "1.0.0");
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
            .args(["--customer", "umbrella", "--data"])
            .arg(&registry.data);
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
}

#[test]
fn a_customer_token_without_its_customer_is_a_usage_error() {
    let registry = OurRegistry::start();
    let out = Command::new(BIN)
        .args(["token", "create", "--role", "customer", "--data"])
        .arg(&registry.data)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a customer token without --customer is a usage error"
    );
}

#[test]
fn gc_removes_loose_blobs_and_abandoned_uploads_and_keeps_what_a_manifest_needs() {
    let mut registry = OurRegistry::start();
    let publisher = Client::new(registry.url(), Some(registry.token("publisher", None)));
    push_bundle(&publisher, "data-plane", "1.0.0");
    let loose = bytes(99, 4096);
    let loose_digest = publisher.push_blob("acme/stacks/data-plane", &loose);
    let r = publisher.req(
        "POST",
        "/v2/acme/stacks/data-plane/blobs/uploads/",
        &[],
        None,
    );
    assert_eq!(r.status, 202);
    registry.kill();
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
        .arg(&registry.data)
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
    registry.spawn();
    let publisher = Client::new(registry.url(), publisher.token.clone());
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
    let server = OurRegistry::start();
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
