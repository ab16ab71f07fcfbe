//! The commands other than `serve` on a registry whose metadata lives in
//! PostgreSQL (issue 27): `--database URL` (or `database =` in the `--config` file
//! the replicas read) reaches the same rows `serve --database` serves, against a
//! real PostgreSQL; its password is never printed.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{self, Client};
use stackpack_test_support::servers::{OurRegistry, Postgres};

/// The password every test puts in the URL: the cluster trusts loopback, so it
/// is accepted, and it must show in no output.
const PASSWORD: &str = "hunter2-pw";

fn url_with_password(database: &Postgres) -> String {
    database
        .url()
        .replace("stackpack@", &format!("stackpack:{PASSWORD}@"))
}

/// Runs `stackpack-registry ARGS`, checking that neither stream holds the password.
fn run(args: &[&str]) -> Output {
    let out = Command::new(common::BIN).args(args).output().unwrap();
    for stream in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        assert!(
            !text.contains(PASSWORD),
            "{args:?} printed the password: {text}"
        );
    }
    out
}

/// [`run`], which must succeed; its stdout as JSON.
fn run_json(args: &[&str]) -> serde_json::Value {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_token_made_by_token_create_on_postgres_authenticates_against_serve_on_it() {
    let database = Postgres::start();
    let url = url_with_password(&database);
    let registry = OurRegistry::start_with(&["--database", &url]);
    let data = path(&registry.data);

    let created = run_json(&[
        "token",
        "create",
        "--role",
        "publisher",
        "--name",
        "ci",
        "--json",
        "--database",
        &url,
        "--data",
        data,
    ]);
    let publisher = Client::new(
        registry.url(),
        Some(created["token"].as_str().unwrap().into()),
    );
    assert_eq!(publisher.req("GET", "/v2/", &[], None).status, 200);
    publisher.push_image("acme/app", "1.0.0", 7);
    assert!(
        !registry.data.join("registry.db").exists(),
        "token create made no SQLite database beside PostgreSQL"
    );

    // `token list` and `token revoke` read and write the same rows: the revoked
    // token is refused by the running server at once. Neither needs the data
    // folder: they run from any machine that reaches the database, creating nothing
    // there.
    let elsewhere = tempfile::tempdir().unwrap();
    let listed = Command::new(common::BIN)
        .args(["token", "list", "--json", "--database", &url])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed[0]["name"], "ci", "{listed}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    let id = created["id"].as_str().unwrap();
    run_json(&["token", "revoke", id, "--json", "--database", &url]);
    assert_eq!(publisher.req("GET", "/v2/", &[], None).status, 401);
}

#[test]
fn gc_on_postgres_deletes_an_unreferenced_blob_keeps_referenced_ones_and_honours_the_lease() {
    let database = Postgres::start();
    let url = url_with_password(&database);
    let registry = OurRegistry::start_with(&["--database", &url]);
    let data = path(&registry.data);
    let created = run_json(&[
        "token",
        "create",
        "--role",
        "publisher",
        "--json",
        "--database",
        &url,
        "--data",
        data,
    ]);
    let publisher = Client::new(
        registry.url(),
        Some(created["token"].as_str().unwrap().into()),
    );
    let (manifest, _) = publisher.push_image("acme/app", "1.0.0", 11);
    let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    let stray = publisher.push_blob("acme/app", b"a layer no manifest names");

    let gc = [
        "gc",
        "--grace-secs",
        "0",
        "--json",
        "--database",
        &url,
        "--data",
        data,
    ];
    // Another replica's host holds gc's lease in the shared database: this gc
    // waits its turn rather than sweeping beside it.
    let holder = "pid 1 on another-replica (00000000)";
    let now = stackpack_registry::rollout::now_ns();
    stackpack_registry::db::Db::open_url(&url, 1)
        .unwrap()
        .write_keyed(&[], |tx| {
            let taken = stackpack_registry::db::leases::take(
                tx,
                stackpack_registry::lease::GC,
                holder,
                now,
                now + 60_000_000_000,
            )?;
            assert!(taken.is_ok());
            Ok(())
        })
        .unwrap();
    let refused = run(&gc);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("gc is already running"), "{stderr}");
    assert!(stderr.contains(holder), "{stderr}");
    assert!(
        stderr.contains("registry database (postgresql at 127.0.0.1:"),
        "{stderr}"
    );
    stackpack_registry::db::Db::open_url(&url, 1)
        .unwrap()
        .write_keyed(&[], |tx| {
            Ok(stackpack_registry::db::leases::give_back(tx, "gc", holder)?)
        })
        .unwrap();

    let report = run_json(&gc);
    assert_eq!(report["blobsDeleted"], 1, "{report}");
    let head = |digest: &str| {
        publisher
            .req("HEAD", &format!("/v2/acme/app/blobs/{digest}"), &[], None)
            .status
    };
    assert_eq!(head(&stray), 404, "the unreferenced blob is gone");
    assert_eq!(head(manifest["config"]["digest"].as_str().unwrap()), 200);
    assert_eq!(head(manifest["layers"][0]["digest"].as_str().unwrap()), 200);
    let again = run_json(&gc);
    assert_eq!(again["blobsDeleted"], 0, "{again}");
}

/// A `--config` file as the replicas read it: the data folder and the database.
fn config_file(dir: &Path, data: &Path, database: &str) -> std::path::PathBuf {
    let file = dir.join("registry.toml");
    std::fs::write(
        &file,
        format!("data = \"{}\"\ndatabase = \"{database}\"\n", data.display()),
    )
    .unwrap();
    file
}

#[test]
fn a_customer_added_by_the_cli_with_the_replicas_config_file_shows_in_the_served_api() {
    let database = Postgres::start();
    let url = url_with_password(&database);
    let registry = OurRegistry::start_with(&["--database", &url]);
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &registry.data, &url);
    let config = path(&config);

    let added = run_json(&[
        "customer",
        "add",
        "acme",
        "--environment",
        "production",
        "--json",
        "--config",
        config,
    ]);
    assert_eq!(added["id"], "acme", "{added}");
    let admin = run_json(&[
        "token", "create", "--role", "admin", "--json", "--config", config,
    ]);
    let admin = Client::new(
        registry.url(),
        Some(admin["token"].as_str().unwrap().into()),
    );
    let served = admin.req("GET", "/api/v1/customers/acme", &[], None);
    assert_eq!(
        served.status,
        200,
        "{}",
        String::from_utf8_lossy(&served.body)
    );
    assert_eq!(served.json()["customer"]["environment"], "production");

    // The ledger views read the same rows, from the file or from the flags.
    let listed = run_json(&["customer", "list", "--json", "--config", config]);
    assert_eq!(listed[0]["id"], "acme", "{listed}");
    let shown = run_json(&[
        "customer",
        "show",
        "acme",
        "--json",
        "--database",
        &url,
        "--data",
        path(&registry.data),
    ]);
    assert_eq!(shown["customer"]["environment"], "production", "{shown}");
    run_json(&["fleet", "--json", "--config", config]);

    // The command line wins over the file: a file naming a database that does not
    // answer is overridden by `--database`.
    let elsewhere = tempfile::tempdir().unwrap();
    let dead = format!(
        "postgres://stackpack:{PASSWORD}@127.0.0.1:{}/postgres",
        stackpack_test_support::servers::free_port()
    );
    let stale = config_file(elsewhere.path(), &registry.data, &dead);
    let listed = run_json(&[
        "customer",
        "list",
        "--json",
        "--config",
        path(&stale),
        "--database",
        &url,
    ]);
    assert_eq!(listed[0]["id"], "acme", "{listed}");
}

#[test]
fn a_cli_command_on_a_postgres_that_does_not_answer_or_holds_no_registry_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = path(&data);
    let port = stackpack_test_support::servers::free_port();
    let dead = format!("postgres://registry:{PASSWORD}@127.0.0.1:{port}/metadata");
    let config = config_file(dir.path(), Path::new(data), &dead);
    for args in [
        vec!["token", "list", "--database", &dead, "--data", data],
        // The causes under the error, too, name no password.
        vec!["--verbose", "customer", "add", "acme", "--database", &dead],
        vec!["gc", "--config", path(&config)],
        vec!["fleet", "--config", path(&config)],
    ] {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "postgresql at 127.0.0.1:{port}, database metadata"
            )),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("check that PostgreSQL runs"),
            "{args:?}: {stderr}"
        );
    }

    // A URL that cannot be read is a usage error that does not repeat it.
    let unreadable = format!("postgres://registry:{PASSWORD}@127.0.0.1:notaport/metadata");
    let out = run(&["token", "list", "--database", &unreadable]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("postgres://user[:password]@host"),
        "{stderr}"
    );

    // A database no registry has used is "no registry there", as a mistyped
    // `--data` is, and nothing is created in it.
    let database = Postgres::start();
    let empty = url_with_password(&database);
    let out = run(&[
        "token",
        "create",
        "--role",
        "admin",
        "--database",
        &empty,
        "--data",
        data,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("there is no registry in postgresql at 127.0.0.1:"),
        "{stderr}"
    );
    assert!(
        stderr.contains("stackpack-registry serve --database"),
        "{stderr}"
    );
    let mut client = stackpack_registry::db::pg::connect(&empty).unwrap();
    assert!(!stackpack_registry::db::pg::has_registry(&mut client).unwrap());
    std::thread::spawn(move || drop(client)).join().unwrap();

    // `backup` says how a PostgreSQL registry is backed up instead.
    let to = dir.path().join("backup.db");
    let out = run(&[
        "backup",
        "--to",
        path(&to),
        "--database",
        &empty,
        "--data",
        data,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pg_dump"), "{stderr}");
    assert!(!to.exists());

    // `gc` deletes blobs: without a data folder (or a file naming one) it is a
    // usage error.
    let out = run(&["gc", "--database", &empty]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--data DIR"), "{stderr}");

    // `init --database` creates the schema there; then commands find a registry,
    // and one that touches no blobs needs no data folder.
    let made = run(&["init", "--database", &empty, "--data", data]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let created = run_json(&[
        "token",
        "create",
        "--role",
        "admin",
        "--json",
        "--database",
        &empty,
    ]);
    assert!(created["token"].is_string(), "{created}");
}

/// Every command that reads or writes a registry's rows runs on PostgreSQL from
/// the replicas' `--config` file, and what one writes the next reads.
#[test]
fn every_ledger_and_rollout_command_runs_on_postgres_from_the_config_file() {
    let database = Postgres::start();
    let url = url_with_password(&database);
    let registry = OurRegistry::start_with(&["--database", &url]);
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), &registry.data, &url);
    let on = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--json", "--config", path(&config)]);
        run_json(&all)
    };

    on(&[
        "channel",
        "set",
        "stable",
        "--waves",
        "canary,general",
        "--soak",
        "1h",
    ]);
    let channels = on(&["channel", "list"]);
    assert!(channels.to_string().contains("stable"), "{channels}");
    on(&["customer", "add", "acme"]);
    on(&["customer", "set", "acme", "--region", "eu-west-1"]);
    on(&[
        "customer",
        "set",
        "acme",
        "--channel",
        "stable",
        "--wave",
        "canary",
    ]);
    let shown = on(&["customer", "show", "acme"]);
    assert_eq!(shown["rollout"]["channel"], "stable", "{shown}");
    assert_eq!(on(&["customer", "history", "acme"]), serde_json::json!([]));
    assert_eq!(on(&["rollout", "status"]), serde_json::json!([]));

    let alert = on(&[
        "alert",
        "add",
        "--webhook",
        "http://127.0.0.1:9/hook",
        "--on",
        "failed",
    ]);
    let id = alert["id"].to_string();
    assert_eq!(on(&["alert", "list"]).as_array().unwrap().len(), 1);
    on(&["alert", "remove", &id]);
    assert_eq!(on(&["alert", "list"]), serde_json::json!([]));

    let bundle = dir.path().join("support.tar.gz");
    std::fs::write(&bundle, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]).unwrap();
    let imported = on(&[
        "support-bundle",
        "import",
        path(&bundle),
        "--customer",
        "acme",
    ]);
    assert_eq!(imported["size"], 10, "{imported}");
    on(&["adoption"]);
    on(&["release", "list"]);
    on(&["fleet", "--customer", "acme"]);
    // The name check reads PostgreSQL too: no release was pushed here.
    let unknown = run(&[
        "fleet",
        "--release",
        "data-plane",
        "--config",
        path(&config),
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains(
            "release `data-plane` does not exist in this registry; it has no releases yet"
        ),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
}
