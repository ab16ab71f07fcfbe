//! Rollouts on PostgreSQL (issue 27, PG8): `db::rollouts` gives the same answers on
//! SQLite and on a real PostgreSQL 15 to one story of calls, the ones the scheduler
//! (`crate::rollout`) makes as a promotion rolls out wave by wave. PostgreSQL's half
//! runs on an ICU `en-US` database, where text sorts with case and punctuation set
//! aside unless the port kept byte order.

use stackpack_registry::api::{EventKind, Gate, RolloutState};
use stackpack_registry::db::rollouts::{self as rdb, ChannelConfig};
use stackpack_registry::db::sql::{Pg, Sql};
use stackpack_registry::db::{ledger, Db};
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::rollout::{ApprovedKind, SyncState};
use stackpack_test_support::servers::Postgres;

use crate::postgres_backend::{assert_same, icu_database};

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

/// A rollout of `platform` to `stable` from promotion `promotion_id`.
fn new_rollout<'a>(
    promotion_id: i64,
    kind: ApprovedKind,
    version: &'a semver::Version,
    config: &'a ChannelConfig,
) -> rdb::NewRollout<'a> {
    rdb::NewRollout {
        promotion_id,
        channel: "stable",
        kind,
        release: "platform",
        version,
        digest: "sha256:platform",
        config,
    }
}

/// The id of the promotion named `name` (`release 1.9.0`).
fn promotion_id(promotions: &[(String, i64)], name: &str) -> i64 {
    promotions.iter().find(|(n, _)| n == name).unwrap().1
}

/// What the scheduler writes as it opens wave `index` of rollout `id` at second
/// `s`, assigning `members`.
fn open_wave<C: Sql>(
    conn: &C,
    id: i64,
    config: &ChannelConfig,
    s: i64,
    index: usize,
    members: &[&str],
) {
    let (now, ns) = at(s);
    let wave = &config.waves[index];
    rdb::set_wave(conn, id, index, &now, ns).unwrap();
    let detail = format!("{} customers", members.len());
    let opened = EventKind::WaveOpened;
    rdb::insert_event(conn, id, &now, opened, None, Some(wave), Some(&detail)).unwrap();
    for customer in members {
        let assigned = rdb::insert_assignment(conn, id, customer, wave, index, &now).unwrap();
        assert!(assigned, "{customer} assigned once");
        let kind = EventKind::Assigned;
        rdb::insert_event(conn, id, &now, kind, Some(customer), Some(wave), None).unwrap();
    }
}

/// What the scheduler writes as `customer`'s gate in rollout `id` turns to `gate`
/// at second `s`.
fn stand<C: Sql>(conn: &C, id: i64, s: i64, customer: &str, gate: Gate, reason: Option<&str>) {
    let (now, _) = at(s);
    rdb::set_gate(conn, id, customer, gate, reason, &now).unwrap();
    let kind = if gate == Gate::Failed {
        EventKind::Failed
    } else {
        EventKind::Succeeded
    };
    rdb::insert_event(conn, id, &now, kind, Some(customer), None, reason).unwrap();
}

fn running<C: Sql>(conn: &C) -> Vec<i64> {
    let rows = rdb::rollouts_in(conn, RolloutState::Running).unwrap();
    rows.iter().map(|r| r.id).collect()
}

const WHY: &str =
    "customer `globex` (wave `early`) failed: release receipt `globex-1`: apply failed";

/// The calls `crate::rollout` makes as promotion `1.9.0` rolls out to `stable`
/// (canary: acme; early: globex; general: Zeta-1 and initech): waves open in order,
/// one assignment per customer, a failure halts it and a halted rollout is not
/// moved on (the scheduler reads running ones only), resume clears the halt, the
/// last wave completes it; its history lists in the order it happened.
fn wave_story<C: Sql>(conn: &C, say: &mut Answers, promotions: &[(String, i64)]) -> i64 {
    let promotion = |name: &str| promotion_id(promotions, name);
    rdb::set_placement(conn, "initech", "stable", None).unwrap();
    let config = rdb::channel(conn, "stable").unwrap();
    let v19 = version("1.9.0");
    let (t0, _) = at(0);
    let id = rdb::insert_rollout(
        conn,
        &new_rollout(
            promotion("release 1.9.0"),
            ApprovedKind::Release,
            &v19,
            &config,
        ),
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
    open_wave(conn, id, &config, 1, 0, &["acme"]);
    say.say("wave open", rdb::raw_wave_index(conn, id).unwrap());
    say.say(
        "waiting on canary",
        rdb::any_waiting(conn, id, "stable").unwrap(),
    );
    // Assigned again (a tick racing a receipt): the first assignment stays.
    let again = rdb::insert_assignment(conn, id, "acme", "canary", 0, &at(2).0).unwrap();
    say.say("acme assigned again", again);
    stand(conn, id, 3, "acme", Gate::Succeeded, None);
    say.say(
        "waiting after acme",
        rdb::any_waiting(conn, id, "stable").unwrap(),
    );
    let due = at(1).1 + 120 * NS;
    rdb::set_due(conn, id, Some(due)).unwrap();
    rdb::set_due(conn, id, Some(due)).unwrap();
    say.say("due before the soak", rdb::any_due(conn, due - 1).unwrap());
    say.say("due after the soak", rdb::any_due(conn, due).unwrap());

    open_wave(conn, id, &config, 121, 1, &["globex"]);
    say.say(
        "due once the wave opened",
        rdb::any_due(conn, due * 10).unwrap(),
    );
    stand(
        conn,
        id,
        122,
        "globex",
        Gate::Failed,
        Some("release receipt `globex-1`: apply failed"),
    );
    say.say("first failure", rdb::first_failure(conn, id).unwrap());
    say.say("globex's gate", rdb::gate(conn, id, "globex").unwrap());
    say.say("gate counts", rdb::gate_counts(conn, id).unwrap());
    let (now, _) = at(123);
    rdb::set_state(conn, id, RolloutState::Halted, Some(WHY), &now).unwrap();
    rdb::insert_event(
        conn,
        id,
        &now,
        EventKind::Halted,
        Some("globex"),
        Some("early"),
        Some(WHY),
    )
    .unwrap();
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
    id
}

/// Resume clears the halt (the gate read again: globex succeeded since), the last
/// wave opens and completes the rollout; its assignments and history as support
/// reads them.
fn resume_story<C: Sql>(conn: &C, say: &mut Answers, promotions: &[(String, i64)], id: i64) {
    let promotion = |name: &str| promotion_id(promotions, name);
    let config = rdb::channel(conn, "stable").unwrap();
    let (now, _) = at(200);
    rdb::set_state(conn, id, RolloutState::Running, None, &now).unwrap();
    rdb::insert_event(conn, id, &now, EventKind::Resumed, None, None, Some(WHY)).unwrap();
    stand(conn, id, 201, "globex", Gate::Succeeded, None);
    say.say("running once resumed", running(conn));
    say.say("resumed", rdb::rollout(conn, id).unwrap());

    open_wave(conn, id, &config, 321, 2, &["initech", "Zeta-1"]);
    stand(conn, id, 322, "Zeta-1", Gate::Succeeded, None);
    stand(conn, id, 322, "initech", Gate::Succeeded, None);
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
}

/// Two more rollouts: a newer version and the stack of the same name, acme's newest
/// assignment per release, a customer moved out of the channel no longer holding
/// one up, rollouts listed newest first; then nothing found, and the foreign keys.
fn later_rollouts_story<C: Sql>(
    conn: &C,
    say: &mut Answers,
    promotions: &[(String, i64)],
    first: i64,
) {
    let promotion = |name: &str| promotion_id(promotions, name);
    let config = rdb::channel(conn, "stable").unwrap();
    let v19 = version("1.9.0");
    let (v110, v3) = (version("1.10.0"), version("3.0.0"));
    let (now, _) = at(400);
    let newer = rdb::insert_rollout(
        conn,
        &new_rollout(
            promotion("release 1.10.0"),
            ApprovedKind::Release,
            &v110,
            &config,
        ),
        &now,
    )
    .unwrap();
    let stack = rdb::insert_rollout(
        conn,
        &new_rollout(promotion("stack 3.0.0"), ApprovedKind::Stack, &v3, &config),
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
    say.say("gate of nobody", rdb::gate(conn, first, "nobody").unwrap());
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
    let orphan = rdb::insert_rollout(
        conn,
        &new_rollout(999, ApprovedKind::Release, &v19, &config),
        &now,
    );
    say.say("a rollout of no promotion refused", orphan.is_err());
    let orphan = rdb::insert_assignment(conn, 999, "acme", "canary", 0, &now);
    say.say("an assignment to no rollout refused", orphan.is_err());
    let orphan = rdb::insert_event(conn, 999, &now, EventKind::Paused, None, None, None);
    say.say("an event of no rollout refused", orphan.is_err());
}

/// What the gate reads of a customer: release receipts recorded once (a second
/// delivery of an id is refused, the first document kept), the latest one and the
/// version left in place (ties on the finish broken by arrival); then stack
/// receipts, sync reports and when the customer was last seen.
fn receipt_story<C: Sql>(conn: &C, say: &mut Answers) {
    let (v19, v110) = (version("1.9.0"), version("1.10.0"));
    for (id, v, kind, outcome, finished, received, document) in [
        (
            "acme-1",
            &v19,
            ReceiptKind::Apply,
            Outcome::Succeeded,
            100,
            110,
            "first",
        ),
        (
            "acme-2",
            &v110,
            ReceiptKind::Apply,
            Outcome::Failed,
            200,
            210,
            "second",
        ),
        (
            "acme-3",
            &v19,
            ReceiptKind::Rollback,
            Outcome::NoChanges,
            300,
            310,
            "third",
        ),
        (
            "acme-4",
            &v19,
            ReceiptKind::Destroy,
            Outcome::Succeeded,
            300,
            320,
            "fourth",
        ),
        (
            "acme-1",
            &v110,
            ReceiptKind::Apply,
            Outcome::Failed,
            400,
            410,
            "forged",
        ),
    ] {
        let receipt = rdb::NewReleaseReceipt {
            id,
            customer: "acme",
            release: "platform",
            version: v,
            digest: "sha256:platform",
            kind,
            outcome,
            finished_at: &at(finished).0,
            finished_ns: finished,
            key_id: "acme-key",
            document,
        };
        let recorded = rdb::insert_release_receipt(conn, &receipt, &at(received).0, received);
        say.say(
            &format!("receipt {id} {document} recorded"),
            recorded.is_ok(),
        );
    }
    say.say(
        "acme-1",
        rdb::release_receipt_document(conn, "acme-1").unwrap(),
    );
    say.say(
        "no receipt",
        rdb::release_receipt_document(conn, "nope").unwrap(),
    );
    say.say(
        "latest",
        rdb::latest_release_receipt(conn, "acme", "platform").unwrap(),
    );
    say.say(
        "latest of globex",
        rdb::latest_release_receipt(conn, "globex", "platform").unwrap(),
    );
    say.say(
        "installed",
        rdb::installed_release(conn, "acme", "platform").unwrap(),
    );
    say.say(
        "installed at globex",
        rdb::installed_release(conn, "globex", "platform").unwrap(),
    );
    stack_receipt_story(conn, say);
    sync_story(conn, say);
    seen_story(conn, say);
}

/// Stack receipts made as part of a release, in `receipts` (its writers come with
/// `ledger`'s port, so written here by hand): the latest failure after a success,
/// and a customer's latest receipt of a stack (ties by arrival, plans left out).
fn stack_receipt_story<C: Sql>(conn: &C, say: &mut Answers) {
    let (v19, v110) = (version("1.9.0"), version("1.10.0"));
    for (id, version, kind, outcome, finished, received_at, release) in [
        (
            "s1",
            "2.0.0",
            "apply",
            "succeeded",
            150,
            "2027-01-10T00:02:30Z",
            Some("1.10.0"),
        ),
        (
            "s2",
            "2.0.0",
            "apply",
            "failed",
            250,
            "2027-01-10T00:04:10Z",
            Some("1.10.0"),
        ),
        (
            "s3",
            "2.1.0",
            "drift",
            "drifted",
            260,
            "2027-01-10T00:09:00Z",
            None,
        ),
        (
            "s4",
            "2.1.0",
            "apply",
            "succeeded",
            260,
            "2027-01-10T00:10:00Z",
            None,
        ),
        (
            "s5",
            "2.2.0",
            "plan",
            "succeeded",
            999,
            "2027-01-10T00:20:00Z",
            None,
        ),
    ] {
        conn.execute(
            "INSERT INTO receipts (id, customer, stack, version, digest, kind, outcome,
                 started_at, finished_at, key_id, document, received_at, finished_ns,
                 release_name, release_version, release_digest)
             VALUES ($1, 'acme', 'network', $2, 'sha256:network', $3, $4, $5, $5, 'acme-key',
                 '{}', $6, $7, $8, $9, $10)",
            &[
                id.into(),
                version.into(),
                kind.into(),
                outcome.into(),
                at(finished).0.as_str().into(),
                received_at.into(),
                finished.into(),
                release.map(|_| "platform").into(),
                release.into(),
                release.map(|_| "sha256:platform").into(),
            ],
        )
        .unwrap();
    }
    for after in [0, 250] {
        let failure = rdb::stack_failure_in_release(conn, "acme", "platform", &v110, after);
        say.say(&format!("stack failure after {after}"), failure.unwrap());
    }
    let failure = rdb::stack_failure_in_release(conn, "acme", "platform", &v19, 0).unwrap();
    say.say("stack failure in 1.9.0", failure);
    say.say(
        "latest stack receipt",
        rdb::latest_stack_receipt(conn, "acme", "network").unwrap(),
    );
    say.say(
        "no stack receipt",
        rdb::latest_stack_receipt(conn, "acme", "db").unwrap(),
    );
}

/// Sync reports: one per customer and release, the latest replacing the one
/// before, a customer's listed by release in byte order.
fn sync_story<C: Sql>(conn: &C, say: &mut Answers) {
    let (v19, v110) = (version("1.9.0"), version("1.10.0"));
    let failed = rdb::NewSync {
        customer: "acme",
        release: "platform",
        kind: ApprovedKind::Release,
        state: SyncState::Failed,
        assigned: Some(&v110),
        running: Some(&v19),
        pending: None,
        message: Some("apply of `network` failed"),
    };
    rdb::upsert_sync(conn, &failed, &at(500).0, at(500).1).unwrap();
    say.say(
        "sync failed",
        rdb::sync_of(conn, "acme", "platform").unwrap(),
    );
    let converged = rdb::NewSync {
        state: SyncState::Converged,
        running: Some(&v110),
        message: None,
        ..failed
    };
    rdb::upsert_sync(conn, &converged, &at(560).0, at(560).1).unwrap();
    let waiting = rdb::NewSync {
        release: "Zeta-edge",
        kind: ApprovedKind::Stack,
        state: SyncState::PendingApproval,
        assigned: None,
        running: None,
        pending: Some("plan-1"),
        ..failed
    };
    rdb::upsert_sync(conn, &waiting, &at(560).0, at(560).1).unwrap();
    say.say(
        "sync converged",
        rdb::sync_of(conn, "acme", "platform").unwrap(),
    );
    say.say("syncs", rdb::syncs(conn, "acme").unwrap());
    say.say("no sync", rdb::sync_of(conn, "acme", "nothing").unwrap());
    say.say("syncs of globex", rdb::syncs(conn, "globex").unwrap());
}

/// When a customer was last seen and synced: never moved back by a late receipt.
fn seen_story<C: Sql>(conn: &C, say: &mut Answers) {
    let seen = |conn: &C| -> (Option<String>, Option<i64>) {
        let row = conn
            .query_one(
                "SELECT last_seen, last_seen_ns FROM customers WHERE id = $1",
                &["acme".into()],
            )
            .unwrap();
        (
            row.get("last_seen").unwrap(),
            row.get("last_seen_ns").unwrap(),
        )
    };
    rdb::note_sync(conn, "acme", &at(600).0, at(600).1).unwrap();
    say.say("seen at a sync", seen(conn));
    // A receipt that finished earlier, delivered late, does not move it back.
    rdb::note_seen(conn, "acme", &at(590).0, at(590).1).unwrap();
    say.say("seen after a late receipt", seen(conn));
    rdb::note_seen(conn, "acme", &at(700).0, at(700).1).unwrap();
    say.say("seen later", seen(conn));
    say.say("last sync", rdb::placement(conn, "acme").unwrap());
    rdb::note_sync(conn, "nobody", &at(600).0, at(600).1).unwrap();
    say.say("nobody synced", rdb::placement(conn, "nobody").unwrap());
}

/// Every answer of the whole story, on one connection of either backend.
pub(crate) fn rollout_story<C: Sql>(conn: &C) -> Vec<String> {
    let mut say = Answers(Vec::new());
    channel_story(conn, &mut say);
    let promotions = promotion_story(conn, &mut say);
    let first = wave_story(conn, &mut say, &promotions);
    resume_story(conn, &mut say, &promotions, first);
    later_rollouts_story(conn, &mut say, &promotions, first);
    receipt_story(conn, &mut say);
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
    let postgres = rollout_story(&Pg::new(icu_database(&server, "rollouts")));

    assert_same(&sqlite, &postgres);
    // And the answers are the ones the scheduler and the channel pages rely on.
    channels_and_promotions_hold(&sqlite);
    rollouts_hold(&sqlite);
    receipts_and_syncs_hold(&sqlite);
}

/// The channel pages' and promotion's answers (SQLite's; PostgreSQL's are equal).
fn channels_and_promotions_hold(answers: &[String]) {
    let of = |label: &str| Answers::of(answers, label);
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

/// The scheduler's answers as the first rollout moves, and the later ones'.
fn rollouts_hold(answers: &[String]) {
    let of = |label: &str| Answers::of(answers, label);
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

/// The gate's answers: receipts, sync reports, last seen.
fn receipts_and_syncs_hold(answers: &[String]) {
    let of = |label: &str| Answers::of(answers, label);
    assert_eq!(of("receipt acme-1 first recorded"), "true");
    assert_eq!(of("receipt acme-1 forged recorded"), "false");
    assert_eq!(of("acme-1"), "Some(\"first\")");
    assert!(of("latest").contains("id: \"acme-4\""), "{}", of("latest"));
    assert_eq!(of("installed"), format!("Some({:?})", version("1.9.0")));
    assert_eq!(of("installed at globex"), "None");
    assert!(of("stack failure after 0").contains("id: \"s2\""));
    assert_eq!(of("stack failure after 250"), "None");
    assert_eq!(of("stack failure in 1.9.0"), "None");
    assert!(of("latest stack receipt").contains("id: \"s4\""));
    assert!(of("sync failed").contains("state: Failed"));
    assert!(
        of("sync converged").contains("state: Converged")
            && of("sync converged").contains("message: None")
    );
    let releases: Vec<&str> = of("syncs")
        .split("release: \"")
        .skip(1)
        .map(|r| r.split('"').next().unwrap())
        .collect();
    // One row per release, in byte order (en-US would put "platform" first).
    assert_eq!(releases, ["Zeta-edge", "platform"]);
    assert_eq!(of("syncs of globex"), "[]");
    let at600 = format!("(Some(\"{}\"), Some({}))", at(600).0, at(600).1);
    assert_eq!(of("seen at a sync"), at600);
    assert_eq!(of("seen after a late receipt"), at600);
    assert!(of("last sync").contains(&format!("last_sync: Some(\"{}\")", at(600).0)));
    assert_eq!(of("nobody synced"), "None");
}
