//! The complete ledger and the fleet view: registered customers with their
//! environment, last seen and staleness, every attempt kept in one customer's
//! history, and `fleet` over `--data` and over `--url`.

use crate::common;

use std::process::{Command, Output};

use common::*;
use stackpack_schema::receipt::{Outcome, ReceiptKind, SignedReceipt};
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

fn receipt(
    customer: &str,
    id: &str,
    (stack, version): (&str, &str),
    (kind, outcome): (ReceiptKind, Outcome),
    finished_at: &str,
) -> SignedReceipt {
    ReceiptBuilder::new(customer, stack, version)
        .id(id)
        .kind(kind, outcome)
        .finished_at(finished_at)
        .sign(&PrivateKey::from_secret_bytes([customer.len() as u8; 32]))
}

fn report(server: &OurRegistry, customer: &str, receipts: &[SignedReceipt]) {
    let client = Client::new(server.url(), Some(server.token("customer", Some(customer))));
    for signed in receipts {
        let r = client.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()));
        assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
    }
}

/// Seeds: `globex` (production) applies 1.0.0, fails 2.0.0, rolls back, drifts and
/// destroys `edge`; `initech` (staging) never reports; `umbrella` reports once,
/// long ago.
fn seed(server: &OurRegistry) {
    use Outcome::*;
    use ReceiptKind::*;
    for (id, env) in [("globex", "production"), ("initech", "staging")] {
        let out = cli(
            server,
            &["customer", "add", id, "--name", "G", "--environment", env],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let now = time::OffsetDateTime::now_utc();
    let at = |minutes_ago: i64| {
        (now - time::Duration::minutes(minutes_ago))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let dp = "data-plane";
    report(
        server,
        "globex",
        &[
            receipt("globex", "g5", (dp, "1.0.0"), (Drift, Drifted), &at(10)),
            receipt("globex", "g1", (dp, "1.0.0"), (Apply, Succeeded), &at(50)),
            receipt("globex", "g2", (dp, "2.0.0"), (Apply, Failed), &at(40)),
            receipt(
                "globex",
                "g3",
                (dp, "1.0.0"),
                (Rollback, Succeeded),
                &at(30),
            ),
            receipt(
                "globex",
                "g4",
                ("edge", "1.0.0"),
                (Destroy, Succeeded),
                &at(20),
            ),
        ],
    );
    report(
        server,
        "umbrella",
        &[receipt(
            "umbrella",
            "u1",
            (dp, "1.0.0"),
            (Apply, Succeeded),
            "2026-01-01T00:00:00Z",
        )],
    );
}

#[test]
fn registered_customers_show_environment_last_seen_and_staleness() {
    let server = OurRegistry::start();
    seed(&server);
    let list = json(&cli(&server, &["customer", "list", "--json"]));
    let by_id = |id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()
            .clone()
    };
    let globex = by_id("globex");
    assert_eq!(globex["environment"], "production");
    assert_eq!(globex["stale"], false, "{globex}");
    assert!(globex["lastSeen"].is_string());
    let initech = by_id("initech");
    assert!(initech["lastSeen"].is_null(), "{initech}");
    assert_eq!(initech["stale"], true);
    let umbrella = by_id("umbrella");
    assert_eq!(
        umbrella["lastSeen"], "2026-01-01T00:00:00Z",
        "appears with its first receipt"
    );
    assert_eq!(umbrella["stale"], true);

    let silent = json(&cli(
        &server,
        &[
            "customer",
            "list",
            "--silent",
            "--stale-after",
            "1h",
            "--json",
        ],
    ));
    let ids: Vec<&str> = silent
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["initech", "umbrella"],
        "globex reported 10 minutes ago"
    );

    let support = Client::new(server.url(), Some(server.token("support", None)));
    let r = support.req("GET", "/api/v1/customers?staleAfter=5m", &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()[0]["id"], "globex");
    assert_eq!(r.json()[0]["stale"], true);
    let r = support.req("GET", "/api/v1/customers?staleAfter=soon", &[], None);
    assert_eq!(r.status, 400);
    let r = support.req("POST", "/api/v1/customers", &[], Some(br#"{"id":"x"}"#));
    assert_eq!(r.status, 403, "support cannot change anything");
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let body = br#"{"id":"hooli","name":"Hooli","environment":"production"}"#;
    let r = admin.req("POST", "/api/v1/customers", &[], Some(body));
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["environment"], "production");
    let body = br#"{"id":"hooli","environment":"Prod Env"}"#;
    assert_eq!(
        admin
            .req("POST", "/api/v1/customers", &[], Some(body))
            .status,
        400
    );

    let out = cli(
        &server,
        &["customer", "add", "globex", "--environment", "Prod Env"],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn one_customers_history_keeps_every_attempt_in_time_order() {
    let server = OurRegistry::start();
    seed(&server);
    let history = json(&cli(&server, &["customer", "history", "globex", "--json"]));
    let seen: Vec<String> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{}",
                d["receiptId"].as_str().unwrap(),
                d["kind"].as_str().unwrap(),
                d["outcome"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            "g1:apply:succeeded",
            "g2:apply:failed",
            "g3:rollback:succeeded",
            "g4:destroy:succeeded",
            "g5:drift:drifted"
        ]
    );
    let out = cli(&server, &["customer", "history", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("customer `nobody` does not exist"));

    // The same history over the HTTP API, from anywhere; a customer token reads
    // only its own.
    let over_url = |token: &str, id: &str| {
        Command::new(BIN)
            .args(["customer", "history", id, "--json", "--url", &server.url()])
            .env("STACKPACK_REGISTRY_TOKEN", token)
            .output()
            .unwrap()
    };
    let support = server.token("support", None);
    assert_eq!(json(&over_url(&support, "globex")), history);
    let globex = server.token("customer", Some("globex"));
    assert_eq!(json(&over_url(&globex, "globex")), history);
    let out = over_url(&globex, "initech");
    assert_eq!(out.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&globex));
    assert_eq!(over_url(&support, "nobody").status.code(), Some(2));
}

fn publish(server: &OurRegistry, versions: &[&str]) {
    publish_releases(server, versions, |_| serde_json::json!([]));
}

/// Records `data-plane` releases kept in another registry; `modules` says what each
/// vendors.
fn publish_releases(
    server: &OurRegistry,
    versions: &[&str],
    modules: impl Fn(&str) -> serde_json::Value,
) {
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    for version in versions {
        let body = serde_json::json!({
            "stack": "data-plane", "version": version, "digest": sha256(version.as_bytes()),
            "repository": "ecr.example/acme/data-plane", "modules": modules(version),
        });
        let r = publisher.req(
            "POST",
            "/api/v1/releases",
            &[],
            Some(&serde_json::to_vec(&body).unwrap()),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
}

/// Adds `hooli` (production) and `acme` (staging), both on a prerelease.
fn seed_prereleases(server: &OurRegistry) {
    for (id, env) in [("hooli", "production"), ("acme", "staging")] {
        let out = cli(server, &["customer", "add", id, "--environment", env]);
        assert!(out.status.success());
        let signed = receipt(
            id,
            &format!("{id}-1"),
            ("data-plane", "3.1.0-rc.1"),
            (ReceiptKind::Apply, Outcome::Succeeded),
            &db_now(),
        );
        report(server, id, &[signed]);
    }
}

fn db_now() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn remote(server: &OurRegistry, token: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["fleet", "--url", &server.url(), "--token", token])
        .args(args)
        .output()
        .unwrap()
}

fn cells(rows: &serde_json::Value) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r["customer"].as_str().unwrap(),
                r["stack"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

#[test]
fn fleet_over_url_answers_the_matrix_like_fleet_over_data() {
    let server = OurRegistry::start();
    publish(&server, &["1.0.0", "2.0.0", "3.0.0", "3.1.0-rc.1"]);
    seed(&server);
    let support = server.token("support", None);
    let local = json(&cli(&server, &["fleet", "--json"]));
    let over_http = json(&remote(&server, &support, &["--json"]));
    assert_eq!(local, over_http);
    assert_eq!(
        cells(&local),
        [
            "globex:data-plane",
            "globex:edge",
            "initech:-",
            "umbrella:data-plane"
        ]
    );
    let globex = &local[0];
    assert_eq!(globex["environment"], "production");
    assert_eq!(globex["version"], "1.0.0");
    assert_eq!(
        globex["behind"], 2,
        "2.0.0 and 3.0.0 are newer stable releases"
    );
    assert_eq!(globex["latestStable"], "3.0.0");
    assert_eq!(globex["lastAttempt"]["kind"], "rollback");
    assert_eq!(globex["lastAttempt"]["outcome"], "succeeded");
    assert_eq!(globex["drifted"], true);
    let edge = &local[1];
    assert!(edge["version"].is_null(), "destroyed: {edge}");
    assert_eq!(edge["lastAttempt"]["kind"], "destroy");
    assert_eq!(local[2]["stale"], true);

    let one = json(&remote(
        &server,
        &support,
        &["--customer", "globex", "--json"],
    ));
    assert_eq!(cells(&one), ["globex:data-plane", "globex:edge"]);
    let silent = json(&remote(
        &server,
        &support,
        &["--silent", "--stale-after", "1h", "--json"],
    ));
    assert_eq!(cells(&silent), ["initech:-", "umbrella:data-plane"]);

    let table = remote(&server, &support, &[]);
    let stdout = String::from_utf8_lossy(&table.stdout);
    assert!(stdout.starts_with("CUSTOMER"), "{stdout}");
    assert!(
        stdout.contains("behind 2 (latest 3.0.0)") && stdout.contains("never reported"),
        "{stdout}"
    );
}

#[test]
fn fleet_finds_prereleases_in_production_versions_below_exact_or_by_digest_and_failures() {
    let server = OurRegistry::start();
    publish(&server, &["1.0.0", "3.1.0-rc.1"]);
    seed(&server);
    seed_prereleases(&server);
    let support = server.token("support", None);
    let args = ["--prerelease", "--environment", "production", "--json"];
    let rows = json(&remote(&server, &support, &args));
    assert_eq!(cells(&rows), ["hooli:data-plane"]);
    assert_eq!(rows[0]["prerelease"], true);
    let mut local = vec!["fleet"];
    local.extend(args);
    assert_eq!(json(&cli(&server, &local)), rows);

    // Who still runs a version below 3.0.0, exactly 1.0.0, or one bundle digest.
    let below = json(&remote(&server, &support, &["--below", "3.0.0", "--json"]));
    assert_eq!(cells(&below), ["globex:data-plane", "umbrella:data-plane"]);
    let below_rc = json(&cli(&server, &["fleet", "--below", "3.1.0", "--json"]));
    assert_eq!(cells(&below_rc).len(), 4, "3.1.0-rc.1 is below 3.1.0");
    let exact = json(&remote(
        &server,
        &support,
        &["--version", "3.1.0-rc.1", "--json"],
    ));
    assert_eq!(cells(&exact), ["acme:data-plane", "hooli:data-plane"]);
    let digest = exact[0]["digest"].as_str().unwrap();
    let by_digest = json(&cli(&server, &["fleet", "--digest", digest, "--json"]));
    assert_eq!(cells(&by_digest), ["acme:data-plane", "hooli:data-plane"]);
    let out = cli(&server, &["fleet", "--below", "two"]);
    assert_eq!(out.status.code(), Some(2));

    let failed = json(&cli(&server, &["fleet", "--failed", "--json"]));
    assert!(
        cells(&failed).is_empty(),
        "globex rolled back after its failure"
    );
    let history = json(&cli(&server, &["customer", "history", "globex", "--json"]));
    assert_eq!(history[1]["outcome"], "failed", "the failed apply is kept");
}

#[test]
fn fleet_over_url_lets_a_customer_token_see_only_its_own_customer() {
    let server = OurRegistry::start();
    seed(&server);
    let globex = server.token("customer", Some("globex"));
    let own = json(&remote(
        &server,
        &globex,
        &["--customer", "globex", "--json"],
    ));
    assert_eq!(cells(&own), ["globex:data-plane", "globex:edge"]);
    for args in [&["--json"][..], &["--customer", "initech", "--json"][..]] {
        let out = remote(&server, &globex, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(!String::from_utf8_lossy(&out.stderr).contains(&globex));
    }
    let wrong = "spr_not-a-real-token";
    let out = remote(&server, wrong, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not valid") && stderr.contains("hint:"),
        "{stderr}"
    );
    assert!(!stderr.contains(wrong), "{stderr}");
}

#[test]
fn a_revoked_installation_key_is_refused_and_an_added_one_is_trusted() {
    let server = OurRegistry::start();
    seed(&server);
    let client = Client::new(server.url(), Some(server.token("customer", Some("globex"))));
    let post = |signed: &SignedReceipt| {
        client.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()))
    };
    let at = "2026-03-01T00:00:00Z";
    let apply = (ReceiptKind::Apply, Outcome::Succeeded);
    let old = receipt("globex", "g6", ("data-plane", "1.0.0"), apply, at);
    let new_key = PrivateKey::from_secret_bytes([42; 32]);
    let rotated = SignedReceipt::sign(
        receipt("globex", "g7", ("data-plane", "1.0.0"), apply, at).receipt,
        &new_key,
    );
    assert_eq!(post(&rotated).status, 403, "an unknown key is refused");

    let pem = server.data.with_file_name("runner.pub");
    std::fs::write(&pem, new_key.public_key().to_pem()).unwrap();
    let out = cli(
        &server,
        &[
            "customer",
            "key",
            "add",
            "globex",
            pem.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(json(&out)["keyId"], new_key.public_key().key_id());
    assert_eq!(post(&rotated).status, 201);

    let old_key_id = old.receipt.key_id.clone();
    let old_key_id = if old_key_id.is_empty() {
        PrivateKey::from_secret_bytes([6; 32]).public_key().key_id()
    } else {
        old_key_id
    };
    let out = cli(
        &server,
        &["customer", "key", "revoke", "globex", &old_key_id],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = post(&old);
    assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(&r.body));
    assert!(String::from_utf8_lossy(&r.body).contains("was revoked"));

    let out = cli(&server, &["customer", "key", "revoke", "globex", "nokey"]);
    assert_eq!(out.status.code(), Some(1));

    // The same over the API, admin only: the rotated key is revoked in turn.
    let path = format!(
        "/api/v1/customers/globex/keys/{}",
        new_key.public_key().key_id()
    );
    let support = Client::new(server.url(), Some(server.token("support", None)));
    assert_eq!(support.req("DELETE", &path, &[], None).status, 403);
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    assert_eq!(admin.req("DELETE", &path, &[], None).status, 200);
    let again = SignedReceipt::sign(
        receipt("globex", "g8", ("data-plane", "1.0.0"), apply, at).receipt,
        &new_key,
    );
    assert_eq!(post(&again).status, 403);
    let missing = admin.req("DELETE", "/api/v1/customers/globex/keys/nokey", &[], None);
    assert_eq!(missing.status, 404);
}

#[test]
fn fleet_over_url_names_an_unreachable_registry_and_needs_data_or_url() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = Command::new(BIN)
        .args(["fleet", "--url", &url, "--token", "spr_not-shown"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("`{url}/api/v1/fleet")), "{stderr}");
    assert!(
        stderr.contains("hint:") && !stderr.contains("spr_not-shown"),
        "{stderr}"
    );
    let out = Command::new(BIN).arg("fleet").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "neither `--data` nor `--url`");
}

/// `--url http://HOST` to another machine would send the support token in clear:
/// every remote command refuses it before connecting (exit 2, the `--url` is what is
/// wrong), names the address and points at `https://`; the token is never printed.
/// 192.0.2.1 (TEST-NET-1) answers nothing, so a connection attempt would hang until
/// its timeout: the refusal comes at once.
#[test]
fn fleet_url_refuses_plain_http_to_a_non_loopback_host() {
    for url in ["http://192.0.2.1:9", "http://registry.example.com"] {
        let remote_commands: [&[&str]; 3] = [
            &["fleet", "--json"],
            &["adoption"],
            &["customer", "history", "globex"],
        ];
        for args in remote_commands {
            let started = std::time::Instant::now();
            let out = Command::new(BIN)
                .args(args)
                .args(["--url", url, "--token", "spr_support-secret"])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} {url}: {stderr}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "{args:?} {url}: refused only after {:?}",
                started.elapsed()
            );
            assert!(
                stderr.contains("refusing to send a token in clear")
                    && stderr.contains(&format!("--> registry `{url}/api/v1/")),
                "{args:?} {url}: {stderr}"
            );
            assert!(
                stderr.contains("hint: ") && stderr.contains("`https://`"),
                "{args:?} {url}: {stderr}"
            );
            assert!(!stderr.contains("spr_support-secret"), "{stderr}");
            assert!(out.stdout.is_empty());
        }
    }
}

/// Records `data-plane` releases kept in another registry, each vendoring the
/// `network` module at a version.
fn publish_with_modules(server: &OurRegistry, releases: &[(&str, &str)]) {
    let versions: Vec<&str> = releases.iter().map(|(v, _)| *v).collect();
    publish_releases(server, &versions, |version| {
        let network = releases.iter().find(|(v, _)| *v == version).unwrap().1;
        serde_json::json!([{"name": "network", "path": "modules/network", "version": network,
                            "digest": sha256(network.as_bytes())}])
    });
}

/// `wayne` reports `data-plane` 2.0.0 applied, just now.
fn wayne_applies_2_0_0(server: &OurRegistry) {
    let apply = (ReceiptKind::Apply, Outcome::Succeeded);
    let signed = receipt("wayne", "w1", ("data-plane", "2.0.0"), apply, &db_now());
    report(server, "wayne", &[signed]);
}

#[test]
fn fleet_finds_who_runs_a_bundle_carrying_a_module_below_a_version() {
    let server = OurRegistry::start();
    publish_with_modules(&server, &[("1.0.0", "1.2.0"), ("2.0.0", "1.3.0")]);
    seed(&server);
    wayne_applies_2_0_0(&server);
    let support = server.token("support", None);

    let args = ["--module", "network", "--module-below", "1.3.0", "--json"];
    let below = json(&remote(&server, &support, &args));
    assert_eq!(cells(&below), ["globex:data-plane", "umbrella:data-plane"]);
    let mut local = vec!["fleet"];
    local.extend(args);
    assert_eq!(json(&cli(&server, &local)), below);
    let any = json(&remote(
        &server,
        &support,
        &["--module", "network", "--json"],
    ));
    assert_eq!(
        cells(&any),
        [
            "globex:data-plane",
            "umbrella:data-plane",
            "wayne:data-plane"
        ]
    );
    let none = json(&remote(
        &server,
        &support,
        &["--module", "network", "--module-below", "1.2.0", "--json"],
    ));
    assert!(cells(&none).is_empty());

    let out = cli(&server, &["fleet", "--module-below", "1.3.0"]);
    assert_eq!(out.status.code(), Some(2), "which module?");
    let client = Client::new(server.url(), Some(support));
    let r = client.req("GET", "/api/v1/fleet?moduleBelow=1.3.0", &[], None);
    assert_eq!(r.status, 400);
    assert!(String::from_utf8_lossy(&r.body).contains("`moduleBelow` needs `module`"));
    let r = client.req("GET", "/api/v1/releases?stack=data-plane", &[], None);
    assert_eq!(r.json()[0]["modules"][0]["version"], "1.2.0");
    let bad = br#"{"stack":"data-plane","version":"3.0.0","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","repository":"x","modules":[{"name":"network","path":"modules/network","version":"one","digest":"sha256:00"}]}"#;
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    assert_eq!(
        publisher
            .req("POST", "/api/v1/releases", &[], Some(bad))
            .status,
        400
    );
}

#[test]
fn adoption_counts_customers_on_each_version_over_time_over_data_and_url() {
    let server = OurRegistry::start();
    seed(&server);
    wayne_applies_2_0_0(&server);
    let support = server.token("support", None);
    let over_url = |args: &[&str]| {
        Command::new(BIN)
            .args(["adoption", "--url", &server.url(), "--token", &support])
            .args(args)
            .output()
            .unwrap()
    };
    let local = json(&cli(
        &server,
        &["adoption", "--stack", "data-plane", "--json"],
    ));
    assert_eq!(json(&over_url(&["--stack", "data-plane", "--json"])), local);
    let dp = &local[0];
    assert_eq!(dp["stack"], "data-plane");
    assert_eq!(dp["versions"], serde_json::json!(["1.0.0", "2.0.0"]));
    let points = dp["points"].as_array().unwrap();
    assert_eq!(
        points[0],
        serde_json::json!({"at": "2026-01-01", "customers": {"1.0.0": 1}, "total": 1}),
        "umbrella, the first to report"
    );
    let now = points.last().unwrap();
    assert_eq!(
        now["customers"],
        serde_json::json!({"1.0.0": 2, "2.0.0": 1}),
        "globex's failed 2.0.0 does not count; its rollback keeps it on 1.0.0"
    );

    let weeks = json(&cli(&server, &["adoption", "--bucket", "week", "--json"]));
    let stacks: Vec<&str> = weeks
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["stack"].as_str().unwrap())
        .collect();
    assert_eq!(stacks, ["data-plane"], "`edge` was only ever destroyed");
    assert_eq!(
        weeks[0]["points"][0]["at"], "2025-12-29",
        "weeks start on Monday"
    );

    let table = over_url(&["--stack", "data-plane"]);
    let stdout = String::from_utf8_lossy(&table.stdout);
    assert!(stdout.starts_with("STACK"), "{stdout}");
    assert!(
        stdout.contains("2026-01-01") && stdout.contains("100% of 1"),
        "{stdout}"
    );
    assert_eq!(
        cli(&server, &["adoption", "--bucket", "month"])
            .status
            .code(),
        Some(2)
    );
    let client = Client::new(server.url(), Some(support.clone()));
    assert_eq!(
        client
            .req("GET", "/api/v1/adoption?bucket=month", &[], None)
            .status,
        400
    );
    let globex = Client::new(server.url(), Some(server.token("customer", Some("globex"))));
    assert_eq!(globex.req("GET", "/api/v1/adoption", &[], None).status, 403);
}

/// Issue 39: the reason a failed attempt's receipt gives (the engine diagnostic's
/// resource and summary) is in `fleet --failed`, `customer show` and its `--json`,
/// and `GET /api/v1/customers/{id}`, in one wording, not only on the page.
#[test]
fn a_failed_attempt_gives_its_reason_in_fleet_customer_show_and_the_api() {
    use Outcome::*;
    use ReceiptKind::*;
    let server = OurRegistry::start();
    let dp = "data-plane";
    let now = time::OffsetDateTime::now_utc();
    let at = |minutes_ago: i64| {
        (now - time::Duration::minutes(minutes_ago))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let key = PrivateKey::from_secret_bytes(["umbrella".len() as u8; 32]);
    let failed = ReceiptBuilder::new("umbrella", dp, "2.0.0")
        .id("u2")
        .kind(Apply, Failed)
        .failure(
            "creating EKS Node Group (gpu): InsufficientInstanceCapacity",
            Some("aws_eks_node_group.gpu"),
        )
        .finished_at(&at(5))
        .sign(&key);
    report(
        &server,
        "umbrella",
        &[
            receipt("umbrella", "u1", (dp, "1.0.0"), (Apply, Succeeded), &at(10)),
            failed,
        ],
    );
    let reason =
        "`aws_eks_node_group.gpu`: creating EKS Node Group (gpu): InsufficientInstanceCapacity";

    let rows = json(&cli(&server, &["fleet", "--failed", "--json"]));
    assert_eq!(cells(&rows), ["umbrella:data-plane"]);
    assert_eq!(rows[0]["lastAttempt"]["reason"], reason);
    let support = server.token("support", None);
    assert_eq!(
        json(&remote(&server, &support, &["--failed", "--json"])),
        rows
    );
    let out = cli(&server, &["fleet", "--failed"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "umbrella data-plane: apply 2.0.0 failed: {reason}"
        )),
        "{text}"
    );

    let shown = json(&cli(&server, &["customer", "show", "umbrella", "--json"]));
    assert_eq!(shown["stacks"][0]["lastAttempt"]["reason"], reason);
    let api = Client::new(server.url(), Some(support.clone()));
    let r = api.req("GET", "/api/v1/customers/umbrella", &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["stacks"][0]["lastAttempt"]["reason"], reason);
    let out = cli(&server, &["customer", "show", "umbrella"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("apply 2.0.0 failed: {reason}")),
        "{text}"
    );
    let history = json(&cli(
        &server,
        &["customer", "history", "umbrella", "--json"],
    ));
    assert_eq!(history[1]["receiptId"], "u2");
    assert_eq!(history[1]["reason"], reason);
    assert!(
        history[0].get("reason").is_none(),
        "it succeeded: {history}"
    );
    let out = cli(&server, &["customer", "history", "umbrella"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("u2 data-plane: apply 2.0.0 failed: {reason}")),
        "{text}"
    );

    // A success mends it: no reason left to give.
    report(
        &server,
        "umbrella",
        &[receipt(
            "umbrella",
            "u3",
            (dp, "2.0.0"),
            (Apply, Succeeded),
            &at(1),
        )],
    );
    let shown = json(&cli(&server, &["customer", "show", "umbrella", "--json"]));
    assert!(
        shown["stacks"][0]["lastAttempt"].get("reason").is_none(),
        "{shown}"
    );

    // A sync pass that failed before any plan leaves no receipt: `fleet --failed`
    // and `customer show` still name it, with the runner's reason, from `--data`
    // and over `--url` alike.
    let pass = serde_json::json!({
        "customer": "umbrella", "startedAt": at(1), "finishedAt": at(0),
        "releases": [{"release": "environment", "kind": "release", "assigned": "1.1.0",
            "running": "1.0.0", "state": "failed",
            "message": "bundle `network@0.2.0` is signed by key `abc`, which this runner does not trust"}]
    });
    let umbrella = Client::new(
        server.url(),
        Some(server.token("customer", Some("umbrella"))),
    );
    let r = umbrella.req(
        "POST",
        "/api/v1/customers/umbrella/sync",
        &[],
        Some(&serde_json::to_vec(&pass).unwrap()),
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    let line = "umbrella environment: sync of 1.1.0 failed: bundle `network@0.2.0` is signed by key `abc`, which this runner does not trust";
    for out in [
        cli(&server, &["fleet", "--failed"]),
        remote(&server, &support, &["--failed"]),
    ] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains(line), "{text}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("no customer matches"));
    }
    let out = cli(&server, &["customer", "show", "umbrella"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("last sync pass, per release:"), "{text}");
    assert!(text.contains("which this runner does not trust"), "{text}");
}

/// Issue 39: a failed plan is a failed last attempt: `fleet --failed` finds the
/// customer with the plan's reason, `customer show` lists the stack instead of "no
/// stack reported yet", and a later successful plan mends it.
#[test]
fn fleet_failed_finds_a_customer_whose_plan_failed_with_its_reason() {
    use Outcome::*;
    use ReceiptKind::*;
    let server = OurRegistry::start();
    let now = time::OffsetDateTime::now_utc();
    let at = |minutes_ago: i64| {
        (now - time::Duration::minutes(minutes_ago))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let key = PrivateKey::from_secret_bytes(["umbrella".len() as u8; 32]);
    let plan = ReceiptBuilder::new("umbrella", "network", "0.1.0")
        .id("p1")
        .kind(Plan, Failed)
        .failure("Invalid value for variable", Some("var.cidr"))
        .finished_at(&at(5))
        .sign(&key);
    report(&server, "umbrella", &[plan]);
    let reason = "`var.cidr`: Invalid value for variable";

    let rows = json(&cli(&server, &["fleet", "--failed", "--json"]));
    assert_eq!(cells(&rows), ["umbrella:network"]);
    assert_eq!(rows[0]["lastAttempt"]["kind"], "plan");
    assert_eq!(rows[0]["lastAttempt"]["reason"], reason);
    let out = cli(&server, &["customer", "show", "umbrella"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("no stack reported yet"), "{text}");
    assert!(
        text.contains(&format!("umbrella network: plan 0.1.0 failed: {reason}")),
        "{text}"
    );
    let shown = json(&cli(&server, &["customer", "show", "umbrella", "--json"]));
    assert_eq!(shown["stacks"][0]["lastAttempt"]["reason"], reason);
    // The page says it in the same words (the address set as code).
    let cookie = crate::ui::sign_in(&server, &server.token("support", None));
    let page = crate::ui::html(&crate::ui::get(&server, "/ui/customers/umbrella", &cookie));
    assert!(page.contains("last attempt failed"), "{page}");
    assert!(
        page.contains("<code>var.cidr</code>: Invalid value for variable"),
        "{page}"
    );
    let fleet_page = crate::ui::html(&crate::ui::get(&server, "/ui", &cookie));
    assert!(fleet_page.contains(" · 1 failed · "), "{fleet_page}");

    report(
        &server,
        "umbrella",
        &[receipt(
            "umbrella",
            "p2",
            ("network", "0.1.0"),
            (Plan, Succeeded),
            &at(1),
        )],
    );
    let rows = json(&cli(&server, &["fleet", "--failed", "--json"]));
    assert!(cells(&rows).is_empty(), "the plan succeeded since: {rows}");
}
