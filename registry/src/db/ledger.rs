//! The ledger: releases, customers, installation keys and receipts.

use rusqlite::{params, Connection, OptionalExtension, Row};
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use semver::Version;
use stackpack_schema::Digest;

use super::Text;
use crate::api::{Customer, Deployment, Release, ReleaseModule, Source};
use crate::timestamp::Timestamp;

/// Records a release (a stable version is never changed; a prerelease may be
/// re-pushed with another digest). A new stable version moves every cell of its stack
/// one further behind, so the stack's `behind` counts are worked out again.
pub fn upsert_release(conn: &Connection, r: &Release) -> rusqlite::Result<()> {
    let stable = stackpack_schema::version::is_stable(&r.version);
    let changed = conn.execute(
        "INSERT INTO releases (stack, version, repository, digest, source_repository,
             source_commit, source_branch, created, published_at, prerelease, version_key, stable)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
         ON CONFLICT (stack, version) DO UPDATE SET repository = excluded.repository,
             digest = excluded.digest, source_repository = excluded.source_repository,
             source_commit = excluded.source_commit, source_branch = excluded.source_branch,
             created = excluded.created, published_at = excluded.published_at
         WHERE releases.digest <> excluded.digest AND releases.prerelease = 1",
        params![
            r.stack,
            Text(&r.version),
            r.repository,
            Text(&r.digest),
            r.source.repository,
            r.source.commit,
            r.source.branch,
            r.created,
            r.published_at,
            r.prerelease,
            crate::version_key::of(&r.version),
            stable
        ],
    )?;
    if changed > 0 && stable {
        let were_current = super::alerts::up_to_date(conn, &r.stack)?;
        refresh_stack_behind(conn, &r.stack)?;
        super::alerts::note_behind(conn, &r.stack, &r.version.to_string(), &were_current)?;
    }
    Ok(())
}

/// Records which token recorded a stack version (the first one to, for this
/// digest): who pushed what.
pub fn note_pusher(conn: &Connection, r: &Release, token_id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE releases SET pushed_by = ?4
         WHERE stack = ?1 AND version = ?2 AND digest = ?3 AND pushed_by IS NULL",
    )?
    .execute(params![
        r.stack,
        Text(&r.version),
        Text(&r.digest),
        token_id
    ])?;
    Ok(())
}

/// The token that recorded a stack version: its id, and its name if it has one;
/// `None` for versions recorded before tokens were kept.
pub fn pusher(
    conn: &Connection,
    stack: &str,
    version: &str,
) -> rusqlite::Result<Option<(String, Option<String>)>> {
    conn.prepare_cached(
        "SELECT r.pushed_by, t.name FROM releases r LEFT JOIN tokens t ON t.id = r.pushed_by
         WHERE r.stack = ?1 AND r.version = ?2 AND r.pushed_by IS NOT NULL",
    )?
    .query_row(params![stack, version], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
    .optional()
}

/// Works out again how many stable releases are newer than what each cell of
/// `stack` runs: after a stable release of it is recorded or deleted.
pub fn refresh_stack_behind(conn: &Connection, stack: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE fleet_cells SET behind = (SELECT COUNT(*) FROM releases r
             WHERE r.stack = fleet_cells.stack AND r.stable = 1
             AND r.version_key > fleet_cells.version_key)
         WHERE stack = ?1",
    )?
    .execute(params![stack])?;
    Ok(())
}

/// Records the modules a release vendors, replacing what was recorded before, but
/// only while the release recorded is the one these modules came from (a stable
/// version never changes its digest, so a second push changes nothing).
pub fn set_release_modules(conn: &Connection, r: &Release) -> rusqlite::Result<()> {
    if release_digest(conn, &r.stack, &r.version)?.as_ref() != Some(&r.digest) {
        return Ok(());
    }
    conn.execute(
        "DELETE FROM release_modules WHERE stack = ?1 AND version = ?2",
        params![r.stack, Text(&r.version)],
    )?;
    let mut insert = conn.prepare_cached(
        "INSERT OR REPLACE INTO release_modules (stack, version, module, path, module_version,
             digest, module_version_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for m in &r.modules {
        let key = m.version.as_deref().and_then(crate::version_key::of_text);
        insert.execute(params![
            r.stack,
            Text(&r.version),
            m.name,
            m.path,
            m.version,
            m.digest,
            key
        ])?;
    }
    Ok(())
}

/// The modules one release vendors, by path.
pub fn release_modules(
    conn: &Connection,
    stack: &str,
    version: &str,
) -> rusqlite::Result<Vec<ReleaseModule>> {
    conn.prepare_cached(
        "SELECT module, path, module_version, digest FROM release_modules
         WHERE stack = ?1 AND version = ?2 ORDER BY path",
    )?
    .query_map(params![stack, version], |r| {
        Ok(ReleaseModule {
            name: r.get(0)?,
            path: r.get(1)?,
            version: r.get(2)?,
            digest: r.get(3)?,
        })
    })?
    .collect()
}

/// One release, if recorded.
pub fn release(conn: &Connection, stack: &str, version: &str) -> rusqlite::Result<Option<Release>> {
    conn.prepare_cached(
        "SELECT stack, version, repository, digest, source_repository, source_commit,
                source_branch, created, published_at, prerelease
         FROM releases WHERE stack = ?1 AND version = ?2",
    )?
    .query_row(params![stack, version], release_row)
    .optional()
}

fn release_row(r: &Row<'_>) -> rusqlite::Result<Release> {
    Ok(Release {
        stack: r.get(0)?,
        version: super::parsed(r, 1)?,
        repository: r.get(2)?,
        digest: super::parsed(r, 3)?,
        source: Source {
            repository: r.get(4)?,
            commit: r.get(5)?,
            branch: r.get(6)?,
        },
        created: r.get(7)?,
        published_at: r.get(8)?,
        prerelease: r.get(9)?,
        modules: Vec::new(),
    })
}

/// The digest recorded for a stack version, if any.
pub fn release_digest(
    conn: &Connection,
    stack: &str,
    version: &Version,
) -> rusqlite::Result<Option<Digest>> {
    conn.prepare_cached("SELECT digest FROM releases WHERE stack = ?1 AND version = ?2")?
        .query_row(params![stack, Text(version)], |r| super::parsed(r, 0))
        .optional()
}

/// Releases with the modules each vendors, by stack then publication time.
pub fn releases_with_modules(
    conn: &Connection,
    stack: Option<&str>,
) -> rusqlite::Result<Vec<Release>> {
    let mut releases = releases(conn, stack)?;
    let mut modules: std::collections::HashMap<(String, String), Vec<ReleaseModule>> =
        std::collections::HashMap::new();
    let mut query = conn.prepare_cached(
        "SELECT stack, version, module, path, module_version, digest FROM release_modules
         WHERE (?1 IS NULL OR stack = ?1) ORDER BY path",
    )?;
    let rows = query.query_map(params![stack], |r| {
        Ok((
            (r.get(0)?, r.get(1)?),
            ReleaseModule {
                name: r.get(2)?,
                path: r.get(3)?,
                version: r.get(4)?,
                digest: r.get(5)?,
            },
        ))
    })?;
    for row in rows {
        let (key, module) = row?;
        modules.entry(key).or_default().push(module);
    }
    for release in &mut releases {
        if let Some(list) = modules.remove(&(release.stack.clone(), release.version.to_string())) {
            release.modules = list;
        }
    }
    Ok(releases)
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

/// Deletes the releases of a deleted manifest; cells of a stack that lost a stable
/// release have one fewer release to be behind.
pub fn delete_release_by_digest(
    conn: &Connection,
    repo: &str,
    digest: &str,
) -> rusqlite::Result<()> {
    let stacks: Vec<String> = conn
        .prepare_cached(
            "SELECT DISTINCT stack FROM releases WHERE repository = ?1 AND digest = ?2 AND stable = 1",
        )?
        .query_map(params![repo, digest], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    conn.execute(
        "DELETE FROM releases WHERE repository = ?1 AND digest = ?2",
        params![repo, digest],
    )?;
    for stack in stacks {
        refresh_stack_behind(conn, &stack)?;
    }
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

/// Registers the customer (the vendor's act: `customer add`, a customer token),
/// creating it if new; sets the name and environment given.
pub fn register_customer<C: super::sql::Sql + ?Sized>(
    conn: &C,
    id: &str,
    name: Option<&str>,
    environment: Option<&str>,
    now: &str,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO customers (id, name, environment, created, registered_at)
         VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (id) DO UPDATE SET name = COALESCE(excluded.name, customers.name),
             environment = COALESCE(excluded.environment, customers.environment),
             registered_at = COALESCE(customers.registered_at, excluded.registered_at)",
        &[id.into(), name.into(), environment.into(), now.into()],
    )?;
    Ok(())
}

/// Whether the vendor registered the customer (`customer add`, a customer token);
/// false for one unknown or known only from its receipts.
pub fn is_registered(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM customers WHERE id = ?1 AND registered_at IS NOT NULL)",
        params![id],
        |r| r.get(0),
    )
}

/// Creates a customer first known from a receipt, not registered by the vendor.
pub fn note_customer(conn: &Connection, id: &str, now: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR IGNORE INTO customers (id, created) VALUES (?1, ?2)",
        params![id, now],
    )?;
    Ok(())
}

/// Customers with their last receipt's finish time (kept in `last_seen` as receipts
/// arrive). Every receipt registers its customer (and migration 4 registered those
/// from before), so the customers table is the whole list.
/// Its details (`customer set`) come along, so every answer that gives a customer
/// says who and where it is.
pub(crate) const CUSTOMER_SELECT: &str =
    "SELECT c.id, c.name, c.environment, c.created, c.last_seen,
         c.account, c.region, c.contact, c.notes FROM customers c";

pub(crate) fn customer_row(r: &Row<'_>) -> rusqlite::Result<Customer> {
    Ok(Customer {
        id: r.get(0)?,
        name: r.get(1)?,
        environment: r.get(2)?,
        created: r.get(3)?,
        last_seen: r.get(4)?,
        stale: None,
        account: r.get(5)?,
        region: r.get(6)?,
        contact: r.get(7)?,
        notes: r.get(8)?,
    })
}

pub fn customer(conn: &Connection, id: &str) -> rusqlite::Result<Option<Customer>> {
    conn.prepare_cached(&format!("{CUSTOMER_SELECT} WHERE c.id = ?1"))?
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

/// How a customer's installation key came to be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinnedBy {
    /// An admin registered it (`customer key add`, `POST …/keys`).
    Admin,
    /// Pinned on first use by a receipt reported with a token allowed to report for
    /// the customer.
    Report,
    /// Pinned on first use by `receipts import --customer`: the vendor named the
    /// customer, but no token of the customer's vouched for the key.
    Import,
}

impl PinnedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            PinnedBy::Admin => "admin",
            PinnedBy::Report => "report",
            PinnedBy::Import => "import",
        }
    }

    /// `None` for keys pinned before the ledger recorded how (schema version 8).
    fn parse(text: Option<&str>) -> Option<PinnedBy> {
        match text? {
            "admin" => Some(PinnedBy::Admin),
            "report" => Some(PinnedBy::Report),
            "import" => Some(PinnedBy::Import),
            _ => None,
        }
    }
}

/// A customer's installation key as the support views show it.
pub struct InstallationKey {
    pub key_id: String,
    pub revoked: bool,
    pub pinned_by: Option<PinnedBy>,
}

/// A customer's installation keys with their standing and how each was pinned.
pub fn installation_key_standing(
    conn: &Connection,
    customer: &str,
) -> rusqlite::Result<Vec<InstallationKey>> {
    conn.prepare_cached(
        "SELECT key_id, revoked_at IS NOT NULL, pinned_by FROM installation_keys
         WHERE customer = ?1",
    )?
    .query_map(params![customer], |r| {
        Ok(InstallationKey {
            key_id: r.get(0)?,
            revoked: r.get(1)?,
            pinned_by: PinnedBy::parse(r.get::<_, Option<String>>(2)?.as_deref()),
        })
    })?
    .collect()
}

/// The customers a public key (base64 DER) is an installation key of, revoked or not.
pub fn customers_of_key(conn: &Connection, public_key: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT customer FROM installation_keys WHERE public_key = ?1")?
        .query_map(params![public_key], |r| r.get(0))?
        .collect()
}

/// Adds a customer's installation key. An admin adding a key already pinned (from an
/// imported file, say) vouches for it: it is recorded as the admin's from then on.
pub fn add_installation_key(
    conn: &Connection,
    customer: &str,
    key_id: &str,
    public_key: &str,
    now: &str,
    pinned_by: PinnedBy,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO installation_keys (customer, key_id, public_key, first_seen, pinned_by)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (customer, key_id) DO UPDATE SET pinned_by = 'admin'
         WHERE excluded.pinned_by = 'admin'",
        params![customer, key_id, public_key, now, pinned_by.as_str()],
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
             started_at, finished_at, key_id, document, received_at, finished_ns,
             release_name, release_version, release_digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            d.receipt_id,
            d.customer,
            d.stack,
            Text(&d.version),
            Text(&d.digest),
            d.kind.as_str(),
            d.outcome.as_str(),
            d.started_at,
            d.finished_at,
            d.key_id,
            document,
            d.received_at,
            finished_ns,
            d.release.as_ref().map(|r| &r.name),
            d.release.as_ref().map(|r| Text(&r.version)),
            d.release.as_ref().map(|r| Text(&r.digest)),
        ],
    )?;
    Ok(())
}

pub(crate) fn deployment_row(r: &Row<'_>) -> rusqlite::Result<Deployment> {
    Ok(Deployment {
        receipt_id: r.get(0)?,
        customer: r.get(1)?,
        stack: r.get(2)?,
        version: super::parsed(r, 3)?,
        digest: super::parsed(r, 4)?,
        kind: super::parsed(r, 5)?,
        outcome: super::parsed(r, 6)?,
        started_at: r.get(7)?,
        finished_at: r.get(8)?,
        key_id: r.get(9)?,
        received_at: r.get(10)?,
        release: match r.get::<_, Option<String>>(11)? {
            Some(name) => Some(crate::api::DeployedRelease {
                name,
                version: super::parsed(r, 12)?,
                digest: super::parsed(r, 13)?,
            }),
            None => None,
        },
    })
}

pub(crate) const DEPLOYMENT_COLUMNS: &str = "id, customer, stack, version, digest, kind, outcome, started_at, finished_at, key_id, received_at, release_name, release_version, release_digest";

/// Receipts, newest first.
pub fn deployments(
    conn: &Connection,
    customer: Option<&str>,
    stack: Option<&str>,
    limit: u64,
) -> rusqlite::Result<Vec<Deployment>> {
    let customer_is = only("customer", 1, customer.is_some());
    let stack_is = only("stack", 2, stack.is_some());
    conn.prepare_cached(&format!(
        "SELECT {DEPLOYMENT_COLUMNS} FROM receipts WHERE {customer_is} AND {stack_is}
         ORDER BY finished_ns DESC, id LIMIT ?3"
    ))?
    .query_map(params![customer, stack, limit as i64], deployment_row)?
    .collect()
}

/// `column = ?N` when a value is given, else a condition that holds: spelled out per
/// case rather than `?N IS NULL OR column = ?N`, which SQLite cannot answer from an
/// index.
fn only(column: &str, param: u8, given: bool) -> String {
    if given {
        format!("{column} = ?{param}")
    } else {
        format!("?{param} IS NULL")
    }
}

/// What a receipt may be, for each customer and stack, in `fleet_cells`: the column,
/// and whether a receipt of this kind and outcome counts for it.
type Counts = fn(kind: ReceiptKind, outcome: Outcome) -> bool;

const CELLS: [(&str, Counts); 3] = [
    ("current_id", |kind, outcome| {
        kind.changes_deployment() && outcome.in_place()
    }),
    ("attempt_id", |kind, _| kind.changes_deployment()),
    ("drift_id", |kind, outcome| {
        kind == ReceiptKind::Drift
            || (matches!(kind, ReceiptKind::Apply | ReceiptKind::Rollback) && outcome.in_place())
    }),
];

/// Files a newly stored receipt in its customer's and stack's cell wherever it is
/// now the newest of its kind: latest finish time, then latest arrival, then the
/// smaller id, the order in which "what a customer runs" has always been decided.
pub fn note_in_cell(conn: &Connection, d: &Deployment, finished_ns: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO fleet_cells (customer, stack) VALUES (?1, ?2)")?
        .execute(params![d.customer, d.stack])?;
    for (column, counts) in CELLS {
        if !counts(d.kind, d.outcome) {
            continue;
        }
        conn.prepare_cached(&format!(
            "UPDATE fleet_cells SET {column} = ?3 WHERE customer = ?1 AND stack = ?2
             AND ({column} IS NULL OR EXISTS (
                 SELECT 1 FROM receipts o WHERE o.id = fleet_cells.{column}
                 AND (o.finished_ns < ?4 OR (o.finished_ns = ?4
                      AND (o.received_at < ?5 OR (o.received_at = ?5 AND o.id > ?3))))))"
        ))?
        .execute(params![
            d.customer,
            d.stack,
            d.receipt_id,
            finished_ns,
            d.received_at
        ])?;
    }
    conn.prepare_cached(
        "UPDATE customers SET last_seen = ?2, last_seen_ns = ?3
         WHERE id = ?1 AND (last_seen_ns IS NULL OR last_seen_ns < ?3)",
    )?
    .execute(params![d.customer, d.finished_at, finished_ns])?;
    refresh_cells(conn, Some((&d.customer, &d.stack)))
}

/// Whether a receipt changes what its customer runs of its stack: a successful
/// apply or rollback (its version from then on) or destroy (nothing from then on).
fn is_change(d: &Deployment) -> bool {
    d.kind.changes_deployment() && d.outcome.in_place()
}

/// A neighbouring change: the version it leaves in place (none for a destroy) and
/// its day.
type Neighbour = (Option<String>, String);

/// The change of a customer's stack just before a change (`?3` finish time, `?4`
/// arrival, `?5` id): read through `receipts_current` (customer, stack, finish
/// time), a handful of rows; without `INDEXED BY`, SQLite may pick `receipts_stack`
/// (stack, finish time) and walk every customer's changes of the stack.
const PREVIOUS_CHANGE: &str = "SELECT version, kind = 'destroy', substr(finished_at, 1, 10)
     FROM receipts INDEXED BY receipts_current
     WHERE customer = ?1 AND stack = ?2 AND id <> ?5
       AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
       AND (finished_ns < ?3 OR (finished_ns = ?3
            AND (received_at < ?4 OR (received_at = ?4 AND id > ?5))))
     ORDER BY finished_ns DESC, received_at DESC, id LIMIT 1";

/// The change of a customer's stack just after a change.
const NEXT_CHANGE: &str = "SELECT version, kind = 'destroy', substr(finished_at, 1, 10)
     FROM receipts INDEXED BY receipts_current
     WHERE customer = ?1 AND stack = ?2 AND id <> ?5
       AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
       AND (finished_ns > ?3 OR (finished_ns = ?3
            AND (received_at > ?4 OR (received_at = ?4 AND id < ?5))))
     ORDER BY finished_ns, received_at, id DESC LIMIT 1";

/// Adds a newly stored change to `adoption_deltas`. It starts its version on its day
/// and ends the version the customer's previous change left; a receipt that
/// arrives late lands between two changes, so the change after it now ends the new
/// version instead of the previous one. Order as in [`note_in_cell`]: finish time,
/// then arrival, then the smaller id last.
pub fn note_in_adoption(
    conn: &Connection,
    d: &Deployment,
    finished_ns: i64,
) -> rusqlite::Result<()> {
    if !is_change(d) {
        return Ok(());
    }
    let neighbour = |sql: &str| -> rusqlite::Result<Option<Neighbour>> {
        conn.prepare_cached(sql)?
            .query_row(
                params![
                    d.customer,
                    d.stack,
                    finished_ns,
                    d.received_at,
                    d.receipt_id
                ],
                |r| {
                    let destroy: bool = r.get(1)?;
                    let version: String = r.get(0)?;
                    Ok(((!destroy).then_some(version), r.get(2)?))
                },
            )
            .optional()
    };
    let previous = neighbour(PREVIOUS_CHANGE)?;
    let next = neighbour(NEXT_CHANGE)?;
    let finished_at = d.finished_at.as_str();
    let day = finished_at.get(..10).unwrap_or(finished_at);
    let own_version = d.version.to_string();
    let own = (d.kind != ReceiptKind::Destroy).then_some(own_version.as_str());
    let before = previous
        .as_ref()
        .and_then(|(version, _)| version.as_deref());
    add_delta(conn, &d.stack, day, own, 1)?;
    add_delta(conn, &d.stack, day, before, -1)?;
    if let Some((_, next_day)) = &next {
        // The next change used to end `before`; from now on it ends this one's.
        add_delta(conn, &d.stack, next_day, before, 1)?;
        add_delta(conn, &d.stack, next_day, own, -1)?;
    }
    Ok(())
}

/// Adds `delta` to a day's count of a version, when there is a version; a count
/// that comes to zero is dropped, so the table holds only days that changed.
fn add_delta(
    conn: &Connection,
    stack: &str,
    day: &str,
    version: Option<&str>,
    delta: i64,
) -> rusqlite::Result<()> {
    let Some(version) = version else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO adoption_deltas (stack, day, version, delta) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (stack, day, version) DO UPDATE SET delta = delta + excluded.delta",
    )?
    .execute(params![stack, day, version, delta])?;
    conn.prepare_cached(
        "DELETE FROM adoption_deltas WHERE stack = ?1 AND day = ?2 AND version = ?3 AND delta = 0",
    )?
    .execute(params![stack, day, version])?;
    Ok(())
}

fn adoption_statement(one_stack: bool) -> String {
    let stack_is = only("stack", 1, one_stack);
    format!(
        "SELECT stack, day, version, delta FROM adoption_deltas WHERE {stack_is}
         ORDER BY stack, day"
    )
}

/// The plans SQLite picks for adoption's statements, by name (`one stack`, `every
/// stack`, `previous change`, `next change`), one line per step, for the test that
/// holds them to their indexes.
pub fn adoption_plans(conn: &Connection) -> rusqlite::Result<Vec<(&'static str, Vec<String>)>> {
    let change: [&dyn rusqlite::ToSql; 5] =
        [&"customer", &"stack", &0i64, &"2026-01-01T00:00:00Z", &"id"];
    let statements: [(&str, String, &[&dyn rusqlite::ToSql]); 4] = [
        ("one stack", adoption_statement(true), &[&"stack"]),
        (
            "every stack",
            adoption_statement(false),
            &[&rusqlite::types::Null],
        ),
        ("previous change", PREVIOUS_CHANGE.to_string(), &change),
        ("next change", NEXT_CHANGE.to_string(), &change),
    ];
    statements
        .into_iter()
        .map(|(name, sql, values)| Ok((name, super::query_plan(conn, &sql, values)?)))
        .collect()
}

/// One day's change of how many customers run a version of a stack.
pub struct AdoptionDelta {
    pub stack: String,
    pub day: String,
    pub version: String,
    pub delta: i64,
}

/// The days' changes of what customers run, of one stack or all, by stack and day:
/// summed from the start, they are how many customers ran each version that day.
pub fn adoption_deltas(
    conn: &Connection,
    stack: Option<&str>,
) -> rusqlite::Result<Vec<AdoptionDelta>> {
    conn.prepare_cached(&adoption_statement(stack.is_some()))?
        .query_map(params![stack], |r| {
            Ok(AdoptionDelta {
                stack: r.get(0)?,
                day: r.get(1)?,
                version: r.get(2)?,
                delta: r.get(3)?,
            })
        })?
        .collect()
}

/// Works out a cell's `drifted` (its latest drift evidence found drift) and `failed`
/// (its last attempt failed) from the receipts it names: one cell, or every cell.
pub fn refresh_cell_flags(conn: &Connection, cell: Option<(&str, &str)>) -> rusqlite::Result<()> {
    let which = match cell {
        Some(_) => "customer = ?1 AND stack = ?2",
        None => "?1 IS NULL AND ?2 IS NULL",
    };
    let (customer, stack) = cell.unzip();
    conn.prepare_cached(&format!(
        "UPDATE fleet_cells SET
             drifted = EXISTS (SELECT 1 FROM receipts r WHERE r.id = fleet_cells.drift_id
                               AND r.kind = 'drift' AND r.outcome = 'drifted'),
             failed = EXISTS (SELECT 1 FROM receipts r WHERE r.id = fleet_cells.attempt_id
                              AND r.outcome = 'failed')
         WHERE {which}"
    ))?
    .execute(params![customer, stack])?;
    Ok(())
}

/// One change of what a customer runs: a successful apply or rollback (`version`
/// from then on) or destroy (nothing from then on).
pub struct Change {
    pub customer: String,
    pub stack: String,
    pub version: Version,
    pub destroy: bool,
    pub finished_at: Timestamp,
}

/// Every change of what customers run, of one stack or all, oldest first, in the
/// order that makes the last one per customer and stack what a cell's version in
/// place is. Adoption reads [`adoption_deltas`] instead; this replay order is what
/// its tests hold those deltas to (a scan since v6 dropped its covering index).
pub fn changes(conn: &Connection, stack: Option<&str>) -> rusqlite::Result<Vec<Change>> {
    let stack_is = only("stack", 1, stack.is_some());
    conn.prepare_cached(&format!(
        "SELECT customer, stack, version, kind = 'destroy', finished_at FROM receipts
         WHERE {stack_is}
           AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
         ORDER BY finished_ns, received_at, id DESC"
    ))?
    .query_map(params![stack], |r| {
        Ok(Change {
            customer: r.get(0)?,
            stack: r.get(1)?,
            version: super::parsed(r, 2)?,
            destroy: r.get(3)?,
            finished_at: r.get(4)?,
        })
    })?
    .collect()
}

/// The stacks with a recorded release, by name.
pub fn stack_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached("SELECT DISTINCT stack FROM releases ORDER BY stack")?
        .query_map([], |r| r.get(0))?
        .collect()
}

/// The environments customers are registered in, by name.
pub fn environments(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT DISTINCT environment FROM customers WHERE environment IS NOT NULL ORDER BY 1",
    )?
    .query_map([], |r| r.get(0))?
    .collect()
}

/// Every receipt of one customer, newest first, with its signed document.
pub fn history_documents(
    conn: &Connection,
    customer: &str,
    limit: u64,
) -> rusqlite::Result<Vec<(Deployment, String)>> {
    conn.prepare_cached(&format!(
        "SELECT {DEPLOYMENT_COLUMNS}, document FROM receipts WHERE customer = ?1
         ORDER BY finished_ns DESC, received_at DESC, id LIMIT ?2"
    ))?
    .query_map(params![customer, limit as i64], |r| {
        Ok((deployment_row(r)?, r.get(14)?))
    })?
    .collect()
}

/// Fills the precedence keys of every release and vendored module, and which
/// releases are stable (migration to v5).
pub fn fill_precedence_keys(conn: &Connection) -> rusqlite::Result<()> {
    let releases: Vec<(String, String)> = conn
        .prepare("SELECT stack, version FROM releases")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = conn.prepare(
        "UPDATE releases SET version_key = ?3, stable = ?4 WHERE stack = ?1 AND version = ?2",
    )?;
    for (stack, version) in releases {
        let parsed = semver::Version::parse(&version).ok();
        let stable = parsed
            .as_ref()
            .is_some_and(stackpack_schema::version::is_stable);
        update.execute(params![
            stack,
            version,
            parsed.as_ref().map(crate::version_key::of),
            stable
        ])?;
    }
    let modules: Vec<(String, String, String, String)> = conn
        .prepare(
            "SELECT stack, version, path, module_version FROM release_modules
             WHERE module_version IS NOT NULL",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = conn.prepare(
        "UPDATE release_modules SET module_version_key = ?4
         WHERE stack = ?1 AND version = ?2 AND path = ?3",
    )?;
    for (stack, version, path, module_version) in modules {
        let key = crate::version_key::of_text(&module_version);
        update.execute(params![stack, version, path, key])?;
    }
    Ok(())
}

/// What a cell shows, read from the receipts it names.
struct CellFacts {
    customer: String,
    stack: String,
    current: Option<(ReceiptKind, String, String, String)>,
    attempt: Option<(ReceiptKind, Outcome, String, String)>,
    drift: Option<(ReceiptKind, Outcome)>,
}

/// Cells refreshed per batch when every cell is (migration to v5): bounded memory.
const REFRESH_BATCH: usize = 5000;

/// Copies into cells what they show from the receipts they name: the version in
/// place (none after a destroy) with its digest, time, precedence key and whether it
/// is a prerelease; the last attempt; drift and failure; and how many stable releases
/// of the stack are newer. One cell, or every cell in batches.
pub fn refresh_cells(conn: &Connection, cell: Option<(&str, &str)>) -> rusqlite::Result<()> {
    let mut after = (String::new(), String::new());
    loop {
        let facts: Vec<CellFacts> = {
            let (which, limit) = match cell {
                Some(_) => ("f.customer = ?1 AND f.stack = ?2", 1),
                None => ("(f.customer, f.stack) > (?1, ?2)", REFRESH_BATCH),
            };
            let (customer, stack) = cell.unwrap_or((&after.0, &after.1));
            conn.prepare_cached(&format!(
                "SELECT f.customer, f.stack,
                     c.kind, c.version, c.digest, c.finished_at,
                     a.kind, a.outcome, a.version, a.finished_at,
                     d.kind, d.outcome
                 FROM fleet_cells f
                 LEFT JOIN receipts c ON c.id = f.current_id
                 LEFT JOIN receipts a ON a.id = f.attempt_id
                 LEFT JOIN receipts d ON d.id = f.drift_id
                 WHERE {which} ORDER BY f.customer, f.stack LIMIT {limit}"
            ))?
            .query_map(params![customer, stack], |r| {
                let current: Option<ReceiptKind> = super::parsed_opt(r, 2)?;
                let attempt: Option<ReceiptKind> = super::parsed_opt(r, 6)?;
                let drift: Option<ReceiptKind> = super::parsed_opt(r, 10)?;
                Ok(CellFacts {
                    customer: r.get(0)?,
                    stack: r.get(1)?,
                    current: match current {
                        Some(kind) => Some((kind, r.get(3)?, r.get(4)?, r.get(5)?)),
                        None => None,
                    },
                    attempt: match attempt {
                        Some(kind) => Some((kind, super::parsed(r, 7)?, r.get(8)?, r.get(9)?)),
                        None => None,
                    },
                    drift: match drift {
                        Some(kind) => Some((kind, super::parsed(r, 11)?)),
                        None => None,
                    },
                })
            })?
            .collect::<rusqlite::Result<_>>()?
        };
        let mut update = conn.prepare_cached(
            "UPDATE fleet_cells SET version = ?3, version_key = ?4, digest = ?5, since = ?6,
                 prerelease = ?7, attempt_kind = ?8, attempt_outcome = ?9,
                 attempt_version = ?10, attempt_finished_at = ?11, drifted = ?12, failed = ?13,
                 behind = (SELECT COUNT(*) FROM releases r WHERE r.stack = ?2 AND r.stable = 1
                           AND r.version_key > ?4)
             WHERE customer = ?1 AND stack = ?2",
        )?;
        for f in &facts {
            // A destroyed stack runs nothing.
            let running = f
                .current
                .as_ref()
                .filter(|(kind, ..)| *kind != ReceiptKind::Destroy);
            let parsed = running.and_then(|(_, v, ..)| semver::Version::parse(v).ok());
            let attempt = f.attempt.as_ref();
            update.execute(params![
                f.customer,
                f.stack,
                running.map(|(_, v, ..)| v),
                parsed.as_ref().map(crate::version_key::of),
                running.map(|(_, _, digest, _)| digest),
                running.map(|(.., since)| since),
                parsed.as_ref().is_some_and(|v| !v.pre.is_empty()),
                attempt.map(|(kind, ..)| kind.as_str()),
                attempt.map(|(_, outcome, ..)| outcome.as_str()),
                attempt.map(|(_, _, version, _)| version),
                attempt.map(|(.., at)| at),
                f.drift == Some((ReceiptKind::Drift, Outcome::Drifted)),
                attempt.is_some_and(|(_, outcome, ..)| *outcome == Outcome::Failed),
            ])?;
        }
        match (cell, facts.last()) {
            (None, Some(last)) if facts.len() == REFRESH_BATCH => {
                after = (last.customer.clone(), last.stack.clone());
            }
            _ => return Ok(()),
        }
    }
}
