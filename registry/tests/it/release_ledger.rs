//! Support sees releases: a release (a customer's whole environment as one version)
//! pushed as the packager pushes it (blobs, bundles and services by digest, the
//! description, then the index by tag) is recorded with its parts; receipts applied
//! as part of a release keep it; `fleet --release`, `release list/show`, the API and
//! the support pages say which version each customer runs and which stacks deviate
//! ("mixed"); an index that claims to be a release but is not one is refused.

use crate::common;

use common::*;
use stackpack_schema::media_type;
use stackpack_schema::receipt::{Outcome, ReceiptKind, SignedReceipt};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;
use stackpack_test_support::receipts::ReceiptBuilder;
use stackpack_test_support::release_index::{ReleaseArtifacts, ReleaseBuilder};

const REPO: &str = "acme/releases/data-plane";
/// A service reference with markup in it: every page must show it as text.
const API_REFERENCE: &str = "registry.example/acme/api:1.0\"><script>alert(1)</script>";

fn release(version: &str, gpu_pools: &str) -> ReleaseArtifacts {
    ReleaseBuilder::new("data-plane", version)
        .stack("network", "1.0.0", &[])
        .stack("cluster", "0.3.0", &["network"])
        .stack("gpu-pools", gpu_pools, &["cluster"])
        .service("api", API_REFERENCE)
        .build()
}

/// Pushes every part by digest, then the index tagged with its version.
fn push_parts(client: &Client, artifacts: &ReleaseArtifacts) {
    for blob in &artifacts.blobs {
        client.push_blob(REPO, blob);
    }
    for m in &artifacts.manifests {
        let r = client.push_manifest(REPO, &m.digest.to_string(), &m.bytes, m.media_type);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    }
}

fn push_release(client: &Client, artifacts: &ReleaseArtifacts) {
    push_parts(client, artifacts);
    let version = artifacts.description.version.to_string();
    let index = &artifacts.index;
    let r = client.push_manifest(REPO, &version, &index.bytes, index.media_type);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

fn pinned(artifacts: &ReleaseArtifacts, stack: &str) -> Digest {
    artifacts.description.stack(stack).unwrap().digest.clone()
}

/// A receipt of `customer` applying `stack` at `version` (bundle `digest`) at
/// minute `minute`, as part of `release` (name, version, index) or on its own.
fn applied(
    customer: &str,
    (stack, version, digest): (&str, &str, Digest),
    release: Option<(&str, &ReleaseArtifacts)>,
    minute: u32,
) -> SignedReceipt {
    let mut builder = ReceiptBuilder::new(customer, stack, version)
        .id(format!("{customer}-{stack}-{version}-{minute}"))
        .bundle_digest(digest)
        .kind(ReceiptKind::Apply, Outcome::Succeeded)
        .at(&format!("2026-03-01T10:{minute:02}:00Z"));
    if let Some((name, artifacts)) = release {
        builder = builder.release(
            name,
            &artifacts.description.version.to_string(),
            artifacts.index.digest.clone(),
        );
    }
    builder.sign(&PrivateKey::from_secret_bytes([customer.len() as u8; 32]))
}

fn report(server: &OurRegistry, customer: &str, receipts: &[SignedReceipt]) {
    let client = Client::new(server.url(), Some(server.token("customer", Some(customer))));
    for signed in receipts {
        let r = client.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()));
        assert!(r.status < 300, "{}", String::from_utf8_lossy(&r.body));
    }
}

struct Seeded {
    server: OurRegistry,
    v1: ReleaseArtifacts,
    v2: ReleaseArtifacts,
    support: Client,
}

/// Two versions of `data-plane` (1.1.0 changes only `gpu-pools`); globex moved to
/// 1.1.0 (its network and cluster were not re-applied, so their receipts still name
/// 1.0.0); initech runs 1.0.0 but applied `cluster` 0.3.1 on its own and never
/// deployed `gpu-pools`; hooli runs `network` on its own and no release.
fn seed() -> Seeded {
    let server = OurRegistry::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let (v1, v2) = (release("1.0.0", "0.1.0"), release("1.1.0", "0.2.0"));
    push_release(&publisher, &v1);
    push_release(&publisher, &v2);
    let release_1 = Some(("data-plane", &v1));
    let release_2 = Some(("data-plane", &v2));
    let network = || ("network", "1.0.0", pinned(&v1, "network"));
    let cluster = || ("cluster", "0.3.0", pinned(&v1, "cluster"));
    cli_ok(
        &server,
        &["customer", "add", "globex", "--environment", "production"],
    );
    report(
        &server,
        "globex",
        &[
            applied("globex", network(), release_1, 1),
            applied("globex", cluster(), release_1, 2),
            applied(
                "globex",
                ("gpu-pools", "0.1.0", pinned(&v1, "gpu-pools")),
                release_1,
                3,
            ),
            applied(
                "globex",
                ("gpu-pools", "0.2.0", pinned(&v2, "gpu-pools")),
                release_2,
                10,
            ),
        ],
    );
    report(
        &server,
        "initech",
        &[
            applied("initech", network(), release_1, 1),
            applied("initech", cluster(), release_1, 2),
            applied(
                "initech",
                ("cluster", "0.3.1", Digest::of(b"cluster 0.3.1")),
                None,
                20,
            ),
        ],
    );
    report(&server, "hooli", &[applied("hooli", network(), None, 1)]);
    let support = Client::new(server.url(), Some(server.token("support", None)));
    Seeded {
        server,
        v1,
        v2,
        support,
    }
}

fn get_json(client: &Client, path: &str) -> serde_json::Value {
    let r = client.req("GET", path, &[], None);
    assert_eq!(
        r.status,
        200,
        "{path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

/// The snapshot with its receive time (the one value a run cannot know) set aside.
fn without_published_at(mut value: serde_json::Value) -> serde_json::Value {
    let published = value["publishedAt"].take();
    assert!(
        published.as_str().is_some_and(|t| t.ends_with('Z')),
        "{published}"
    );
    value
}

#[test]
fn a_release_is_recorded_with_its_parts_and_support_sees_who_runs_it_and_what_is_mixed() {
    let Seeded {
        server,
        v1,
        v2,
        support,
    } = seed();

    // Recorded, newest first, with the index digest the tag points at.
    let versions = get_json(&support, "/api/v1/releases/data-plane");
    let listed: Vec<(&str, &str)> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["version"].as_str().unwrap(),
                v["digest"].as_str().unwrap(),
            )
        })
        .collect();
    let (d1, d2) = (v1.index.digest.to_string(), v2.index.digest.to_string());
    assert_eq!(listed, [("1.1.0", d2.as_str()), ("1.0.0", d1.as_str())]);

    // The snapshot of 1.1.0: every part pinned by digest, in apply order; globex
    // runs it exactly (its unchanged stacks were not re-applied).
    let service = &v2.description.services[0];
    let expected = serde_json::json!({
        "name": "data-plane", "version": "1.1.0", "repository": REPO, "digest": d2,
        "prerelease": false, "publishedAt": null,
        "stacks": [
            {"stack": "network", "version": "1.0.0", "digest": pinned(&v2, "network").to_string()},
            {"stack": "cluster", "version": "0.3.0", "digest": pinned(&v2, "cluster").to_string()},
            {"stack": "gpu-pools", "version": "0.2.0", "digest": pinned(&v2, "gpu-pools").to_string()},
        ],
        "services": [{"service": "api", "reference": API_REFERENCE, "digest": service.digest.to_string()}],
        "customers": [{"customer": "globex", "environment": "production", "release": "data-plane",
                       "version": "1.1.0", "digest": d2, "recorded": true, "mixed": []}],
    });
    let snapshot = get_json(&support, "/api/v1/releases/data-plane/1.1.0");
    assert_eq!(without_published_at(snapshot), expected);

    // 1.0.0: initech, with `cluster` applied on its own and `gpu-pools` missing.
    let initech = serde_json::json!({
    "customer": "initech", "environment": null, "release": "data-plane", "version": "1.0.0",
    "digest": d1, "recorded": true, "mixed": [
        {"stack": "cluster", "expected": "0.3.0", "running": "0.3.1",
         "digest": Digest::of(b"cluster 0.3.1").to_string(), "deployedWith": null,
         "reason": "applied-on-its-own"},
        {"stack": "gpu-pools", "expected": "0.1.0", "running": null, "digest": null,
         "deployedWith": null, "reason": "not-deployed"},
    ]});
    let snapshot = get_json(&support, "/api/v1/releases/data-plane/1.0.0");
    assert_eq!(snapshot["customers"], serde_json::json!([initech]));

    // The fleet of the release: one row per customer that deployed it (hooli
    // never did), the same from the API, `--data` and `--url`.
    let fleet = get_json(&support, "/api/v1/releases/data-plane/fleet");
    assert_eq!(
        fleet,
        serde_json::json!([expected["customers"][0], initech])
    );
    let from_data = json(&cli_ok(
        &server,
        &["fleet", "--release", "data-plane", "--json"],
    ));
    assert_eq!(from_data, fleet);
    let token = server.token("support", None);
    let over_url = std::process::Command::new(BIN)
        .args([
            "fleet",
            "--release",
            "data-plane",
            "--json",
            "--url",
            &server.url(),
        ])
        .env("STACKPACK_REGISTRY_TOKEN", &token)
        .output()
        .unwrap();
    assert_eq!(json(&over_url), fleet);

    // For people: one line per customer, the mixed stacks in words.
    let out = cli_ok(&server, &["fleet", "--release", "data-plane"]);
    let table = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("CUSTOMER"), "{table}");
    assert!(
        lines[1].starts_with("globex")
            && lines[1].contains("1.1.0")
            && lines[1].trim_end().ends_with('-'),
        "{table}"
    );
    assert!(
        lines[2].starts_with("initech") && lines[2].contains("1.0.0"),
        "{table}"
    );
    assert!(
        lines[2].contains("cluster 0.3.1, release pins 0.3.0 (applied on its own)")
            && lines[2].contains("gpu-pools nothing, release pins 0.1.0 (not deployed)"),
        "{table}"
    );
    assert_eq!(lines.len(), 3, "{table}");

    // `release list` and `release show` answer from the same records.
    let out = cli_ok(&server, &["release", "list"]);
    let list = String::from_utf8(out.stdout).unwrap();
    assert!(
        list.contains("data-plane  1.1.0") && list.contains("data-plane  1.0.0"),
        "{list}"
    );
    let shown = json(&cli_ok(
        &server,
        &["release", "show", "data-plane@1.1.0", "--json"],
    ));
    assert_eq!(without_published_at(shown), expected);
    let out = cli(&server, &["release", "show", "data-plane"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "not NAME@VERSION is a usage error"
    );

    // Each deployment keeps the release it was applied with; one applied on its own
    // has none.
    let deployments = get_json(&support, "/api/v1/deployments?customer=initech");
    for d in deployments.as_array().unwrap() {
        match d["stack"].as_str().unwrap() {
            "cluster" if d["version"] == "0.3.1" => assert!(d.get("release").is_none(), "{d}"),
            _ => assert_eq!(
                d["release"],
                serde_json::json!({"name": "data-plane", "version": "1.0.0", "digest": d1}),
                "{d}"
            ),
        }
    }

    // A customer token reads its own customer's row only.
    let globex = Client::new(server.url(), Some(server.token("customer", Some("globex"))));
    let own = globex.req(
        "GET",
        "/api/v1/releases/data-plane/fleet?customer=globex",
        &[],
        None,
    );
    assert_eq!(own.status, 200);
    let all = globex.req("GET", "/api/v1/releases/data-plane/fleet", &[], None);
    assert_eq!(all.status, 403, "{}", String::from_utf8_lossy(&all.body));

    // An unknown version is a 404 that names the versions there are.
    let r = support.req("GET", "/api/v1/releases/data-plane/9.9.9", &[], None);
    assert_eq!(r.status, 404);
    assert!(
        String::from_utf8_lossy(&r.body).contains("its versions here: `1.1.0`, `1.0.0`"),
        "{}",
        String::from_utf8_lossy(&r.body)
    );

    // Deleting the index forgets the release version with it.
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let r = admin.req("DELETE", &format!("/v2/{REPO}/manifests/{d2}"), &[], None);
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let r = support.req("GET", "/api/v1/releases/data-plane/1.1.0", &[], None);
    assert_eq!(r.status, 404);
    let versions = get_json(&support, "/api/v1/releases/data-plane");
    assert_eq!(versions.as_array().unwrap().len(), 1, "{versions}");
}

/// `ARGS` against the seeded registry's folder, expected to be refused as the
/// command's mistake (exit 2, nothing on stdout); its stderr.
fn misnamed(server: &OurRegistry, args: &[&str]) -> String {
    let out = cli(server, args);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(out.stdout.is_empty(), "{args:?}");
    stderr
}

#[test]
fn a_misspelt_customer_stack_or_release_is_refused_with_did_you_mean_and_what_exists() {
    let Seeded {
        server, support, ..
    } = seed();
    let customers = "its customers: `globex`, `hooli`, `initech`";

    // `fleet`: never an empty matrix and "no customer matches" with exit 0.
    let stderr = misnamed(&server, &["fleet", "--customer", "globx"]);
    assert!(
        stderr.contains(&format!(
            "customer `globx` does not exist in this registry; did you mean `globex`?; {customers}"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("no customer matches"), "{stderr}");
    let stderr = misnamed(&server, &["fleet", "--stack", "netwrk"]);
    assert!(
        stderr.contains("stack `netwrk` does not exist in this registry; did you mean `network`?"),
        "{stderr}"
    );
    let stderr = misnamed(&server, &["fleet", "--release", "data-plan"]);
    assert!(
        stderr.contains("release `data-plan` does not exist in this registry; did you mean `data-plane`?; its releases: `data-plane`"),
        "{stderr}"
    );
    let stderr = misnamed(
        &server,
        &["fleet", "--release", "data-plane", "--customer", "initek"],
    );
    assert!(stderr.contains("did you mean `initech`?"), "{stderr}");

    // `customer show` and `release show`.
    let stderr = misnamed(&server, &["customer", "show", "globx"]);
    assert!(
        stderr.contains("customer `globx` does not exist in this registry; did you mean `globex`?"),
        "{stderr}"
    );
    let stderr = misnamed(&server, &["release", "show", "data-plan@1.1.0"]);
    assert!(
        stderr.contains(
            "release `data-plan` does not exist in this registry; did you mean `data-plane`?"
        ),
        "{stderr}"
    );
    let stderr = misnamed(&server, &["release", "show", "data-plane@0.3.0"]);
    assert!(
        stderr.contains("release `data-plane` has no version `0.3.0` recorded here; its versions here: `1.1.0`, `1.0.0`"),
        "{stderr}"
    );

    // Over `--url` and on the API: the same words, exit 2, a 404.
    let token = server.token("support", None);
    let over_url = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .args(["--url", &server.url(), "--token", &token])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    for (args, path) in [
        (
            &["fleet", "--customer", "globx"][..],
            "/api/v1/fleet?customer=globx",
        ),
        (
            &["fleet", "--release", "data-plan"][..],
            "/api/v1/releases/data-plan/fleet",
        ),
        (
            &["customer", "show", "globx"][..],
            "/api/v1/customers/globx",
        ),
        (
            &["release", "show", "data-plan@1.1.0"][..],
            "/api/v1/releases/data-plan/1.1.0",
        ),
    ] {
        let r = support.req("GET", path, &[], None);
        assert_eq!(r.status, 404, "{path}");
        let message = r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains("did you mean"), "{message}");
        assert!(over_url(args).contains(&message), "{args:?}: {message}");
        assert!(
            misnamed(&server, args).contains(&message),
            "{args:?}: {message}"
        );
    }

    // The support pages say the same.
    let cookie = sign_in(&server);
    for (path, words) in [
        (
            "/ui/customers/globx",
            "customer <code>globx</code> does not exist in this registry; did you mean <code>globex</code>?",
        ),
        (
            "/ui/stacks/netwrk",
            "stack <code>netwrk</code> does not exist in this registry; did you mean <code>network</code>?",
        ),
    ] {
        let r = page(&server, path, Some(&cookie));
        assert_eq!(r.status, 404, "{path}");
        let body = String::from_utf8_lossy(&r.body);
        assert!(body.contains(words), "{path}: {body}");
    }

    // A customer's own token is told its question's name is unknown, not the names
    // the registry has: those are support's to read.
    let own = Client::new(server.url(), Some(server.token("customer", Some("globex"))));
    let r = own.req(
        "GET",
        "/api/v1/fleet?customer=globex&stack=netwrk",
        &[],
        None,
    );
    assert_eq!(r.status, 404);
    let body = String::from_utf8_lossy(&r.body);
    assert!(body.contains("stack `netwrk` does not exist"), "{body}");
    assert!(
        !body.contains("`network`") && !body.contains("its stacks"),
        "{body}"
    );
}

/// `customer show ARGS --url` with a token, as support runs it from anywhere.
pub fn show_over_url(server: &OurRegistry, token: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(BIN)
        .args(["customer", "show"])
        .args(args)
        .args(["--url", &server.url()])
        .env("STACKPACK_REGISTRY_TOKEN", token)
        .output()
        .unwrap()
}

#[test]
fn customer_show_answers_what_exactly_globex_runs_in_one_command() {
    let Seeded { server, v2, .. } = seed();
    // globex, on 1.1.0, then applies `cluster` 0.3.1 on its own: a mixed stack.
    let hotfix = Digest::of(b"cluster 0.3.1");
    report(
        &server,
        "globex",
        &[applied(
            "globex",
            ("cluster", "0.3.1", hotfix.clone()),
            None,
            30,
        )],
    );

    let shown = json(&cli_ok(&server, &["customer", "show", "globex", "--json"]));
    assert_eq!(shown["customer"]["id"], "globex");
    assert_eq!(shown["customer"]["environment"], "production");
    assert_eq!(shown["customer"]["lastSeen"], "2026-03-01T10:30:00Z");
    // Each stack: version and bundle in place, and the last attempt.
    let stacks: Vec<(String, String, String, String, String, String)> = shown["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let a = &r["lastAttempt"];
            [
                &r["stack"],
                &r["version"],
                &r["digest"],
                &a["kind"],
                &a["outcome"],
                &a["finishedAt"],
            ]
            .map(|v| v.as_str().unwrap().to_string())
            .into()
        })
        .collect();
    let row = |stack: &str, version: &str, digest: &Digest, minute: u32| {
        (
            stack.to_string(),
            version.to_string(),
            digest.to_string(),
            "apply".to_string(),
            "succeeded".to_string(),
            format!("2026-03-01T10:{minute:02}:00Z"),
        )
    };
    assert_eq!(
        stacks,
        [
            row("cluster", "0.3.1", &hotfix, 30),
            row("gpu-pools", "0.2.0", &pinned(&v2, "gpu-pools"), 10),
            row("network", "1.0.0", &pinned(&v2, "network"), 1),
        ]
    );
    // The release: version, index digest, the mixed stack, and what it pins.
    let d2 = v2.index.digest.to_string();
    let service = &v2.description.services[0];
    let release = &shown["releases"][0];
    assert_eq!(shown["releases"].as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(
        (&release["release"], &release["version"], &release["digest"]),
        (&"data-plane".into(), &"1.1.0".into(), &d2.clone().into())
    );
    assert_eq!(
        release["mixed"],
        serde_json::json!([{"stack": "cluster", "expected": "0.3.0", "running": "0.3.1",
            "digest": hotfix.to_string(), "deployedWith": null, "reason": "applied-on-its-own"}])
    );
    assert_eq!(
        release["services"],
        serde_json::json!([{"service": "api", "reference": API_REFERENCE,
            "digest": service.digest.to_string()}])
    );
    assert_eq!(
        release["stacks"][2],
        serde_json::json!({"stack": "gpu-pools", "version": "0.2.0",
            "digest": pinned(&v2, "gpu-pools").to_string()})
    );

    // The same document over the API, with a support token or globex's own.
    let support = server.token("support", None);
    assert_eq!(
        json(&show_over_url(&server, &support, &["globex", "--json"])),
        shown
    );
    let own = server.token("customer", Some("globex"));
    assert_eq!(
        json(&show_over_url(&server, &own, &["globex", "--json"])),
        shown
    );

    // For people: a header, the stacks, the release line, the mixed stack, the
    // services with their digests (shortened on screen).
    let out = cli_ok(&server, &["customer", "show", "globex"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("customer globex\n"), "{text}");
    assert!(
        text.contains("environment production  last seen 2026-03-01T10:30:00Z"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("STACK ") && l.contains("OUTCOME")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("cluster ")
            && l.contains("0.3.1")
            && l.contains(&hotfix.short())
            && l.contains("apply")
            && l.contains("succeeded")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "release data-plane 1.1.0  index {}",
            v2.index.digest.short()
        )),
        "{text}"
    );
    assert!(
        text.contains("mixed: cluster 0.3.1, release pins 0.3.0 (applied on its own)"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("api ")
            && l.contains(&service.digest.short())
            && l.contains("registry.example/acme/api:1.0")),
        "{text}"
    );
    let over_url = show_over_url(&server, &support, &["globex"]);
    assert_eq!(String::from_utf8(over_url.stdout).unwrap(), text);

    // A customer that runs no release says so.
    let out = cli_ok(&server, &["customer", "show", "hooli"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("no release: every stack was applied on its own"),
        "{text}"
    );
    assert_eq!(
        json(&cli_ok(&server, &["customer", "show", "hooli", "--json"]))["releases"],
        serde_json::json!([])
    );

    // An unknown customer is the command's mistake (exit 2), named with the ones
    // there are, from the folder and the API; another customer's token may not look.
    let out = cli(&server, &["customer", "show", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("customer `nobody` does not exist in this registry"),
        "{stderr}"
    );
    assert!(stderr.contains("customer list"), "{stderr}");
    let out = show_over_url(&server, &support, &["nobody"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("customer `nobody` does not exist in this registry"),
        "{stderr}"
    );
    let out = show_over_url(&server, &own, &["initech"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&own));
    // A malformed id is the command's mistake (exit 2), asked of nobody.
    let out = cli(&server, &["customer", "show", "Not An Id"]);
    assert_eq!(out.status.code(), Some(2));
}

fn sign_in(server: &OurRegistry) -> String {
    let token = server.token("support", None);
    let r = send(
        "POST",
        &format!("{}/ui/login", server.url()),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(format!("token={token}").as_bytes()),
    );
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let cookie = r.header("set-cookie").unwrap();
    cookie.split(';').next().unwrap().to_string()
}

fn page(server: &OurRegistry, path: &str, cookie: Option<&str>) -> Resp {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
    send("GET", &format!("{}{path}", server.url()), &headers, None)
}

#[test]
fn the_release_page_and_the_customer_page_show_the_snapshot_and_escape_it() {
    let Seeded { server, v1, v2, .. } = seed();

    // Support pages need a session, as the others do.
    let r = page(&server, "/ui/releases/data-plane/1.1.0", None);
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/ui/login"));

    let cookie = sign_in(&server);
    let r = page(&server, "/ui/releases/data-plane/1.1.0", Some(&cookie));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let html = String::from_utf8(r.body).unwrap();
    for (stack, version) in [
        ("network", "1.0.0"),
        ("cluster", "0.3.0"),
        ("gpu-pools", "0.2.0"),
    ] {
        assert!(
            html.contains(&format!(
                "<a href=\"/ui/stacks/{stack}/{version}\">{version}</a>"
            )),
            "{stack} {version} in {html}"
        );
    }
    let service = v2.description.services[0].digest.to_string();
    assert!(
        html.contains(&service),
        "the service's whole digest: {html}"
    );
    assert!(html.contains(&v2.index.digest.to_string()));
    assert!(
        html.contains("<a href=\"/ui/customers/globex\">globex</a>"),
        "{html}"
    );
    assert!(html.contains("runs exactly this release"), "{html}");
    assert!(
        !html.contains("<script>"),
        "markup from a reference is escaped: {html}"
    );
    assert!(
        html.contains("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );

    // The customer page: its release, and the stacks that deviate from it.
    let r = page(&server, "/ui/customers/initech", Some(&cookie));
    assert_eq!(r.status, 200);
    let html = String::from_utf8(r.body).unwrap();
    let section = html
        .split("<table id=\"releases\">")
        .nth(1)
        .unwrap_or_else(|| panic!("no release section: {html}"));
    let section = section.split("</table>").next().unwrap();
    assert!(
        section.contains("<a href=\"/ui/releases/data-plane/1.0.0\">data-plane 1.0.0</a>"),
        "{section}"
    );
    assert!(
        section.contains("applied on its own") && section.contains("not deployed"),
        "{section}"
    );
    assert!(
        section.contains(&v1.index.digest.to_string()),
        "the index digest: {section}"
    );
    // The snapshot: the services the release pins, by whole digest, under a link
    // to the release's page; a reference's markup stays text.
    let services = html
        .split("<table id=\"services-data-plane\">")
        .nth(1)
        .unwrap_or_else(|| panic!("no services of the release: {html}"));
    let services = services.split("</table>").next().unwrap();
    assert!(
        services.contains(&v1.description.services[0].digest.to_string()),
        "{services}"
    );
    assert!(
        services.contains("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{services}"
    );
    assert!(
        html.contains(
            "<h3>Services of <a href=\"/ui/releases/data-plane/1.0.0\">data-plane 1.0.0</a></h3>"
        ),
        "{html}"
    );
    assert!(!html.contains("<script>"), "{html}");

    // A version never pushed here is a page that says so.
    let r = page(&server, "/ui/releases/data-plane/9.9.9", Some(&cookie));
    assert_eq!(r.status, 404);
}

#[test]
fn an_index_that_claims_to_be_a_release_but_is_not_one_is_refused_and_a_plain_index_is_stored() {
    let server = OurRegistry::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let artifacts = release("1.0.0", "0.1.0");
    push_parts(&publisher, &artifacts);
    let refused =
        |index: &stackpack_test_support::release_index::Manifest, tag: &str, says: &str| {
            let r = publisher.push_manifest(REPO, tag, &index.bytes, index.media_type);
            assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
            assert_eq!(r.error_code(), "MANIFEST_INVALID");
            let message = r.json()["errors"][0]["message"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(message.contains(says), "{message}");
            assert_eq!(
                publisher
                    .req("GET", &format!("/v2/{REPO}/manifests/{tag}"), &[], None)
                    .status,
                404
            );
        };

    // No description first.
    let without: Vec<_> = artifacts.entries[1..].to_vec();
    refused(
        &ReleaseArtifacts::index_of(without),
        "1.0.0",
        "is not a release description",
    );

    // A description that does not parse.
    let garbage = b"{\"format\":1,\"name\":".to_vec();
    publisher.push_blob(REPO, &garbage);
    let broken = stackpack_schema::oci::ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::RELEASE_DESCRIPTION_ARTIFACT.into()),
        config: stackpack_schema::oci::Descriptor::new(
            media_type::RELEASE_CONFIG,
            Digest::of(&garbage),
            garbage.len() as u64,
        ),
        layers: vec![stackpack_schema::oci::Descriptor::empty()],
        subject: None,
        annotations: None,
    }
    .to_bytes();
    let r = publisher.push_manifest(REPO, &sha256(&broken), &broken, media_type::OCI_MANIFEST);
    assert_eq!(r.status, 201);
    let mut entries = artifacts.entries.clone();
    entries[0].digest = Digest::of(&broken);
    entries[0].size = broken.len() as u64;
    refused(
        &ReleaseArtifacts::index_of(entries),
        "1.0.0",
        "is not a release description",
    );

    // A tag other than the version it describes.
    refused(
        &artifacts.index,
        "1.0.1",
        "its description says version `1.0.0`",
    );

    // A part the description pins that the index does not list.
    let mut entries = artifacts.entries.clone();
    entries.pop();
    refused(&ReleaseArtifacts::index_of(entries), "1.0.0", "pins `api`");
    assert_eq!(
        get_json(&support, "/api/v1/releases/data-plane"),
        serde_json::json!([])
    );

    // Any other index is the OCI index it is: stored, not a release.
    let mut plain = stackpack_schema::oci::ImageIndex::new(artifacts.entries[1..].to_vec());
    plain.artifact_type = None;
    let plain = plain.to_bytes();
    let r = publisher.push_manifest(REPO, "plain", &plain, media_type::OCI_INDEX);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        get_json(&support, "/api/v1/releases/data-plane"),
        serde_json::json!([])
    );

    // And the valid one, after all that, is recorded.
    let index = &artifacts.index;
    let r = publisher.push_manifest(REPO, "1.0.0", &index.bytes, index.media_type);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let versions = get_json(&support, "/api/v1/releases/data-plane");
    assert_eq!(versions[0]["digest"], index.digest.to_string());
}
