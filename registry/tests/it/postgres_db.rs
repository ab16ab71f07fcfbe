//! `Db` on PostgreSQL (issue 27): opened from a `postgres://` URL, migrated, and
//! answering through the backend-neutral `*_any` methods, against a real
//! PostgreSQL started for each test: writes all or nothing, writers of two
//! replicas taking turns, a lost server answered 503 and recovered from by
//! reconnecting.

use std::sync::Arc;
use std::time::Duration;

use stackpack_registry::auth::Role;
use stackpack_registry::db::locks::Lock;
use stackpack_registry::db::sql::{Conn, Param, Sql, SqlError};
use stackpack_registry::db::{pg, tokens, Backend, Db};
use stackpack_registry::error::{Code, Error};
use stackpack_registry::metrics::Metrics;
use stackpack_test_support::servers::Postgres;

fn publisher(name: &str) -> tokens::NewToken<'_> {
    tokens::NewToken {
        role: Role::Publisher,
        name: Some(name),
        customer: None,
        created: "2026-01-01T00:00:00Z",
        expires_at: None,
    }
}

#[test]
fn a_postgres_db_migrates_and_answers_through_the_any_methods() {
    let server = Postgres::start();
    let metrics = Arc::new(Metrics::default());
    let db = Db::open_url(&server.url(), 2)
        .unwrap()
        .reporting_to(metrics.clone());
    assert_eq!(db.backend(), Backend::Postgres);

    db.write_keyed(&[], |c| {
        Ok(tokens::insert(c, "t1", &[1, 2, 3], &publisher("ci"))?)
    })
    .unwrap();
    let found = db
        .read_any(|c| tokens::by_hash(c, &[1, 2, 3]))
        .unwrap()
        .expect("the token written is read back");
    assert_eq!((found.id.as_str(), found.role), ("t1", Role::Publisher));
    assert_eq!(db.scan_any(|c| tokens::count(c)).unwrap(), 1);
    let listed = db.support_any(|c| tokens::list(c)).unwrap();
    assert_eq!(listed[0].name.as_deref(), Some("ci"));

    // A write whose closure fails leaves nothing behind.
    let failed = db.write_keyed(&[], |c| -> Result<(), Error> {
        tokens::insert(c, "t2", &[4, 5, 6], &publisher("release"))?;
        Err(Error::new(Code::Conflict, "the rest of the write failed"))
    });
    assert_eq!(failed.unwrap_err().message, "the rest of the write failed");
    assert_eq!(
        db.read_any(|c| tokens::by_hash(c, &[4, 5, 6]))
            .unwrap()
            .map(|t| t.id),
        None
    );
    assert_eq!(db.scan_any(|c| tokens::count(c)).unwrap(), 1);

    // The SQLite-only calls say so, by name, instead of running on the wrong backend.
    let refused = db.integrity_check().unwrap_err().message;
    assert!(refused.contains("PRAGMA integrity_check"), "{refused}");

    // `/metrics` times the calls under the backend that ran them.
    let rendered = metrics.render();
    assert!(rendered.contains(r#"backend="postgres""#), "{rendered}");
    assert!(!rendered.contains(r#"backend="sqlite""#), "{rendered}");

    // Opened again, the schema is current: nothing migrates twice.
    drop(db);
    let again = Db::open_url(&server.url(), 1).unwrap();
    assert_eq!(again.scan_any(|c| tokens::count(c)).unwrap(), 1);
    let mut client = pg::connect(&server.url()).unwrap();
    assert_eq!(pg::migrate(&mut client).unwrap(), pg::SCHEMA_VERSION);
}

#[test]
fn a_postgres_database_from_a_newer_build_is_refused_without_printing_the_password() {
    let server = Postgres::start();
    drop(Db::open_url(&server.url(), 1).unwrap());
    let mut client = pg::connect(&server.url()).unwrap();
    client
        .batch_execute("UPDATE schema_version SET version = 999")
        .unwrap();
    let url = server.url().replace("stackpack@", "stackpack:s3cret-pw@");
    let refused = Db::open_url(&url, 1)
        .err()
        .expect("a newer schema is refused");
    for shown in [refused.to_string(), format!("{refused:?}")] {
        assert!(shown.contains("999"), "{shown}");
        assert!(
            shown.contains(&format!("127.0.0.1:{}", server.port)),
            "{shown}"
        );
        assert!(!shown.contains("s3cret-pw"), "{shown}");
    }
}

/// Reads a counter and writes it back one higher, as a read-then-write (a
/// prerelease number claimed, a tag checked then moved) does, holding the key of
/// what it protects.
fn increment(db: &Db) {
    db.write_keyed(&[Lock::Setting("counter")], |c| {
        let row = c.query_opt(
            "SELECT value FROM registry_settings WHERE name = 'counter'",
            &[],
        )?;
        let value: i64 = match row {
            Some(row) => row.parsed("value").map_err(SqlError::from)?,
            None => 0,
        };
        // Long enough for the other replica's writer to come in between, were
        // writers not taking turns.
        std::thread::sleep(Duration::from_millis(2));
        let next = (value + 1).to_string();
        c.execute(
            "INSERT INTO registry_settings (name, value) VALUES ('counter', $1)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            &[Param::Text(&next)],
        )?;
        Ok(())
    })
    .unwrap();
}

#[test]
fn writers_of_two_replicas_holding_one_key_on_one_postgres_database_take_turns() {
    let server = Postgres::start();
    let replicas = [
        Db::open_url(&server.url(), 1).unwrap(),
        Db::open_url(&server.url(), 1).unwrap(),
    ];
    std::thread::scope(|scope| {
        for db in &replicas {
            for _ in 0..3 {
                scope.spawn(|| (0..15).for_each(|_| increment(db)));
            }
        }
    });
    let total: String = replicas[1]
        .read_any(|c| {
            c.query_one(
                "SELECT value FROM registry_settings WHERE name = 'counter'",
                &[],
            )?
            .get("value")
            .map_err(Into::into)
        })
        .unwrap();
    // Without the key, READ COMMITTED lets two writers read the same value and
    // both write it plus one: increments are lost.
    assert_eq!(total, "90");
}

/// Runs `f` on a thread; the receiver answers once it returned.
fn finished<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    f: impl FnOnce() + Send + 'scope,
) -> std::sync::mpsc::Receiver<()> {
    let (done, finished) = std::sync::mpsc::channel();
    scope.spawn(move || {
        f();
        let _ = done.send(());
    });
    finished
}

/// Holds what `hold` takes on `holder`, in one write transaction, while
/// `meanwhile` runs; answers what it answered.
pub(crate) fn holding<T>(holder: &Db, hold: Hold<'_>, meanwhile: impl FnOnce() -> T) -> T {
    let (entered, holding) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let released = std::sync::Mutex::new(released);
    std::thread::scope(|scope| {
        // Owned here, so a failed check lets go of the hold too (dropped as it
        // unwinds) rather than leave the holder waiting.
        let release = release;
        let held = finished(scope, || {
            holder
                .write_keyed(&[], |tx| {
                    hold(tx)?;
                    entered.send(()).unwrap();
                    let _ = released.lock().unwrap().recv();
                    Ok(())
                })
                .unwrap();
        });
        holding.recv_timeout(LONG).unwrap();
        let answer = meanwhile();
        release.send(()).unwrap();
        held.recv_timeout(LONG).unwrap();
        answer
    })
}

/// What a test's holder takes: a lock, exclusive or shared.
pub(crate) type Hold<'a> = &'a (dyn Fn(&Conn) -> Result<(), SqlError> + Sync);

const LONG: Duration = Duration::from_secs(20);

/// Two replicas' `Db`s on one PostgreSQL database.
pub(crate) fn two_replicas(server: &Postgres) -> (Db, Db) {
    (
        Db::open_url(&server.url(), 2).unwrap(),
        Db::open_url(&server.url(), 2).unwrap(),
    )
}

/// A registry served on `database`, and a publisher's client for it.
fn served_with_publisher(
    database: &Postgres,
) -> (
    stackpack_test_support::servers::OurRegistry,
    crate::common::Client,
) {
    let url = database.url();
    let registry = stackpack_test_support::servers::OurRegistry::start_with(&["--database", &url]);
    let token = token_in(&url, Role::Publisher);
    let publisher = crate::common::Client::new(registry.url(), Some(token));
    (registry, publisher)
}

#[test]
fn keyed_writes_of_two_replicas_wait_only_for_their_own_key() {
    let server = Postgres::start();
    let (one, two) = two_replicas(&server);
    // Other keys go on through the other replica while upload `a` is held, and so
    // does a write holding no key (there is no registry-wide write lock).
    let upload_a: Hold = &|tx| tx.lock(Lock::Upload("a"));
    holding(&one, upload_a, || {
        two.write_keyed(&[Lock::Upload("b"), Lock::Customer("acme")], |_| Ok(()))
            .unwrap();
        two.write_keyed(&[], |_| Ok(())).unwrap();
    });
    // The same key waits for it: still waiting half a second in, and done once
    // `a` is let go.
    let again = || two.write_keyed(&[Lock::Upload("a")], |_| Ok(())).unwrap();
    assert_waits(
        &one,
        upload_a,
        &again,
        "upload `a` was written twice at once",
    );
}

/// gc holds a blob it deletes exclusively; a push holds the blobs its manifest
/// names shared: pushes naming one blob go on beside each other, and gc waits
/// for them (and they for gc), so it never deletes a blob's rows between a push's
/// check that the blob is there and the push's commit.
#[test]
fn pushes_naming_a_blob_go_on_together_and_gc_deleting_it_waits_for_them() {
    let server = Postgres::start();
    let (one, two) = two_replicas(&server);
    let push = |db: &Db| {
        db.write_keyed(&[Lock::Repository("acme/net")], |tx| {
            Ok(tx.share_all(&[Lock::Blob("sha256:x"), Lock::Blob("sha256:y")])?)
        })
        .unwrap()
    };
    let pushing: Hold = &|tx| tx.share_all(&[Lock::Blob("sha256:x")]);
    let deleting: Hold = &|tx| tx.lock(Lock::Blob("sha256:y"));
    // Another push naming the blob goes on while one holds it, and so does gc
    // deleting another.
    holding(&one, pushing, || {
        push(&two);
        two.write_keyed(&[Lock::Blob("sha256:z")], |_| Ok(()))
            .unwrap();
    });
    // gc deleting it waits for the push.
    let gc = || {
        two.write_keyed(&[Lock::Blob("sha256:x")], |_| Ok(()))
            .unwrap()
    };
    assert_waits(&one, pushing, &gc, "gc deleted a blob a push names");
    // And a push naming a blob gc is deleting waits for gc.
    assert_waits(
        &one,
        deleting,
        &|| push(&two),
        "a push named a blob gc was deleting",
    );
}

/// Pulls through a registry on PostgreSQL run their one statement pipelined on a
/// shared connection (`db::pg_async`): many at once each get their own answer,
/// the manifest their tag names or a 404 for a tag nobody pushed, never another
/// request's row.
#[test]
fn pulls_at_once_on_one_pipelined_postgres_connection_each_get_their_own_answer() {
    use crate::common::OCI_MANIFEST;

    let database = Postgres::start();
    let (_registry, publisher) = served_with_publisher(&database);
    let pushed: Vec<Vec<u8>> = (0..4)
        .map(|i| publisher.push_image("acme/app", &format!("t{i}"), i).0)
        .collect();
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let (publisher, pushed) = (&publisher, &pushed);
            scope.spawn(move || {
                for round in 0..40 {
                    let i = (thread + round) % 5;
                    let path = format!("/v2/acme/app/manifests/t{i}");
                    let r = publisher.req("GET", &path, &[("Accept", OCI_MANIFEST)], None);
                    match pushed.get(i) {
                        Some(manifest) => {
                            assert_eq!(r.status, 200, "{path}");
                            assert_eq!(&r.body, manifest, "{path} answered another's row");
                        }
                        None => assert_eq!(r.status, 404, "{path}"),
                    }
                }
            });
        }
    });
}

/// gc and a push racing for one blob, through a registry served on PostgreSQL:
/// gc holds a blob it is deleting (its rows gone, not yet committed) when a
/// manifest naming it arrives. The push waits for gc and then, the blob gone, is
/// refused `MANIFEST_BLOB_UNKNOWN`, never stored naming a blob no row records
/// (what a push holding nothing of its blobs would do).
#[test]
fn a_push_naming_a_blob_gc_is_deleting_waits_for_gc_and_is_refused_once_it_is_gone() {
    use crate::common::{image_manifest, OCI_MANIFEST};

    let database = Postgres::start();
    let (_registry, publisher) = served_with_publisher(&database);
    let config = b"{}";
    let config_digest = publisher.push_blob("acme/app", config);
    let layer = b"a layer gc is collecting";
    let layer_digest = publisher.push_blob("acme/app", layer);
    let manifest = image_manifest(
        &config_digest,
        config.len(),
        &[(layer_digest.clone(), layer.len())],
        None,
        None,
    );
    let gc = Db::open_url(&database.url(), 1).unwrap();
    let deleting: Hold = &|tx| {
        tx.lock(Lock::Blob(&layer_digest))?;
        stackpack_registry::db::blobs::delete_rows(tx, std::slice::from_ref(&layer_digest))
    };
    std::thread::scope(|scope| {
        let pushed = holding(&gc, deleting, || {
            let (sent, answered) = std::sync::mpsc::channel();
            let (publisher, manifest) = (&publisher, &manifest);
            scope.spawn(move || {
                let _ =
                    sent.send(publisher.push_manifest("acme/app", "v1", manifest, OCI_MANIFEST));
            });
            std::thread::sleep(Duration::from_millis(500));
            assert!(
                answered.try_recv().is_err(),
                "the push did not wait for gc deleting a blob it names"
            );
            answered
        });
        let answer = pushed.recv_timeout(LONG).unwrap();
        let body = String::from_utf8_lossy(&answer.body);
        assert_eq!(answer.status, 400, "{body}");
        assert!(body.contains("MANIFEST_BLOB_UNKNOWN"), "{body}");
    });
    let stored = gc
        .read_any(|c| {
            stackpack_registry::db::manifests::exists(
                c,
                "acme/app",
                &crate::common::sha256(&manifest),
            )
        })
        .unwrap();
    assert!(!stored, "a manifest naming a deleted blob was stored");
}

/// Asserts that `write` waits while `holder` holds `lock`: still waiting half a
/// second in, and done once it is let go.
pub(crate) fn assert_waits(holder: &Db, hold: Hold<'_>, write: &(dyn Fn() + Sync), what: &str) {
    std::thread::scope(|scope| {
        let done = holding(holder, hold, || {
            let done = finished(scope, write);
            std::thread::sleep(Duration::from_millis(500));
            assert!(done.try_recv().is_err(), "{what}");
            done
        });
        done.recv_timeout(LONG).unwrap();
    });
}

/// A `Db` call counting tokens, through one of its pools.
type CountCall<'a> = dyn Fn() -> Result<u64, Error> + 'a;

#[test]
fn a_postgres_db_answers_503_while_the_server_is_down_and_again_once_it_is_back() {
    let server = Postgres::start();
    let db = Db::open_url(&server.url(), 2).unwrap();
    db.write_keyed(&[], |c| {
        Ok(tokens::insert(c, "t1", &[1], &publisher("ci"))?)
    })
    .unwrap();

    server.stop();
    let calls: [(&str, Box<CountCall>); 4] = [
        ("read", Box::new(|| db.read_any(|c| tokens::count(c)))),
        ("scan", Box::new(|| db.scan_any(|c| tokens::count(c)))),
        ("support", Box::new(|| db.support_any(|c| tokens::count(c)))),
        (
            "write",
            Box::new(|| db.write_keyed(&[], |c| Ok(tokens::count(c)?))),
        ),
    ];
    for (call, run) in &calls {
        // Twice: the client the server closed, then a connection refused.
        for _ in 0..2 {
            let down = run().unwrap_err();
            assert_eq!(down.status().as_u16(), 503, "{call}: {}", down.message);
            assert!(down.message.contains("retry once the database is back"));
        }
    }

    server.restart();
    for (call, run) in &calls {
        // Every pooled client, not only the first, answers: four calls each.
        for _ in 0..4 {
            let back = run().unwrap_or_else(|e| panic!("{call}: {}", e.message));
            assert_eq!(back, 1, "{call}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_db_runs_on_the_servers_runtime_and_is_dropped_there() {
    let server = Postgres::start();
    let db = Db::open_url(&server.url(), 1).unwrap();
    db.write_keyed(&[], |c| {
        Ok(tokens::insert(c, "t1", &[1], &publisher("ci"))?)
    })
    .unwrap();
    assert_eq!(db.read_any(|c| tokens::count(c)).unwrap(), 1);
    let moved = tokio::spawn(async move {
        let count = db.scan_any(|c| tokens::count(c)).unwrap();
        drop(db);
        count
    });
    assert_eq!(moved.await.unwrap(), 1);
}

/// A token stored in the registry's PostgreSQL database as `token create` stores
/// one (the CLI's commands other than `serve` open the data folder's SQLite only).
fn token_in(url: &str, role: Role) -> String {
    let db = Db::open_url(url, 1).unwrap();
    let (token, hash, id) = stackpack_registry::auth::new_token();
    let new = tokens::NewToken {
        role,
        name: None,
        customer: None,
        created: "2026-01-01T00:00:00Z",
        expires_at: None,
    };
    db.write_keyed(&[], |c| Ok(tokens::insert(c, &id, &hash, &new)?))
        .unwrap();
    token
}

#[test]
fn a_registry_served_on_postgres_keeps_its_metadata_there() {
    use crate::common::{Client, OCI_MANIFEST};
    use stackpack_test_support::servers::OurRegistry;

    let database = Postgres::start();
    // The cluster trusts loopback: the password is accepted and must never show.
    let url = database
        .url()
        .replace("stackpack@", "stackpack:hunter2-pw@");
    let registry = OurRegistry::start_with(&["--database", &url]);
    assert!(
        !registry.data.join("registry.db").exists(),
        "no SQLite database beside PostgreSQL"
    );

    let health = crate::common::send("GET", &format!("{}/healthz", registry.url()), &[], None);
    let body = String::from_utf8_lossy(&health.body);
    assert_eq!(health.status, 200, "{body}");
    assert!(body.contains("database (postgres): ok"), "{body}");

    let anonymous = Client::new(registry.url(), None);
    assert_eq!(anonymous.req("GET", "/v2/", &[], None).status, 401);
    let publisher = Client::new(registry.url(), Some(token_in(&url, Role::Publisher)));
    assert_eq!(publisher.req("GET", "/v2/", &[], None).status, 200);
    let digest = publisher.push_blob("acme/app", b"a layer kept in postgres");
    let (manifest, _) = publisher.push_image("acme/app", "v1", 7);
    let pull = || {
        publisher.req(
            "GET",
            "/v2/acme/app/manifests/v1",
            &[("Accept", OCI_MANIFEST)],
            None,
        )
    };
    let head = publisher.req("HEAD", &format!("/v2/acme/app/blobs/{digest}"), &[], None);
    assert_eq!(head.status, 200);
    let stored = Db::open_url(&url, 1)
        .unwrap()
        .read_any(|c| stackpack_registry::db::blobs::size(c, &digest))
        .unwrap();
    assert_eq!(stored, Some(24), "the blob's row is in PostgreSQL");

    let admin = Client::new(registry.url(), Some(token_in(&url, Role::Admin)));
    let metrics = String::from_utf8(admin.req("GET", "/metrics", &[], None).body).unwrap();
    assert!(metrics.contains(r#"backend="postgres""#), "{metrics}");
    assert!(!metrics.contains(r#"backend="sqlite""#), "{metrics}");

    // PostgreSQL restarted under the running registry: 503 meanwhile, then it
    // reconnects by itself.
    database.stop();
    let down = crate::common::send("GET", &format!("{}/healthz", registry.url()), &[], None);
    let body = String::from_utf8_lossy(&down.body);
    assert_eq!(down.status, 503, "{body}");
    assert!(body.contains("database (postgres): error"), "{body}");
    assert!(!body.contains("hunter2-pw"), "{body}");
    assert_eq!(publisher.req("GET", "/v2/", &[], None).status, 503);
    // A pull too, which goes its own way (one pipelined statement on the runtime).
    let refused = pull();
    assert_eq!(
        refused.status,
        503,
        "{}",
        String::from_utf8_lossy(&refused.body)
    );
    assert!(!String::from_utf8_lossy(&refused.body).contains("hunter2-pw"));
    database.restart();
    for _ in 0..4 {
        assert_eq!(publisher.req("GET", "/v2/", &[], None).status, 200);
        let pulled = pull();
        assert_eq!(
            pulled.status,
            200,
            "{}",
            String::from_utf8_lossy(&pulled.body)
        );
        assert_eq!(pulled.body, manifest);
        let health = crate::common::send("GET", &format!("{}/healthz", registry.url()), &[], None);
        assert_eq!(
            health.status,
            200,
            "{}",
            String::from_utf8_lossy(&health.body)
        );
    }
}

#[test]
fn serve_on_an_unreachable_postgres_names_host_port_and_database_never_the_password() {
    let data = tempfile::tempdir().unwrap();
    let port = stackpack_test_support::servers::free_port();
    let url = format!("postgres://registry:hunter2-pw@127.0.0.1:{port}/metadata");
    let config = data.path().join("registry.toml");
    std::fs::write(&config, format!("database = \"{url}\"\n")).unwrap();
    let cases = [
        vec!["--database", url.as_str()],
        vec!["--config", config.to_str().unwrap()],
        vec![
            "--database",
            "postgres://registry:hunter2-pw@127.0.0.1:notaport/metadata",
        ],
    ];
    for args in cases {
        let output =
            std::process::Command::new(stackpack_test_support::binary("stackpack-registry"))
                .args(["serve", "--listen", "127.0.0.1:0", "--data"])
                .arg(data.path().join("data"))
                .args(&args)
                .output()
                .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("hunter2-pw"), "{args:?}: {stderr}");
        if !args.contains(&"postgres://registry:hunter2-pw@127.0.0.1:notaport/metadata") {
            assert!(
                stderr.contains(&format!("127.0.0.1:{port}, database metadata")),
                "{args:?}: {stderr}"
            );
        }
    }
}

/// Who makes a served registry's tokens: `token create`, with `--data` on SQLite
/// and `--database` on PostgreSQL.
pub(crate) enum TokenMaker<'a> {
    Cli(&'a stackpack_test_support::servers::OurRegistry),
    Postgres(&'a str),
}

impl TokenMaker<'_> {
    fn make(&self, role: Role, customer: Option<&str>) -> String {
        let url = match self {
            TokenMaker::Cli(registry) => return registry.token(role.as_str(), customer),
            TokenMaker::Postgres(url) => url,
        };
        let mut command = std::process::Command::new(crate::common::BIN);
        command.args([
            "token",
            "create",
            "--json",
            "--role",
            role.as_str(),
            "--database",
            url,
        ]);
        if let Some(customer) = customer {
            command.args(["--customer", customer]);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let created: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        created["token"].as_str().unwrap().to_string()
    }
}

/// `value` without the times the registry stamped (keys ending in `At`/`_at`,
/// `published`, `received`), which differ between two runs.
pub(crate) fn without_times(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !(k.ends_with("At")
                        || k.ends_with("_at")
                        || k.as_str() == "published"
                        || k.as_str() == "received")
                })
                .map(|(k, v)| (k.clone(), without_times(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_times).collect()),
        other => other.clone(),
    }
}

/// A publisher's and two customers' runners' day against the registry at `base`,
/// over HTTP only, as answers to compare: bundles pushed as the packager does,
/// tags and the ledger's releases and stacks, signed receipts reported (one twice),
/// support's questions.
pub(crate) fn ledger_day(base: &str, tokens: &TokenMaker) -> Vec<String> {
    use crate::common::Client;
    use crate::ledger::{post, push_bundle, Runner};
    use stackpack_schema::receipt::{Outcome, ReceiptKind};
    let client = |role, customer| Client::new(base.to_string(), Some(tokens.make(role, customer)));
    let publisher = client(Role::Publisher, None);
    let support = client(Role::Support, None);
    let globex = client(Role::Customer, Some("globex"));
    let initech = client(Role::Customer, Some("initech"));
    let mut answers = Vec::new();
    let d140 = push_bundle(&publisher, "data-plane", "1.4.0");
    let d150 = push_bundle(&publisher, "data-plane", "1.5.0");
    let d_pre = push_bundle(&publisher, "data-plane", "1.6.0-feature-gpu.2");
    push_bundle(&publisher, "control-plane", "1.9.0");
    push_bundle(&publisher, "control-plane", "1.10.0");
    answers.push(format!("pushed {d140} {d150} {d_pre}"));
    let get = |client: &Client, path: &str| {
        let response = client.req("GET", path, &[], None);
        let body = match serde_json::from_slice::<serde_json::Value>(&response.body) {
            Ok(json) => without_times(&json).to_string(),
            Err(_) => String::from_utf8_lossy(&response.body).into_owned(),
        };
        format!("GET {path}: {} {body}", response.status)
    };
    answers.push(get(&publisher, "/v2/acme/stacks/data-plane/tags/list"));
    answers.push(get(
        &publisher,
        "/v2/acme/stacks/data-plane/manifests/1.5.0",
    ));
    answers.push(get(&support, "/api/v1/releases?stack=data-plane"));
    answers.push(get(&support, "/api/v1/stacks"));

    let mut globex_runner = Runner {
        key: stackpack_schema::signature::PrivateKey::from_secret_bytes([1; 32]),
        n: 0,
    };
    let mut initech_runner = Runner {
        key: stackpack_schema::signature::PrivateKey::from_secret_bytes([2; 32]),
        n: 0,
    };
    let first = globex_runner.receipt(
        "globex",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    answers.push(format!("receipt: {}", post(&globex, &first).status));
    answers.push(format!("again: {}", post(&globex, &first).status));
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
        let r = globex_runner.receipt("globex", "data-plane", version, digest, kind, outcome);
        answers.push(format!("receipt {version}: {}", post(&globex, &r).status));
    }
    let r = initech_runner.receipt(
        "initech",
        "data-plane",
        "1.4.0",
        &d140,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    answers.push(format!("initech: {}", post(&initech, &r).status));
    // A customer's token cannot report for another customer.
    let forged = initech_runner.receipt(
        "globex",
        "data-plane",
        "1.5.0",
        &d150,
        ReceiptKind::Apply,
        Outcome::Succeeded,
    );
    answers.push(format!("for another: {}", post(&initech, &forged).status));
    for path in [
        "/api/v1/support/versions",
        "/api/v1/support/behind",
        "/api/v1/support/prerelease",
        "/api/v1/support/drifted",
        "/api/v1/deployments?customer=globex",
        "/api/v1/fleet?stack=data-plane",
    ] {
        answers.push(get(&support, path));
    }
    answers
}

/// The ledger end to end over HTTP on a registry served on PostgreSQL answers
/// exactly as one served on SQLite: pushes through the OCI API, the releases they
/// become, receipts (one reported twice, one for another customer refused),
/// support's questions.
#[test]
fn a_registry_served_on_postgres_answers_the_ledger_as_one_on_sqlite() {
    use stackpack_test_support::servers::OurRegistry;

    let on_sqlite = OurRegistry::start();
    let sqlite = ledger_day(&on_sqlite.url(), &TokenMaker::Cli(&on_sqlite));

    let database = Postgres::start();
    let url = database.url();
    let on_postgres = OurRegistry::start_with(&["--database", &url]);
    let postgres = ledger_day(&on_postgres.url(), &TokenMaker::Postgres(&url));

    crate::postgres_backend::assert_same(&sqlite, &postgres);
    // Not vacuous: the day's answers are the ones a support engineer relies on.
    let all = sqlite.join("\n");
    for needle in [
        "receipt: 201",
        "again: 200",
        "receipt 1.5.0: 201",
        "\"1.6.0-feature-gpu.2\"",
        "globex",
        "initech",
    ] {
        assert!(all.contains(needle), "missing `{needle}` in:\n{all}");
    }
    for refused in [": 404", ": 500", ": 501"] {
        assert!(!all.contains(refused), "{all}");
    }
}
