//! The ledger and the fleet on PostgreSQL (issue 27, PG7): the same story of stack
//! versions pushed, installation keys pinned and revoked, and receipts reported by
//! several customers (late, tied, repeated) gives the same answers on SQLite and on
//! a real PostgreSQL: receipts are stored once, cells show the newest receipt of
//! each kind, and the per-stack counts kept in `fleet_stack_versions` (SQLite's
//! triggers, PostgreSQL's trigger function) stay exact.

use stackpack_registry::api::{DeployedRelease, Deployment, Release, ReleaseModule, Source};
use stackpack_registry::auth::Role;
use stackpack_registry::db::fleet::{self, Filter, RunningList};
use stackpack_registry::db::ledger::{self, PinnedBy};
use stackpack_registry::db::sql::{Pg, PgError, Sql};
use stackpack_registry::db::{self, customers, pg, tokens, Db};
use stackpack_registry::timestamp::Timestamp;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_test_support::servers::Postgres;

use crate::postgres_backend::{assert_same, icu_database};

fn digest(of: &str) -> stackpack_schema::Digest {
    stackpack_schema::Digest::of(of.as_bytes())
}

/// A stack version as a push records it; `pushed` names what was pushed (two
/// pushes of one version with different `pushed` have different digests).
fn release(
    stack: &str,
    version: &str,
    pushed: &str,
    published: &str,
    modules: &[(&str, &str, Option<&str>)],
) -> Release {
    let version: semver::Version = version.parse().unwrap();
    Release {
        stack: stack.into(),
        prerelease: !version.pre.is_empty(),
        repository: format!("acme/{stack}"),
        digest: digest(pushed),
        source: Source {
            repository: Some("https://git.example/acme".into()),
            commit: None,
            branch: Some("main".into()),
        },
        created: Some("2025-12-31T23:00:00+01:00".parse().unwrap()),
        published_at: published.parse().unwrap(),
        modules: modules
            .iter()
            .map(|(name, path, version)| ReleaseModule {
                name: (*name).into(),
                path: (*path).into(),
                version: version.map(Into::into),
                digest: digest(path).to_string(),
            })
            .collect(),
        version,
    }
}

/// Records a stack version as `controllers/ledger/releases.rs` does (without the
/// `behind` alerts, which come with `alerts`' port): true when it was new and
/// stable, and then the stack's cells are one further behind.
fn push<C: Sql>(conn: &C, r: &Release, token: Option<&str>) -> String {
    let stable = ledger::record_release(conn, r).unwrap();
    if stable {
        ledger::refresh_stack_behind(conn, &r.stack).unwrap();
    }
    ledger::set_release_modules(conn, r).unwrap();
    if let Some(token) = token {
        ledger::note_pusher(conn, r, token).unwrap();
    }
    format!("{} {}: new stable {stable}", r.stack, r.version)
}

struct Report<'a> {
    id: &'a str,
    customer: &'a str,
    stack: &'a str,
    version: &'a str,
    kind: ReceiptKind,
    outcome: Outcome,
    finished: &'a str,
    received: &'a str,
    release: Option<&'a str>,
}

impl Report<'_> {
    fn deployment(&self) -> Deployment {
        let at = |text: &str| -> Timestamp { text.parse().unwrap() };
        Deployment {
            receipt_id: self.id.into(),
            customer: self.customer.into(),
            stack: self.stack.into(),
            version: self.version.parse().unwrap(),
            digest: digest(&format!("{}-{}", self.stack, self.version)),
            kind: self.kind,
            outcome: self.outcome,
            started_at: at(self.finished),
            finished_at: at(self.finished),
            key_id: "k1".into(),
            received_at: at(self.received),
            release: self.release.map(|name| DeployedRelease {
                name: name.into(),
                version: "1.0.0".parse().unwrap(),
                digest: digest(name),
            }),
            reason: None,
        }
    }

    fn document(&self) -> String {
        format!(
            "{{\"id\":\"{}\",\"outcome\":\"{}\"}}",
            self.id,
            self.outcome.as_str()
        )
    }
}

/// Stores a receipt as `receipts::store` does: one already stored with the same
/// document is not stored again; another document under a stored id is refused.
fn store<C: Sql>(conn: &C, d: &Deployment, document: &str) -> String {
    if let Some(existing) = ledger::receipt_document(conn, &d.receipt_id).unwrap() {
        let same = existing == document;
        return format!(
            "{}: {}",
            d.receipt_id,
            if same { "already stored" } else { "conflict" }
        );
    }
    ledger::note_customer(conn, &d.customer, d.received_at.as_str()).unwrap();
    let (_, finished_ns) = db::utc_time(d.finished_at.as_str()).unwrap();
    ledger::file_receipt(conn, d, finished_ns, document).unwrap();
    format!("{}: new", d.receipt_id)
}

fn report<'a>(
    id: &'a str,
    customer: &'a str,
    stack: &'a str,
    version: &'a str,
    (kind, outcome): (ReceiptKind, Outcome),
    finished: &'a str,
    received: &'a str,
) -> Report<'a> {
    Report {
        id,
        customer,
        stack,
        version,
        kind,
        outcome,
        finished,
        received,
        release: None,
    }
}

const APPLIED: (ReceiptKind, Outcome) = (ReceiptKind::Apply, Outcome::Succeeded);
const FAILED: (ReceiptKind, Outcome) = (ReceiptKind::Apply, Outcome::Failed);

/// The receipts of the story, in the order they arrive: several customers and
/// stacks, a failed apply, drift, a rollback, a destroy, a plan, one that arrives
/// late (finished between two earlier ones), and two finished and received at the
/// same instant (the smaller id, in byte order, is the newer: `z-B`, not `z-a`).
fn reports() -> Vec<Report<'static>> {
    let mut all = vec![
        report(
            "acme-web-1",
            "acme",
            "web",
            "1.0.0",
            APPLIED,
            "2026-01-05T10:00:00Z",
            "2026-01-05T10:00:01Z",
        ),
        report(
            "acme-web-2",
            "acme",
            "web",
            "1.1.0",
            FAILED,
            "2026-02-05T10:00:00Z",
            "2026-02-05T10:00:01Z",
        ),
        report(
            "acme-web-3",
            "acme",
            "web",
            "1.1.0",
            APPLIED,
            "2026-02-06T10:00:00.250Z",
            "2026-02-06T10:00:01Z",
        ),
        report(
            "acme-db-1",
            "acme",
            "db",
            "1.0.0",
            (ReceiptKind::Apply, Outcome::NoChanges),
            "2026-02-01T00:00:00Z",
            "2026-02-01T00:00:01Z",
        ),
        report(
            "acme-db-2",
            "acme",
            "db",
            "1.0.0",
            (ReceiptKind::Drift, Outcome::Drifted),
            "2026-02-10T00:00:00Z",
            "2026-02-10T00:00:01Z",
        ),
        report(
            "acme-web-plan",
            "acme",
            "web",
            "2.0.0-rc.1",
            (ReceiptKind::Plan, Outcome::Succeeded),
            "2026-03-04T00:00:00Z",
            "2026-03-04T00:00:01Z",
        ),
        report(
            "globex-web-1",
            "globex",
            "web",
            "1.0.0",
            APPLIED,
            "2026-01-10T00:00:00+02:00",
            "2026-01-10T00:00:01Z",
        ),
        report(
            "globex-web-2",
            "globex",
            "web",
            "1.0.0",
            (ReceiptKind::Destroy, Outcome::Succeeded),
            "2026-03-01T00:00:00Z",
            "2026-03-01T00:00:01Z",
        ),
        report(
            "Zeta-web-1",
            "Zeta-1",
            "web",
            "2.0.0-rc.1",
            APPLIED,
            "2026-03-02T00:00:00Z",
            "2026-03-02T00:00:01Z",
        ),
        report(
            "Zeta-web-2",
            "Zeta-1",
            "web",
            "1.1.0",
            (ReceiptKind::Rollback, Outcome::Succeeded),
            "2026-03-03T00:00:00Z",
            "2026-03-03T00:00:01Z",
        ),
        report(
            "z-a",
            "Zeta-1",
            "Zcache",
            "0.2.0",
            APPLIED,
            "2026-03-03T00:00:00Z",
            "2026-03-03T00:00:05Z",
        ),
        report(
            "z-B",
            "Zeta-1",
            "Zcache",
            "0.1.0",
            APPLIED,
            "2026-03-03T00:00:00Z",
            "2026-03-03T00:00:05Z",
        ),
        report(
            "z-0",
            "Zeta-1",
            "Zcache",
            "0.3.0",
            FAILED,
            "2026-03-03T00:00:00Z",
            "2026-03-03T00:00:04Z",
        ),
        // Finished on 20 January, reported in March: it sits between acme-web-1
        // and acme-web-2, so adoption counts 1.0.1 from 20 January to 6 February.
        report(
            "acme-web-late",
            "acme",
            "web",
            "1.0.1",
            APPLIED,
            "2026-01-20T00:00:00Z",
            "2026-03-05T00:00:00Z",
        ),
        // A registered customer on the prerelease, whose first apply of db failed.
        report(
            "initech-web-1",
            "initech",
            "web",
            "2.0.0-rc.1",
            APPLIED,
            "2026-03-06T00:00:00Z",
            "2026-03-06T00:00:01Z",
        ),
        report(
            "initech-db-1",
            "initech",
            "db",
            "1.0.0",
            FAILED,
            "2026-03-06T00:00:00Z",
            "2026-03-06T00:00:01Z",
        ),
    ];
    all[8].release = Some("platform");
    all[9].release = Some("platform");
    all
}

/// Every row of a table, as text, sorted in Rust: the same on both backends
/// whatever order each returns them in.
pub(crate) fn table<C: Sql>(conn: &C, sql: &str) -> Vec<String> {
    let mut rows: Vec<String> = conn
        .query(sql, &[])
        .unwrap()
        .into_iter()
        .map(|r| format!("{:?}", r.values()))
        .collect();
    rows.sort();
    rows
}

const CELLS: &str = "SELECT customer, stack, current_id, attempt_id, drift_id, drifted, failed,
    version, version_key, digest, since, prerelease, behind, attempt_kind, attempt_outcome,
    attempt_version, attempt_finished_at FROM fleet_cells";
const KEPT: &str = "SELECT stack, version, cells, failed, drifted FROM fleet_stack_versions";
/// What `fleet_stack_versions` must hold: the cells counted afresh (rows counted
/// down to zero stay, with zeros, as they do on SQLite).
const COUNTED: &str = "SELECT stack, COALESCE(version, ''), COUNT(*),
    CAST(SUM(failed) AS BIGINT), CAST(SUM(drifted) AS BIGINT)
    FROM fleet_cells GROUP BY stack, COALESCE(version, '')";

/// The cells and the kept counts, and whether the counts are exact.
fn fleet_state<C: Sql>(conn: &C) -> Vec<String> {
    let mut state = table(conn, CELLS);
    let kept: Vec<String> = table(conn, KEPT)
        .into_iter()
        .filter(|row| !row.contains("Int(0), Int(0), Int(0)"))
        .collect();
    state.push(format!("counts exact: {}", kept == table(conn, COUNTED)));
    state.extend(kept);
    state
}

/// The writes: customers, a token, stack versions and their modules, installation
/// keys, and the receipts, one re-reported and one id reused.
pub(crate) fn ledger_writes<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let now = "2026-01-01T00:00:00Z";
    ledger::register_customer(conn, "acme", Some("Acme"), Some("production"), now).unwrap();
    ledger::register_customer(conn, "globex", None, Some("Staging"), now).unwrap();
    ledger::upsert_customer(conn, "initech", Some("Initech"), now).unwrap();
    let ci = tokens::NewToken {
        role: Role::Publisher,
        name: Some("ci"),
        customer: None,
        created: now,
        expires_at: None,
    };
    tokens::insert(conn, "t1", &[1], &ci).unwrap();
    let vpc = ("vpc", "modules/vpc", Some("3.1.0"));
    let pushes = [
        (
            release(
                "web",
                "1.0.0",
                "web-1.0.0",
                "2026-01-01T00:00:00Z",
                &[vpc, ("rds", "modules/Rds", Some("1.0.0"))],
            ),
            Some("t1"),
        ),
        (
            release(
                "web",
                "1.1.0",
                "web-1.1.0",
                "2026-02-01T00:00:00Z",
                &[
                    ("vpc", "modules/vpc", Some("3.2.0")),
                    ("raw", "vendor/raw", None),
                ],
            ),
            None,
        ),
        (
            release(
                "web",
                "2.0.0-rc.1",
                "web-rc1",
                "2026-03-01T00:00:00Z",
                &[vpc],
            ),
            Some("t1"),
        ),
        // A prerelease pushed again moves; a stable version never does.
        (
            release(
                "web",
                "2.0.0-rc.1",
                "web-rc1-b",
                "2026-03-01T12:00:00Z",
                &[],
            ),
            None,
        ),
        (
            release("web", "1.0.0", "web-1.0.0-b", "2026-03-02T00:00:00Z", &[]),
            Some("t1"),
        ),
        (
            release("db", "1.0.0", "db-1.0.0", "2026-01-15T00:00:00.5Z", &[vpc]),
            None,
        ),
        (
            release("Zcache", "0.2.0", "z-0.2.0", "2026-01-15T00:00:00Z", &[vpc]),
            None,
        ),
    ];
    for (r, token) in &pushes {
        answers.push(push(conn, r, *token));
    }
    for (customer, key_id, key, by) in [
        ("acme", "k1", "PUB-1", PinnedBy::Report),
        ("acme", "k0", "PUB-0", PinnedBy::Import),
        ("acme", "k0", "PUB-0", PinnedBy::Admin),
        ("acme", "k1", "PUB-1", PinnedBy::Import),
        ("Zeta-1", "kz", "PUB-1", PinnedBy::Report),
    ] {
        ledger::add_installation_key(conn, customer, key_id, key, now, by).unwrap();
    }
    for (key_id, at) in [
        ("k1", "2026-02-01T00:00:00Z"),
        ("k1", "2026-03-01T00:00:00Z"),
        ("nope", now),
    ] {
        let revoked = ledger::revoke_installation_key(conn, "acme", key_id, at).unwrap();
        answers.push(format!("revoke {key_id}: {revoked}"));
    }
    let reports = reports();
    for r in &reports {
        answers.push(store(conn, &r.deployment(), &r.document()));
    }
    // Reported again, the same receipt is not stored twice and changes nothing; a
    // different document under a stored id is refused, and so is a second row.
    let before = fleet_state(conn);
    let again = &reports[2];
    answers.push(store(conn, &again.deployment(), &again.document()));
    answers.push(store(
        conn,
        &again.deployment(),
        "{\"id\":\"acme-web-3\",\"forged\":true}",
    ));
    let twice = ledger::insert_receipt(conn, &again.deployment(), 1, &again.document());
    answers.push(format!("second row refused: {}", twice.is_err()));
    answers.push(format!("unchanged: {}", before == fleet_state(conn)));
    answers
}

/// What support and the ledger's pages read back after [`ledger_writes`].
pub(crate) fn ledger_reads<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = fleet_state(conn);
    let mut say = |what: String| answers.push(what);
    for id in ["acme", "globex", "Zeta-1", "initech", "nobody"] {
        say(format!("{id}: {:?}", ledger::customer(conn, id).unwrap()));
        say(format!(
            "registered {}",
            ledger::is_registered(conn, id).unwrap()
        ));
    }
    say(format!("{:?}", ledger::environments(conn).unwrap()));
    say(format!("{:?}", ledger::stack_names(conn).unwrap()));
    for stack in [None, Some("web"), Some("nothing")] {
        say(format!(
            "{stack:?}: {:?}",
            ledger::releases(conn, stack).unwrap()
        ));
        say(format!(
            "{stack:?}: {:?}",
            ledger::releases_with_modules(conn, stack).unwrap()
        ));
    }
    for (stack, version) in [
        ("web", "1.0.0"),
        ("web", "2.0.0-rc.1"),
        ("web", "1.1.0"),
        ("web", "9.9.9"),
    ] {
        say(format!(
            "{stack} {version}: {:?} {:?} {:?} {:?}",
            ledger::release(conn, stack, version).unwrap(),
            ledger::release_modules(conn, stack, version).unwrap(),
            ledger::release_digest(conn, stack, &version.parse().unwrap()).unwrap(),
            ledger::pusher(conn, stack, version).unwrap(),
        ));
    }
    for customer in ["acme", "Zeta-1", "nobody"] {
        say(format!(
            "{:?}",
            ledger::installation_keys(conn, customer).unwrap()
        ));
        let standing: Vec<String> = ledger::installation_key_standing(conn, customer)
            .unwrap()
            .into_iter()
            .map(|k| format!("{} {} {:?}", k.key_id, k.revoked, k.pinned_by))
            .collect();
        say(format!("{standing:?}"));
    }
    for key in ["PUB-1", "PUB-0", "PUB-9"] {
        say(format!(
            "{key}: {:?}",
            ledger::customers_of_key(conn, key).unwrap()
        ));
    }
    say(format!(
        "{:?}",
        ledger::receipt_document(conn, "z-B").unwrap()
    ));
    say(format!(
        "{:?}",
        ledger::receipt_document(conn, "nope").unwrap()
    ));
    for (customer, stack, limit) in [
        (None, None, 100),
        (Some("acme"), None, 100),
        (None, Some("web"), 3),
        (Some("Zeta-1"), Some("Zcache"), 100),
        (Some("nobody"), None, 100),
    ] {
        say(format!(
            "{customer:?} {stack:?}: {:?}",
            ledger::deployments(conn, customer, stack, limit).unwrap()
        ));
    }
    say(format!(
        "{:?}",
        ledger::history_documents(conn, "Zeta-1", 2).unwrap()
    ));
    for stack in [None, Some("web")] {
        say(format!("{:?}", ledger::changes(conn, stack).unwrap()));
        say(format!(
            "{:?}",
            ledger::adoption_deltas(conn, stack).unwrap()
        ));
    }
    // What `customers` reads from the cells and the kept counts (PG4's port).
    say(format!("{:?}", customers::stacks(conn, "").unwrap()));
    say(format!("{:?}", customers::stacks(conn, "ZC").unwrap()));
    say(format!("{:?}", customers::versions(conn, "web").unwrap()));
    say(format!(
        "{:?}",
        customers::versions(conn, "Zcache").unwrap()
    ));
    for customer in ["acme", "Zeta-1"] {
        say(format!(
            "{:?}",
            customers::cell_receipts(conn, customer).unwrap()
        ));
    }
    answers
}

/// The cells worked out again from the receipts (as migrations do), a stable
/// version deleted and a new one pushed: the counts follow every change.
fn ledger_rework<C: Sql>(conn: &C) -> Vec<String> {
    let before = table(conn, CELLS);
    ledger::refresh_cell_flags(conn, None).unwrap();
    ledger::refresh_cell_flags(conn, Some(("acme", "db"))).unwrap();
    ledger::refresh_cells(conn, None).unwrap();
    let mut answers = vec![format!(
        "refreshed cells unchanged: {}",
        before == table(conn, CELLS)
    )];
    // Zcache 0.2.0 deleted: Zeta-1's 0.1.0 is no longer behind.
    let gone = digest("z-0.2.0").to_string();
    ledger::delete_release_by_digest(conn, "acme/Zcache", &gone).unwrap();
    answers.extend(fleet_state(conn));
    answers.push(push(
        conn,
        &release("web", "1.2.0", "web-1.2.0", "2026-03-09T00:00:00Z", &[]),
        None,
    ));
    answers.push(push(
        conn,
        &release("web", "1.2.0", "web-1.2.0", "2026-03-09T00:00:00Z", &[]),
        None,
    ));
    answers.extend(fleet_state(conn));
    answers
}

/// Support's fleet pages over the same story: filters, cursors, lists.
pub(crate) fn fleet_reads<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let stale = db::utc_time("2026-03-02T00:00:00Z").unwrap().1;
    let key = |v: &str| stackpack_registry::version_key::of(&v.parse().unwrap());
    let filters = [
        Filter::default(),
        Filter {
            customer: Some("acme"),
            ..Default::default()
        },
        Filter {
            environment: Some("production"),
            ..Default::default()
        },
        Filter {
            stack: Some("web"),
            ..Default::default()
        },
        Filter {
            stack: Some("web"),
            below_key: Some(key("1.1.0")),
            ..Default::default()
        },
        Filter {
            below_key: Some(key("1.1.0")),
            ..Default::default()
        },
        Filter {
            behind: true,
            ..Default::default()
        },
        Filter {
            prerelease: true,
            ..Default::default()
        },
        Filter {
            drifted: true,
            environment: Some("production"),
            ..Default::default()
        },
        Filter {
            failed: true,
            ..Default::default()
        },
        Filter {
            silent_before_ns: Some(stale),
            ..Default::default()
        },
        Filter {
            silent_before_ns: Some(stale),
            stack: Some("web"),
            ..Default::default()
        },
        Filter {
            version: Some("1.1.0"),
            ..Default::default()
        },
        Filter {
            digest: Some("x"),
            ..Default::default()
        },
        Filter {
            module: Some("vpc"),
            ..Default::default()
        },
        Filter {
            module: Some("vpc"),
            module_below_key: Some(key("3.2.0")),
            ..Default::default()
        },
        Filter {
            module: Some("nothing"),
            ..Default::default()
        },
    ];
    for (i, filter) in filters.iter().enumerate() {
        for (after, limit) in [
            (None, 100),
            (Some(("Zeta-1", "web")), 2),
            (Some(("globex", "")), 100),
        ] {
            let page = fleet::fleet_page(conn, filter, stale, after, limit).unwrap();
            answers.push(format!("filter {i} after {after:?}: {page:?}"));
        }
    }
    for list in [
        RunningList::Everything,
        RunningList::Behind,
        RunningList::Prerelease,
        RunningList::Drifted,
    ] {
        for (customer, after) in [
            (None, None),
            (Some("acme"), None),
            (None, Some(("Zeta-1", "Zcache"))),
        ] {
            let page = fleet::running_page(conn, list, customer, after, 100).unwrap();
            answers.push(format!("{list:?} {customer:?} {after:?}: {page:?}"));
        }
    }
    for (silent, after, limit) in [
        (None, None, 100),
        (None, Some("Zeta-1"), 2),
        (Some(stale), None, 100),
    ] {
        let page = fleet::customers_page(conn, silent, after, limit).unwrap();
        answers.push(format!("customers {silent:?} {after:?}: {page:?}"));
    }
    for (customer, after, limit) in [
        ("acme", None, 3),
        ("acme", Some("acme-web-late"), 100),
        ("Zeta-1", Some("z-B"), 100),
        ("acme", Some("z-a"), 100),
    ] {
        let page = fleet::history_page(conn, customer, after, limit).unwrap();
        answers.push(format!("history {customer} {after:?}: {page:?}"));
    }
    for (stack, version) in [
        ("web", "1.1.0"),
        ("web", "2.0.0-rc.1"),
        ("Zcache", "0.1.0"),
        ("web", "9.9.9"),
    ] {
        answers.push(format!(
            "{stack} {version}: {}",
            fleet::runner_count(conn, stack, version).unwrap()
        ));
    }
    answers
}

fn story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = ledger_writes(conn);
    answers.extend(ledger_reads(conn));
    answers.extend(ledger_rework(conn));
    answers.extend(fleet_reads(conn));
    answers
}

#[test]
fn the_ledger_and_fleet_answer_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    // Each statement on its own, as the refused second row must not end the story.
    let sqlite = story(&rusqlite::Connection::open(&path).unwrap());

    let server = Postgres::start();
    let postgres = story(&Pg::new(icu_database(&server, "ledger")));

    assert_same(&sqlite, &postgres);
    let answer = |prefix: &str| {
        sqlite
            .iter()
            .find(|a| a.starts_with(prefix))
            .unwrap_or_else(|| panic!("no answer {prefix}: {sqlite:#?}"))
            .as_str()
    };
    // Stored once: re-reported, the receipt is not stored again; another document
    // under its id is refused; nothing changed.
    assert_eq!(answer("acme-web-3: a"), "acme-web-3: already stored");
    assert_eq!(answer("acme-web-3: c"), "acme-web-3: conflict");
    assert_eq!(answer("second row"), "second row refused: true");
    assert_eq!(answer("unchanged"), "unchanged: true");
    // Counts kept exact after every step, and checked on something.
    let exact: Vec<&String> = sqlite
        .iter()
        .filter(|a| a.starts_with("counts exact"))
        .collect();
    assert!(
        exact.len() == 3 && exact.iter().all(|a| a.ends_with("true")),
        "{exact:?}"
    );
    assert_eq!(answer("refreshed"), "refreshed cells unchanged: true");
    // A stable version never moves; the moved prerelease does; a new stable one
    // leaves the cells behind it.
    assert_eq!(answer("web 1.0.0: new"), "web 1.0.0: new stable true");
    assert!(
        sqlite
            .iter()
            .filter(|a| *a == "web 1.0.0: new stable false")
            .count()
            == 1
    );
    assert_eq!(answer("web 1.2.0"), "web 1.2.0: new stable true");
    // The tie of z-a and z-B goes to the smaller id in byte order: Zeta-1 runs
    // Zcache 0.1.0 (z-B), its failed attempt z-0 arriving earlier is older.
    let zcache = answer("[Text(\"Zeta-1\"), Text(\"Zcache\")");
    assert!(zcache.contains("Text(\"z-B\"), Text(\"z-B\")"), "{zcache}");
    // Keys: listed by id, the admin's vouching kept, a key shared by two customers.
    assert_eq!(answer("PUB-1"), "PUB-1: [\"Zeta-1\", \"acme\"]");
    assert!(sqlite
        .iter()
        .any(|a| a == "[\"k0 false Some(Admin)\", \"k1 true Some(Report)\"]"));
    assert!(sqlite.iter().any(|a| a == "[\"Staging\", \"production\"]"));
}

/// Two replicas store one receipt at the same moment, each in its own PostgreSQL
/// transaction (no lock of the registry's around them): the second looks before
/// the first commits and finds nothing, then waits for the first's row and is
/// refused, so the receipt is stored once and counted once.
#[test]
fn of_two_postgres_transactions_storing_one_receipt_only_one_stores_it() {
    let server = Postgres::start();
    let mut first = icu_database(&server, "replicas");
    let mut second = pg::connect(&server.url().replace("/postgres", "/replicas")).unwrap();
    let r = &reports()[0];
    let (d, document) = (r.deployment(), r.document());
    let tx = Pg::new(first.transaction().unwrap());
    assert_eq!(store(&tx, &d, &document), "acme-web-1: new");
    let racer = std::thread::spawn(move || {
        let tx = Pg::new(second.transaction().unwrap());
        let seen = ledger::receipt_document(&tx, &d.receipt_id).unwrap();
        let (_, finished_ns) = db::utc_time(d.finished_at.as_str()).unwrap();
        let stored = ledger::note_customer(&tx, &d.customer, d.received_at.as_str())
            .and_then(|()| ledger::file_receipt(&tx, &d, finished_ns, &document));
        // The SQLSTATE: `PgError`'s text says only "db error".
        let code = |e: PgError| match e {
            PgError::Postgres(e) => e.code().map(|c| c.code().to_string()),
            _ => None,
        };
        (seen, stored.map_err(code))
    });
    // Give the racer time to block on the first's rows before the first commits.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !racer.is_finished(),
        "the second stored the receipt without waiting"
    );
    tx.into_inner().commit().unwrap();
    let (seen, stored) = racer.join().unwrap();
    assert_eq!(seen, None);
    let refused = stored.expect_err("both stored the receipt");
    // unique_violation: the receipt's id is taken.
    assert_eq!(refused.as_deref(), Some("23505"));
    let conn = Pg::new(first);
    assert_eq!(ledger::deployments(&conn, None, None, 10).unwrap().len(), 1);
    let state = fleet_state(&conn);
    assert!(state.iter().any(|s| s == "counts exact: true"), "{state:?}");
    assert!(
        state.contains(&"[Text(\"web\"), Text(\"1.0.0\"), Int(1), Int(0), Int(0)]".to_string()),
        "{state:?}"
    );
}
