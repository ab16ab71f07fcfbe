//! The rollout scheduler on PostgreSQL (issue 27): `crate::rollout` (promote,
//! advance, the health gate, people's controls) and the ledger's `upsert_release`
//! run on either backend, and one story gives the same answers on SQLite and on a
//! real PostgreSQL 15: a stack version published (a webhook wanting `behind` is
//! queued the customers it left behind), promoted to a channel with waves, the
//! scheduler opening waves as stack receipts arrive, a failure halting it, a resume
//! and its completion.

use stackpack_registry::api::{Deployment, Release, Source};
use stackpack_registry::api::{EventKind, RolloutState};
use stackpack_registry::db::locks::Lock;
use stackpack_registry::db::sql::{Pg, Sql};
use stackpack_registry::db::{alerts, ledger, manifests, Db};
use stackpack_registry::error::Error;
use stackpack_registry::rollout::{self, Control};
use stackpack_registry::timestamp::Timestamp;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::rollout::{
    ApprovedKind, ChannelStatement, SignedChannelStatement, CHANNEL_STATEMENT_FORMAT,
};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;
use stackpack_test_support::servers::Postgres;

use crate::postgres_backend::{assert_same, icu_database, on_sqlite};
use crate::postgres_db::{assert_waits, holding, two_replicas, Hold};

const NS: i64 = 1_000_000_000;
/// The story's clock: 2027-01-15, in seconds from it.
const T0: i64 = 1_800_000_000 * NS;
const REPO: &str = "acme/web";

fn at(seconds: i64) -> i64 {
    T0 + seconds * NS
}

fn digest(version: &str) -> Digest {
    Digest::of(format!("web {version}").as_bytes())
}

/// Stack `web` at `version`, as a push records it.
fn web(version: &str) -> Release {
    let version: semver::Version = version.parse().unwrap();
    Release {
        stack: "web".into(),
        prerelease: false,
        repository: REPO.into(),
        digest: digest(&version.to_string()),
        source: Source {
            repository: None,
            commit: None,
            branch: None,
        },
        created: None,
        published_at: "2027-01-14T00:00:00Z".parse().unwrap(),
        modules: Vec::new(),
        version,
    }
}

/// Publishes `web@version` as the manifest PUT does: the bundle's manifest, then
/// the stack version (queuing `behind` alerts).
fn publish<C: Sql>(conn: &C, version: &str) {
    let release = web(version);
    let digest = release.digest.to_string();
    let content = format!("{{\"web\":\"{version}\"}}");
    manifests::insert(
        conn,
        &manifests::NewManifest {
            repo: REPO,
            digest: &digest,
            media_type: "application/vnd.oci.image.manifest.v1+json",
            artifact_type: None,
            subject: None,
            annotations: None,
            content: content.as_bytes(),
            blobs: &[],
            manifests: &[],
        },
        100,
    )
    .unwrap();
    ledger::upsert_release(conn, &release).unwrap();
}

/// The vendor's statement approving stack `web@version` for channel `stable`.
fn statement(version: &str) -> SignedChannelStatement {
    statement_to("stable", version)
}

/// The vendor's statement promoting `web@version` to `channel`.
fn statement_to(channel: &str, version: &str) -> SignedChannelStatement {
    SignedChannelStatement::sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: channel.into(),
            kind: ApprovedKind::Stack,
            release: "web".into(),
            version: version.parse().unwrap(),
            digest: digest(version),
            required: false,
            promoted_at: "2027-01-15T08:00:00Z".into(),
            promoted_by: Some("ci".into()),
            key_id: String::new(),
        },
        &PrivateKey::from_secret_bytes([9; 32]),
    )
}

/// Files `customer`'s apply receipt of `web@version` as `receipts::store`'s steps do
/// (filed, the gate told at once, the cell's alerts queued) and answers the
/// rollout's state and who is assigned.
fn report<C: Sql>(
    conn: &C,
    id: &str,
    customer: &str,
    version: &str,
    outcome: Outcome,
    seconds: i64,
) -> Deployment {
    let (d, document) = apply_receipt(id, customer, version, outcome, at(seconds));
    let finished = d.finished_at.clone();
    ledger::note_customer(conn, customer, finished.as_str()).unwrap();
    let before = alerts::cell_flags(conn, customer, "web").unwrap();
    ledger::file_receipt(conn, &d, at(seconds), &document).unwrap();
    rollout::refresh_customer(conn, customer, at(seconds)).unwrap();
    stackpack_registry::receipts::steps::alert::note_receipt(conn, &d, &document, before).unwrap();
    d
}

/// `customer`'s apply receipt of `web@version`, finished at registry time
/// `finished_ns`, as the ledger files it, and its document.
fn apply_receipt(
    id: &str,
    customer: &str,
    version: &str,
    outcome: Outcome,
    finished_ns: i64,
) -> (Deployment, String) {
    let finished: Timestamp = rollout::format_ns(finished_ns).parse().unwrap();
    let d = Deployment {
        receipt_id: id.into(),
        customer: customer.into(),
        stack: "web".into(),
        version: version.parse().unwrap(),
        digest: digest(version),
        kind: ReceiptKind::Apply,
        outcome,
        started_at: finished.clone(),
        finished_at: finished.clone(),
        key_id: "k1".into(),
        received_at: finished,
        release: None,
        reason: None,
    };
    let document = format!("{{\"id\":\"{id}\",\"outcome\":\"{}\"}}", outcome.as_str());
    (d, document)
}

/// A rollout as the API answers it, with who it assigned.
fn standing<C: Sql>(conn: &C, id: i64) -> String {
    let detail = rollout::detail(conn, id).unwrap().unwrap();
    let assigned: Vec<String> = detail
        .assignments
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    format!("{:?} assigned {assigned:?}", detail.rollout)
}

/// The events queued for webhooks since the last call (each is then delivered):
/// webhook, customer, event, version and reason (not the time, which is the
/// registry's clock when `upsert_release` ran).
fn queued<C: Sql>(conn: &C) -> Vec<String> {
    let due = alerts::claim(conn, i64::MAX, 64, 0).unwrap();
    for d in &due {
        alerts::delivered(conn, d, "2027-01-15T00:00:00Z").unwrap();
    }
    due.iter()
        .map(|d| {
            let body: serde_json::Value = serde_json::from_str(&d.body).unwrap();
            format!(
                "{} {} {} {} {}",
                d.webhook, d.customer, body["event"], body["version"], body["reason"]
            )
        })
        .collect()
}

/// The story, its answers one per line.
fn scheduler_story<C: Sql>(conn: &C) -> Vec<String>
where
    Error: From<C::Error>,
{
    let mut answers = Vec::new();
    let mut say = |label: &str, value: String| answers.push(format!("{label}: {value}"));
    alerts::add(
        conn,
        "http://hooks.example/behind",
        &["behind"],
        "config",
        "2027-01-01T00:00:00Z",
    )
    .unwrap();
    let waves = ["canary", "early", "general"].map(String::from).to_vec();
    let config = rollout::set_channel(conn, "stable", Some(waves), Some(60), at(0)).unwrap();
    say("channel", format!("{config:?}"));
    for (customer, wave) in [
        ("acme", Some("canary")),
        ("globex", Some("early")),
        ("initech", Some("general")),
        ("Umbrella", None),
    ] {
        ledger::register_customer(conn, customer, None, None, "2027-01-01T00:00:00Z").unwrap();
        rollout::place(conn, customer, "stable", wave, at(0)).unwrap();
    }
    let wrong_wave = rollout::place(conn, "acme", "stable", Some("late"), at(0)).unwrap_err();
    say("no such wave", format!("{:?}", wrong_wave.code));

    // Everyone runs web 1.0.0; 1.1.0 leaves them behind and the webhook hears of it.
    publish(conn, "1.0.0");
    for (i, customer) in ["acme", "globex", "initech", "Umbrella"].iter().enumerate() {
        report(
            conn,
            &format!("r0-{i}"),
            customer,
            "1.0.0",
            Outcome::Succeeded,
            0,
        );
    }
    say("queued before", format!("{:?}", queued(conn)));
    publish(conn, "1.1.0");
    say("queued behind", format!("{:?}", queued(conn)));
    publish(conn, "1.1.0");
    say("queued again", format!("{:?}", queued(conn)));

    let unheld = rollout::promote(conn, REPO, &statement("2.0.0"), at(1)).unwrap_err();
    say("unheld", format!("{:?} {}", unheld.code, unheld.message));
    let promoted = rollout::promote(conn, REPO, &statement("1.1.0"), at(1)).unwrap();
    say("promoted", format!("{promoted:?}"));
    let again = rollout::promote(conn, REPO, &statement("1.1.0"), at(2)).unwrap();
    say("promoted again", format!("{again:?}"));
    let lower = rollout::promote(conn, REPO, &statement("1.0.0"), at(2)).unwrap_err();
    say("lower", format!("{:?}", lower.code));
    let id = promoted.rollout;
    say("canary open", standing(conn, id));

    report(conn, "r1", "acme", "1.1.0", Outcome::Succeeded, 10);
    rollout::advance(conn, None, at(60)).unwrap();
    say("soaking", standing(conn, id));
    rollout::advance(conn, None, at(61)).unwrap();
    say("early open", standing(conn, id));

    report(conn, "r2", "globex", "1.1.0", Outcome::Failed, 70);
    say("halted", standing(conn, id));
    rollout::advance(conn, None, at(10_000)).unwrap();
    say("halted later", standing(conn, id));
    let still = rollout::control(conn, id, Control::Resume, at(10_001)).unwrap();
    say("resumed, still failing", format!("{:?}", still.state));

    report(conn, "r3", "globex", "1.1.0", Outcome::Succeeded, 10_002);
    rollout::control(conn, id, Control::Pause, at(10_003)).unwrap();
    say("paused", standing(conn, id));
    let resumed = rollout::control(conn, id, Control::Resume, at(10_004)).unwrap();
    say("resumed", format!("{:?}", resumed.state));
    rollout::advance(conn, None, at(10_005)).unwrap();
    say("general open", standing(conn, id));
    say(
        "assignment initech",
        format!(
            "{:?}",
            rollout::assignment(conn, "initech", at(10_006)).unwrap()
        ),
    );
    report(conn, "r4", "initech", "1.1.0", Outcome::Succeeded, 10_010);
    report(conn, "r5", "Umbrella", "1.1.0", Outcome::Succeeded, 10_011);
    say("completed", standing(conn, id));
    let over = rollout::control(conn, id, Control::Abort, at(10_012)).unwrap_err();
    say(
        "abort when over",
        format!("{:?} {}", over.code, over.message),
    );
    say(
        "unknown rollout",
        format!(
            "{:?}",
            rollout::control(conn, id + 100, Control::Pause, at(10_012))
                .unwrap_err()
                .code
        ),
    );
    say(
        "no assignment",
        format!(
            "{:?}",
            rollout::assignment(conn, "nobody", at(10_013)).unwrap()
        ),
    );
    let detail = rollout::detail(conn, id).unwrap().unwrap();
    for event in &detail.events {
        say("event", format!("{event:?}"));
    }
    say(
        "list",
        format!(
            "{:?}",
            rollout::list(conn, Some("stable"), Some("web")).unwrap()
        ),
    );
    say("queued at the end", format!("{:?}", queued(conn)));
    answers
}

#[test]
fn the_scheduler_answers_the_same_on_sqlite_and_postgres() {
    let sqlite = on_sqlite(|tx| scheduler_story(tx));
    let server = Postgres::start();
    let postgres = scheduler_story(&Pg::new(icu_database(&server, "scheduler")));
    assert_same(&sqlite, &postgres);

    // And the answers are the schedule a vendor relies on (SQLite's; PostgreSQL's
    // are equal).
    let of = |label: &str| -> &str {
        let prefix = format!("{label}: ");
        sqlite
            .iter()
            .find_map(|a| a.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no answer `{label}` in {sqlite:#?}"))
    };
    assert_eq!(of("queued before"), "[]");
    let behind = of("queued behind");
    for customer in ["acme", "globex", "initech", "Umbrella"] {
        assert!(
            behind.contains(&format!(" {customer} \\\"behind\\\"")),
            "{behind}"
        );
    }
    assert!(behind.contains("web 1.1.0 is out"), "{behind}");
    assert_eq!(
        of("queued again"),
        "[]",
        "the same version again queues nothing"
    );
    assert!(
        of("unheld").starts_with("ManifestInvalid"),
        "{}",
        of("unheld")
    );
    assert!(of("promoted").contains("created: true"));
    assert!(of("promoted again").contains("created: false"));
    assert_eq!(of("lower"), "Conflict");
    assert_eq!(of("no such wave"), "BadRequest");
    let assigned = |label: &str| of(label).split(" assigned ").nth(1).unwrap().to_string();
    assert!(assigned("canary open").contains("acme"));
    assert!(!assigned("canary open").contains("globex"));
    assert!(
        !assigned("soaking").contains("globex"),
        "not before the soak"
    );
    assert!(assigned("early open").contains("globex"));
    assert!(of("halted").contains("state: Halted"), "{}", of("halted"));
    assert!(of("halted").contains("r2"), "the halt names the receipt");
    assert!(
        !assigned("halted later").contains("initech"),
        "a halt assigns nobody"
    );
    assert_eq!(of("resumed, still failing"), "Halted");
    assert!(of("paused").contains("state: Paused"));
    assert_eq!(of("resumed"), "Running");
    assert!(assigned("general open").contains("initech"));
    assert!(
        assigned("general open").find("Umbrella") < assigned("general open").find("initech"),
        "a wave's customers are assigned in byte order"
    );
    assert!(of("assignment initech").contains("version: Version { major: 1, minor: 1"));
    assert!(
        of("completed").contains("state: Completed"),
        "{}",
        of("completed")
    );
    assert!(of("abort when over").starts_with("Conflict"));
    assert_eq!(of("unknown rollout"), "NotFound");
    assert_eq!(of("no assignment"), "None");
}

/// Rollouts on PostgreSQL hold only what they move (issue 42): a tick moving one
/// rollout holds that rollout, so a person pausing another goes on beside it while
/// pausing the same one waits; a channel's settings hold that channel; a placement
/// holds its customer and channel, then each of the channel's running rollouts as
/// it moves them.
#[test]
fn a_rollouts_tick_and_controls_hold_only_that_rollout_and_channel_settings_only_that_channel() {
    let server = Postgres::start();
    let (one, two) = two_replicas(&server);
    let (stable, beta) = one
        .write_keyed(&[], |tx| {
            for (channel, customer) in [("stable", "acme"), ("beta", "globex")] {
                rollout::set_channel(tx, channel, Some(vec!["all".into()]), Some(60), at(0))?;
                ledger::register_customer(tx, customer, None, None, "2027-01-01T00:00:00Z")?;
                rollout::place(tx, customer, channel, None, at(0))?;
            }
            publish(tx, "1.0.0");
            let stable = rollout::promote(tx, REPO, &statement_to("stable", "1.0.0"), at(1))?;
            let beta = rollout::promote(tx, REPO, &statement_to("beta", "1.0.0"), at(1))?;
            Ok((stable.rollout, beta.rollout))
        })
        .unwrap();
    let ticking: Hold = &|tx| tx.lock(Lock::Rollout(stable));
    holding(&one, ticking, || {
        let paused = rollout::control_held(&two, beta, Control::Pause).unwrap();
        assert_eq!(paused.state, RolloutState::Paused);
        // A placement in the paused rollout's channel moves no running rollout.
        rollout::place_held(&two, "globex", "beta", None).unwrap();
    });
    let pause = || {
        rollout::control_held(&two, stable, Control::Pause).unwrap();
    };
    assert_waits(
        &one,
        ticking,
        &pause,
        "a pause ran beside the tick moving its rollout",
    );
    let resume = || {
        rollout::control_held(&two, stable, Control::Resume).unwrap();
    };
    rollout::control_held(&two, stable, Control::Pause).unwrap();
    assert_waits(
        &one,
        ticking,
        &resume,
        "a resume ran beside the tick moving its rollout",
    );
    let tick = || rollout::tick(&two, rollout::now_ns()).unwrap();
    assert_waits(
        &one,
        ticking,
        &tick,
        "a tick moved a rollout another was moving",
    );
    let place = || {
        rollout::place_held(&two, "acme", "stable", None).unwrap();
    };
    assert_waits(
        &one,
        ticking,
        &place,
        "a placement moved a rollout a tick was moving",
    );

    let setting_stable: Hold = &|tx| tx.lock(Lock::Channel("stable"));
    holding(&one, setting_stable, || {
        rollout::set_channel_held(&two, "beta", None, Some(120)).unwrap();
    });
    let set = || {
        rollout::set_channel_held(&two, "stable", None, Some(120)).unwrap();
    };
    assert_waits(
        &one,
        setting_stable,
        &set,
        "two wrote one channel's settings at once",
    );
}

/// Files `customer`'s succeeded apply receipt of `web@1.0.0` at registry time
/// `now_ns` through `db`, holding what `receipts::store` holds (the customer and
/// the receipt; the rollouts as reached), and run again should the database break
/// it off for a deadlock.
fn report_held(db: &Db, id: &str, customer: &str, now_ns: i64) {
    let (d, document) = apply_receipt(id, customer, "1.0.0", Outcome::Succeeded, now_ns);
    let finished = d.finished_at.clone();
    db.write_keyed(&[Lock::Customer(customer), Lock::Receipt(id)], |tx| {
        ledger::note_customer(tx, customer, finished.as_str())?;
        ledger::file_receipt(tx, &d, now_ns, &document)?;
        Ok(rollout::refresh_customer(tx, customer, now_ns)?)
    })
    .unwrap();
}

/// Issue 42: one rollout's state machine with no lock over every writer. The
/// scheduler ticking on two replicas at once and receipts filed through a third
/// move a rollout of three waves through them as one writer would: each wave opens
/// once, each customer is assigned once, and it completes.
#[test]
fn ticks_on_two_replicas_and_receipts_through_a_third_open_each_wave_once() {
    use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

    let server = Postgres::start();
    let replicas: Vec<Db> = (0..3)
        .map(|_| Db::open_url(&server.url(), 2).unwrap())
        .collect();
    let waves = ["canary", "early", "general"];
    let customers = ["c0", "c1", "c2", "c3", "c4", "c5"];
    let id = replicas[0]
        .write_keyed(&[], |tx| {
            let names = waves.map(String::from).to_vec();
            rollout::set_channel(tx, "stable", Some(names), Some(60), at(0))?;
            for (i, customer) in customers.iter().enumerate() {
                ledger::register_customer(tx, customer, None, None, "2027-01-01T00:00:00Z")?;
                rollout::place(tx, customer, "stable", Some(waves[i / 2]), at(0))?;
            }
            publish(tx, "1.0.0");
            Ok(rollout::promote(tx, REPO, &statement("1.0.0"), at(1))?.rollout)
        })
        .unwrap();

    // One registry clock for all, moving on a soak's worth at every tick.
    let clock = AtomicI64::new(at(2));
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for db in &replicas[..2] {
            let (clock, done) = (&clock, &done);
            scope.spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let now = clock.fetch_add(61 * NS, Ordering::SeqCst);
                    rollout::tick(db, now).unwrap();
                }
            });
        }
        let filer = &replicas[2];
        let mut reported = std::collections::HashSet::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let detail = filer.read_any(|c| rollout::detail(c, id)).unwrap().unwrap();
            if detail.rollout.state == RolloutState::Completed {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the rollout did not complete: {detail:#?}"
            );
            for a in &detail.assignments {
                if reported.insert(a.customer.clone()) {
                    let now = clock.load(Ordering::SeqCst);
                    report_held(filer, &format!("r-{}", a.customer), &a.customer, now);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        done.store(true, Ordering::SeqCst);
    });

    let detail = replicas[0]
        .read_any(|c| rollout::detail(c, id))
        .unwrap()
        .unwrap();
    let opened: Vec<&str> = detail
        .events
        .iter()
        .filter(|e| e.kind == EventKind::WaveOpened)
        .filter_map(|e| e.wave.as_deref())
        .collect();
    assert_eq!(opened.len(), 3, "each wave opens once: {opened:?}");
    for wave in waves {
        assert!(opened.contains(&wave), "{wave} never opened: {opened:?}");
    }
    let mut assigned: Vec<&str> = detail
        .assignments
        .iter()
        .map(|a| a.customer.as_str())
        .collect();
    assigned.sort_unstable();
    assert_eq!(assigned, customers, "each customer is assigned once");
    let completed = detail
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Completed)
        .count();
    assert_eq!(completed, 1);
}
