//! `advance` and the gate, driven directly with an injected clock.

use super::*;
use crate::api::{ReleaseVersion, RolloutState};
use crate::db::release_index::NewReleaseIndex;
use crate::timestamp::Timestamp;
use rusqlite::Connection;
use stackpack_schema::rollout::{ChannelStatement, CHANNEL_STATEMENT_FORMAT};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;

const T0: i64 = 1_800_000_000 * NS;
const REPO: &str = "acme/releases/platform";

fn db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("registry.db"), 1).unwrap();
    (dir, db)
}

fn digest(version: &str) -> Digest {
    Digest::of(format!("index {version}").as_bytes())
}

fn publish(conn: &Connection, version: &str) {
    let version: semver::Version = version.parse().unwrap();
    db::release_index::record(
        conn,
        &NewReleaseIndex {
            release: ReleaseVersion {
                name: "platform".into(),
                prerelease: false,
                digest: digest(&version.to_string()),
                version,
                repository: REPO.into(),
                published_at: Timestamp::now(),
            },
            stacks: Vec::new(),
            services: Vec::new(),
        },
    )
    .unwrap();
}

fn statement(version: &str, required: bool) -> SignedChannelStatement {
    SignedChannelStatement::sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: "stable".into(),
            kind: ApprovedKind::Release,
            release: "platform".into(),
            version: version.parse().unwrap(),
            digest: digest(version),
            required,
            promoted_at: "2027-01-15T08:00:00Z".into(),
            promoted_by: Some("ci".into()),
            key_id: String::new(),
        },
        &PrivateKey::from_secret_bytes([9; 32]),
    )
}

fn customer(conn: &Connection, id: &str, wave: Option<&str>) {
    db::ledger::register_customer(conn, id, None, None, "2027-01-01T00:00:00Z").unwrap();
    rdb::set_placement(conn, id, "stable", wave).unwrap();
}

fn receipt(conn: &Connection, id: &str, customer: &str, version: &str, outcome: Outcome, at: i64) {
    let version: semver::Version = version.parse().unwrap();
    rdb::insert_release_receipt(
        conn,
        &rdb::NewReleaseReceipt {
            id,
            customer,
            release: "platform",
            version: &version,
            digest: &digest(&version.to_string()).to_string(),
            kind: ReceiptKind::Apply,
            outcome,
            finished_at: &format_ns(at),
            finished_ns: at,
            key_id: "k",
            document: id,
        },
        &format_ns(at),
        at,
    )
    .unwrap();
    refresh_customer(conn, customer, at).unwrap();
}

fn assigned(conn: &Connection, rollout: i64) -> Vec<String> {
    rdb::assigned_customers(conn, rollout).unwrap()
}

fn row(conn: &Connection, id: i64) -> RolloutRow {
    rdb::rollout(conn, id).unwrap().unwrap()
}

#[test]
fn waves_open_in_order_after_soak_and_only_while_the_gate_holds() {
    let (_dir, db) = db();
    db.write_keyed(&[], |tx| {
        let tx = tx.sqlite("the example's rows")?;
        set_channel(tx, "stable", None, Some(60), T0).unwrap();
        customer(tx, "acme", Some("canary"));
        customer(tx, "globex", Some("early"));
        customer(tx, "initech", Some("general"));
        customer(tx, "umbrella", None);
        publish(tx, "1.0.0");
        let id = promote(tx, REPO, &statement("1.0.0", false), T0)
            .unwrap()
            .rollout;
        assert_eq!(
            assigned(tx, id),
            ["acme"],
            "the first wave is assigned at once"
        );

        receipt(tx, "r1", "acme", "1.0.0", Outcome::Succeeded, T0 + 10 * NS);
        advance(tx, None, T0 + 59 * NS).unwrap();
        assert_eq!(assigned(tx, id), ["acme"], "not before the soak time");
        advance(tx, None, T0 + 60 * NS).unwrap();
        assert_eq!(assigned(tx, id), ["acme", "globex"]);

        receipt(tx, "r2", "globex", "1.0.0", Outcome::Failed, T0 + 70 * NS);
        let halted = row(tx, id);
        assert_eq!(halted.state, RolloutState::Halted);
        let reason = halted.halted_reason.unwrap();
        assert!(
            reason.contains("globex") && reason.contains("r2"),
            "{reason}"
        );
        advance(tx, None, T0 + 10_000 * NS).unwrap();
        assert_eq!(
            assigned(tx, id),
            ["acme", "globex"],
            "a halt assigns nobody else"
        );

        let again = control(tx, id, Control::Resume, T0 + 10_001 * NS).unwrap();
        assert_eq!(again.state, RolloutState::Halted, "the cause still fails");

        receipt(
            tx,
            "r3",
            "globex",
            "1.0.0",
            Outcome::Succeeded,
            T0 + 10_002 * NS,
        );
        let resumed = control(tx, id, Control::Resume, T0 + 10_003 * NS).unwrap();
        assert_eq!(resumed.state, RolloutState::Running);
        // The early wave soaked long ago: the last wave opens at once.
        advance(tx, None, T0 + 10_004 * NS).unwrap();
        assert_eq!(assigned(tx, id), ["acme", "globex", "initech", "umbrella"]);
        receipt(
            tx,
            "r4",
            "initech",
            "1.0.0",
            Outcome::Succeeded,
            T0 + 10_010 * NS,
        );
        assert_eq!(row(tx, id).state, RolloutState::Running);
        receipt(
            tx,
            "r5",
            "umbrella",
            "1.0.0",
            Outcome::Succeeded,
            T0 + 10_011 * NS,
        );
        assert_eq!(row(tx, id).state, RolloutState::Completed);
        // A customer joining the channel afterwards runs what it completed.
        db::ledger::register_customer(tx, "hooli", None, None, "2027-01-01T00:00:00Z").unwrap();
        place(tx, "hooli", "stable", Some("canary"), T0 + 20_000 * NS).unwrap();
        let answer = assignment(tx, "hooli", T0 + 20_001 * NS).unwrap().unwrap();
        assert_eq!(answer.assignments[0].version.to_string(), "1.0.0");
        let kinds: Vec<EventKind> = rdb::events(tx, id)
            .unwrap()
            .iter()
            .map(|e| e.kind)
            .collect();
        assert!(kinds.contains(&EventKind::Halted) && kinds.contains(&EventKind::Resumed));
        Ok(())
    })
    .unwrap();
}

#[test]
fn empty_waves_are_skipped_and_a_lower_version_is_refused() {
    let (_dir, db) = db();
    db.write_keyed(&[], |tx| {
        let tx = tx.sqlite("the example's rows")?;
        customer(tx, "globex", Some("early"));
        publish(tx, "1.0.0");
        publish(tx, "1.1.0");
        let first = promote(tx, REPO, &statement("1.1.0", false), T0).unwrap();
        assert_eq!(
            assigned(tx, first.rollout),
            ["globex"],
            "no canary: early opens at once"
        );
        assert_eq!(row(tx, first.rollout).wave_index, 1);

        let again = promote(tx, REPO, &statement("1.1.0", false), T0 + NS).unwrap();
        assert!(!again.created, "the same statement again changes nothing");
        assert_eq!(again.rollout, first.rollout);

        let lower = promote(tx, REPO, &statement("1.0.0", false), T0).unwrap_err();
        assert_eq!(lower.code, Code::Conflict);

        // A customer moved to another channel no longer holds the rollout up.
        customer(tx, "initech", Some("general"));
        advance(tx, None, T0 + 100_000 * NS).unwrap();
        assert_eq!(
            assigned(tx, first.rollout),
            ["globex"],
            "globex has not succeeded yet"
        );
        rdb::set_placement(tx, "globex", "beta", None).unwrap();
        advance(tx, None, T0 + 100_001 * NS).unwrap();
        assert_eq!(assigned(tx, first.rollout), ["globex", "initech"]);
        let unknown = promote(tx, REPO, &statement("2.0.0", false), T0).unwrap_err();
        assert_eq!(unknown.code, Code::ManifestInvalid);
        let mut forged = statement("1.1.0", false);
        forged.statement.required = true;
        assert_eq!(
            promote(tx, REPO, &forged, T0).unwrap_err().code,
            Code::ManifestInvalid
        );
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_customer_behind_passes_through_a_required_version() {
    let (_dir, db) = db();
    db.write_keyed(&[], |tx| {
        let tx = tx.sqlite("the example's rows")?;
        set_channel(tx, "stable", Some(vec!["all".into()]), Some(1), T0).unwrap();
        customer(tx, "acme", None);
        for v in ["1.0.0", "1.1.0", "1.2.0"] {
            publish(tx, v);
        }
        receipt(tx, "r0", "acme", "1.0.0", Outcome::Succeeded, T0);
        promote(tx, REPO, &statement("1.1.0", true), T0 + NS).unwrap();
        let newest = promote(tx, REPO, &statement("1.2.0", false), T0 + 2 * NS).unwrap();
        let answer = assignment(tx, "acme", T0 + 3 * NS).unwrap().unwrap();
        let a = &answer.assignments[0];
        assert_eq!(a.version.to_string(), "1.1.0");
        assert_eq!(
            a.on_the_way_to.as_ref().map(ToString::to_string).as_deref(),
            Some("1.2.0")
        );

        receipt(tx, "r1", "acme", "1.1.0", Outcome::Succeeded, T0 + 4 * NS);
        let answer = assignment(tx, "acme", T0 + 5 * NS).unwrap().unwrap();
        let a = &answer.assignments[0];
        assert_eq!(
            (a.version.to_string(), a.rollout),
            ("1.2.0".into(), newest.rollout)
        );
        assert_eq!(a.on_the_way_to, None);
        Ok(())
    })
    .unwrap();
}
