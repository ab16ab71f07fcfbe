//! A customer's details (`customer set`) and the index pages' searches: customers
//! by id, name, account, stack or version; stacks and their versions with how many
//! customers run each. Every search value is a bound parameter, never SQL text.
//!
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL.
//! PostgreSQL has `customers` and `fleet_cells` (PG4), `receipts` (PG5), and
//! `releases` and `fleet_stack_versions` (PG7), which `stacks`, `versions` and
//! `cell_receipts` also read.

use super::sql::{from_rows, Decode, Dialects, FromRow, Row, Sql};
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
pub fn set_details<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    d: &Details,
    now: &str,
) -> Result<(), C::Error> {
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
                &format!("UPDATE customers SET {column} = $2 WHERE id = $1"),
                &[id.into(), value.into()],
            )?;
        }
    }
    Ok(())
}

pub fn details<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<Option<Details>, C::Error> {
    let row = conn.query_opt(
        "SELECT account, region, environment, contact, notes FROM customers WHERE id = $1",
        &[id.into()],
    )?;
    Ok(row.as_ref().map(Details::from_row).transpose()?)
}

impl FromRow for Details {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Details {
            account: r.get("account")?,
            region: r.get("region")?,
            environment: r.get("environment")?,
            contact: r.get("contact")?,
            notes: r.get("notes")?,
        })
    }
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
/// literally (the query says `ESCAPE '\'`), in ASCII lower case: the queries
/// compare it with `lower(column)`, since SQLite's `LIKE` sets ASCII case aside and
/// PostgreSQL's does not. Both `lower`s fold ASCII only (SQLite's always, and
/// PostgreSQL's on the `"C"` columns searched), so a search matches the same on both.
pub fn contains_pattern(text: &str) -> String {
    let mut out = String::from("%");
    for c in text.to_ascii_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

const SEARCH: Dialects = Dialects {
    sqlite: "SELECT c.id, c.name, c.environment, c.account, c.region, c.last_seen,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.version IS NOT NULL)
                 AS stacks,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.failed = 1)
                 AS failed,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.drifted = 1)
                 AS drifted
         FROM customers c
         WHERE c.id IN (
             SELECT id FROM (SELECT id FROM customers
                 WHERE $1 = '' OR lower(id) LIKE $2 ESCAPE '\\'
                     OR lower(name) LIKE $2 ESCAPE '\\' OR lower(account) LIKE $2 ESCAPE '\\'
                 ORDER BY id LIMIT $3) AS by_text
             UNION ALL SELECT customer FROM (SELECT customer
                 FROM fleet_cells INDEXED BY fleet_cells_stack
                 WHERE stack = $1 AND attempt_id IS NOT NULL ORDER BY customer LIMIT $3) AS by_stack
             UNION ALL SELECT customer FROM (SELECT customer
                 FROM fleet_cells INDEXED BY fleet_cells_stack_unattempted
                 WHERE stack = $1 AND attempt_id IS NULL ORDER BY customer LIMIT $3)
                 AS by_unattempted_stack
             UNION ALL SELECT customer FROM (SELECT DISTINCT customer
                 FROM fleet_cells INDEXED BY fleet_cells_version_customer
                 WHERE version = $1 AND attempt_id IS NOT NULL ORDER BY customer LIMIT $3)
                 AS by_version)
         ORDER BY c.id LIMIT $3",
    postgres: "SELECT c.id, c.name, c.environment, c.account, c.region, c.last_seen,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.version IS NOT NULL)
                 AS stacks,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.failed = 1)
                 AS failed,
             (SELECT COUNT(*) FROM fleet_cells f WHERE f.customer = c.id AND f.drifted = 1)
                 AS drifted
         FROM customers c
         WHERE c.id IN (
             SELECT id FROM (SELECT id FROM customers
                 WHERE $1 = '' OR lower(id) LIKE $2 ESCAPE '\\'
                     OR lower(name) LIKE $2 ESCAPE '\\' OR lower(account) LIKE $2 ESCAPE '\\'
                 ORDER BY id LIMIT $3) AS by_text
             UNION ALL SELECT customer FROM (SELECT customer
                 FROM fleet_cells
                 WHERE stack = $1 AND attempt_id IS NOT NULL ORDER BY customer LIMIT $3) AS by_stack
             UNION ALL SELECT customer FROM (SELECT customer
                 FROM fleet_cells
                 WHERE stack = $1 AND attempt_id IS NULL ORDER BY customer LIMIT $3)
                 AS by_unattempted_stack
             UNION ALL SELECT customer FROM (SELECT DISTINCT customer
                 FROM fleet_cells
                 WHERE version = $1 AND attempt_id IS NOT NULL ORDER BY customer LIMIT $3)
                 AS by_version)
         ORDER BY c.id LIMIT $3",
};

/// Customers whose id, name or account contains `q`, or who run a stack named `q`
/// or a version `q` of any stack; all customers when `q` is empty. At most `limit`,
/// by id.
///
/// Each way of matching gives its own first `limit` customers by id, read in id
/// order off an index and stopped there (a version most of the fleet runs would
/// otherwise gather every one of its cells); the first `limit` of their union are
/// the first `limit` of all matches. (`INDEXED BY` holds SQLite to those indexes;
/// PostgreSQL's text has none, see `sql::Dialects`.)
pub fn search<C: Sql + ?Sized>(
    conn: &C,
    q: &str,
    limit: u64,
) -> Result<Vec<CustomerLine>, C::Error> {
    let q = q.trim();
    let pattern = contains_pattern(q);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = conn.query(
        conn.text(&SEARCH),
        &[q.into(), pattern.as_str().into(), limit.into()],
    )?;
    Ok(from_rows(&rows)?)
}

impl FromRow for CustomerLine {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(CustomerLine {
            id: r.get("id")?,
            name: r.get("name")?,
            environment: r.get("environment")?,
            account: r.get("account")?,
            region: r.get("region")?,
            last_seen: r.get("last_seen")?,
            stacks: r.get("stacks")?,
            failed: r.get("failed")?,
            drifted: r.get("drifted")?,
        })
    }
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

const STACKS: &str = "WITH cells AS (SELECT stack,
                 SUM(CASE WHEN version <> '' THEN cells ELSE 0 END) AS running,
                 SUM(failed) AS failed, SUM(drifted) AS drifted
                 FROM fleet_stack_versions GROUP BY stack HAVING SUM(cells) > 0),
             names AS (SELECT stack FROM releases UNION SELECT stack FROM cells)
         SELECT n.stack,
             (SELECT COUNT(*) FROM releases r WHERE r.stack = n.stack) AS versions,
             (SELECT version FROM releases r WHERE r.stack = n.stack AND r.stable = 1
                 ORDER BY version_key DESC LIMIT 1) AS latest,
             CAST(COALESCE(c.running, 0) AS BIGINT) AS customers,
             CAST(COALESCE(c.failed, 0) AS BIGINT) AS failed,
             CAST(COALESCE(c.drifted, 0) AS BIGINT) AS drifted
         FROM names n LEFT JOIN cells c ON c.stack = n.stack
         WHERE lower(n.stack) LIKE $1 ESCAPE '\\' ORDER BY n.stack";

/// Stacks whose name contains `q` (all when empty), with their published versions,
/// the latest stable one, and how many customers run, failed and drifted on each:
/// summed from `fleet_stack_versions` (a row per stack and version, kept as cells
/// change), never the cells themselves. (PostgreSQL's `SUM` of a `BIGINT` is a
/// `NUMERIC`, hence the casts.)
pub fn stacks<C: Sql + ?Sized>(conn: &C, q: &str) -> Result<Vec<StackLine>, C::Error> {
    let pattern = contains_pattern(q.trim());
    let rows = conn.query(STACKS, &[pattern.as_str().into()])?;
    Ok(from_rows(&rows)?)
}

impl FromRow for StackLine {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(StackLine {
            stack: r.get("stack")?,
            versions: r.get("versions")?,
            latest: r.get("latest")?,
            customers: r.get("customers")?,
            failed: r.get("failed")?,
            drifted: r.get("drifted")?,
        })
    }
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
/// counted in `fleet_stack_versions`.
pub fn versions<C: Sql + ?Sized>(conn: &C, stack: &str) -> Result<Vec<VersionLine>, C::Error> {
    let mut running = std::collections::HashMap::<String, u64>::new();
    for r in conn.query(
        "SELECT version, cells FROM fleet_stack_versions
         WHERE stack = $1 AND version <> '' AND cells > 0",
        &[stack.into()],
    )? {
        running.insert(r.get("version")?, r.get("cells")?);
    }
    let published = conn.query(
        "SELECT version, version_key, published_at, prerelease FROM releases WHERE stack = $1",
        &[stack.into()],
    )?;
    let line = |r: &Row| {
        Ok::<_, Decode>((
            r.get::<Option<Vec<u8>>>("version_key")?,
            VersionLine {
                customers: 0,
                version: r.get("version")?,
                published_at: r.get("published_at")?,
                prerelease: r.get::<i64>("prerelease")? != 0,
            },
        ))
    };
    let mut lines: Vec<(Option<Vec<u8>>, VersionLine)> =
        published.iter().map(line).collect::<Result<_, _>>()?;
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
/// newest failed attempt that nothing has mended yet (no successful apply after it,
/// nor a successful plan after a failed plan: a failed upgrade rolled back still
/// says why the customer is not on the new version), the drift report when it drifted, and the newest receipt of any kind
/// (what runner reported last).
#[derive(Clone, Debug, Default)]
pub struct CellReceipts {
    pub failed: Option<String>,
    pub drifted: Option<String>,
    pub newest: Option<String>,
}

/// Per stack of a customer: its newest failure not followed by a success, its
/// drift and its newest receipt (`INDEXED BY` reads the failures through
/// `receipts_current`).
const CELL_RECEIPTS: Dialects = Dialects {
    sqlite: "SELECT f.stack,
         (SELECT document FROM receipts r INDEXED BY receipts_current
             WHERE r.customer = f.customer AND r.stack = f.stack AND r.outcome = 'failed'
             AND r.kind IN ('apply', 'rollback', 'destroy', 'plan')
             AND NOT EXISTS (SELECT 1 FROM receipts s INDEXED BY receipts_current
                 WHERE s.customer = r.customer AND s.stack = r.stack
                 AND (s.kind = 'apply' OR (r.kind = 'plan' AND s.kind = 'plan'))
                 AND s.outcome IN ('succeeded', 'no-changes')
                 AND s.finished_ns > r.finished_ns)
             ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1) AS failed,
         d.document AS drifted,
         (SELECT document FROM receipts r WHERE r.customer = f.customer AND r.stack = f.stack
             ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1) AS newest
     FROM fleet_cells f
     LEFT JOIN receipts d ON d.id = f.drift_id AND f.drifted = 1
     WHERE f.customer = $1",
    postgres: "SELECT f.stack,
         (SELECT document FROM receipts r
             WHERE r.customer = f.customer AND r.stack = f.stack AND r.outcome = 'failed'
             AND r.kind IN ('apply', 'rollback', 'destroy', 'plan')
             AND NOT EXISTS (SELECT 1 FROM receipts s
                 WHERE s.customer = r.customer AND s.stack = r.stack
                 AND (s.kind = 'apply' OR (r.kind = 'plan' AND s.kind = 'plan'))
                 AND s.outcome IN ('succeeded', 'no-changes')
                 AND s.finished_ns > r.finished_ns)
             ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1) AS failed,
         d.document AS drifted,
         (SELECT document FROM receipts r WHERE r.customer = f.customer AND r.stack = f.stack
             ORDER BY r.finished_ns DESC, r.received_at DESC, r.id LIMIT 1) AS newest
     FROM fleet_cells f
     LEFT JOIN receipts d ON d.id = f.drift_id AND f.drifted = 1
     WHERE f.customer = $1",
};

pub fn cell_receipts<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<std::collections::BTreeMap<String, CellReceipts>, C::Error> {
    let rows = conn.query(conn.text(&CELL_RECEIPTS), &[customer.into()])?;
    let cell = |r: &Row| {
        Ok::<_, Decode>((
            r.get::<String>("stack")?,
            CellReceipts {
                failed: r.get("failed")?,
                drifted: r.get("drifted")?,
                newest: r.get("newest")?,
            },
        ))
    };
    Ok(rows.iter().map(cell).collect::<Result<_, _>>()?)
}

/// The plans SQLite picks for the indexes' statements, by name (`search`,
/// `stacks`), one line per step, for the test that holds them to their indexes.
pub fn index_plans(
    conn: &rusqlite::Connection,
) -> rusqlite::Result<Vec<(&'static str, Vec<String>)>> {
    let search: [&dyn rusqlite::ToSql; 3] = [&"1.19.0", &"%1.19.0%", &201i64];
    let stacks: [&dyn rusqlite::ToSql; 1] = [&"%%"];
    [
        ("search", SEARCH.sqlite, &search[..]),
        ("stacks", STACKS, &stacks[..]),
    ]
    .into_iter()
    .map(|(name, sql, values)| Ok((name, super::query_plan(conn, sql, values)?)))
    .collect()
}
