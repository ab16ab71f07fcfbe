//! Support's fleet-wide questions are answered from `fleet_cells` and `customers`
//! through an index for each filter: none reads `receipts`, and none scans every
//! cell when an index answers its filter. Checked with SQLite's `EXPLAIN QUERY
//! PLAN` on a real database of this build's schema, so a change to a query or an
//! index that falls back to a full scan fails here rather than at 10,000 customers.

use stackpack_registry::db::fleet::{fleet_plan, running_plan, Carriers, Filter, RunningList};
use stackpack_registry::db::Db;

fn database() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(&dir.path().join("registry.db"), 1).unwrap();
    (dir, db)
}

/// The plan's steps, and what is wrong with them: a read of `receipts`, a scan of
/// the cells other than of the partial index `index` that holds only the cells its
/// flag marks (`SCAN f`, `SCAN f USING INDEX other`), or, when `ordered`, a sort of
/// the whole answer before the page is cut (`USE TEMP B-TREE FOR ORDER BY`).
fn faults(plan: &[String], ordered: bool, index: &str) -> Vec<String> {
    plan.iter()
        .filter(|step| {
            step.contains("receipts")
                || (step.starts_with("SCAN f")
                    && (index.is_empty() || !step.ends_with(&format!("INDEX {index}"))))
                || (ordered && step.contains("TEMP B-TREE FOR ORDER BY"))
        })
        .cloned()
        .collect()
}

fn key(version: &str) -> Vec<u8> {
    stackpack_registry::version_key::of_text(version).unwrap()
}

#[test]
fn fleet_queries_use_an_index_for_each_filter_and_never_read_receipts() {
    let (_dir, db) = database();
    let filters: Vec<(&str, Filter<'_>, Carriers, &str, bool)> = vec![
        (
            "stack",
            Filter {
                stack: Some("data-plane"),
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_stack",
            true,
        ),
        (
            "stack and behind",
            Filter {
                stack: Some("data-plane"),
                behind: true,
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_stack_behind",
            true,
        ),
        (
            "stack and failed",
            Filter {
                stack: Some("data-plane"),
                failed: true,
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_stack_failed",
            true,
        ),
        (
            "stack and drifted",
            Filter {
                stack: Some("data-plane"),
                drifted: true,
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_stack_drifted",
            true,
        ),
        (
            "stack below a version",
            Filter {
                stack: Some("data-plane"),
                below_key: Some(key("1.16.0")),
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_stack",
            true,
        ),
        (
            "behind",
            Filter {
                behind: true,
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_behind",
            true,
        ),
        (
            "prerelease in production",
            Filter {
                prerelease: true,
                environment: Some("production"),
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_prerelease",
            true,
        ),
        (
            "drifted",
            Filter {
                drifted: true,
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_drifted",
            true,
        ),
        (
            "failed",
            Filter {
                failed: true,
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_failed",
            true,
        ),
        (
            "exactly a version",
            Filter {
                version: Some("1.2.0"),
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_version",
            false,
        ),
        (
            "a stack's version",
            Filter {
                stack: Some("data-plane"),
                version: Some("1.2.0"),
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_version",
            false,
        ),
        (
            "a digest",
            Filter {
                digest: Some("sha256:00"),
                ..Filter::default()
            },
            Carriers::Many,
            "fleet_cells_digest",
            false,
        ),
        (
            "a module below a version, few carriers",
            Filter {
                module: Some("network"),
                module_below_key: Some(key("1.3.0")),
                ..Filter::default()
            },
            Carriers::Few,
            "fleet_cells_version",
            false,
        ),
        (
            "one customer",
            Filter {
                customer: Some("globex"),
                failed: true,
                ..Filter::default()
            },
            Carriers::Many,
            "",
            true,
        ),
    ];
    for (what, filter, carriers, index, ordered) in &filters {
        for after in [None, Some(("customer-05000", "stack-12"))] {
            let plan = db
                .read_any(|c| {
                    Ok(fleet_plan(
                        c.sqlite("a query plan")?,
                        filter,
                        *carriers,
                        after,
                    )?)
                })
                .unwrap();
            let faults = faults(&plan, *ordered, index);
            assert!(
                faults.is_empty(),
                "{what} (after {after:?}): {faults:?} in {plan:#?}"
            );
            assert!(
                plan.iter().any(|step| step.contains(index)),
                "{what} (after {after:?}) uses `{index}`: {plan:#?}"
            );
        }
    }
}

#[test]
fn whole_fleet_customer_and_silence_pages_are_read_in_key_order_without_receipts() {
    let (_dir, db) = database();
    let filters = [
        ("everything", Filter::default(), "customers"),
        (
            "one customer",
            Filter {
                customer: Some("globex"),
                ..Filter::default()
            },
            "customers",
        ),
        (
            "an environment",
            Filter {
                environment: Some("production"),
                ..Filter::default()
            },
            "customers",
        ),
        (
            "silent",
            Filter {
                silent_before_ns: Some(0),
                ..Filter::default()
            },
            "customers",
        ),
    ];
    for (what, filter, driver) in &filters {
        for after in [None, Some(("customer-05000", "stack-12"))] {
            let plan = db
                .read_any(|c| {
                    Ok(fleet_plan(
                        c.sqlite("a query plan")?,
                        filter,
                        Carriers::Many,
                        after,
                    )?)
                })
                .unwrap();
            // Customers by id (10,000 rows at most), each with its cells by key:
            // a page stops after its rows, with no sort.
            assert!(faults(&plan, true, "").is_empty(), "{what}: {plan:#?}");
            assert!(plan.iter().any(|s| s.contains(driver)), "{what}: {plan:#?}");
            assert!(
                plan.iter()
                    .any(|s| s.starts_with("SEARCH f USING PRIMARY KEY")
                        || s.starts_with("SEARCH f USING INDEX")),
                "{what}: each customer's cells by key: {plan:#?}"
            );
        }
    }
}

#[test]
fn support_lists_read_their_flags_index_and_never_receipts() {
    let (_dir, db) = database();
    for (list, index) in [
        (RunningList::Behind, "fleet_cells_behind"),
        (RunningList::Prerelease, "fleet_cells_prerelease"),
        (RunningList::Drifted, "fleet_cells_drifted"),
    ] {
        let plan = db
            .read_any(|c| Ok(running_plan(c.sqlite("a query plan")?, list, None)?))
            .unwrap();
        assert!(faults(&plan, true, index).is_empty(), "{list:?}: {plan:#?}");
        assert!(
            plan.iter().any(|s| s.contains(index)),
            "{list:?} uses `{index}`: {plan:#?}"
        );
    }
    // Everything is every cell, in key order, a page at a time: no receipts, no sort.
    let plan = db
        .read_any(|c| {
            Ok(running_plan(
                c.sqlite("a query plan")?,
                RunningList::Everything,
                Some(("a", "b")),
            )?)
        })
        .unwrap();
    assert!(
        !plan
            .iter()
            .any(|s| s.contains("receipts") || s.contains("TEMP B-TREE")),
        "{plan:#?}"
    );
}

#[test]
fn adoption_reads_its_deltas_by_key_and_a_new_change_finds_its_neighbours_by_index() {
    let (_dir, db) = database();
    let plans = db
        .support_any(|c| {
            Ok(stackpack_registry::db::ledger::adoption_plans(
                c.sqlite("query plans")?,
            )?)
        })
        .unwrap();
    assert_eq!(plans.len(), 4);
    for (name, plan) in plans {
        let (wanted, faults): (&str, Vec<&String>) = match name {
            // A stack's deltas are a range of the primary key, in key order: no
            // receipt read, no sort.
            "one stack" | "every stack" => (
                "adoption_deltas",
                plan.iter()
                    .filter(|s| s.contains("receipts") || s.contains("TEMP B-TREE"))
                    .collect(),
            ),
            // The neighbours of a late receipt are one customer's changes of one
            // stack, found through `receipts_current`, never a scan of receipts.
            _ => (
                "receipts_current",
                plan.iter().filter(|s| s.starts_with("SCAN")).collect(),
            ),
        };
        assert!(faults.is_empty(), "{name}: {faults:?} in {plan:?}");
        assert!(
            plan.iter().any(|s| s.contains(wanted)),
            "{name} reads {wanted}: {plan:?}"
        );
    }
}

/// The index pages never pass over every cell: search walks the customers who run
/// a version, or have a cell of a stack, through an index in id order (no sort of
/// every match), and the stacks index sums the kept counts without reading a cell.
#[test]
fn index_pages_read_kept_counts_and_search_walks_its_indexes_in_id_order() {
    let (_dir, db) = database();
    let plans = db
        .support_any(|c| {
            Ok(stackpack_registry::db::customers::index_plans(
                c.sqlite("query plans")?,
            )?)
        })
        .unwrap();
    let (_, search) = plans.iter().find(|(n, _)| *n == "search").unwrap();
    for index in [
        "fleet_cells_version_customer",
        "fleet_cells_stack ",
        "fleet_cells_stack_unattempted",
    ] {
        assert!(
            search.iter().any(|s| s.contains(index)),
            "{index}: {search:#?}"
        );
    }
    let faults: Vec<&String> = search
        .iter()
        .filter(|s| s.starts_with("SCAN f") || s.contains("receipts") || s.contains("FOR ORDER BY"))
        .filter(|s| !s.contains("COVERING INDEX fleet_cells_"))
        .collect();
    assert!(faults.is_empty(), "{faults:?} in {search:#?}");
    let (_, stacks) = plans.iter().find(|(n, _)| *n == "stacks").unwrap();
    assert!(
        stacks.iter().all(|s| !s.contains("fleet_cells")),
        "{stacks:#?}"
    );
    assert!(stacks.iter().any(|s| s.contains("fleet_stack_versions")));
}
