//! Holding receipts against forecasts and the words of a hold, on a real database.

use super::*;
use crate::db::Db;
use stackpack_schema::forecast::{CustomerForecast, ForecastOutcome, StackForecast};
use stackpack_schema::plan::{PlannedChange, ResourceChange};
use stackpack_schema::receipt::{EngineRun, Outcome, PlanSummary, RECEIPT_FORMAT};
use stackpack_schema::Digest;

fn db() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("registry.db"), 1).unwrap();
    (dir, db)
}

fn change(address: &str, action: Action) -> ResourceChange {
    ResourceChange {
        address: address.into(),
        kind: address.split('.').next().unwrap().into(),
        action,
        attributes: vec![],
    }
}

fn stack(name: &str, changes: Vec<ResourceChange>) -> StackForecast {
    let planned: Vec<PlannedChange> = changes.iter().map(PlannedChange::from).collect();
    StackForecast {
        stack: name.into(),
        from: Some(Version::new(1, 0, 0)),
        from_digest: None,
        to: Version::new(1, 1, 0),
        to_digest: Digest::of(b"to"),
        outcome: ForecastOutcome::of(changes.iter().map(|c| &c.action)),
        changes,
        changes_digest: plan::changes_digest(&planned),
        stateful: vec![],
    }
}

fn forecast(customers: Vec<(&str, Vec<StackForecast>)>) -> ReleaseForecast {
    ReleaseForecast {
        format: FORECAST_FORMAT,
        kind: ApprovedKind::Stack,
        release: "network".into(),
        version: Version::new(1, 1, 0),
        digest: Digest::of(b"bundle"),
        channel: None,
        created_at: "2026-12-02T00:00:00Z".into(),
        account: "emulator".into(),
        customers: customers
            .into_iter()
            .map(|(id, stacks)| CustomerForecast {
                customer: id.into(),
                wave: None,
                running: None,
                through: vec![],
                outcome: stacks
                    .iter()
                    .map(|s| s.outcome)
                    .max()
                    .unwrap_or(ForecastOutcome::NoChange),
                stacks,
                inputs_set: vec![],
                reason: None,
                cached: false,
                seconds: 1.0,
            })
            .collect(),
    }
}

fn receipt(customer: &str, id: &str, changes: Vec<PlannedChange>) -> Receipt {
    Receipt {
        format: RECEIPT_FORMAT,
        id: id.into(),
        customer: customer.into(),
        stack: "network".into(),
        version: Version::new(1, 1, 0),
        bundle_digest: Digest::of(b"bundle"),
        inputs_hash: Digest::of(b"inputs"),
        engine: EngineRun {
            name: stackpack_schema::bundle::EngineName::Tofu,
            version: "1.8.0".into(),
            digest: None,
        },
        plan: PlanSummary {
            add: 0,
            change: 0,
            destroy: 0,
        },
        kind: ReceiptKind::Plan,
        outcome: Outcome::Succeeded,
        started_at: "2026-12-02T00:00:00Z".into(),
        finished_at: "2026-12-02T00:00:00Z".into(),
        key_id: String::new(),
        release: None,
        changes_digest: Some(plan::changes_digest(&changes)),
        changes,
        failure: None,
        drift: Vec::new(),
        runner: None,
        drifted: vec![],
        preflight: vec![],
        verified: None,
    }
}

fn update_vpc() -> Vec<PlannedChange> {
    vec![PlannedChange {
        address: "aws_vpc.main".into(),
        action: Action::Update,
    }]
}

#[test]
fn a_real_plan_that_differs_is_a_miss_once_and_a_matching_one_is_not() {
    let (_dir, db) = db();
    let f = forecast(vec![
        ("acme", vec![stack("network", vec![])]),
        ("globex", vec![stack("network", vec![])]),
    ]);
    db.write_keyed(&[], |tx| {
        let tx = tx.sqlite("the example's rows")?;
        publish(tx, "network", &Version::new(1, 1, 0), &f, "now")?;
        let same = receipt("acme", "a-1", vec![]);
        assert!(!hold_receipt(tx, &same, "now")?);
        let mut differs = receipt("globex", "g-1", update_vpc());
        differs.drifted = vec!["aws_vpc.main".into(), "aws_s3_bucket.logs".into()];
        assert!(hold_receipt(tx, &differs, "now")?);
        assert!(!hold_receipt(tx, &differs, "later")?, "the same receipt again");
        let v = Version::new(1, 1, 0);
        assert_eq!(gate_reason(tx, "network", &v, "acme")?, None);
        assert_eq!(
            gate_reason(tx, "network", &v, "globex")?.as_deref(),
            Some("forecast missed: globex: update `aws_vpc.main`, forecast said no change (changed outside the runner before the upgrade)")
        );
        let misses = fdb::misses(tx, "network", &v)?;
        assert_eq!(misses.len(), 1);
        assert_eq!(misses[0].drifted, ["aws_vpc.main"], "only drift among the differences");
        acknowledge(tx, "network", &v)?;
        assert_eq!(gate_reason(tx, "network", &v, "globex")?, None);
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_customer_the_forecast_could_not_plan_is_not_compared() {
    let (_dir, db) = db();
    let mut f = forecast(vec![("acme", vec![stack("network", vec![])])]);
    f.customers[0].outcome = ForecastOutcome::NotForecast;
    db.write_keyed(&[], |tx| {
        let tx = tx.sqlite("the example's rows")?;
        publish(tx, "network", &Version::new(1, 1, 0), &f, "now")?;
        assert!(!hold_receipt(
            tx,
            &receipt("acme", "a-1", update_vpc()),
            "now"
        )?);
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_destructive_forecast_holds_the_assignment_and_names_the_resources() {
    let (_dir, db) = db();
    let f = forecast(vec![
        (
            "acme",
            vec![stack(
                "network",
                vec![
                    change("aws_vpc.main", Action::Update),
                    change("aws_nat_gateway.a", Action::Replace),
                ],
            )],
        ),
        (
            "globex",
            vec![stack(
                "network",
                vec![change("aws_vpc.main", Action::Update)],
            )],
        ),
    ]);
    let v = Version::new(1, 1, 0);
    db.write_keyed(&[], |tx| {
        let tx = tx.sqlite("the example's rows")?;
        publish(tx, "network", &v, &f, "now")?;
        assert_eq!(
            hold(tx, "network", &v, "acme")?.as_deref(),
            Some("the vendor's forecast replaces `network: aws_nat_gateway.a`: held for a person whatever `[sync] approve` says")
        );
        assert_eq!(hold(tx, "network", &v, "globex")?, None);
        assert_eq!(hold(tx, "network", &v, "initech")?, None);
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_forecast_sent_to_another_version_is_refused_naming_both() {
    let (_dir, db) = db();
    let f = forecast(vec![]);
    let refused = db
        .write_keyed(&[], |tx| {
            publish(
                tx.sqlite("the example's rows")?,
                "network",
                &Version::new(2, 0, 0),
                &f,
                "now",
            )
        })
        .unwrap_err();
    assert_eq!(refused.code, Code::BadRequest);
    assert!(
        refused.message.contains("`network@1.1.0`") && refused.message.contains("`network@2.0.0`"),
        "{}",
        refused.message
    );
}
