//! Rollouts on PostgreSQL (issue 27, PG8): `db::rollouts` gives the same answers on
//! SQLite and on a real PostgreSQL 15 to one story of calls, the ones the scheduler
//! (`crate::rollout`) makes as a promotion rolls out wave by wave. PostgreSQL's half
//! runs on an ICU `en-US` database, where text sorts with case and punctuation set
//! aside unless the port kept byte order.

use stackpack_registry::api::{EventKind, Gate, RolloutState};
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

const NS: i64 = 1_000_000_000;

/// The registry's clock in the story: second `s` as text and nanoseconds.
fn at(s: i64) -> (String, i64) {
    (
        format!("2027-01-10T00:{:02}:{:02}.000Z", s / 60, s % 60),
        s * NS,
    )
}

/// The calls `crate::rollout` makes as promotion `1.9.0` rolls out to `stable`
/// (canary: acme; early: globex; general: Zeta-1 and initech): waves open in order,
/// one assignment per customer, a failure halts it and a halted rollout is not
/// moved on (the scheduler reads running ones only), resume clears the halt, the
/// last wave completes it; its history lists in the order it happened.
fn wave_story<C: Sql>(conn: &C, say: &mut Answers, promotions: &[(String, i64)]) {
    let promotion = |name: &str| promotions.iter().find(|(n, _)| n == name).unwrap().1;
    rdb::set_placement(conn, "initech", "stable", None).unwrap();
    let config = rdb::channel(conn, "stable").unwrap();
    let v19 = version("1.9.0");
    let new = |promotion_id, kind, version| rdb::NewRollout {
        promotion_id,
        channel: "stable",
        kind,
        release: "platform",
        version,
        digest: "sha256:platform",
        config: &config,
    };
    let (t0, _) = at(0);
    let id = rdb::insert_rollout(
        conn,
        &new(promotion("release 1.9.0"), ApprovedKind::Release, &v19),
        &t0,
    )
    .unwrap();
    say.say("rollout id", id);
    say.say("no wave open yet", rdb::raw_wave_index(conn, id).unwrap());
    rdb::insert_event(
        conn,
        id,
        &t0,
        EventKind::Promoted,
        None,
        None,
        Some("by ci"),
    )
    .unwrap();
    let open = |s: i64, index: usize, members: &[&str]| {
        let (now, ns) = at(s);
        let wave = &config.waves[index];
        rdb::set_wave(conn, id, index, &now, ns).unwrap();
        let detail = format!("{} customers", members.len());
        rdb::insert_event(
            conn,
            id,
            &now,
            EventKind::WaveOpened,
            None,
            Some(wave),
            Some(&detail),
        )
        .unwrap();
        for customer in members {
            let assigned = rdb::insert_assignment(conn, id, customer, wave, index, &now).unwrap();
            assert!(assigned, "{customer} assigned once");
            rdb::insert_event(
                conn,
                id,
                &now,
                EventKind::Assigned,
                Some(customer),
                Some(wave),
                None,
            )
            .unwrap();
        }
    };
    let gate = |s: i64, customer: &str, gate: Gate, reason: Option<&str>| {
        let (now, _) = at(s);
        rdb::set_gate(conn, id, customer, gate, reason, &now).unwrap();
        let kind = if gate == Gate::Failed {
            EventKind::Failed
        } else {
            EventKind::Succeeded
        };
        rdb::insert_event(conn, id, &now, kind, Some(customer), None, reason).unwrap();
    };

    open(1, 0, &["acme"]);
    say.say("wave open", rdb::raw_wave_index(conn, id).unwrap());
    say.say(
        "waiting on canary",
        rdb::any_waiting(conn, id, "stable").unwrap(),
    );
    // Assigned again (a tick racing a receipt): the first assignment stays.
    let again = rdb::insert_assignment(conn, id, "acme", "canary", 0, &at(2).0).unwrap();
    say.say("acme assigned again", again);
    gate(3, "acme", Gate::Succeeded, None);
    say.say(
        "waiting after acme",
        rdb::any_waiting(conn, id, "stable").unwrap(),
    );
    let due = at(1).1 + 120 * NS;
    rdb::set_due(conn, id, Some(due)).unwrap();
    rdb::set_due(conn, id, Some(due)).unwrap();
    say.say("due before the soak", rdb::any_due(conn, due - 1).unwrap());
    say.say("due after the soak", rdb::any_due(conn, due).unwrap());

    open(121, 1, &["globex"]);
    say.say(
        "due once the wave opened",
        rdb::any_due(conn, due * 10).unwrap(),
    );
    gate(
        122,
        "globex",
        Gate::Failed,
        Some("release receipt `globex-1`: apply failed"),
    );
    say.say("first failure", rdb::first_failure(conn, id).unwrap());
    say.say("globex's gate", rdb::gate(conn, id, "globex").unwrap());
    say.say("gate counts", rdb::gate_counts(conn, id).unwrap());
    let (now, _) = at(123);
    let why = "customer `globex` (wave `early`) failed: release receipt `globex-1`: apply failed";
    rdb::set_state(conn, id, RolloutState::Halted, Some(why), &now).unwrap();
    rdb::insert_event(
        conn,
        id,
        &now,
        EventKind::Halted,
        Some("globex"),
        Some("early"),
        Some(why),
    )
    .unwrap();
    let running = |conn: &C| -> Vec<i64> {
        let rows = rdb::rollouts_in(conn, RolloutState::Running).unwrap();
        rows.iter().map(|r| r.id).collect()
    };
    say.say("running while halted", running(conn));
    say.say("halted", rdb::rollout(conn, id).unwrap());
    let open_of = rdb::open_rollouts_of(conn, "stable", ApprovedKind::Release, "platform").unwrap();
    say.say(
        "open while halted",
        open_of.iter().map(|r| r.id).collect::<Vec<_>>(),
    );
    say.say(
        "acme's open rollouts",
        rdb::open_rollouts_of_customer(conn, "acme").unwrap(),
    );

    let (now, _) = at(200);
    rdb::set_state(conn, id, RolloutState::Running, None, &now).unwrap();
    rdb::insert_event(conn, id, &now, EventKind::Resumed, None, None, Some(why)).unwrap();
    gate(201, "globex", Gate::Succeeded, None);
    say.say("running once resumed", running(conn));
    say.say("resumed", rdb::rollout(conn, id).unwrap());

    open(321, 2, &["initech", "Zeta-1"]);
    gate(322, "Zeta-1", Gate::Succeeded, None);
    gate(322, "initech", Gate::Succeeded, None);
    say.say(
        "waiting at the end",
        rdb::any_waiting(conn, id, "stable").unwrap(),
    );
    let (now, _) = at(323);
    rdb::set_state(conn, id, RolloutState::Completed, None, &now).unwrap();
    rdb::insert_event(conn, id, &now, EventKind::Completed, None, None, None).unwrap();
    say.say("assigned", rdb::assigned_customers(conn, id).unwrap());
    say.say("assignments", rdb::assignments(conn, id).unwrap());
    say.say("events", rdb::events(conn, id).unwrap());
    say.say(
        "gate counts at the end",
        rdb::gate_counts(conn, id).unwrap(),
    );
    say.say(
        "completed",
        rdb::completed_rollouts(conn, "stable")
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect::<Vec<_>>(),
    );
    say.say(
        "open when completed",
        rdb::open_rollouts_of_customer(conn, "acme").unwrap(),
    );
    say.say(
        "rollout of 1.9.0",
        rdb::rollout_of_promotion(conn, promotion("release 1.9.0")).unwrap(),
    );
    say.say(
        "rollout of 1.0.0",
        rdb::rollout_of_promotion(conn, promotion("release 1.0.0")).unwrap(),
    );

    // A newer version and the stack of the same name: acme's newest assignment per
    // release, a customer moved out of the channel no longer holding one up.
    let (v110, v3) = (version("1.10.0"), version("3.0.0"));
    let (now, _) = at(400);
    let newer = rdb::insert_rollout(
        conn,
        &new(promotion("release 1.10.0"), ApprovedKind::Release, &v110),
        &now,
    )
    .unwrap();
    let stack = rdb::insert_rollout(
        conn,
        &new(promotion("stack 3.0.0"), ApprovedKind::Stack, &v3),
        &now,
    )
    .unwrap();
    for rollout in [newer, stack] {
        rdb::set_wave(conn, rollout, 0, &now, at(400).1).unwrap();
        rdb::insert_assignment(conn, rollout, "acme", "canary", 0, &now).unwrap();
    }
    rdb::set_state(conn, newer, RolloutState::Paused, None, &now).unwrap();
    say.say(
        "acme's assignments",
        rdb::customer_assignments(conn, "acme", "stable").unwrap(),
    );
    say.say(
        "globex's assignments",
        rdb::customer_assignments(conn, "globex", "stable").unwrap(),
    );
    say.say(
        "acme's assignments in Beta",
        rdb::customer_assignments(conn, "acme", "Beta").unwrap(),
    );
    say.say(
        "waiting on acme",
        rdb::any_waiting(conn, newer, "stable").unwrap(),
    );
    rdb::set_placement(conn, "acme", "Beta", None).unwrap();
    say.say(
        "waiting once acme moved",
        rdb::any_waiting(conn, newer, "stable").unwrap(),
    );
    rdb::set_placement(conn, "acme", "stable", Some("canary")).unwrap();
    let ids = |rows: Vec<rdb::RolloutRow>| rows.iter().map(|r| (r.id, r.state)).collect::<Vec<_>>();
    say.say(
        "all rollouts",
        ids(rdb::rollouts(conn, None, None, 10).unwrap()),
    );
    say.say(
        "two of stable's platform",
        ids(rdb::rollouts(conn, Some("stable"), Some("platform"), 2).unwrap()),
    );
    say.say(
        "Beta's rollouts",
        ids(rdb::rollouts(conn, Some("Beta"), None, 10).unwrap()),
    );
    say.say(
        "rollouts of nothing",
        ids(rdb::rollouts(conn, None, Some("nothing"), 10).unwrap()),
    );
    say.say("stack rollout", rdb::rollout(conn, stack).unwrap());

    // Nothing found.
    say.say("unknown rollout", rdb::rollout(conn, 999).unwrap());
    say.say("gate of nobody", rdb::gate(conn, id, "nobody").unwrap());
    say.say("no failure", rdb::first_failure(conn, newer).unwrap());
    say.say("events of nothing", rdb::events(conn, 999).unwrap());
    say.say("counts of nothing", rdb::gate_counts(conn, 999).unwrap());
    say.say("nothing due", rdb::any_due(conn, 0).unwrap());
    say.say(
        "none running in Beta",
        rdb::channel_customers(conn, "Beta").unwrap(),
    );
    // Last (a refused insert spends an identity number on PostgreSQL): the foreign
    // keys hold on both.
    let orphan = rdb::insert_rollout(conn, &new(999, ApprovedKind::Release, &v19), &now);
    say.say("a rollout of no promotion refused", orphan.is_err());
    let orphan = rdb::insert_assignment(conn, 999, "acme", "canary", 0, &now);
    say.say("an assignment to no rollout refused", orphan.is_err());
    let orphan = rdb::insert_event(conn, 999, &now, EventKind::Paused, None, None, None);
    say.say("an event of no rollout refused", orphan.is_err());
}

/// Every answer of the whole story, on one connection of either backend.
fn rollout_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut say = Answers(Vec::new());
    channel_story(conn, &mut say);
    let promotions = promotion_story(conn, &mut say);
    wave_story(conn, &mut say, &promotions);
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
    assert_eq!(of("rollout id"), "1");
    assert_eq!(of("no wave open yet"), "-1");
    assert_eq!(of("acme assigned again"), "false");
    assert_eq!(
        (of("waiting on canary"), of("waiting after acme")),
        ("true", "false")
    );
    assert_eq!(
        (of("due before the soak"), of("due after the soak")),
        ("false", "true")
    );
    assert_eq!(of("due once the wave opened"), "false");
    assert!(of("first failure").contains("globex-1"));
    assert_eq!(of("gate counts"), "(2, 1, 1)");
    assert_eq!(of("running while halted"), "[]");
    assert!(of("halted").contains("state: Halted") && of("halted").contains("wave_index: 1"));
    assert_eq!(of("open while halted"), "[1]");
    assert_eq!(of("running once resumed"), "[1]");
    assert!(
        of("resumed").contains("halted_reason: None"),
        "{}",
        of("resumed")
    );
    // Byte order (the scheduler binary-searches this list): on en-US "Zeta-1" would
    // come last.
    assert_eq!(
        of("assigned"),
        "[\"Zeta-1\", \"acme\", \"globex\", \"initech\"]"
    );
    let assigned: Vec<&str> = of("assignments")
        .split("customer: \"")
        .skip(1)
        .map(|c| c.split('"').next().unwrap())
        .collect();
    assert_eq!(assigned, ["acme", "globex", "Zeta-1", "initech"]);
    assert!(of("assignments").contains("assigned_at: \"2027-01-10T00:00:01.000Z\""));
    let kinds: Vec<&str> = of("events")
        .split("kind: ")
        .skip(1)
        .map(|k| k.split(',').next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Promoted",
            "WaveOpened",
            "Assigned",
            "Succeeded",
            "WaveOpened",
            "Assigned",
            "Failed",
            "Halted",
            "Resumed",
            "Succeeded",
            "WaveOpened",
            "Assigned",
            "Assigned",
            "Succeeded",
            "Succeeded",
            "Completed"
        ]
    );
    assert_eq!(of("gate counts at the end"), "(4, 4, 0)");
    assert_eq!(of("completed"), "[1]");
    assert_eq!(of("open when completed"), "[]");
    assert_eq!(
        (of("rollout of 1.9.0"), of("rollout of 1.0.0")),
        ("Some(1)", "None")
    );
    let rollouts: Vec<&str> = of("acme's assignments")
        .split("rollout: ")
        .skip(1)
        .map(|r| r.split(',').next().unwrap())
        .collect();
    assert_eq!(rollouts, ["3", "2"], "{}", of("acme's assignments"));
    assert_eq!(of("acme's assignments in Beta"), "[]");
    assert_eq!(
        (of("waiting on acme"), of("waiting once acme moved")),
        ("true", "false")
    );
    assert_eq!(
        of("all rollouts"),
        "[(3, Running), (2, Paused), (1, Completed)]"
    );
    assert_eq!(
        of("two of stable's platform"),
        "[(3, Running), (2, Paused)]"
    );
    assert_eq!(of("Beta's rollouts"), "[]");
    assert_eq!(of("rollouts of nothing"), "[]");
    assert_eq!(of("unknown rollout"), "None");
    assert_eq!(of("gate of nobody"), "None");
    assert_eq!(of("counts of nothing"), "(0, 0, 0)");
    for refused in [
        "a rollout of no promotion refused",
        "an assignment to no rollout refused",
        "an event of no rollout refused",
    ] {
        assert_eq!(of(refused), "true", "{refused}");
    }
}
