//! The ledger: releases, customers, installation keys and receipts.

use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::api::{Customer, Deployment, Release, Source};

pub fn upsert_release(conn: &Connection, r: &Release) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO releases (stack, version, repository, digest, source_repository,
             source_commit, source_branch, created, published_at, prerelease)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (stack, version) DO UPDATE SET repository = excluded.repository,
             digest = excluded.digest, source_repository = excluded.source_repository,
             source_commit = excluded.source_commit, source_branch = excluded.source_branch,
             created = excluded.created, published_at = excluded.published_at
         WHERE releases.digest <> excluded.digest AND releases.prerelease = 1",
        params![
            r.stack,
            r.version,
            r.repository,
            r.digest,
            r.source.repository,
            r.source.commit,
            r.source.branch,
            r.created,
            r.published_at,
            r.prerelease
        ],
    )?;
    Ok(())
}

fn release_row(r: &Row<'_>) -> rusqlite::Result<Release> {
    Ok(Release {
        stack: r.get(0)?,
        version: r.get(1)?,
        repository: r.get(2)?,
        digest: r.get(3)?,
        source: Source {
            repository: r.get(4)?,
            commit: r.get(5)?,
            branch: r.get(6)?,
        },
        created: r.get(7)?,
        published_at: r.get(8)?,
        prerelease: r.get(9)?,
    })
}

/// The digest recorded for a stack version, if any.
pub fn release_digest(
    conn: &Connection,
    stack: &str,
    version: &str,
) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT digest FROM releases WHERE stack = ?1 AND version = ?2")?
        .query_row(params![stack, version], |r| r.get(0))
        .optional()
}

pub fn releases(conn: &Connection, stack: Option<&str>) -> rusqlite::Result<Vec<Release>> {
    conn.prepare_cached(
        "SELECT stack, version, repository, digest, source_repository, source_commit,
                source_branch, created, published_at, prerelease
         FROM releases WHERE (?1 IS NULL OR stack = ?1) ORDER BY stack, published_at",
    )?
    .query_map(params![stack], release_row)?
    .collect()
}

pub fn delete_release_by_digest(
    conn: &Connection,
    repo: &str,
    digest: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM releases WHERE repository = ?1 AND digest = ?2",
        params![repo, digest],
    )?;
    Ok(())
}

/// Creates the customer if new; sets the name when one is given.
pub fn upsert_customer(
    conn: &Connection,
    id: &str,
    name: Option<&str>,
    now: &str,
) -> rusqlite::Result<()> {
    register_customer(conn, id, name, None, now)
}

/// Creates the customer if new; sets the name and environment given.
pub fn register_customer(
    conn: &Connection,
    id: &str,
    name: Option<&str>,
    environment: Option<&str>,
    now: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO customers (id, name, environment, created) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET name = COALESCE(excluded.name, customers.name),
             environment = COALESCE(excluded.environment, customers.environment)",
        params![id, name, environment, now],
    )?;
    Ok(())
}

/// Customers with their last receipt's finish time, by id. A customer known only
/// from receipts (stored before receipts registered their customer) counts too.
const CUSTOMER_SELECT: &str = "SELECT ids.id, c.name, c.environment,
        COALESCE(c.created, (SELECT MIN(received_at) FROM receipts WHERE customer = ids.id)),
        (SELECT r.finished_at FROM receipts r WHERE r.customer = ids.id
         ORDER BY r.finished_ns DESC LIMIT 1)
     FROM (SELECT id FROM customers UNION SELECT customer FROM receipts) AS ids
     LEFT JOIN customers c ON c.id = ids.id";

fn customer_row(r: &Row<'_>) -> rusqlite::Result<Customer> {
    Ok(Customer {
        id: r.get(0)?,
        name: r.get(1)?,
        environment: r.get(2)?,
        created: r.get(3)?,
        last_seen: r.get(4)?,
        stale: None,
    })
}

pub fn customers(conn: &Connection) -> rusqlite::Result<Vec<Customer>> {
    conn.prepare_cached(&format!("{CUSTOMER_SELECT} ORDER BY ids.id"))?
        .query_map([], customer_row)?
        .collect()
}

pub fn customer(conn: &Connection, id: &str) -> rusqlite::Result<Option<Customer>> {
    conn.prepare_cached(&format!("{CUSTOMER_SELECT} WHERE ids.id = ?1"))?
        .query_row(params![id], customer_row)
        .optional()
}

/// The public keys (base64 DER) registered for a customer's installations, with
/// whether each was revoked: `(key_id, public_key, revoked)`.
pub fn installation_keys(
    conn: &Connection,
    customer: &str,
) -> rusqlite::Result<Vec<(String, String, bool)>> {
    conn.prepare_cached(
        "SELECT key_id, public_key, revoked_at IS NOT NULL FROM installation_keys
         WHERE customer = ?1",
    )?
    .query_map(params![customer], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
    .collect()
}

/// Revokes one of a customer's installation keys; false when it has no such key.
pub fn revoke_installation_key(
    conn: &Connection,
    customer: &str,
    key_id: &str,
    now: &str,
) -> rusqlite::Result<bool> {
    let changed = conn.execute(
        "UPDATE installation_keys SET revoked_at = COALESCE(revoked_at, ?3)
         WHERE customer = ?1 AND key_id = ?2",
        params![customer, key_id, now],
    )?;
    Ok(changed > 0)
}

pub fn add_installation_key(
    conn: &Connection,
    customer: &str,
    key_id: &str,
    public_key: &str,
    now: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO installation_keys (customer, key_id, public_key, first_seen)
         VALUES (?1, ?2, ?3, ?4)",
        params![customer, key_id, public_key, now],
    )?;
    Ok(())
}

/// The stored document of a receipt id, if any.
pub fn receipt_document(conn: &Connection, id: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT document FROM receipts WHERE id = ?1")?
        .query_row(params![id], |r| r.get(0))
        .optional()
}

/// Stores a receipt; `finished_ns` (UTC nanoseconds) is what receipts are ordered by.
pub fn insert_receipt(
    conn: &Connection,
    d: &Deployment,
    finished_ns: i64,
    document: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO receipts (id, customer, stack, version, digest, kind, outcome,
             started_at, finished_at, key_id, document, received_at, finished_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        params![
            d.receipt_id,
            d.customer,
            d.stack,
            d.version,
            d.digest,
            d.kind,
            d.outcome,
            d.started_at,
            d.finished_at,
            d.key_id,
            document,
            d.received_at,
            finished_ns
        ],
    )?;
    Ok(())
}

fn deployment_row(r: &Row<'_>) -> rusqlite::Result<Deployment> {
    Ok(Deployment {
        receipt_id: r.get(0)?,
        customer: r.get(1)?,
        stack: r.get(2)?,
        version: r.get(3)?,
        digest: r.get(4)?,
        kind: r.get(5)?,
        outcome: r.get(6)?,
        started_at: r.get(7)?,
        finished_at: r.get(8)?,
        key_id: r.get(9)?,
        received_at: r.get(10)?,
    })
}

const DEPLOYMENT_COLUMNS: &str = "id, customer, stack, version, digest, kind, outcome, started_at, finished_at, key_id, received_at";

/// Receipts, newest first.
pub fn deployments(
    conn: &Connection,
    customer: Option<&str>,
    stack: Option<&str>,
    limit: u64,
) -> rusqlite::Result<Vec<Deployment>> {
    conn.prepare_cached(&format!(
        "SELECT {DEPLOYMENT_COLUMNS} FROM receipts
         WHERE (?1 IS NULL OR customer = ?1) AND (?2 IS NULL OR stack = ?2)
         ORDER BY finished_ns DESC, id LIMIT ?3"
    ))?
    .query_map(params![customer, stack, limit as i64], deployment_row)?
    .collect()
}

/// Every receipt of one customer, oldest first: applies, failed applies,
/// rollbacks, drift reports and destroys alike.
pub fn history(conn: &Connection, customer: &str) -> rusqlite::Result<Vec<Deployment>> {
    conn.prepare_cached(&format!(
        "SELECT {DEPLOYMENT_COLUMNS} FROM receipts WHERE customer = ?1
         ORDER BY finished_ns, received_at, id"
    ))?
    .query_map(params![customer], deployment_row)?
    .collect()
}

/// For each customer and stack, the newest receipt among those `receipts` selects,
/// kept only when it also passes `kept`; only `customer`'s when one is given, so one
/// customer's page does not scan the fleet. The SQL fragments are constants of this
/// module, never user input.
fn newest_per_stack(
    conn: &Connection,
    customer: Option<&str>,
    receipts: &'static str,
    kept: &'static str,
) -> rusqlite::Result<Vec<Deployment>> {
    conn.prepare_cached(&format!(
        "SELECT {DEPLOYMENT_COLUMNS} FROM (
             SELECT *, ROW_NUMBER() OVER (PARTITION BY customer, stack
                                          ORDER BY finished_ns DESC, received_at DESC, id) AS n
             FROM receipts
             WHERE ({receipts}) AND (?1 IS NULL OR customer = ?1))
         WHERE n = 1 AND ({kept}) ORDER BY customer, stack"
    ))?
    .query_map(params![customer], deployment_row)?
    .collect()
}

/// For each customer and stack, the last apply, rollback or destroy, whatever its
/// outcome.
pub fn last_attempts(
    conn: &Connection,
    customer: Option<&str>,
) -> rusqlite::Result<Vec<Deployment>> {
    newest_per_stack(
        conn,
        customer,
        "kind IN ('apply', 'rollback', 'destroy')",
        "1",
    )
}

/// For each customer and stack, the last apply or rollback that left a version in
/// place (`succeeded` or `no-changes`), unless a destroy came after it: a destroyed
/// stack runs nothing.
pub fn current(conn: &Connection, customer: Option<&str>) -> rusqlite::Result<Vec<Deployment>> {
    newest_per_stack(
        conn,
        customer,
        "kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')",
        "kind != 'destroy'",
    )
}

/// For each customer and stack, the latest receipt that says something about drift:
/// a drift check, or an apply or rollback that succeeded (which clears drift).
pub fn latest_drift_evidence(
    conn: &Connection,
    customer: Option<&str>,
) -> rusqlite::Result<Vec<Deployment>> {
    newest_per_stack(
        conn,
        customer,
        "kind = 'drift' OR (kind IN ('apply', 'rollback') AND outcome IN ('succeeded', 'no-changes'))",
        "1",
    )
}
