//! Support's fleet-wide questions, answered a page at a time from `fleet_cells`
//! and `customers` alone: every filter is a column of a cell (kept current as
//! receipts and releases arrive) with an index of its own, and pages follow the key
//! order `(customer, stack)`, so a page costs its rows, never the fleet.
//! `tests/it/query_plans.rs` holds each query to its index.
//!
//! Written against [`Sql`], so the pages answer the same on SQLite and PostgreSQL
//! (PG4's `fleet_cells` and `customers`, PG7's `fleet_stack_versions`, kept by a
//! trigger function as SQLite's V16 triggers keep it). The plan helpers
//! ([`fleet_plan`], [`running_plan`]) are SQLite's alone.

use rusqlite::Connection;
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use super::sql::{Decode, Dialect, FromRow, Param, Row, Sql};

use crate::api::{Attempt, Customer, Deployment, FleetRow, Running};
use crate::timestamp::Timestamp;

/// Which fleet rows to keep; every filter given must hold. Versions are compared by
/// their precedence keys ([`crate::version_key`]).
#[derive(Clone, Debug, Default)]
pub struct Filter<'a> {
    pub customer: Option<&'a str>,
    pub environment: Option<&'a str>,
    pub stack: Option<&'a str>,
    pub behind: bool,
    pub prerelease: bool,
    pub drifted: bool,
    pub failed: bool,
    /// Only customers whose last receipt finished before this time (UTC
    /// nanoseconds), or that never reported.
    pub silent_before_ns: Option<i64>,
    pub version: Option<&'a str>,
    pub digest: Option<&'a str>,
    pub below_key: Option<Vec<u8>>,
    pub module: Option<&'a str>,
    pub module_below_key: Option<Vec<u8>>,
}

impl Filter<'_> {
    /// True when the filter keeps only rows with a stack: those come from cells, and
    /// a customer that never reported (a row without a stack) cannot pass.
    fn needs_a_cell(&self) -> bool {
        self.stack.is_some()
            || self.behind
            || self.prerelease
            || self.drifted
            || self.failed
            || self.version.is_some()
            || self.digest.is_some()
            || self.below_key.is_some()
            || self.module.is_some()
    }
}

/// A statement being written with its parameters, numbered as they are bound.
#[derive(Default)]
struct Statement<'a> {
    conditions: Vec<String>,
    params: Vec<Param<'a>>,
}

impl<'a> Statement<'a> {
    /// Binds `value` and returns its placeholder.
    fn bind(&mut self, value: impl Into<Param<'a>>) -> String {
        self.params.push(value.into());
        format!("${}", self.params.len())
    }

    fn when(&mut self, condition: impl Into<String>) {
        self.conditions.push(condition.into());
    }

    /// The conditions joined; `1 = 1` for none (PostgreSQL wants a boolean, not `1`).
    fn condition(&self) -> String {
        if self.conditions.is_empty() {
            "1 = 1".into()
        } else {
            self.conditions.join(" AND ")
        }
    }
}

/// The columns of a fleet row, by the names [`fleet_row`] reads. The newest
/// stable release is found through `releases_stable`, one indexed step per row.
const FLEET_COLUMNS: &str = "c.id AS customer, c.environment, f.stack, f.version, f.digest,
    f.since, f.attempt_kind, f.attempt_outcome, f.attempt_version, f.attempt_finished_at,
    f.attempt_id,
    (SELECT l.version FROM releases l WHERE l.stack = f.stack AND l.stable = 1
     ORDER BY l.version_key DESC LIMIT 1) AS latest_stable,
    COALESCE(f.behind, 0) AS behind, COALESCE(f.prerelease, 0) AS prerelease,
    COALESCE(f.drifted, 0) AS drifted, c.last_seen,
    c.registered_at IS NOT NULL AS registered";

fn fleet_row(r: &Row, stale_before_ns: i64) -> Result<FleetRow, Decode> {
    let last_seen: Option<Timestamp> = r.get("last_seen")?;
    let seen_ns = last_seen.as_ref().map(|t| t.at().unix_timestamp_nanos());
    let kind: Option<ReceiptKind> = r.parsed_opt("attempt_kind")?;
    Ok(FleetRow {
        customer: r.get("customer")?,
        environment: r.get("environment")?,
        stack: r.get("stack")?,
        version: r.parsed_opt("version")?,
        digest: r.parsed_opt("digest")?,
        since: r.get("since")?,
        last_attempt: match kind {
            Some(kind) => Some(Attempt {
                kind,
                outcome: r.parsed("attempt_outcome")?,
                version: r.parsed("attempt_version")?,
                finished_at: r.get("attempt_finished_at")?,
                receipt_id: r.get("attempt_id")?,
                reason: None,
            }),
            None => None,
        },
        latest_stable: r.parsed_opt("latest_stable")?,
        behind: r.get::<i64>("behind")?.max(0) as u64,
        prerelease: r.get("prerelease")?,
        drifted: r.get("drifted")?,
        last_seen,
        stale: seen_ns.is_none_or(|ns| ns < i128::from(stale_before_ns)),
        registered: r.get("registered")?,
    })
}

/// Up to this many cells running a bundle that carries a module are found through
/// the index and sorted; more are found by reading cells in key order.
const FEW_CARRIER_CELLS: u64 = 20_000;

/// How a module filter finds its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carriers {
    Few,
    Many,
}

/// How many cells (counting at most one more than [`FEW_CARRIER_CELLS`]) run a
/// release that vendors `module` (below the version key `below`, when given).
/// (`AS carriers`: PostgreSQL wants a name for a subquery in `FROM`.)
fn carrier_cells<C: Sql + ?Sized>(
    conn: &C,
    module: &str,
    below: Option<&[u8]>,
) -> Result<u64, C::Error> {
    let mut params = vec![Param::from(module)];
    let below_is = match below {
        Some(key) => {
            params.push(key.into());
            "AND m.module_version_key < $2"
        }
        None => "",
    };
    let row = conn.query_one(
        &format!(
            "SELECT COUNT(*) AS n FROM (SELECT 1 FROM fleet_cells f
             WHERE f.attempt_id IS NOT NULL AND (f.version, f.stack) IN (
                 SELECT m.version, m.stack FROM release_modules m WHERE m.module = $1 {below_is})
             LIMIT {}) AS carriers",
            FEW_CARRIER_CELLS + 1
        ),
        &params,
    )?;
    Ok(row.get("n")?)
}

/// One page of the fleet matrix: up to `limit` rows after the row `after`
/// (`(customer, stack)`, the stack empty for a customer that never reported), by
/// customer then stack. A customer is silent when its last receipt finished before
/// `stale_before_ns`. A cell is a row once an apply, rollback, destroy or plan
/// was reported for it.
pub fn fleet_page<C: Sql + ?Sized>(
    conn: &C,
    filter: &Filter<'_>,
    stale_before_ns: i64,
    after: Option<(&str, &str)>,
    limit: usize,
) -> Result<Vec<FleetRow>, C::Error> {
    let carriers = match filter.module {
        Some(module) => match carrier_cells(conn, module, filter.module_below_key.as_deref())? {
            0 => return Ok(Vec::new()),
            n if n <= FEW_CARRIER_CELLS => Carriers::Few,
            _ => Carriers::Many,
        },
        None => Carriers::Many,
    };
    let (sql, q) = fleet_statement(conn.dialect(), filter, carriers, after, limit);
    let rows = conn.query(&sql, &q.params)?;
    let mut rows: Vec<FleetRow> = rows
        .iter()
        .map(|r| fleet_row(r, stale_before_ns))
        .collect::<Result<_, _>>()?;
    for attempt in rows.iter_mut().filter_map(|r| r.last_attempt.as_mut()) {
        if attempt.outcome == Outcome::Failed {
            attempt.reason = super::ledger::failure_reason(conn, &attempt.receipt_id)?;
        }
    }
    Ok(rows)
}

fn fleet_statement<'a>(
    dialect: Dialect,
    filter: &'a Filter<'a>,
    carriers: Carriers,
    after: Option<(&'a str, &'a str)>,
    limit: usize,
) -> (String, Statement<'a>) {
    let mut q = Statement::default();
    let from = if filter.needs_a_cell() {
        cell_conditions(&mut q, dialect, filter, carriers, after);
        "fleet_cells f JOIN customers c ON c.id = f.customer"
    } else {
        // Driven by the customers (by id, or through an index on environment or last
        // seen), each with its cells in key order; one that never reported is one
        // row without a stack.
        if let Some((customer, stack)) = after {
            let (c, s) = (q.bind(customer), q.bind(stack));
            q.when(format!("c.id >= {c} AND (c.id > {c} OR f.stack > {s})"));
        }
        if let Some(customer) = filter.customer {
            let p = q.bind(customer);
            q.when(format!("c.id = {p}"));
        }
        "customers c LEFT JOIN fleet_cells f ON f.customer = c.id AND f.attempt_id IS NOT NULL"
    };
    // Driven by the cells, the customer's environment and silence are checked on
    // each cell's customer (not driving by their indexes, which would read every
    // production customer's cells to find a few prereleases).
    let customer_column = if filter.needs_a_cell() {
        not_by_index(dialect, "c")
    } else {
        "c".to_string()
    };
    if let Some(environment) = filter.environment {
        let p = q.bind(environment);
        q.when(format!("{customer_column}.environment = {p}"));
    }
    if let Some(before) = filter.silent_before_ns {
        let p = q.bind(before);
        q.when(format!(
            "({customer_column}.last_seen_ns IS NULL OR {customer_column}.last_seen_ns < {p})"
        ));
    }
    let order = if filter.needs_a_cell() {
        "f.customer, f.stack"
    } else {
        "c.id, f.stack"
    };
    let limit = q.bind(limit as i64);
    let sql = format!(
        "SELECT {FLEET_COLUMNS} FROM {from} WHERE {} ORDER BY {order} LIMIT {limit}",
        q.condition()
    );
    (sql, q)
}

/// The conditions of a page driven by the cells: each flag has a partial index in
/// key order, so the page is read straight off it.
fn cell_conditions<'a>(
    q: &mut Statement<'a>,
    dialect: Dialect,
    filter: &'a Filter<'a>,
    carriers: Carriers,
    after: Option<(&'a str, &'a str)>,
) {
    q.when("f.attempt_id IS NOT NULL");
    if let Some((customer, stack)) = after {
        let (c, s) = (q.bind(customer), q.bind(stack));
        q.when(format!("(f.customer, f.stack) > ({c}, {s})"));
    }
    if let Some(customer) = filter.customer {
        let p = q.bind(customer);
        q.when(format!("f.customer = {p}"));
    }
    if let Some(stack) = filter.stack {
        let p = q.bind(stack);
        q.when(format!("f.stack = {p}"));
    }
    if filter.behind {
        q.when("f.behind > 0");
    }
    if filter.prerelease {
        q.when("f.prerelease = 1");
    }
    if filter.drifted {
        q.when("f.drifted = 1");
    }
    if filter.failed {
        q.when("f.failed = 1");
    }
    if let Some(version) = filter.version {
        let p = q.bind(version);
        q.when(format!("f.version = {p}"));
    }
    if let Some(digest) = filter.digest {
        let p = q.bind(digest);
        q.when(format!("f.digest = {p}"));
    }
    if let Some(key) = &filter.below_key {
        let p = q.bind(key.as_slice());
        // With a stack, its cells are read in customer order and the version
        // checked on each, so a page stops after its rows instead of sorting
        // every cell below the version.
        let column = if filter.stack.is_some() {
            not_by_index(dialect, "f.version_key")
        } else {
            "f.version_key".to_string()
        };
        q.when(format!("{column} < {p}"));
    }
    if let Some(module) = filter.module {
        let m = q.bind(module);
        let below = match &filter.module_below_key {
            Some(key) => format!("AND m.module_version_key < {}", q.bind(key.as_slice())),
            None => String::new(),
        };
        q.when(match carriers {
            // Few cells run a carrier: found through `fleet_cells_version`, then
            // sorted (at most `FEW_CARRIER_CELLS` of them).
            Carriers::Few => format!(
                "(f.version, f.stack) IN (SELECT m.version, m.stack FROM release_modules m
                 WHERE m.module = {m} {below})"
            ),
            // Many do: cells in key order, each checked, a page found quickly.
            Carriers::Many => format!(
                "EXISTS (SELECT 1 FROM release_modules m WHERE m.stack = f.stack
                 AND m.version = f.version AND m.module = {m} {below})"
            ),
        });
    }
}

/// How many customers run `version` of `stack` now.
pub fn runner_count<C: Sql + ?Sized>(
    conn: &C,
    stack: &str,
    version: &str,
) -> Result<u64, C::Error> {
    let row = conn.query_one(
        "SELECT COUNT(*) AS n FROM fleet_cells f
         WHERE f.version = $2 AND f.stack = $1 AND f.attempt_id IS NOT NULL",
        &[stack.into(), version.into()],
    )?;
    Ok(row.get("n")?)
}

/// Which of support's lists of what customers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunningList {
    Everything,
    Behind,
    Prerelease,
    Drifted,
}

/// One page of what customers run (a version in place, not destroyed since), after
/// `(customer, stack)`, by customer then stack: everyone's, or one customer's.
pub fn running_page<C: Sql + ?Sized>(
    conn: &C,
    list: RunningList,
    customer: Option<&str>,
    after: Option<(&str, &str)>,
    limit: usize,
) -> Result<Vec<Running>, C::Error> {
    let (sql, q) = running_statement(list, customer, after, limit);
    let running = |r: &Row| {
        Ok::<_, Decode>(Running {
            customer: r.get("customer")?,
            stack: r.get("stack")?,
            version: r.parsed("version")?,
            digest: r.parsed("digest")?,
            since: r.get("since")?,
            receipt_id: r.get("current_id")?,
            latest_stable: r.parsed_opt("latest_stable")?,
            behind: r.get("behind")?,
            prerelease: r.get("prerelease")?,
            drifted: r.get("drifted")?,
        })
    };
    Ok(conn
        .query(&sql, &q.params)?
        .iter()
        .map(running)
        .collect::<Result<_, _>>()?)
}

fn running_statement<'a>(
    list: RunningList,
    customer: Option<&'a str>,
    after: Option<(&'a str, &'a str)>,
    limit: usize,
) -> (String, Statement<'a>) {
    let mut q = Statement::default();
    q.when("f.version IS NOT NULL");
    q.when(match list {
        RunningList::Everything => "1 = 1",
        RunningList::Behind => "f.behind > 0",
        RunningList::Prerelease => "f.prerelease = 1",
        RunningList::Drifted => "f.drifted = 1",
    });
    if let Some(customer) = customer {
        let p = q.bind(customer);
        q.when(format!("f.customer = {p}"));
    }
    if let Some((customer, stack)) = after {
        let (c, s) = (q.bind(customer), q.bind(stack));
        q.when(format!("(f.customer, f.stack) > ({c}, {s})"));
    }
    let limit = q.bind(limit as i64);
    let sql = format!(
        "SELECT f.customer, f.stack, f.version, f.digest, f.since, f.current_id,
             (SELECT l.version FROM releases l WHERE l.stack = f.stack AND l.stable = 1
              ORDER BY l.version_key DESC LIMIT 1) AS latest_stable,
             f.behind > 0 AS behind, f.prerelease, f.drifted
         FROM fleet_cells f WHERE {} ORDER BY f.customer, f.stack LIMIT {limit}",
        q.condition()
    );
    (sql, q)
}

/// One page of customers after id `after`, by id; only the silent ones (last
/// receipt before `silent_before_ns`, or none) when asked.
pub fn customers_page<C: Sql + ?Sized>(
    conn: &C,
    silent_before_ns: Option<i64>,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Customer>, C::Error> {
    let mut q = Statement::default();
    if let Some(after) = after {
        let p = q.bind(after);
        q.when(format!("c.id > {p}"));
    }
    if let Some(before) = silent_before_ns {
        let p = q.bind(before);
        q.when(format!("(c.last_seen_ns IS NULL OR c.last_seen_ns < {p})"));
    }
    let limit = q.bind(limit as i64);
    let sql = format!(
        "{} WHERE {} ORDER BY c.id LIMIT {limit}",
        super::ledger::CUSTOMER_SELECT,
        q.condition()
    );
    Ok(conn
        .query(&sql, &q.params)?
        .iter()
        .map(<Customer as FromRow>::from_row)
        .collect::<Result<_, _>>()?)
}

/// One page of a customer's receipts, oldest first, after the receipt `after`.
pub fn history_page<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Deployment>, C::Error> {
    let mut q = Statement::default();
    let c = q.bind(customer);
    q.when(format!("customer = {c}"));
    if let Some(after) = after {
        let p = q.bind(after);
        q.when(format!(
            "(finished_ns, received_at, id) > (SELECT finished_ns, received_at, id
                 FROM receipts WHERE id = {p} AND customer = {c})"
        ));
    }
    let limit = q.bind(limit as i64);
    let sql = format!(
        "SELECT {} FROM receipts WHERE {} ORDER BY finished_ns, received_at, id LIMIT {limit}",
        super::ledger::DEPLOYMENT_COLUMNS,
        q.condition()
    );
    let mut rows: Vec<Deployment> = conn
        .query(&sql, &q.params)?
        .iter()
        .map(<Deployment as FromRow>::from_row)
        .collect::<Result<_, _>>()?;
    for d in rows.iter_mut().filter(|d| d.outcome == Outcome::Failed) {
        d.reason = super::ledger::failure_reason(conn, &d.receipt_id)?;
    }
    Ok(rows)
}

/// The plan SQLite picks for a statement, one line per step (`SCAN f`, `SEARCH f
/// USING INDEX …`, `USE TEMP B-TREE FOR ORDER BY`).
fn plan(conn: &Connection, (sql, q): (String, Statement<'_>)) -> rusqlite::Result<Vec<String>> {
    let values: Vec<&dyn rusqlite::ToSql> = q.params.iter().map(|p| p as _).collect();
    super::query_plan(conn, &sql, &values)
}

/// `column` written so that SQLite does not drive a query by its index (a unary
/// `+`, SQLite's way of saying so); PostgreSQL has no such syntax (no unary `+` for
/// text or bytes) and plans by its own statistics.
fn not_by_index(dialect: Dialect, column: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("+{column}"),
        Dialect::Postgres => column.to_string(),
    }
}

/// The plan of a fleet page with `filter` (after a cursor when `after`), for the
/// test that holds every filter to its index.
pub fn fleet_plan(
    conn: &Connection,
    filter: &Filter<'_>,
    carriers: Carriers,
    after: Option<(&str, &str)>,
) -> rusqlite::Result<Vec<String>> {
    plan(
        conn,
        fleet_statement(Dialect::Sqlite, filter, carriers, after, 100),
    )
}

/// The plan of a page of one of support's lists.
pub fn running_plan(
    conn: &Connection,
    list: RunningList,
    after: Option<(&str, &str)>,
) -> rusqlite::Result<Vec<String>> {
    plan(conn, running_statement(list, None, after, 100))
}
