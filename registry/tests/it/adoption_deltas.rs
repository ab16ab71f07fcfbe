//! Adoption over time is summed from `adoption_deltas`, kept as receipts arrive.
//! Whatever order receipts arrive in (airgapped imports and late reports land
//! between changes already stored), the answer must be the one a replay of every
//! change in ledger order gives: random histories for a few customers and versions,
//! stored in random order through the registry's own receipt path, are compared
//! with that replay, per day and per week, as kept and as migrated from schema v5.

use std::collections::{BTreeMap, HashMap};

use stackpack_registry::api::{Adoption, AdoptionPoint};
use stackpack_registry::controllers::ledger::adoption::{answer, Bucket};
use stackpack_registry::db::{self, Db};
use stackpack_registry::receipts;
use stackpack_schema::receipt::{Outcome, ReceiptKind, SignedReceipt};
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

/// A small deterministic generator (xorshift), so a failing seed can be rerun.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Adoption as it was answered before `adoption_deltas`: every change of the stack
/// replayed in ledger order, a point at the end of each bucket whose counts changed.
fn replay(conn: &rusqlite::Connection, stack: Option<&str>, bucket: Bucket) -> Vec<Adoption> {
    let changes = db::ledger::changes(conn, stack).unwrap();
    let mut customers: BTreeMap<String, HashMap<String, String>> = BTreeMap::new();
    let mut counts: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut points: BTreeMap<String, Vec<AdoptionPoint>> = BTreeMap::new();
    let mut pending: Option<String> = None;
    let snapshot = |customers: &BTreeMap<String, HashMap<String, String>>,
                    counts: &BTreeMap<String, BTreeMap<String, u64>>,
                    points: &mut BTreeMap<String, Vec<AdoptionPoint>>,
                    at: &str| {
        for (stack, now) in counts {
            if now.is_empty() && !points.contains_key(stack) {
                continue;
            }
            let list = points.entry(stack.clone()).or_default();
            if list.last().is_some_and(|p| p.customers == *now) {
                continue;
            }
            list.push(AdoptionPoint {
                at: at.to_string(),
                total: customers[stack].len() as u64,
                customers: now.clone(),
            });
        }
    };
    for change in changes {
        let at = bucket.start(change.finished_at.as_str());
        if pending.as_ref().is_some_and(|p| *p != at) {
            snapshot(
                &customers,
                &counts,
                &mut points,
                pending.as_deref().unwrap(),
            );
        }
        pending = Some(at);
        let running = customers.entry(change.stack.clone()).or_default();
        let now = counts.entry(change.stack).or_default();
        let before = if change.destroy {
            running.remove(&change.customer)
        } else {
            let version = change.version.to_string();
            *now.entry(version.clone()).or_default() += 1;
            running.insert(change.customer, version)
        };
        if let Some(before) = before {
            let count = now.get_mut(&before).unwrap();
            *count -= 1;
            if *count == 0 {
                now.remove(&before);
            }
        }
    }
    if let Some(at) = &pending {
        snapshot(&customers, &counts, &mut points, at);
    }
    points
        .into_iter()
        .map(|(stack, points)| {
            let mut versions: Vec<semver::Version> = points
                .iter()
                .flat_map(|p| p.customers.keys())
                .map(|text| semver::Version::parse(text).unwrap())
                .collect();
            versions.sort_by(|a, b| a.cmp_precedence(b));
            versions.dedup();
            Adoption {
                stack,
                bucket: bucket.as_str().to_string(),
                versions,
                points,
            }
        })
        .collect()
}

const KINDS: [(ReceiptKind, Outcome); 6] = [
    (ReceiptKind::Apply, Outcome::Succeeded),
    (ReceiptKind::Apply, Outcome::NoChanges),
    (ReceiptKind::Apply, Outcome::Failed),
    (ReceiptKind::Rollback, Outcome::Succeeded),
    (ReceiptKind::Destroy, Outcome::Succeeded),
    (ReceiptKind::Drift, Outcome::Drifted),
];

/// A random history: a few customers on two stacks, versions 1.0.0 to 1.3.0 and a
/// prerelease, over about three weeks. Finish times fall on whole hours so that
/// some changes of one customer finish at the same time and arrival and id decide.
fn history(random: &mut Random, count: usize) -> Vec<SignedReceipt> {
    let versions = ["1.0.0", "1.1.0", "1.2.0-rc.1", "1.2.0", "1.3.0"];
    (0..count)
        .map(|n| {
            let c = random.below(4);
            let key = PrivateKey::from_secret_bytes([c as u8 + 1; 32]);
            let (kind, outcome) = KINDS[random.below(KINDS.len() as u64) as usize];
            let hour = random.below(21 * 24 / 5) * 5;
            let at = format!("2026-11-{:02}T{:02}:00:00Z", 2 + hour / 24, hour % 24);
            let version = versions[random.below(versions.len() as u64) as usize];
            let stack = format!("stack-{}", random.below(2));
            ReceiptBuilder::new(&format!("customer-{c}"), &stack, version)
                .id(format!("r-{n:03}"))
                .kind(kind, outcome)
                .at(&at)
                .sign(&key)
        })
        .collect()
}

/// The stack pages' counts (`fleet_stack_versions`, kept by triggers on the cells)
/// are what counting the cells gives.
fn assert_counts_match_cells(db: &Db, seed: u64, when: &str) {
    let count = |sql: &str| {
        db.support_any(|c| {
            let c = c.sqlite("counting cells")?;
            let rows = c
                .prepare(sql)?
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<(String, String, i64, i64, i64)>>>()?;
            Ok(rows)
        })
        .unwrap()
    };
    let kept = count(
        "SELECT stack, version, cells, failed, drifted FROM fleet_stack_versions
         WHERE cells > 0 ORDER BY stack, version",
    );
    let counted = count(
        "SELECT stack, COALESCE(version, ''), COUNT(*), SUM(failed), SUM(drifted)
         FROM fleet_cells GROUP BY stack, COALESCE(version, '') ORDER BY 1, 2",
    );
    assert_eq!(
        kept, counted,
        "seed {seed}, {when}: kept counts and cells differ"
    );
    assert!(
        !kept.is_empty(),
        "seed {seed}, {when}: every receipt has a cell"
    );
}

fn assert_same_as_replay(db: &Db, seed: u64, when: &str) {
    assert_counts_match_cells(db, seed, when);
    for bucket in [Bucket::Day, Bucket::Week] {
        for stack in [None, Some("stack-0"), Some("stack-1"), Some("stack-9")] {
            let (kept, replayed) = db
                .support_any(|c| {
                    let c = c.sqlite("a replay")?;
                    Ok((answer(c, stack, bucket)?, replay(c, stack, bucket)))
                })
                .unwrap();
            assert_eq!(
                kept, replayed,
                "seed {seed}, {when}, {bucket:?}, stack {stack:?}: deltas and replay differ"
            );
        }
    }
}

#[test]
fn adoption_from_deltas_matches_a_replay_whatever_order_receipts_arrive_in() {
    for seed in 1..=12u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.db");
        let mut random = Random(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut receipts = history(&mut random, 60);
        // Shuffle: receipts arrive in any order, some in the same second.
        for i in (1..receipts.len()).rev() {
            receipts.swap(i, random.below(i as u64 + 1) as usize);
        }
        {
            let db = Db::open(&path, 1).unwrap();
            for (n, signed) in receipts.iter().enumerate() {
                let checked = receipts::check(signed).unwrap();
                let now: stackpack_registry::timestamp::Timestamp =
                    format!("2026-12-01T00:{:02}:{:02}Z", n / 120, (n / 2) % 60)
                        .parse()
                        .unwrap();
                assert!(db
                    .write_keyed(&[], |tx| receipts::store(
                        tx,
                        &checked,
                        &now,
                        &receipts::FirstUse::Reporter
                    ))
                    .unwrap());
                // The same receipt again (a retried post, an import run twice)
                // changes nothing, so it must not be counted twice.
                let again = receipts::check(&receipts[n / 2]).unwrap();
                assert!(!db
                    .write_keyed(&[], |tx| receipts::store(
                        tx,
                        &again,
                        &now,
                        &receipts::FirstUse::Reporter
                    ))
                    .unwrap());
                if n % 7 == 0 {
                    assert_same_as_replay(&db, seed, &format!("after {} receipts", n + 1));
                }
            }
            assert_same_as_replay(&db, seed, "kept as receipts arrived");
            let changes = db.support_any(|c| db::ledger::changes(c, None)).unwrap();
            assert!(
                changes.iter().any(|c| c.destroy) && changes.len() > 20,
                "seed {seed}: the history holds destroys and enough changes to mean something"
            );
        }
        // A v5 database holding the same receipts is filled by the v6 migration
        // (v7's releases undone too: it runs again after v6), and its stack counts
        // by v16's.
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "DROP TABLE registry_settings;
                 DROP TRIGGER fleet_stack_versions_insert;
                 DROP TRIGGER fleet_stack_versions_delete;
                 DROP TRIGGER fleet_stack_versions_update;
                 DROP TABLE fleet_stack_versions;
                 DROP INDEX fleet_cells_version_customer;
                 DROP INDEX fleet_cells_stack_unattempted;
                 DROP INDEX fleet_cells_stack_failed;
                 DROP INDEX fleet_cells_stack_drifted;
                 DROP TABLE ui_sessions;
                 DROP TABLE leases;
                 DROP TABLE upload_segments;
                 DROP TABLE support_bundles;
                 DROP TABLE alert_outbox;
                 DROP TABLE alerts;
                 DROP INDEX customers_account;
                 ALTER TABLE releases DROP COLUMN pushed_by;
                 DROP INDEX fleet_cells_stack_state;
                 ALTER TABLE customers DROP COLUMN account;
                 ALTER TABLE customers DROP COLUMN region;
                 ALTER TABLE customers DROP COLUMN contact;
                 ALTER TABLE customers DROP COLUMN notes;
                 ALTER TABLE customers DROP COLUMN silent_since;
                 DROP INDEX tokens_name;
                 ALTER TABLE tokens DROP COLUMN name;
                 DROP TABLE forecast_misses;
                 DROP TABLE forecast_customers;
                 DROP TABLE forecasts;
                 ALTER TABLE customers DROP COLUMN approve;
                 DROP TABLE customer_sync;
                 DROP TABLE release_receipts;
                 DROP TABLE rollout_events;
                 DROP TABLE rollout_assignments;
                 DROP TABLE rollouts;
                 DROP TABLE promotions;
                 DROP TABLE channels;
                 DROP INDEX customers_channel;
                 ALTER TABLE customers DROP COLUMN channel;
                 ALTER TABLE customers DROP COLUMN wave;
                 ALTER TABLE customers DROP COLUMN last_sync;
                 DROP TABLE release_indexes;
                 DROP TABLE release_index_stacks;
                 DROP TABLE release_index_services;
                 DROP INDEX receipts_release;
                 ALTER TABLE receipts DROP COLUMN release_name;
                 ALTER TABLE receipts DROP COLUMN release_version;
                 ALTER TABLE receipts DROP COLUMN release_digest;
                 DROP TABLE adoption_deltas;
                 DROP INDEX installation_keys_public_key;
                 ALTER TABLE installation_keys DROP COLUMN pinned_by;
                 ALTER TABLE customers DROP COLUMN registered_at;
                 CREATE INDEX receipts_changes ON receipts(stack, finished_ns, received_at, id,
                     customer, version, kind, finished_at)
                     WHERE kind IN ('apply', 'rollback', 'destroy')
                       AND outcome IN ('succeeded', 'no-changes');
                 PRAGMA user_version = 5;",
            )
            .unwrap();
        }
        let db = Db::open(&path, 1).unwrap();
        assert_same_as_replay(&db, seed, "migrated from v5");
    }
}
