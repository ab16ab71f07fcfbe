//! The ledger's rules at its edges: times compare as times, receipts import all or
//! nothing, names and times are checked, and no body is read before the token.

use crate::common;

use std::process::{Command, Stdio};

use common::*;
use stackpack_schema::receipt::SignedReceipt;
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

fn receipt(id: &str, stack: &str, version: &str, finished_at: &str) -> SignedReceipt {
    ReceiptBuilder::new("umbrella", stack, version)
        .id(id)
        .finished_at(finished_at)
        .sign(&PrivateKey::from_secret_bytes([7; 32]))
}

fn post_receipt(client: &Client, signed: &SignedReceipt) -> Resp {
    client.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()))
}

#[test]
fn current_version_is_the_latest_by_time_not_by_text() {
    let server = OurRegistry::start();
    let customer = Client::new(
        server.url(),
        Some(server.token("customer", Some("umbrella"))),
    );
    let support = Client::new(server.url(), Some(server.token("support", None)));
    // 07:00Z written with an offset; 08:00Z; 06:00:00.5Z in lower case.
    for signed in [
        receipt("r1", "data-plane", "1.0.0", "2026-02-01T12:00:00+05:00"),
        receipt("r2", "data-plane", "2.0.0", "2026-02-01T08:00:00Z"),
        receipt("r3", "data-plane", "3.0.0", "2026-02-01t06:00:00.5z"),
    ] {
        assert_eq!(post_receipt(&customer, &signed).status, 201);
    }
    let versions = support
        .req("GET", "/api/v1/support/versions", &[], None)
        .json();
    assert_eq!(versions[0]["version"], "2.0.0", "{versions}");
    assert_eq!(versions[0]["since"], "2026-02-01T08:00:00Z");
    let deployments = support
        .req("GET", "/api/v1/deployments?customer=umbrella", &[], None)
        .json();
    let finished: Vec<&str> = deployments
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["finishedAt"].as_str().unwrap())
        .collect();
    assert_eq!(
        finished,
        [
            "2026-02-01T08:00:00Z",
            "2026-02-01T07:00:00Z",
            "2026-02-01T06:00:00.5Z"
        ],
        "newest first, stored as UTC"
    );
}

fn import(server: &OurRegistry, file: &std::path::Path, json: bool) -> std::process::Output {
    register_customers(server, ["umbrella"]);
    let mut cmd = Command::new(BIN);
    cmd.args(["receipts", "import"])
        .arg(file)
        .args(["--customer", "umbrella", "--data"])
        .arg(&server.data);
    if json {
        cmd.arg("--json");
    }
    cmd.output().unwrap()
}

#[test]
fn receipts_import_records_all_or_none_and_reports_each() {
    let server = OurRegistry::start();
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let good1 = receipt("good-1", "data-plane", "1.0.0", "2026-02-01T08:00:00Z");
    let mut forged = receipt("forged", "data-plane", "1.1.0", "2026-02-01T09:00:00Z");
    forged.receipt.version = semver::Version::parse("9.9.9").unwrap();
    let good2 = receipt("good-2", "control-plane", "1.0.0", "2026-02-01T10:00:00Z");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receipts.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&[&good1, &forged, &good2]).unwrap(),
    )
    .unwrap();

    let out = import(&server, &file, false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for id in ["good-1", "forged", "good-2"] {
        assert!(
            stderr.contains(&format!("`{id}`")),
            "{id} not reported: {stderr}"
        );
    }
    assert!(stderr.contains("nothing was imported"), "{stderr}");
    assert!(stderr.contains("hint: "), "{stderr}");
    let deployments = support.req("GET", "/api/v1/deployments", &[], None).json();
    assert_eq!(deployments, serde_json::json!([]), "none recorded");

    let out = import(&server, &file, true);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["imported"], false);
    assert_eq!(report["receipts"][1]["refused"]["code"], "BAD_REQUEST");
    assert_eq!(report["receipts"][2]["created"], true, "{report}");

    std::fs::write(&file, serde_json::to_vec(&[&good1, &good2]).unwrap()).unwrap();
    let out = import(&server, &file, false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deployments = support.req("GET", "/api/v1/deployments", &[], None).json();
    assert_eq!(deployments.as_array().unwrap().len(), 2);
}

#[test]
fn receipts_whose_stack_is_not_a_name_are_refused() {
    let server = OurRegistry::start();
    let customer = Client::new(
        server.url(),
        Some(server.token("customer", Some("umbrella"))),
    );
    for (id, stack) in [
        ("r-empty", ""),
        ("r-dots", "../../etc"),
        ("r-upper", "Data"),
    ] {
        let r = post_receipt(
            &customer,
            &receipt(id, stack, "1.0.0", "2026-02-01T08:00:00Z"),
        );
        assert_eq!(r.status, 400, "stack `{stack}` was accepted");
        assert_eq!(r.error_code(), "BAD_REQUEST");
    }
}

#[test]
fn releases_need_a_repository_and_a_real_created_time() {
    let server = OurRegistry::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let release = |repository: &str, created: &str| {
        let body = serde_json::json!({
            "stack": "data-plane", "version": "1.0.0", "digest": sha256(b"x"),
            "repository": repository, "created": created,
        });
        publisher.req(
            "POST",
            "/api/v1/releases",
            &[],
            Some(&serde_json::to_vec(&body).unwrap()),
        )
    };
    assert_eq!(release("", "2026-01-01T00:00:00Z").status, 400);
    assert_eq!(release("a b", "2026-01-01T00:00:00Z").status, 400);
    assert_eq!(release("ecr.example/acme/x", "not-a-date").status, 400);
    let r = release("ecr.example/acme/x", "2026-01-01T05:00:00+05:00");
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["created"], "2026-01-01T00:00:00Z");
}

#[test]
fn anonymous_ledger_posts_get_401_before_the_body_is_read() {
    let server = OurRegistry::start();
    let reader = Client::new(server.url(), Some(server.token("reader", None)));
    let anonymous = Client::new(server.url(), None);
    let oversize = vec![b'x'; 2 * 1024 * 1024];
    for path in ["/api/v1/receipts", "/api/v1/releases"] {
        for body in [&b"{not json"[..], &oversize[..]] {
            let r = anonymous.req("POST", path, &[], Some(body));
            assert_eq!(
                r.status,
                401,
                "{path}: {}",
                String::from_utf8_lossy(&r.body)
            );
            assert!(r.header("www-authenticate").is_some());
            let r = reader.req("POST", path, &[], Some(body));
            assert_eq!(r.status, 403, "{path}: a reader may not post");
        }
    }
}

/// Commands other than `serve` on a missing or mistyped `--data` fail as a usage
/// error (exit 2: a path the command line names is wrong), with the path on a
/// location line and a hint to run `init`, and create nothing.
#[test]
fn commands_on_a_missing_data_folder_exit_2_with_a_hint_to_init_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let receipts = dir.path().join("receipts.json");
    std::fs::write(
        &receipts,
        receipt("r1", "data-plane", "1.0.0", "2026-02-01T08:00:00Z").to_bytes(),
    )
    .unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for data in [dir.path().join("mistyped"), empty.clone()] {
        let commands: [Vec<&str>; 4] = [
            vec!["fleet"],
            vec!["gc"],
            vec!["token", "create", "--role", "admin"],
            vec!["receipts", "import", receipts.to_str().unwrap()],
        ];
        for args in commands {
            let out = Command::new(BIN)
                .args(&args)
                .arg("--data")
                .arg(&data)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(
                stderr.contains(&format!("  --> registry data folder `{}`", data.display())),
                "{args:?}: {stderr}"
            );
            assert!(
                stderr.contains("hint: ") && stderr.contains("`stackpack-registry init --data"),
                "{args:?}: {stderr}"
            );
        }
        assert!(!data.join("registry.db").exists());
    }
    assert!(!dir.path().join("mistyped").exists());

    // `init` creates one on purpose; then the commands work.
    let data = dir.path().join("new");
    for _ in 0..2 {
        let out = Command::new(BIN)
            .args(["init", "--data"])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = Command::new(BIN)
        .args(["token", "create", "--role", "admin", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `fleet … | head` and `receipts import … | head`: a closed stdout ends the command
/// quietly, with the status a shell gives a SIGPIPE (141), never with a panic. The
/// signal itself stays ignored (a TLS client killed by it would die without a word),
/// so the program is never killed by it.
#[test]
fn commands_exit_quietly_when_stdout_closes() {
    use std::os::unix::process::ExitStatusExt;
    let server = OurRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("receipt.json");
    std::fs::write(
        &file,
        receipt("r1", "data-plane", "1.0.0", "2026-02-01T08:00:00Z").to_bytes(),
    )
    .unwrap();
    // A customer with a receipt, so that every command below has lines to write.
    register_customers(&server, ["umbrella"]);
    server
        .run(&[
            "receipts",
            "import",
            file.to_str().unwrap(),
            "--customer",
            "umbrella",
        ])
        .ok();
    let commands: [Vec<&str>; 3] = [
        vec!["fleet"],
        vec!["fleet", "--json"],
        vec!["receipts", "import", file.to_str().unwrap()],
    ];
    for args in commands {
        // Stdout is a socket whose other end is closed before the program starts, so
        // its first write fails however the two processes are scheduled (a pipe
        // closed after spawning raced a quick program that had already written).
        let (stdout, closed) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(closed);
        let child = Command::new(BIN)
            .args(&args)
            .arg("--data")
            .arg(&server.data)
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(stdout)))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.signal(), None, "{args:?}: killed by a signal");
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}
