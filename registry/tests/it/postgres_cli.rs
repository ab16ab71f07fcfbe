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
    // token is refused by the running server at once.
    let listed = run_json(&[
        "token",
        "list",
        "--json",
        "--database",
        &url,
        "--data",
        data,
    ]);
    assert_eq!(listed[0]["name"], "ci", "{listed}");
    let id = created["id"].as_str().unwrap();
    run_json(&[
        "token",
        "revoke",
        id,
        "--json",
        "--database",
        &url,
        "--data",
        data,
    ]);
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
        .write_any(|tx| {
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
        .write_any(|tx| Ok(stackpack_registry::db::leases::give_back(tx, "gc", holder)?))
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
