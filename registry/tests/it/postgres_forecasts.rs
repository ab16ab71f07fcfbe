//! Forecasts on PostgreSQL (issue 27, PG6): `db::forecasts` gives the same answers
//! on SQLite and on a real PostgreSQL, on a database whose default collation is a
//! language's (ICU `en-US`), as the release and customer tests do.

use semver::Version;
use stackpack_registry::db::sql::{Pg, Sql};
use stackpack_registry::db::{forecasts, ledger, release_index};
use stackpack_schema::forecast::{
    CustomerForecast, ForecastMiss, ForecastOutcome, ReleaseForecast, StackForecast,
    FORECAST_FORMAT,
};
use stackpack_schema::plan::{Action, ChangeDifference, ResourceChange};
use stackpack_schema::rollout::{Approve, ApprovedKind};
use stackpack_schema::Digest;
use stackpack_test_support::servers::Postgres;

use crate::postgres_backend::{assert_same, icu_database, on_sqlite, release};

fn stack(name: &str, action: Action) -> StackForecast {
    StackForecast {
        stack: name.into(),
        from: Some(Version::new(1, 0, 0)),
        from_digest: None,
        to: Version::new(1, 1, 0),
        to_digest: Digest::of(b"to"),
        outcome: ForecastOutcome::of([&action]),
        changes: vec![ResourceChange {
            address: "aws_vpc.main".into(),
            kind: "aws_vpc".into(),
            action,
            attributes: vec!["cidr_block".into()],
        }],
        changes_digest: Digest::of(name.as_bytes()),
        stateful: vec![],
    }
}

/// A forecast of `network@1.1.0` made at `created_at` for `customers`.
pub(crate) fn forecast(created_at: &str, customers: &[(&str, Action)]) -> ReleaseForecast {
    ReleaseForecast {
        format: FORECAST_FORMAT,
        kind: ApprovedKind::Stack,
        release: "network".into(),
        version: Version::new(1, 1, 0),
        digest: Digest::of(b"bundle"),
        channel: Some("stable".into()),
        created_at: created_at.into(),
        account: "emulator".into(),
        customers: customers
            .iter()
            .map(|(id, action)| CustomerForecast {
                customer: (*id).into(),
                wave: None,
                running: Some(Version::new(1, 0, 0)),
                through: vec![],
                outcome: ForecastOutcome::of([action]),
                stacks: vec![stack("network", *action)],
                inputs_set: vec!["cidr".into()],
                reason: None,
                cached: false,
                seconds: 1.5,
            })
            .collect(),
    }
}

/// A miss of `customer`'s receipt `receipt` on `version`, drifted or not.
pub(crate) fn miss(customer: &str, version: &str, receipt: &str, drifted: bool) -> ForecastMiss {
    ForecastMiss {
        customer: customer.into(),
        release: "network".into(),
        version: version.parse().unwrap(),
        stack: "network".into(),
        receipt_id: receipt.into(),
        differences: vec![ChangeDifference {
            address: "aws_vpc.main".into(),
            forecast: None,
            actual: Some(Action::Update),
        }],
        drifted: if drifted {
            vec!["aws_vpc.main".into()]
        } else {
            vec![]
        },
        at: format!("2026-03-01T00:00:0{}Z", receipt.len()),
    }
}

/// Every answer `forecasts` gives as the packager sends a forecast and sends it
/// again, receipts miss it (one twice, one on another version), a person
/// acknowledges the misses and a new one comes, runners report their approval
/// policy, and the packager asks whom to forecast and what they run.
fn forecast_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let v = Version::new(1, 1, 0);
    let now = "2026-03-01T00:00:00Z";
    answers.push(format!(
        "{:?}",
        forecasts::forecast(conn, "network", &v).unwrap()
    ));
    let first = forecast(
        now,
        &[("acme", Action::Update), ("Zeta-1", Action::Replace)],
    );
    forecasts::put(conn, &first, now).unwrap();
    answers.push(format!(
        "{:?}",
        forecasts::forecast(conn, "network", &v).unwrap()
    ));
    for customer in ["acme", "Zeta-1", "nobody"] {
        let part = forecasts::customer_forecast(conn, "network", &v, customer).unwrap();
        answers.push(format!("{customer}: {part:?}"));
    }
    // Sent again: the new forecast and its customers replace the old ones.
    let second = forecast("2026-03-01T01:00:00Z", &[("globex", Action::Destroy)]);
    forecasts::put(conn, &second, "2026-03-01T01:00:01Z").unwrap();
    answers.push(format!(
        "{:?}",
        forecasts::forecast(conn, "network", &v).unwrap()
    ));
    for customer in ["acme", "globex"] {
        let part = forecasts::customer_forecast(conn, "network", &v, customer).unwrap();
        answers.push(format!("{customer}: {part:?}"));
    }
    // Misses: the same receipt and stack recorded once.
    for m in [
        miss("acme", "1.1.0", "r1", false),
        miss("acme", "1.1.0", "r1", true),
        miss("acme", "1.1.0", "r22", true),
        miss("Zeta-1", "1.1.0", "r333", false),
        miss("acme", "1.2.0", "r4444", false),
    ] {
        answers.push(format!("{}", forecasts::insert_miss(conn, &m).unwrap()));
    }
    let open = |conn: &C, customer| forecasts::open_miss(conn, "network", &v, customer).unwrap();
    answers.push(format!("{:?}", open(conn, "acme")));
    answers.push(format!("{:?}", open(conn, "nobody")));
    answers.push(format!(
        "{:?}",
        forecasts::misses(conn, "network", &v).unwrap()
    ));
    for (customer, limit) in [("acme", 2), ("acme", 50), ("nobody", 50)] {
        let misses = forecasts::customer_misses(conn, customer, limit).unwrap();
        answers.push(format!("{customer} {limit}: {misses:?}"));
    }
    // Acknowledged: no open miss, until a new one.
    answers.push(format!(
        "{}",
        forecasts::acknowledge(conn, "network", &v).unwrap()
    ));
    answers.push(format!(
        "{}",
        forecasts::acknowledge(conn, "network", &v).unwrap()
    ));
    answers.push(format!("{:?}", open(conn, "acme")));
    forecasts::insert_miss(conn, &miss("acme", "1.1.0", "r55555", false)).unwrap();
    answers.push(format!("{:?}", open(conn, "acme")));
    answers.push(format!("{:?}", open(conn, "Zeta-1")));
    answers.extend(target_story(conn));
    answers
}

/// Whom a forecast targets (by channel, in byte order, with their approval policy)
/// and what they run, and whether a name is a release.
fn target_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut answers = Vec::new();
    let now = "2026-03-02T00:00:00Z";
    for id in ["acme", "Zeta-1", "globex"] {
        ledger::register_customer(conn, id, None, None, now).unwrap();
    }
    // Channels and waves are the rollouts module's to write (not ported yet).
    for (id, channel, wave) in [("acme", "stable", Some("1")), ("Zeta-1", "stable", None)] {
        conn.execute(
            "UPDATE customers SET channel = $2, wave = $3 WHERE id = $1",
            &[id.into(), channel.into(), wave.into()],
        )
        .unwrap();
    }
    forecasts::set_approve(conn, "acme", Approve::Manual).unwrap();
    forecasts::set_approve(conn, "nobody", Approve::Auto).unwrap();
    for channel in [None, Some("stable"), Some("nothing")] {
        let targets = forecasts::target_customers(conn, channel).unwrap();
        answers.push(format!("{channel:?}: {targets:?}"));
    }
    // What the fleet runs (the fleet module's to write, not ported yet): a stack
    // destroyed (no version) runs nothing.
    for (stack, version, digest) in [
        ("web", Some("1.2.0"), Some("sha256:aa")),
        ("Zcache", Some("1.0.0"), Some("sha256:bb")),
        ("db", None, None),
    ] {
        conn.execute(
            "INSERT INTO fleet_cells (customer, stack, attempt_id, version, digest)
             VALUES ('acme', $1, 'r1', $2, $3)",
            &[stack.into(), version.into(), digest.into()],
        )
        .unwrap();
    }
    for customer in ["acme", "globex"] {
        let stacks = forecasts::running_stacks(conn, customer).unwrap();
        answers.push(format!("{customer}: {stacks:?}"));
    }
    answers.push(format!(
        "{}",
        forecasts::is_release(conn, "platform").unwrap()
    ));
    release_index::record(conn, &release("platform", "1.0.0", "p-1", &["web"])).unwrap();
    answers.push(format!(
        "{}",
        forecasts::is_release(conn, "platform").unwrap()
    ));
    answers.push(format!(
        "{}",
        forecasts::is_release(conn, "network").unwrap()
    ));
    answers
}

#[test]
fn forecasts_answer_the_same_on_sqlite_and_postgres() {
    let sqlite = on_sqlite(|tx| forecast_story(tx));
    let server = Postgres::start();
    let mut client = icu_database(&server, "forecasts");
    let tx = Pg::new(client.transaction().unwrap());
    let postgres = forecast_story(&tx);
    tx.into_inner().commit().unwrap();
    assert_same(&sqlite, &postgres);

    // And the answers are the ones the gate, the forecast pages and targets rely on.
    assert_eq!(sqlite[0], "None");
    assert!(sqlite[1].contains("customer: \"Zeta-1\""), "{}", sqlite[1]);
    assert!(sqlite[4].starts_with("nobody: None"));
    assert!(
        sqlite[5].contains("globex") && !sqlite[5].contains("Zeta-1"),
        "the second forecast replaced the first: {}",
        sqlite[5]
    );
    assert_eq!(sqlite[6], "acme: None");
    assert_eq!(sqlite[8..13], ["true", "false", "true", "true", "true"]);
    assert!(sqlite[13].contains("receipt_id: \"r1\""), "{}", sqlite[13]);
    assert_eq!(sqlite[14], "None");
    let receipts = |answer: &str| -> Vec<String> {
        answer
            .split("receipt_id: \"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(receipts(&sqlite[15]), ["r1", "r22", "r333"], "oldest first");
    assert_eq!(receipts(&sqlite[16]), ["r4444", "r22"], "newest first");
    assert_eq!(receipts(&sqlite[17]), ["r4444", "r22", "r1"]);
    assert_eq!(sqlite[18], "nobody 50: []");
    assert_eq!(sqlite[19..22], ["3", "0", "None"]);
    assert_eq!(receipts(&sqlite[22]), ["r55555"]);
    assert_eq!(sqlite[23], "None");
    // Byte order: on en-US "Zeta-1" would come after "acme".
    assert_eq!(
        sqlite[24],
        "None: [(\"Zeta-1\", Some(\"stable\"), None, None), \
         (\"acme\", Some(\"stable\"), Some(\"1\"), Some(Manual)), \
         (\"globex\", None, None, None)]"
    );
    assert!(sqlite[25].starts_with("Some(\"stable\"): [(\"Zeta-1\""));
    assert_eq!(sqlite[26], "Some(\"nothing\"): []");
    assert!(
        sqlite[27].starts_with("acme: [(\"Zcache\", Version { major: 1, minor: 0")
            && sqlite[27].contains("\"web\"")
            && !sqlite[27].contains("\"db\""),
        "{}",
        sqlite[27]
    );
    assert_eq!(sqlite[28], "globex: []");
    assert_eq!(sqlite[29..], ["false", "true", "false"]);
}
