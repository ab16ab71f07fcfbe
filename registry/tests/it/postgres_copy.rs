//! `db::copy` (issue 27, plan item 4), against a real PostgreSQL: a registry's
//! SQLite database copied into an empty PostgreSQL one answers the same through
//! the same `db` functions; a copy that cannot be complete or exact writes nothing.

use std::path::{Path, PathBuf};

use semver::Version;
use stackpack_registry::db::copy::{self, CopyError, Step};
use stackpack_registry::db::sql::{Pg, Sql};
use stackpack_registry::db::{
    alerts, blobs, customers, forecasts, ledger, manifests, release_index, settings,
    support_bundles, tokens, uploads, Db,
};
use stackpack_test_support::servers::Postgres;

use crate::postgres_alerts::{claim_story, failed};
use crate::postgres_backend::{assert_same, icu_database, push_story, release, token_story};
use crate::postgres_forecasts::{forecast, miss};
use stackpack_schema::plan::Action;

/// A registry database at this build's schema, filled through the `db` functions
/// with every kind of content PostgreSQL has tables for today: tokens, a push
/// (upload parts, blobs, manifests, tags, referrers, where blobs live, support
/// bundles), customers, release indexes, forecasts and their misses, alert
/// webhooks and their outbox.
fn filled_registry(dir: &Path) -> PathBuf {
    let path = dir.join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let mut connection = rusqlite::Connection::open(&path).unwrap();
    let tx = connection.transaction().unwrap();
    token_story(&tx);
    push_story(&tx);
    let now = "2026-03-01T00:00:00Z";
    ledger::register_customer(&tx, "acme", Some("Acme Corp"), Some("prod"), now).unwrap();
    ledger::register_customer(&tx, "Zeta-1", None, None, now).unwrap();
    let details = customers::Details {
        account: Some("ACC-42".into()),
        notes: Some("100% _done_".into()),
        ..Default::default()
    };
    customers::set_details(&tx, "Zeta-1", &details, now).unwrap();
    for (version, index) in [
        ("1.10.0", "p-1.10"),
        ("1.9.0", "p-1.9"),
        ("2.0.0-rc.1", "p-rc"),
    ] {
        let r = release("platform", version, index, &["web", "db"]);
        release_index::record(&tx, &r).unwrap();
    }
    // Forecasts and alerts as their own tests store them, without the fleet
    // cells those tests also write (the ledger's, the fleet's and the rollouts'
    // tables are filled by their own stories in the test below).
    forecasts::put(&tx, &forecast(now, &[("acme", Action::Update)]), now).unwrap();
    forecasts::insert_miss(&tx, &miss("acme", "1.1.0", "r1", false)).unwrap();
    forecasts::insert_miss(&tx, &miss("Zeta-1", "1.1.0", "r2", true)).unwrap();
    // Claims, deliveries and retries, ending with their webhooks removed; then
    // webhooks with events still queued, as a registry is copied at any moment.
    let queue = || {
        alerts::add(&tx, "http://hooks.example/b", &["failed"], "cli", now).unwrap();
        for (customer, receipt) in [("acme", "r1"), ("acme", "r2"), ("Zeta-1", "r3")] {
            alerts::enqueue(&tx, &failed(customer, receipt), now, 100).unwrap();
        }
    };
    queue();
    claim_story(&tx);
    queue();
    tx.commit().unwrap();
    path
}

/// What the registry answers from its database, read only: the same calls on
/// both backends, each answer as text.
fn answers<C: Sql>(conn: &C) -> Vec<String> {
    let mut all_blobs: Vec<String> = blobs::all(conn).unwrap().into_iter().collect();
    all_blobs.sort();
    let mut uploads: Vec<String> = uploads::all_ids(conn).unwrap().into_iter().collect();
    uploads.sort();
    let v = Version::new(1, 1, 0);
    vec![
        format!("tokens {}", tokens::count(conn).unwrap()),
        serde_json::to_string(&tokens::list(conn).unwrap()).unwrap(),
        format!("{:?}", settings::get(conn, settings::BLOBS).unwrap()),
        format!("{all_blobs:?}"),
        format!("{uploads:?}"),
        format!(
            "{:?}",
            manifests::list_repositories(conn, None, None).unwrap()
        ),
        format!(
            "{:?}",
            manifests::list_tags(conn, "acme/app", None, None).unwrap()
        ),
        format!(
            "{:?}",
            manifests::get_by_tag(conn, "acme/app", "latest")
                .unwrap()
                .map(|m| (m.digest, m.media_type, m.content))
        ),
        format!("{:?}", support_bundles::latest(conn, "acme").unwrap()),
        format!("{:?}", customers::search(conn, "", 50).unwrap()),
        format!("{:?}", customers::details(conn, "Zeta-1").unwrap()),
        format!("{:?}", release_index::versions(conn, None).unwrap()),
        format!(
            "{:?}",
            release_index::stacks(conn, "platform", "1.10.0").unwrap()
        ),
        format!("{:?}", forecasts::forecast(conn, "network", &v).unwrap()),
        format!("{:?}", forecasts::misses(conn, "network", &v).unwrap()),
        format!("{:?}", alerts::list(conn).unwrap()),
        format!("{:?}", alerts::failing(conn).unwrap()),
    ]
}

fn sqlite_answers(path: &Path) -> Vec<String> {
    answers(&rusqlite::Connection::open(path).unwrap())
}

#[test]
fn a_registry_copied_to_postgres_answers_the_same_and_is_not_copied_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_registry(dir.path());
    let sqlite = sqlite_answers(&path);

    let server = Postgres::start();
    let mut client = icu_database(&server, "copied");
    let summary = copy::copy(&path, &mut client).unwrap();
    let postgres = Pg::new(client);
    assert_same(&sqlite, &answers(&postgres));
    // The summary names what was copied, each table after those its foreign keys
    // reference (alphabetical order would put `alert_outbox` before `alerts`).
    let rows = |name: &str| {
        summary
            .tables
            .iter()
            .position(|t| t.table == name)
            .map(|i| (i, summary.tables[i].rows))
            .unwrap_or_else(|| panic!("{name} not copied: {summary}"))
    };
    for table in [
        "tokens",
        "manifests",
        "tags",
        "support_bundles",
        "customers",
        "release_indexes",
        "forecasts",
        "alerts",
        "alert_outbox",
    ] {
        assert!(rows(table).1 > 0, "{table} empty: {summary}");
    }
    assert!(rows("blobs").0 < rows("repo_blobs").0, "{summary}");
    assert!(rows("alerts").0 < rows("alert_outbox").0, "{summary}");
    assert!(rows("uploads").0 < rows("upload_segments").0, "{summary}");
    assert!(summary.to_string().contains("sha256:"), "{summary}");

    // The planner has statistics for what was copied (a bulk load alone leaves a
    // table "never analyzed", its row estimate -1, until autovacuum gets to it).
    let mut client = postgres.into_inner();
    let estimated: f32 = client
        .query_one(
            "SELECT reltuples FROM pg_class WHERE relname = 'customers' AND relkind = 'r'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(estimated as u64, rows("customers").1, "{summary}");

    // A second copy onto the now non-empty target is refused and writes nothing.
    match copy::copy(&path, &mut client) {
        Err(CopyError::TargetNotEmpty { table }) => {
            assert!(summary.tables.iter().any(|t| t.table == table), "{table}")
        }
        other => panic!("a second copy was not refused: {other:?}"),
    }
    let postgres = Pg::new(client);
    assert_same(&sqlite, &answers(&postgres));

    // Identity columns go on after the copied rows: a new support bundle does not
    // collide with a copied one.
    let copied = support_bundles::latest(&postgres, "acme").unwrap().unwrap();
    let new = support_bundles::insert(&postgres, "acme", b"third", "2026-04-01T00:00:00Z").unwrap();
    assert!(new.id > copied.id, "{new:?} after {copied:?}");
}

#[test]
fn a_copy_refuses_rows_postgres_has_no_table_for_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    token_story(&connection);
    // A table of SQLite's that PostgreSQL's schema lacks, holding a row (as the
    // ledger's and rollouts' did before their PostgreSQL steps).
    connection
        .execute_batch("CREATE TABLE local_notes (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO local_notes (note) VALUES ('keep me');")
        .unwrap();
    drop(connection);

    let server = Postgres::start();
    let mut client = icu_database(&server, "refused");
    match copy::copy(&path, &mut client) {
        Err(e @ CopyError::TablesMissing { .. }) => {
            assert!(e.to_string().contains("local_notes"), "{e}");
        }
        other => panic!("a copy leaving rows behind was not refused: {other:?}"),
    }
    let postgres = Pg::new(client);
    assert_eq!(tokens::count(&postgres).unwrap(), 0, "nothing was written");
    // An empty such table is no reason to refuse: nothing is left behind.
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.execute_batch("DELETE FROM local_notes").unwrap();
    drop(connection);
    let mut client = postgres.into_inner();
    let summary = copy::copy(&path, &mut client).unwrap();
    assert!(
        summary
            .empty_sqlite_only
            .contains(&"local_notes".to_string()),
        "{summary}"
    );
    assert_eq!(tokens::count(&Pg::new(client)).unwrap(), 2);
}

#[test]
fn a_copy_refuses_an_sqlite_database_not_yet_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let old = stackpack_registry::db::SCHEMA_VERSION - 1;
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", old)
        .unwrap();
    let server = Postgres::start();
    let mut client = icu_database(&server, "old");
    let error = copy::copy(&path, &mut client).expect_err("refused");
    assert!(matches!(error, CopyError::SqliteOlder { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("run `stackpack-registry migrate`"),
        "{error}"
    );
    let version = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))
        .unwrap();
    assert_eq!(version, old, "the SQLite file is only read");
}

#[test]
fn postgres_gone_before_the_copy_is_an_error_naming_it_without_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let path = filled_registry(dir.path());
    let server = Postgres::start();
    let url = server.url().replace(
        "postgres://stackpack@",
        "postgres://stackpack:hunter2secret@",
    );
    let mut client = stackpack_registry::db::pg::connect(&url).unwrap();
    drop(server);
    let error = copy::copy(&path, &mut client).expect_err("PostgreSQL is gone");
    assert!(
        matches!(
            error,
            CopyError::Postgres {
                step: Step::Migrate,
                ..
            }
        ),
        "{error:?}"
    );
    let shown = format!("{error} / {error:?}");
    assert!(shown.contains("postgresql"), "{shown}");
    assert!(!shown.contains("hunter2secret"), "{shown}");
}

/// A registry with `count` tokens whose ids mix case and punctuation, so that
/// byte order (SQLite's) and an ICU `en-US` order (PostgreSQL's default here)
/// differ.
fn registry_with_tokens(dir: &Path, count: u32) -> PathBuf {
    let path = dir.join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let mut connection = rusqlite::Connection::open(&path).unwrap();
    let tx = connection.transaction().unwrap();
    for i in 0..count {
        let id = match i % 3 {
            0 => format!("a-{i}"),
            1 => format!("B_{i}"),
            _ => format!("a.{i}"),
        };
        let token = tokens::NewToken {
            role: stackpack_registry::auth::Role::Reader,
            name: None,
            customer: Some("acme"),
            created: "2026-01-01T00:00:00Z",
            expires_at: None,
        };
        tokens::insert(&tx, &id, &i.to_be_bytes(), &token).unwrap();
    }
    tx.commit().unwrap();
    path
}

#[test]
fn a_large_table_is_copied_in_batches_in_byte_order_with_its_triggers_held() {
    let dir = tempfile::tempdir().unwrap();
    // More than two batches of 500, and a last one part full.
    let path = registry_with_tokens(dir.path(), 1_201);
    let server = Postgres::start();
    let mut client = icu_database(&server, "large");
    // A trigger of PostgreSQL's own on a copied table (as the fleet's counts will
    // have): the copy brings SQLite's rows as they are, without firing it...
    client
        .batch_execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql
                 AS $$ BEGIN RAISE EXCEPTION 'the trigger fired'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON tokens
                 FOR EACH ROW EXECUTE FUNCTION refuse();",
        )
        .unwrap();
    let summary = copy::copy(&path, &mut client).unwrap();
    let tokens_copied = summary.tables.iter().find(|t| t.table == "tokens").unwrap();
    assert_eq!(tokens_copied.rows, 1_201);
    let postgres = Pg::new(client);
    let sqlite_connection = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        serde_json::to_string(&tokens::list(&sqlite_connection).unwrap()).unwrap(),
        serde_json::to_string(&tokens::list(&postgres).unwrap()).unwrap()
    );
    // ... and it fires again afterwards.
    let new = tokens::NewToken {
        role: stackpack_registry::auth::Role::Reader,
        name: None,
        customer: None,
        created: "2026-01-02T00:00:00Z",
        expires_at: None,
    };
    let error = tokens::insert(&postgres, "new", &[1], &new).unwrap_err();
    assert!(error.to_string().contains("the trigger fired"), "{error}");
}

#[test]
fn a_copy_that_reads_back_differently_is_rolled_back_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = registry_with_tokens(dir.path(), 3);
    let server = Postgres::start();
    let mut client = icu_database(&server, "differs");
    // A target whose column keeps the text otherwise (padded to 40 characters):
    // every insert succeeds, but the rows read back are not SQLite's.
    client
        .batch_execute("ALTER TABLE tokens ALTER COLUMN created TYPE CHAR(40)")
        .unwrap();
    match copy::copy(&path, &mut client) {
        Err(e @ CopyError::Differs { .. }) => {
            let CopyError::Differs { table, difference } = &e else {
                unreachable!()
            };
            assert_eq!(table, "tokens");
            assert!(
                matches!(difference, copy::Difference::Digest { .. }),
                "{difference}"
            );
            assert!(e.to_string().contains("rolled back"), "{e}");
        }
        other => panic!("a copy reading back differently was kept: {other:?}"),
    }
    let postgres = Pg::new(client);
    assert_eq!(tokens::count(&postgres).unwrap(), 0, "rolled back");
}

/// Every row of each of `tables`, its columns named in SQLite's order, as text:
/// the same on both backends when the copy kept every value.
fn every_row<C: Sql>(conn: &C, sqlite: &rusqlite::Connection, tables: &[&str]) -> Vec<String> {
    let mut rows = Vec::new();
    for table in tables {
        let columns: Vec<String> = sqlite
            .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
            .unwrap()
            .query_map([table], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let quoted: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
        let sql = format!("SELECT {} FROM {table}", quoted.join(", "));
        let all = crate::postgres_ledger::table(conn, &sql);
        rows.push(format!("{table}: {} rows", all.len()));
        rows.extend(all.into_iter().map(|row| format!("{table} {row}")));
    }
    rows
}

/// Support's ledger and fleet answers and every row of their tables.
fn ledger_answers<C: Sql>(conn: &C, sqlite: &rusqlite::Connection) -> Vec<String> {
    let mut all = crate::postgres_ledger::ledger_reads(conn);
    all.extend(crate::postgres_ledger::fleet_reads(conn));
    all.extend(every_row(conn, sqlite, LEDGER_AND_FLEET));
    all
}

/// A registry database at this build's schema, filled by `story` through the
/// `db` functions (each statement on its own, as the stories expect).
fn registry_after(dir: &Path, story: impl FnOnce(&rusqlite::Connection)) -> PathBuf {
    let path = dir.join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .unwrap();
    story(&connection);
    path
}

const LEDGER_AND_FLEET: &[&str] = &[
    "customers",
    "releases",
    "release_modules",
    "installation_keys",
    "receipts",
    "fleet_cells",
    "fleet_stack_versions",
    "adoption_deltas",
];

const ROLLOUTS: &[&str] = &[
    "channels",
    "promotions",
    "rollouts",
    "rollout_assignments",
    "rollout_events",
    "release_receipts",
    "customer_sync",
];

/// The ledger's, the fleet's and the rollouts' tables hold rows before the copy
/// (the stories of their own differential tests) and read back the same after
/// it: support's answers, the kept per-stack counts, every row.
#[test]
fn the_ledger_fleet_and_rollouts_copied_to_postgres_answer_the_same() {
    let server = Postgres::start();
    let dir = tempfile::tempdir().unwrap();

    let ledger_dir = dir.path().join("ledger");
    std::fs::create_dir(&ledger_dir).unwrap();
    let path = registry_after(&ledger_dir, |c| {
        crate::postgres_ledger::ledger_writes(c);
    });
    let mut client = icu_database(&server, "ledger_copied");
    let summary = copy::copy(&path, &mut client).unwrap();
    let sqlite = rusqlite::Connection::open(&path).unwrap();
    let postgres = Pg::new(client);
    let on_sqlite = ledger_answers(&sqlite, &sqlite);
    let on_postgres = ledger_answers(&postgres, &sqlite);
    assert_same(&on_sqlite, &on_postgres);
    assert!(
        on_postgres.iter().any(|a| a == "counts exact: true"),
        "the copied per-stack counts are the cells' own"
    );
    held_rows(&summary, LEDGER_AND_FLEET);

    let rollouts_dir = dir.path().join("rollouts");
    std::fs::create_dir(&rollouts_dir).unwrap();
    let path = registry_after(&rollouts_dir, |c| {
        crate::postgres_rollouts::rollout_story(c);
    });
    let mut client = icu_database(&server, "rollouts_copied");
    let summary = copy::copy(&path, &mut client).unwrap();
    let sqlite = rusqlite::Connection::open(&path).unwrap();
    let postgres = Pg::new(client);
    assert_same(
        &every_row(&sqlite, &sqlite, ROLLOUTS),
        &every_row(&postgres, &sqlite, ROLLOUTS),
    );
    held_rows(&summary, ROLLOUTS);
}

/// Each of `tables` was copied with rows in it: the comparison is not vacuous.
fn held_rows(summary: &copy::Summary, tables: &[&str]) {
    for table in tables {
        let copied = summary.tables.iter().find(|t| t.table == *table);
        assert!(
            copied.is_some_and(|t| t.rows > 0),
            "{table} held no rows: {summary}"
        );
    }
}
