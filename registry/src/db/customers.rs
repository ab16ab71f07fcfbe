//! A customer's details (`customer set`) and the index pages' searches: customers
//! by id, name, account, stack or version; stacks and their versions with how many
//! customers run each. Every search value is a bound parameter, never SQL text.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;

/// What the vendor knows of a customer beyond its receipts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl Details {
    pub fn is_empty(&self) -> bool {
        *self == Details::default()
    }
}

/// Sets the details given (an empty text clears one), creating the customer as
/// registered if it is new.
pub fn set_details(conn: &Connection, id: &str, d: &Details, now: &str) -> rusqlite::Result<()> {
    super::ledger::register_customer(conn, id, None, None, now)?;
    for (column, value) in [
        ("account", &d.account),
        ("region", &d.region),
        ("environment", &d.environment),
        ("contact", &d.contact),
        ("notes", &d.notes),
    ] {
        // Given empty, a detail is cleared.
        if let Some(value) = value.as_deref() {
            let value = (!value.is_empty()).then_some(value);
            conn.execute(
                &format!("UPDATE customers SET {column} = ?2 WHERE id = ?1"),
                params![id, value],
            )?;
        }
    }
    Ok(())
}

pub fn details(conn: &Connection, id: &str) -> rusqlite::Result<Option<Details>> {
    conn.prepare_cached(
        "SELECT account, region, environment, contact, notes FROM customers WHERE id = ?1",
    )?
    .query_row(params![id], |r| {
        Ok(Details {
            account: r.get(0)?,
            region: r.get(1)?,
            environment: r.get(2)?,
            contact: r.get(3)?,
            notes: r.get(4)?,
        })
    })
    .optional()
}

/// One line of the customers index.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerLine {
    pub id: String,
    pub name: Option<String>,
    pub environment: Option<String>,
    pub account: Option<String>,
    pub region: Option<String>,
    pub last_seen: Option<String>,
    pub stacks: u64,
    pub failed: u64,
    pub drifted: u64,
}

/// `text` as a `LIKE` pattern matching it anywhere, its `%`, `_` and `\` taken
/// literally (the query says `ESCAPE '\'`).
pub fn contains_pattern(text: &str) -> String {
    let mut out = String::from("%");
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// Customers whose id, name or account contains `q`, or who run a stack named `q`
/// or a version `q` of any stack; all customers when `q` is empty. At most `limit`,
/// by id.
pub fn search(conn: &Connection, q: &str, limit: u64) -> rusqlite::Result<Vec<CustomerLine>> {
    let q = q.trim();
    let pattern = contains_pattern(q);
    conn.prepare_cached(
        "SELECT c.id, c.name, c.environment, c.account, c.region, c.last_seen,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.version IS NOT NULL),
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.failed = 1),
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.drifted = 1)
         FROM customers c
         WHERE ?1 = ''
            OR c.id LIKE ?2 ESCAPE '\\' OR c.name LIKE ?2 ESCAPE '\\'
            OR c.account LIKE ?2 ESCAPE '\\'
            OR c.id IN (SELECT customer FROM fleet_cells WHERE stack = ?1
                UNION SELECT customer FROM fleet_cells INDEXED BY fleet_cells_version
                    WHERE version = ?1 AND attempt_id IS NOT NULL)
         ORDER BY c.id LIMIT ?3",
    )?
    .query_map(params![q, pattern, limit as i64], |r| {
        Ok(CustomerLine {
            id: r.get(0)?,
            name: r.get(1)?,
            environment: r.get(2)?,
            account: r.get(3)?,
            region: r.get(4)?,
            last_seen: r.get(5)?,
            stacks: r.get::<_, i64>(6)? as u64,
            failed: r.get::<_, i64>(7)? as u64,
            drifted: r.get::<_, i64>(8)? as u64,
        })
    })?
    .collect()
}

/// One line of the stacks index.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackLine {
    pub stack: String,
    pub versions: u64,
    pub latest: Option<String>,
    pub customers: u64,
    pub failed: u64,
    pub drifted: u64,
}

/// Stacks whose name contains `q` (all when empty), with their published versions,
/// the latest stable one, and how many customers run, failed and drifted on each:
/// one pass over `fleet_cells_stack_state`, never the cells themselves.
pub fn stacks(conn: &Connection, q: &str) -> rusqlite::Result<Vec<StackLine>> {
    let pattern = contains_pattern(q.trim());
    conn.prepare_cached(
        "WITH cells AS (SELECT stack, COUNT(version) AS running, SUM(failed) AS failed,
                 SUM(drifted) AS drifted
                 FROM fleet_cells INDEXED BY fleet_cells_stack_state GROUP BY stack),
             names AS (SELECT stack FROM releases UNION SELECT stack FROM cells)
         SELECT n.stack,
             (SELECT COUNT(*) FROM releases r WHERE r.stack = n.stack),
             (SELECT version FROM releases r WHERE r.stack = n.stack AND r.stable = 1
                 ORDER BY version_key DESC LIMIT 1),
             COALESCE(c.running, 0), COALESCE(c.failed, 0), COALESCE(c.drifted, 0)
         FROM names n LEFT JOIN cells c ON c.stack = n.stack
         WHERE n.stack LIKE ?1 ESCAPE '\\' ORDER BY n.stack",
    )?
    .query_map(params![pattern], |r| {
        Ok(StackLine {
            stack: r.get(0)?,
            versions: r.get::<_, i64>(1)? as u64,
            latest: r.get(2)?,
            customers: r.get::<_, i64>(3)? as u64,
            failed: r.get::<_, i64>(4)? as u64,
            drifted: r.get::<_, i64>(5)? as u64,
        })
    })?
    .collect()
}

/// One version of a stack with how many customers run it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionLine {
    pub version: String,
    pub published_at: Option<String>,
    pub prerelease: bool,
    pub customers: u64,
}

/// A stack's versions, newest first: those published and those customers run
/// (a bundle kept in another registry may be run without being recorded here),
/// counted from `fleet_cells_stack_state`.
pub fn versions(conn: &Connection, stack: &str) -> rusqlite::Result<Vec<VersionLine>> {
    let mut running: std::collections::HashMap<String, u64> = conn
        .prepare_cached(
            "SELECT version, COUNT(*) FROM fleet_cells INDEXED BY fleet_cells_stack_state
             WHERE stack = ?1 AND version IS NOT NULL GROUP BY version",
        )?
        .query_map(params![stack], |r| {
            Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut lines: Vec<(Option<Vec<u8>>, VersionLine)> = conn
        .prepare_cached(
            "SELECT version, version_key, published_at, prerelease FROM releases WHERE stack = ?1",
        )?
        .query_map(params![stack], |r| {
            let version: String = r.get(0)?;
            Ok((
                r.get::<_, Option<Vec<u8>>>(1)?,
                VersionLine {
                    customers: 0,
                    version,
                    published_at: r.get(2)?,
                    prerelease: r.get::<_, i64>(3)? != 0,
                },
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (_, line) in &mut lines {
        line.customers = running.remove(&line.version).unwrap_or(0);
    }
    for (version, customers) in running {
        let parsed = semver::Version::parse(&version).ok();
        lines.push((
            parsed.as_ref().map(crate::version_key::of),
            VersionLine {
                prerelease: parsed.as_ref().is_some_and(|v| !v.pre.is_empty()),
                version,
                published_at: None,
                customers,
            },
        ));
    }
    lines.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(lines.into_iter().map(|(_, line)| line).collect())
}

/// Per stack of a customer, the receipts that say why it stands as it does: the
/// newest failed attempt that nothing has mended yet (no successful apply after it:
/// a failed upgrade rolled back still says why the customer is not on the new
/// version), the drift report when it drifted, and the newest receipt of any kind
/// (what runner reported last).
#[derive(Clone, Debug, Default)]
pub struct CellReceipts {
    pub failed: Option<String>,
    pub drifted: Option<String>,
    pub newest: Option<String>,
}

pub fn cell_receipts(
    conn: &Connection,
    customer: &str,
) -> rusqlite::Result<std::collections::BTreeMap<String, CellReceipts>> {
    conn.prepare_cached(
        "SELECT f.stack,
             (SELECT document FROM receipts r INDEXED BY receipts_current
                 WHERE r.customer = f.customer AND r.stack = f.stack AND r.outcome = 'failed'
                 AND r.kind IN ('apply', 'rollback', 'destroy')
                 AND NOT EXISTS (SELECT 1 FROM receipts s INDEXED BY receipts_current
                     WHERE s.customer = r.customer AND s.stack = r.stack
                     AND s.kind = 'apply' AND s.outcome IN ('succeeded', 'no-changes')
                     AND s.finished_ns > r.finished_ns)
                 ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1),
             d.document,
             (SELECT document FROM receipts r WHERE r.customer = f.customer AND r.stack = f.stack
                 ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1)
         FROM fleet_cells f
         LEFT JOIN receipts d ON d.id = f.drift_id AND f.drifted = 1
         WHERE f.customer = ?1",
    )?
    .query_map(params![customer], |r| {
        Ok((
            r.get::<_, String>(0)?,
            CellReceipts {
                failed: r.get(1)?,
                drifted: r.get(2)?,
                newest: r.get(3)?,
            },
        ))
    })?
    .collect()
}
