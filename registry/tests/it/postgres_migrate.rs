//! `stackpack-registry migrate --to postgres://…` and `migrate --database
//! postgres://…` (issue 27), end to end against a real PostgreSQL and moto's S3:
//! a registry that ran on SQLite with its blobs in the data folder (bundles pushed,
//! customers, tokens, runners' receipts) is moved, served again with `serve
//! --database` (and `--blobs s3://…`), and answers exactly as before, to the
//! tokens made before; the refusals leave the data folder's registry as it was.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use stackpack_registry::db::{pg, Db};
use stackpack_test_support::servers::{free_port, wait_for_port, OurRegistry, Postgres};
use stackpack_test_support::Run;

use crate::common::{bytes, register_customers, sha256, Client, OCI_INDEX, OCI_MANIFEST};
use crate::postgres_backend::assert_same;
use crate::postgres_db::{ledger_day, without_times, TokenMaker};
use crate::s3_blobs::{emulator, keys, open_multipart_uploads, registry_command, BUCKET, PREFIX};

/// The cluster trusts loopback, so any password is accepted: it must never show.
const PASSWORD: &str = "hunter2-pw";

fn with_password(url: &str) -> String {
    url.replace("stackpack@", &format!("stackpack:{PASSWORD}@"))
}

/// Tokens made on SQLite before the move, which must still work after it.
struct Tokens {
    publisher: String,
    support: String,
    globex: String,
}

/// A registry that ran on SQLite, blobs in its data folder, now stopped: what it
/// answered before it stopped, and a blob pushed outside any manifest.
struct Ran {
    registry: OurRegistry,
    tokens: Tokens,
    big: String,
    answers: Vec<String>,
}

fn ran_on_sqlite() -> Ran {
    let mut registry = OurRegistry::start();
    register_customers(&registry, ["hooli"]);
    // Bundles pushed as the packager does, receipts from two customers' runners.
    ledger_day(&registry.url(), &TokenMaker::Cli(&registry));
    let publisher = registry.token("publisher", None);
    let client = Client::new(registry.url(), Some(publisher.clone()));
    client.push_image("acme/app", "1.0.0", 3);
    let big = client.push_blob("acme/app", &bytes(11, 3 * 1024 * 1024 + 7));
    let tokens = Tokens {
        publisher,
        support: registry.token("support", None),
        globex: registry.token("customer", Some("globex")),
    };
    let answers = reads(&registry.url(), &tokens, &big);
    registry.terminate();
    Ran {
        registry,
        tokens,
        big,
        answers,
    }
}

/// Everything a client reads, as text: the catalog, every tag's manifest and the
/// blobs it names (each checked against its digest), support's and the ledger's
/// answers, a customer's pull.
fn reads(base: &str, tokens: &Tokens, big: &str) -> Vec<String> {
    let client = |token: &String| Client::new(base.to_string(), Some(token.clone()));
    let (publisher, support, globex) = (
        client(&tokens.publisher),
        client(&tokens.support),
        client(&tokens.globex),
    );
    let mut answers = Vec::new();
    let catalog = publisher.req("GET", "/v2/_catalog", &[], None);
    assert_eq!(catalog.status, 200);
    let repositories = catalog.json()["repositories"].clone();
    answers.push(format!("catalog: {repositories}"));
    for repo in repositories.as_array().unwrap() {
        let repo = repo.as_str().unwrap();
        let tags = publisher.req("GET", &format!("/v2/{repo}/tags/list"), &[], None);
        let tags = tags.json()["tags"].clone();
        answers.push(format!("{repo} tags: {tags}"));
        for tag in tags.as_array().unwrap() {
            answers.extend(manifest_and_blobs(&publisher, repo, tag.as_str().unwrap()));
        }
    }
    answers.push(blob(&publisher, "acme/app", big));
    let pulled = globex.req(
        "GET",
        "/v2/acme/stacks/data-plane/manifests/1.5.0",
        &[],
        None,
    );
    answers.push(format!("globex pulls: {}", pulled.status));
    for path in [
        "/api/v1/support/versions",
        "/api/v1/support/behind",
        "/api/v1/support/prerelease",
        "/api/v1/support/drifted",
        "/api/v1/deployments?customer=globex",
        "/api/v1/fleet?stack=data-plane",
        "/api/v1/customers/globex",
        "/api/v1/customers/hooli",
        "/api/v1/releases?stack=data-plane",
        "/api/v1/stacks",
    ] {
        let r = support.req("GET", path, &[], None);
        let body = serde_json::from_slice::<serde_json::Value>(&r.body)
            .map(|json| without_times(&json).to_string())
            .unwrap_or_else(|_| String::from_utf8_lossy(&r.body).into_owned());
        answers.push(format!("GET {path}: {} {body}", r.status));
    }
    answers
}

fn manifest_and_blobs(client: &Client, repo: &str, tag: &str) -> Vec<String> {
    let accept = format!("{OCI_MANIFEST}, {OCI_INDEX}");
    let path = format!("/v2/{repo}/manifests/{tag}");
    let r = client.req("GET", &path, &[("Accept", &accept)], None);
    let mut answers = vec![format!(
        "{repo}:{tag}: {} {} {} bytes",
        r.status,
        sha256(&r.body),
        r.body.len()
    )];
    let manifest: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let layers = manifest["layers"].as_array().cloned().unwrap_or_default();
    for named in std::iter::once(&manifest["config"]).chain(&layers) {
        answers.push(blob(client, repo, named["digest"].as_str().unwrap()));
    }
    answers
}

/// A blob pulled whole, which must hash to its digest.
fn blob(client: &Client, repo: &str, digest: &str) -> String {
    let r = client.req("GET", &format!("/v2/{repo}/blobs/{digest}"), &[], None);
    assert_eq!(r.status, 200, "{repo}@{digest}");
    assert_eq!(sha256(&r.body), digest, "{repo}@{digest} byte for byte");
    format!("{repo}@{digest}: {} bytes", r.body.len())
}

/// `serve` on a data folder with extra arguments (`--database`, `--blobs`), with
/// the emulator's test credentials; killed when dropped.
struct Served {
    child: Child,
    port: u16,
}

impl Served {
    fn start(data: &Path, extra: &[String]) -> Served {
        let port = free_port();
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--data".into(),
            data.display().to_string(),
        ];
        args.extend_from_slice(extra);
        let child = registry_command(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        wait_for_port(port);
        Served { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn migrate(data: &Path, args: &[&str]) -> Run {
    let mut all: Vec<String> = vec!["migrate".into(), "--data".into()];
    all.push(data.display().to_string());
    all.extend(args.iter().map(|a| a.to_string()));
    let run = Run::from(registry_command(&all).output().unwrap());
    assert!(
        !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
        "the password was printed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run
}

/// The rows `migrate --to --json` says it copied into `table`.
fn copied(report: &serde_json::Value, table: &str) -> u64 {
    report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table)
        .unwrap_or_else(|| panic!("{table} not copied: {report}"))["rows"]
        .as_u64()
        .unwrap()
}

#[test]
fn a_registry_migrated_onto_postgres_and_s3_answers_as_it_did_on_sqlite() {
    let before = ran_on_sqlite();
    let data = before.registry.data.clone();
    let moto = emulator();
    let database = Postgres::start();
    let url = with_password(&database.url());
    let bucket = format!("s3://{BUCKET}/{PREFIX}");
    let report = migrate(
        &data,
        &[
            "--to",
            &url,
            "--move-blobs-to",
            &bucket,
            "--s3-endpoint",
            &moto.url,
            "--s3-region",
            "us-east-1",
            "--json",
        ],
    )
    .ok()
    .json();
    for table in [
        "tokens",
        "customers",
        "manifests",
        "tags",
        "receipts",
        "fleet_cells",
    ] {
        assert!(copied(&report, table) > 0, "{table}: {report}");
    }
    let blobs = copied(&report, "blobs");
    assert_eq!(report["moved"]["blobs"].as_u64(), Some(blobs), "{report}");
    assert_eq!(report["blobs"], format!("{bucket}/"), "{report}");
    assert!(keys(&moto, &format!("{PREFIX}/blobs/sha256/")).len() as u64 >= blobs);
    assert_eq!(open_multipart_uploads(&moto), 0);

    // Another machine: an empty data folder, the metadata in PostgreSQL, the
    // blobs in the bucket.
    let elsewhere = tempfile::tempdir().unwrap();
    let mut flags = vec!["--database".to_string(), url.clone(), "--blobs".into()];
    flags.extend([bucket, "--s3-endpoint".into(), moto.url.clone()]);
    let served = Served::start(&elsewhere.path().join("data"), &flags);
    let after = reads(&served.url(), &before.tokens, &before.big);
    assert_same(&before.answers, &after);
    not_vacuous(&before.answers);
}

/// The answers compared hold what a support engineer relies on.
fn not_vacuous(answers: &[String]) {
    let all = answers.join("\n");
    for needle in [
        "acme/stacks/data-plane:1.5.0: 200",
        "3145735 bytes",
        "globex pulls: 200",
        "\"1.6.0-feature-gpu.2\"",
        "initech",
        "hooli",
    ] {
        assert!(all.contains(needle), "missing `{needle}` in:\n{all}");
    }
    for refused in [": 401", ": 404", ": 500", ": 501"] {
        assert!(!all.contains(refused), "{all}");
    }
}

#[test]
fn a_registry_migrated_onto_postgres_keeps_its_blobs_in_the_data_folder_until_they_move_and_answers_the_same(
) {
    let before = ran_on_sqlite();
    let data = before.registry.data.clone();
    let database = Postgres::start();
    let url = with_password(&database.url());
    let run = migrate(&data, &["--to", &url]).ok();
    // For people: a table of the tables copied, and what to do next.
    let header = run.stdout.lines().next().unwrap_or_default();
    assert!(
        header.contains("ROWS") && header.contains("TABLE"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.lines().any(|l| l.ends_with(" receipts")),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("checked before the commit"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--database"), "{}", run.stderr);

    assert!(run.stderr.contains("the blobs stay in"), "{}", run.stderr);
    let served = Served::start(&data, &["--database".to_string(), url.clone()]);
    let after = reads(&served.url(), &before.tokens, &before.big);
    assert_same(&before.answers, &after);
    not_vacuous(&before.answers);
    drop(served);

    // Later, the replicas stopped, the blobs move into a bucket from the registry
    // on PostgreSQL; a replica on another machine then answers the same.
    let moto = emulator();
    let bucket = format!("s3://{BUCKET}/{PREFIX}");
    let s3 = ["--s3-endpoint", &moto.url, "--s3-region", "us-east-1"];
    let mut args = vec!["--database", &url, "--move-blobs-to", &bucket, "--json"];
    args.extend(s3);
    let moved = migrate(&data, &args).ok().json();
    assert!(moved["moved"]["blobs"].as_u64() > Some(5), "{moved}");
    let elsewhere = tempfile::tempdir().unwrap();
    let mut flags = vec!["--database".to_string(), url, "--blobs".into(), bucket];
    flags.extend(["--s3-endpoint".into(), moto.url.clone()]);
    let served = Served::start(&elsewhere.path().join("data"), &flags);
    let after = reads(&served.url(), &before.tokens, &before.big);
    assert_same(&before.answers, &after);
}

/// A fresh database `name` on `server`, its URL with the password.
fn database(server: &Postgres, name: &str) -> String {
    let mut admin = pg::connect(&server.url()).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    with_password(&server.url().replace("/postgres", &format!("/{name}")))
}

#[test]
fn migrate_to_refuses_an_unreachable_a_filled_and_a_newer_postgres_and_leaves_the_registry_as_it_was(
) {
    let mut registry = OurRegistry::start();
    let token = registry.publisher_token();
    registry.terminate();
    let data = registry.data.clone();

    let port = free_port();
    let gone = format!("postgres://registry:{PASSWORD}@127.0.0.1:{port}/metadata");
    let refused = migrate(&data, &["--to", &gone]).code(1);
    assert!(
        refused
            .stderr
            .contains(&format!("127.0.0.1:{port}, database metadata")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("hint:"), "{}", refused.stderr);
    let wrong = migrate(&data, &["--to", "mysql://registry@127.0.0.1/metadata"]).code(2);
    assert!(wrong.stderr.contains("postgres://"), "{}", wrong.stderr);

    let server = Postgres::start();
    let filled = database(&server, "filled");
    migrate(&data, &["--to", &filled]).ok();
    let again = migrate(&data, &["--to", &filled]).code(1);
    assert!(
        again.stderr.contains("already holds rows"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("serve --database"),
        "{}",
        again.stderr
    );

    let newer = database(&server, "newer");
    drop(Db::open_url(&newer, 1).unwrap());
    pg::connect(&newer)
        .unwrap()
        .batch_execute("UPDATE schema_version SET version = 999")
        .unwrap();
    for args in [
        vec!["--to", newer.as_str()],
        vec!["--database", newer.as_str()],
        vec!["--database", newer.as_str(), "--check"],
    ] {
        let refused = migrate(&data, &args).code(1);
        assert!(
            refused.stderr.contains("999"),
            "{args:?}: {}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("newer"),
            "{args:?}: {}",
            refused.stderr
        );
    }
    let version: i64 = pg::connect(&newer)
        .unwrap()
        .query_one("SELECT version FROM schema_version", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 999, "a newer schema is never changed");

    // The data folder's registry serves as before, to the token made before.
    registry.spawn();
    let client = Client::new(registry.url(), Some(token));
    assert_eq!(client.req("GET", "/v2/", &[], None).status, 200);
}

fn migrate_database(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(crate::common::BIN);
    command.args(["migrate", "--database", url]).args(args);
    command
}

#[test]
fn migrate_database_brings_a_postgres_registry_current_and_one_started_meanwhile_waits() {
    let server = Postgres::start();
    let url = database(&server, "fresh");
    let check = |expected: i32| {
        let run = Run::from(migrate_database(&url, &["--check"]).output().unwrap()).code(expected);
        assert!(!run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD));
        run.stdout
    };
    assert!(check(3).contains("behind: schema version 0"));

    // Another process holds the migration lock (a replica migrating): both
    // `migrate`s wait for it, then one migrates and the other finds it done.
    let mut holder = pg::connect(&url).unwrap();
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&pg::MIGRATION_LOCK])
        .unwrap();
    let mut waiting: Vec<Child> = (0..2)
        .map(|_| {
            migrate_database(&url, &["--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    for child in &mut waiting {
        assert!(child.try_wait().unwrap().is_none(), "it did not wait");
    }
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&pg::MIGRATION_LOCK])
        .unwrap();
    let reports: Vec<serde_json::Value> = waiting
        .into_iter()
        .map(|child| Run::from(child.wait_with_output().unwrap()).ok().json())
        .collect();
    for report in &reports {
        assert_eq!(report["to"], pg::SCHEMA_VERSION, "{report}");
    }
    assert!(reports.iter().any(|r| r["from"] == 0), "{reports:?}");
    assert!(check(0).contains(&format!("current: schema version {}", pg::SCHEMA_VERSION)));
    // A replica opens it without migrating anything more.
    drop(Db::open_url(&url, 1).unwrap());
}

/// The blob `digest` in a data folder (`blobs/sha256/<2>/<hex>`).
fn blob_file(data: &Path, digest: &str) -> std::path::PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap();
    data.join("blobs/sha256").join(&hex[..2]).join(hex)
}

/// A move that fails half way (a blob in the data folder no longer holds its
/// bytes) commits nothing to PostgreSQL and leaves the registry on its folder;
/// the cause fixed, the same command moves everything.
#[test]
fn a_move_onto_postgres_and_s3_failing_half_way_loses_nothing_and_runs_again() {
    let before = ran_on_sqlite();
    let data = before.registry.data.clone();
    let moto = emulator();
    let database = Postgres::start();
    let url = with_password(&database.url());
    let bucket = format!("s3://{BUCKET}/{PREFIX}");
    let args = [
        "--to",
        &url,
        "--move-blobs-to",
        &bucket,
        "--s3-endpoint",
        &moto.url,
    ];
    let file = blob_file(&data, &before.big);
    let whole = std::fs::read(&file).unwrap();
    let mut damaged = whole.clone();
    damaged[1000] ^= 0xff;
    std::fs::write(&file, &damaged).unwrap();

    let failed = migrate(&data, &args).code(1);
    assert!(failed.stderr.contains(&before.big), "{}", failed.stderr);
    assert!(
        failed.stderr.contains("nothing was copied into PostgreSQL"),
        "{}",
        failed.stderr
    );
    let rows: i64 = pg::connect(&database.url())
        .unwrap()
        .query_one("SELECT count(*) FROM tokens", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 0, "nothing committed to PostgreSQL");
    let check = Run::from(
        Command::new(crate::common::BIN)
            .args(["migrate", "--check", "--data"])
            .arg(&data)
            .output()
            .unwrap(),
    );
    assert_eq!(
        check.code, 0,
        "the data folder's registry is current: {}",
        check.stderr
    );

    // The damage repaired, the same command moves it all.
    std::fs::write(&file, &whole).unwrap();
    migrate(&data, &args).ok();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut flags = vec!["--database".to_string(), url, "--blobs".into(), bucket];
    flags.extend(["--s3-endpoint".into(), moto.url.clone()]);
    let served = Served::start(&elsewhere.path().join("data"), &flags);
    let after = reads(&served.url(), &before.tokens, &before.big);
    assert_same(&before.answers, &after);
}
