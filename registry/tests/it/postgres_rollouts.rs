//! Rollouts on PostgreSQL (issue 27, PG8): `db::rollouts` gives the same answers on
//! SQLite and on a real PostgreSQL 15 to one story of calls, the ones the scheduler
//! (`crate::rollout`) makes as a promotion rolls out wave by wave. PostgreSQL's half
//! runs on an ICU `en-US` database, where text sorts with case and punctuation set
//! aside unless the port kept byte order.

use stackpack_registry::db::rollouts::{self as rdb, ChannelConfig};
use stackpack_registry::db::sql::{Pg, Sql};
use stackpack_registry::db::{ledger, Db};
use stackpack_schema::rollout::ApprovedKind;
use stackpack_test_support::servers::Postgres;

use crate::postgres_backend::{assert_same_answers, migrated_icu_database};

/// The story's answers, each line `label: value`.
struct Answers(Vec<String>);

impl Answers {
    fn say(&mut self, label: &str, value: impl std::fmt::Debug) {
        self.0.push(format!("{label}: {value:?}"));
    }

    /// The answer labelled `label` (without its label).
    fn of<'a>(answers: &'a [String], label: &str) -> &'a str {
        let prefix = format!("{label}: ");
        answers
            .iter()
            .find_map(|a| a.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no answer `{label}` in {answers:#?}"))
    }
}

fn version(text: &str) -> semver::Version {
    text.parse().unwrap()
}

fn waves(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// Channels and who is placed in them: a channel nobody configured has the
/// defaults, one set twice keeps the second setting, and channels list in byte order
/// with those only customers name.
fn channel_story<C: Sql>(conn: &C, say: &mut Answers) {
    let now = "2027-01-01T00:00:00Z";
    for id in ["acme", "globex", "Zeta-1", "initech"] {
        ledger::register_customer(conn, id, None, None, now).unwrap();
    }
    say.say("unconfigured", rdb::channel(conn, "stable").unwrap());
    say.say("no channels", rdb::channels(conn).unwrap());
    let stable = ChannelConfig {
        waves: waves(&["canary", "early", "general"]),
        soak_seconds: 60,
        configured: true,
    };
    rdb::set_channel(conn, "stable", &stable, now).unwrap();
    let beta = ChannelConfig {
        waves: waves(&["only"]),
        soak_seconds: 10,
        configured: true,
    };
    rdb::set_channel(conn, "Beta", &beta, now).unwrap();
    let slower = ChannelConfig {
        soak_seconds: 120,
        ..stable
    };
    rdb::set_channel(conn, "stable", &slower, "2027-01-02T00:00:00Z").unwrap();
    say.say("stable", rdb::channel(conn, "stable").unwrap());
    for (customer, channel, wave) in [
        ("acme", "stable", Some("canary")),
        ("globex", "stable", Some("early")),
        ("Zeta-1", "stable", None),
        ("initech", "alpha", Some("general")),
        ("nobody", "stable", Some("canary")),
    ] {
        let placed = rdb::set_placement(conn, customer, channel, wave).unwrap();
        say.say(&format!("placed {customer}"), placed);
    }
    say.say("channels", rdb::channels(conn).unwrap());
    for customer in ["acme", "Zeta-1", "nobody"] {
        let placement = rdb::placement(conn, customer).unwrap();
        say.say(&format!("placement {customer}"), placement);
    }
    say.say(
        "stable customers",
        rdb::channel_customers(conn, "stable").unwrap(),
    );
    say.say(
        "nobody's channel",
        rdb::channel_customers(conn, "none").unwrap(),
    );
}

/// Promotions of `platform` to `stable`: ordered by version precedence (1.10.0 after
/// 1.9.0, whatever their text), required ones found between two versions, the same
/// version refused a second time. Returns the promotions' ids by version.
fn promotion_story<C: Sql>(conn: &C, say: &mut Answers) -> Vec<(String, i64)> {
    let mut ids = Vec::new();
    for (kind, v, required) in [
        (ApprovedKind::Release, "1.0.0", false),
        (ApprovedKind::Release, "1.9.0", true),
        (ApprovedKind::Release, "1.10.0", false),
        (ApprovedKind::Release, "1.2.0", true),
        (ApprovedKind::Stack, "3.0.0", true),
    ] {
        let v = version(v);
        let id =
            rdb::insert_promotion(conn, &promotion(kind, &v, required), "2027-01-03T00:00:00Z")
                .unwrap();
        ids.push((format!("{kind} {v}"), id));
    }
    say.say("promotion ids", &ids);
    let stable = "stable";
    let release = ApprovedKind::Release;
    say.say(
        "promotion 1.9.0",
        rdb::promotion(conn, stable, release, "platform", &version("1.9.0")).unwrap(),
    );
    say.say(
        "promotion 1.9.0 as a stack",
        rdb::promotion(
            conn,
            stable,
            ApprovedKind::Stack,
            "platform",
            &version("1.9.0"),
        )
        .unwrap(),
    );
    say.say(
        "promotion by id",
        rdb::promotion_by_id(conn, ids[2].1).unwrap(),
    );
    say.say(
        "promotion by unknown id",
        rdb::promotion_by_id(conn, 999).unwrap(),
    );
    let newest = rdb::newest_promotion(conn, stable, release, "platform").unwrap();
    say.say("newest", newest.map(|p| p.version));
    let newest = rdb::newest_promotion(conn, stable, ApprovedKind::Stack, "platform").unwrap();
    say.say("newest stack", newest.map(|p| p.version));
    let newest = rdb::newest_promotion(conn, "Beta", release, "platform").unwrap();
    say.say("newest in Beta", newest.map(|p| p.version));
    for (above, below) in [
        ("1.0.0", "1.10.0"),
        ("1.2.0", "1.10.0"),
        ("1.9.0", "1.10.0"),
    ] {
        let between = rdb::required_between(
            conn,
            stable,
            release,
            "platform",
            &version(above),
            &version(below),
        )
        .unwrap();
        say.say(
            &format!("required between {above} and {below}"),
            between.map(|p| p.version),
        );
    }
    // Last: PostgreSQL's identity spends a number on a refused insert, SQLite's rowid
    // does not, so ids after this one would differ (nothing relies on them being
    // consecutive).
    let again = rdb::insert_promotion(
        conn,
        &promotion(release, &version("1.9.0"), false),
        "2027-01-04T00:00:00Z",
    );
    say.say("the same version again refused", again.is_err());
    ids
}

fn promotion(
    kind: ApprovedKind,
    version: &semver::Version,
    required: bool,
) -> rdb::NewPromotion<'_> {
    rdb::NewPromotion {
        channel: "stable",
        kind,
        release: "platform",
        version,
        digest: "sha256:platform",
        required,
        statement: "{\"signed\":true}",
        key_id: "vendor-1",
        promoted_at: "2027-01-03T00:00:00Z",
    }
}

/// Every answer of the whole story, on one connection of either backend.
fn rollout_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut say = Answers(Vec::new());
    channel_story(conn, &mut say);
    promotion_story(conn, &mut say);
    say.0
}

#[test]
fn rollouts_answer_the_same_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("registry.db");
    drop(Db::open(&path, 1).unwrap());
    // As `Db` opens it: foreign keys enforced.
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .pragma_update(None, "foreign_keys", "ON")
        .unwrap();
    let sqlite = rollout_story(&connection);

    // Without a transaction on either side: a refused statement (a duplicate, a
    // missing rollout) would abort a PostgreSQL transaction, where SQLite goes on.
    let server = Postgres::start();
    let postgres = rollout_story(&Pg::new(migrated_icu_database(&server, "rollouts")));

    assert_same_answers(&sqlite, &postgres);
    // And the answers are the ones the scheduler and the channel pages rely on.
    let of = |label: &str| Answers::of(&sqlite, label);
    assert!(of("unconfigured").contains("configured: false"));
    assert!(
        of("stable").contains("soak_seconds: 120"),
        "{}",
        of("stable")
    );
    assert_eq!(of("placed nobody"), "false");
    let channels: Vec<&str> = of("channels")
        .split("(\"")
        .skip(1)
        .map(|c| c.split('"').next().unwrap())
        .collect();
    // Byte order: on en-US "alpha" would come before "Beta".
    assert_eq!(channels, ["Beta", "alpha", "stable"], "{}", of("channels"));
    assert!(of("channels").contains("\"stable\", ChannelConfig { waves: [\"canary\", \"early\", \"general\"], soak_seconds: 120, configured: true }, 3)"));
    assert!(of("channels").contains("\"alpha\", ChannelConfig { waves: [\"canary\", \"early\", \"general\"], soak_seconds: 86400, configured: false }, 1)"));
    assert_eq!(
        of("stable customers"),
        "[(\"Zeta-1\", None), (\"acme\", Some(\"canary\")), (\"globex\", Some(\"early\"))]"
    );
    assert_eq!(of("placement nobody"), "None");
    assert_eq!(of("promotion by unknown id"), "None");
    assert_eq!(of("promotion 1.9.0 as a stack"), "None");
    assert!(of("promotion 1.9.0").contains("required: true"));
    assert_eq!(of("newest"), format!("Some({:?})", version("1.10.0")));
    assert_eq!(
        of("required between 1.0.0 and 1.10.0"),
        format!("Some({:?})", version("1.2.0"))
    );
    assert_eq!(
        of("required between 1.2.0 and 1.10.0"),
        format!("Some({:?})", version("1.9.0"))
    );
    assert_eq!(of("required between 1.9.0 and 1.10.0"), "None");
    assert_eq!(of("the same version again refused"), "true");
}
