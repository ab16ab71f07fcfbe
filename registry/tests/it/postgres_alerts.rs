//! Alerts on PostgreSQL (issue 27, PG6): `db::alerts` gives the same answers on
//! SQLite and on a real PostgreSQL, and two replicas claiming the outbox at once
//! never both take an event, nor one customer's events side by side.

use stackpack_registry::alert_event::{Body, Event};
use stackpack_registry::db::alerts::{self, Due};
use stackpack_registry::db::sql::{Pg, Sql};
use stackpack_registry::db::{ledger, pg};
use stackpack_test_support::servers::Postgres;

use crate::postgres_backend::{assert_same, icu_database, on_sqlite};

const NOW: &str = "2026-12-02T10:00:00Z";

pub(crate) fn failed<'a>(customer: &'a str, receipt: &'a str) -> Body<'a> {
    Body {
        event: Event::Failed,
        customer,
        stack: Some("data-plane"),
        version: Some("1.0.0".into()),
        receipt: Some(receipt),
        at: NOW,
        reason: None,
    }
}

/// What a claim took: webhook id, customer, receipt, attempts (not the event's id:
/// SQLite reuses a deleted last rowid, an identity column never does).
fn claimed(due: &[Due]) -> Vec<String> {
    due.iter()
        .map(|d| {
            let receipt = d.body.split("\"receipt\":\"").nth(1).unwrap_or("-");
            let receipt = receipt.split('"').next().unwrap();
            format!("{} {} {receipt} {}", d.alert, d.customer, d.attempts)
        })
        .collect()
}

/// Every answer `alerts` gives as webhooks are added (from the command line and the
/// configuration), events queued, claimed by two replicas, delivered, failed and
/// given back, webhooks removed, and the registry notes standing, silence and
/// customers left behind.
fn alert_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = vec![
        format!("{:?}", alerts::list(conn).unwrap()),
        format!("{:?}", alerts::failing(conn).unwrap()),
    ];
    let hook_b = "http://hooks.example/b";
    for (webhook, events, source) in [
        (hook_b, &["failed", "drifted"][..], "cli"),
        (hook_b, &["failed"][..], "config"),
        ("http://hooks.example/a", &["behind"][..], "config"),
        // The same address and source again: its events change, its id stays.
        (hook_b, &["failed", "silent"][..], "cli"),
    ] {
        answers.push(format!(
            "{}",
            alerts::add(conn, webhook, events, source, NOW).unwrap()
        ));
    }
    for event in ["failed", "behind", "silent", "drifted", "fixed"] {
        answers.push(format!(
            "{event}: {:?}",
            alerts::wanting(conn, event).unwrap()
        ));
    }
    for (customer, receipt) in [("globex", "r1"), ("globex", "r2"), ("initech", "r3")] {
        let queued = alerts::enqueue(conn, &failed(customer, receipt), NOW, 100).unwrap();
        answers.push(format!("{queued}"));
    }
    answers.push(format!("{:?}", alerts::list(conn).unwrap()));
    answers.extend(claim_story(conn));
    answers.extend(standing_story(conn));
    answers
}

/// Claims as the unit test makes them, then deliveries that succeed and fail.
pub(crate) fn claim_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let first = alerts::claim(conn, 1_000, 1, 500).unwrap();
    answers.push(format!("{:?}", claimed(&first)));
    // Another replica at once: what the first holds, and globex's next, wait.
    let other = alerts::claim(conn, 1_001, 64, 500).unwrap();
    answers.push(format!("{:?}", claimed(&other)));
    // The first claimant died: its claim lapses; the others' too, by then.
    let later = alerts::claim(conn, 5_000, 64, 500).unwrap();
    answers.push(format!("{:?}", claimed(&later)));
    let ids: Vec<i64> = later.iter().map(|d| d.id).collect();
    alerts::unclaim(conn, &ids).unwrap();
    let again = alerts::claim(conn, 5_000, 64, 500).unwrap();
    answers.push(format!("{:?}", claimed(&again)));
    // One delivered, one to try again later, one given up.
    alerts::delivered(conn, &again[0], "2026-12-02T10:01:00Z").unwrap();
    alerts::failed(
        conn,
        &again[1],
        "HTTP 500",
        "2026-12-02T10:01:01Z",
        Some(9_000),
    )
    .unwrap();
    alerts::failed(
        conn,
        &again[2],
        "connection refused",
        "2026-12-02T10:01:02Z",
        None,
    )
    .unwrap();
    answers.push(format!("{:?}", alerts::list(conn).unwrap()));
    answers.push(format!("{:?}", alerts::failing(conn).unwrap()));
    answers.push(format!(
        "{:?}",
        claimed(&alerts::claim(conn, 8_999, 64, 500).unwrap())
    ));
    answers.push(format!(
        "{:?}",
        claimed(&alerts::claim(conn, 9_000, 64, 500).unwrap())
    ));
    // A success clears the webhook's last error.
    let retried = alerts::claim(conn, 20_000, 64, 500).unwrap();
    for due in &retried {
        alerts::delivered(conn, due, "2026-12-02T10:02:00Z").unwrap();
    }
    answers.push(format!("{:?}", alerts::list(conn).unwrap()));
    answers.push(format!("{:?}", alerts::failing(conn).unwrap()));
    // Removed: the command line's webhook, then what the configuration no longer names.
    answers.push(format!("{}", alerts::remove(conn, 1).unwrap()));
    answers.push(format!("{}", alerts::remove(conn, 1).unwrap()));
    alerts::keep_configured(conn, &["http://hooks.example/a".to_string()]).unwrap();
    answers.push(format!("{:?}", alerts::list(conn).unwrap()));
    answers
}

/// A cell's standing, customers gone silent once per silence, and the customers a
/// new stable release leaves behind (the cells and last-seen times are the
/// ledger's and fleet's to write, not ported yet: plain statements here).
fn standing_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    for id in ["acme", "Zeta-1", "globex", "quiet"] {
        ledger::register_customer(conn, id, None, None, NOW).unwrap();
    }
    for (id, seen) in [("acme", 10), ("Zeta-1", 20), ("globex", 500)] {
        conn.execute(
            "UPDATE customers SET last_seen = $2, last_seen_ns = $3 WHERE id = $1",
            &[
                id.into(),
                format!("seen at {seen}").as_str().into(),
                seen.into(),
            ],
        )
        .unwrap();
    }
    for (customer, behind, failed, version) in [
        ("acme", 2, 1, Some("0.9.0")),
        ("Zeta-1", 0, 0, Some("1.0.0")),
        ("globex", 0, 0, Some("1.0.0")),
        ("quiet", 0, 0, None),
    ] {
        conn.execute(
            "INSERT INTO fleet_cells (customer, stack, version, behind, failed, drifted)
             VALUES ($1, 'web', $2, $3, $4, 1)",
            &[
                customer.into(),
                version.into(),
                behind.into(),
                failed.into(),
            ],
        )
        .unwrap();
    }
    for (customer, stack) in [("acme", "web"), ("Zeta-1", "web"), ("acme", "db")] {
        let flags = alerts::cell_flags(conn, customer, stack).unwrap();
        answers.push(format!("{customer} {stack}: {flags:?}"));
    }
    answers.push(format!(
        "{:?}",
        alerts::newly_silent(conn, 100, NOW).unwrap()
    ));
    answers.push(format!(
        "{:?}",
        alerts::newly_silent(conn, 100, NOW).unwrap()
    ));
    alerts::heard_from(conn, "acme").unwrap();
    alerts::heard_from(conn, "nobody").unwrap();
    answers.push(format!(
        "{:?}",
        alerts::newly_silent(conn, 100, NOW).unwrap()
    ));
    // Nobody wants `behind`, so nothing is read; then a webhook does.
    alerts::keep_configured(conn, &[]).unwrap();
    answers.push(format!("{:?}", alerts::up_to_date(conn, "web").unwrap()));
    alerts::add(conn, "http://hooks.example/c", &["behind"], "cli", NOW).unwrap();
    let were_current = alerts::up_to_date(conn, "web").unwrap();
    answers.push(format!("{were_current:?}"));
    // The new release leaves Zeta-1 behind (the ledger counts it), not globex.
    conn.execute(
        "UPDATE fleet_cells SET behind = 1 WHERE customer = 'Zeta-1'",
        &[],
    )
    .unwrap();
    alerts::note_behind(conn, "web", "1.1.0", &were_current).unwrap();
    let queued = alerts::claim(conn, i64::MAX, 64, 0).unwrap();
    let events: Vec<String> = queued
        .iter()
        .map(|d| {
            format!(
                "{} {} {}",
                d.webhook,
                d.customer,
                d.body.contains("web 1.1.0 is out")
            )
        })
        .collect();
    answers.push(format!("{events:?}"));
    answers
}

#[test]
fn alerts_answer_the_same_on_sqlite_and_postgres() {
    let sqlite = on_sqlite(|tx| alert_story(tx));
    let server = Postgres::start();
    let mut client = icu_database(&server, "alerts");
    let tx = Pg::new(client.transaction().unwrap());
    let postgres = alert_story(&tx);
    tx.into_inner().commit().unwrap();
    assert_same(&sqlite, &postgres);

    // And the answers are the ones delivery and the support pages rely on.
    let s = &sqlite;
    assert_eq!(s[..2], ["[]", "[]"]);
    assert_eq!(
        s[2..6],
        ["1", "2", "3", "1"],
        "the same address and source keeps its id"
    );
    assert_eq!(
        s[6..11],
        [
            "failed: [1, 2]",
            "behind: [3]",
            "silent: [1]",
            "drifted: []",
            "fixed: []"
        ]
    );
    assert_eq!(s[11..14], ["2", "2", "2"]);
    assert!(s[14].contains("pending: 3"), "{}", s[14]);
    assert_eq!(s[15], "[\"1 globex r1 0\"]");
    // Another replica at once: globex's events wait behind the one in flight to
    // webhook 1; webhook 2's go, each customer's in order.
    assert_eq!(
        s[16],
        "[\"2 globex r1 0\", \"2 globex r2 0\", \"1 initech r3 0\", \"2 initech r3 0\"]"
    );
    assert!(s[17].starts_with("[\"1 globex r1 0\", \"2 globex r1 0\", \"1 globex r2 0\""));
    assert_eq!(s[18], s[17], "given back, claimed again");
    assert!(
        s[19].contains("delivered: 1, last_ok_at: Some(\"2026-12-02T10:01:00Z\"), last_error: Some(\"connection refused\")"),
        "{}",
        s[19]
    );
    assert_eq!(
        s[20],
        "[(1, \"http://hooks.example/b\", \"connection refused\"), (2, \"http://hooks.example/b\", \"HTTP 500\")]"
    );
    // The failed event waits for its retry; once due, it waits behind globex's
    // next, claimed meanwhile.
    assert!(!s[21].contains("globex r1"), "{}", s[21]);
    assert_eq!(s[22], "[]");
    assert!(s[23].contains("delivered: 3") && !s[23].contains("last_error: Some"));
    assert_eq!(s[24], "[]", "a success clears the last error");
    assert_eq!(s[25..27], ["true", "false"]);
    assert!(
        s[27].contains("\"http://hooks.example/a\"") && !s[27].contains("hooks.example/b"),
        "{}",
        s[27]
    );
    assert_eq!(s[28], "acme web: Some((true, true, true))");
    assert_eq!(s[29], "Zeta-1 web: Some((false, true, false))");
    assert_eq!(s[30], "acme db: None");
    assert_eq!(
        s[31], "[(\"Zeta-1\", \"seen at 20\"), (\"acme\", \"seen at 10\")]",
        "silent once, by id in byte order"
    );
    assert_eq!(s[32..34], ["[]", "[(\"acme\", \"seen at 10\")]"]);
    assert_eq!(s[34], "[]", "nobody wants behind: nothing read");
    assert_eq!(s[35], "[(\"Zeta-1\", \"1.0.0\"), (\"globex\", \"1.0.0\")]");
    assert_eq!(s[36], "[\"http://hooks.example/c Zeta-1 true\"]");
}

/// One outbox event of `customer` per receipt, for the replica race.
fn queue<C: Sql>(conn: &C) {
    alerts::add(conn, "http://hooks.example/b", &["failed"], "cli", NOW).unwrap();
    for (customer, receipt) in [("globex", "r1"), ("globex", "r2"), ("initech", "r3")] {
        alerts::enqueue(conn, &failed(customer, receipt), NOW, 100).unwrap();
    }
}

/// Two replicas claim the outbox at the same moment, each in its own PostgreSQL
/// transaction and with no lock over both: the second reads what the first is
/// claiming (its snapshot predates the claim), waits for the first's rows, then
/// takes neither that event nor globex's next one, only initech's, as the second
/// of two claims one after the other does on SQLite.
#[test]
fn of_two_postgres_replicas_claiming_the_outbox_at_once_each_event_goes_to_one() {
    let server = Postgres::start();
    let mut first = pg::connect(&server.url()).unwrap();
    pg::migrate(&mut first).unwrap();
    let mut second = pg::connect(&server.url()).unwrap();
    let setup = Pg::new(first.transaction().unwrap());
    queue(&setup);
    setup.into_inner().commit().unwrap();

    let tx = Pg::new(first.transaction().unwrap());
    let mine = alerts::claim(&tx, 1_000, 1, 500).unwrap();
    assert_eq!(claimed(&mine), ["1 globex r1 0"]);
    let racer = std::thread::spawn(move || {
        let tx = Pg::new(second.transaction().unwrap());
        let theirs = alerts::claim(&tx, 1_001, 64, 500).unwrap();
        tx.into_inner().commit().unwrap();
        claimed(&theirs)
    });
    // Give the racer time to read the outbox and block on globex's first row.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        !racer.is_finished(),
        "the second claimed without waiting for the first's rows"
    );
    tx.into_inner().commit().unwrap();
    assert_eq!(racer.join().unwrap(), ["1 initech r3 0"]);

    // Nothing was left half claimed: once every claim lapses, all three go, once.
    let tx = Pg::new(first.transaction().unwrap());
    let all = claimed(&alerts::claim(&tx, 10_000, 64, 500).unwrap());
    assert_eq!(all, ["1 globex r1 0", "1 globex r2 0", "1 initech r3 0"]);
}
