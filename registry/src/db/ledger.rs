//! The ledger: releases, customers, installation keys and receipts.
//!
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL
//! (PG7: `releases`, `installation_keys`, `release_modules`, `adoption_deltas`;
//! `receipts` since PG5, `customers` and `fleet_cells` since PG4). Two stay on
//! SQLite: [`fill_precedence_keys`] and [`adoption_plans`], a migration step and a
//! plan check only SQLite has a use for.

use rusqlite::{params, Connection};
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use semver::Version;
use stackpack_schema::Digest;

use super::locks::Lock;
use super::sql::{from_rows, Decode, Dialects, FromRow, Param, Row, Sql};
use crate::api::{Customer, Deployment, Release, ReleaseModule, Source};
use crate::timestamp::Timestamp;

/// Records a release (a stable version is never changed; a prerelease may be
/// re-pushed with another digest). True when it recorded a stable version anew:
/// every cell of its stack is then one further behind, so the caller works the
/// stack's `behind` counts out again ([`refresh_stack_behind`]).
pub fn record_release<C: Sql + ?Sized>(conn: &C, r: &Release) -> Result<bool, C::Error> {
    let stable = stackpack_schema::version::is_stable(&r.version);
    let (version, digest) = (r.version.to_string(), r.digest.to_string());
    let created = r.created.as_ref().map(Timestamp::to_string);
    let published_at = r.published_at.to_string();
    let key = crate::version_key::of(&r.version);
    let changed = conn.execute(
        "INSERT INTO releases (stack, version, repository, digest, source_repository,
             source_commit, source_branch, created, published_at, prerelease, version_key, stable)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (stack, version) DO UPDATE SET repository = excluded.repository,
             digest = excluded.digest, source_repository = excluded.source_repository,
             source_commit = excluded.source_commit, source_branch = excluded.source_branch,
             created = excluded.created, published_at = excluded.published_at
         WHERE releases.digest <> excluded.digest AND releases.prerelease = 1",
        &[
            r.stack.as_str().into(),
            version.as_str().into(),
            r.repository.as_str().into(),
            digest.as_str().into(),
            r.source.repository.as_deref().into(),
            r.source.commit.as_deref().into(),
            r.source.branch.as_deref().into(),
            created.as_deref().into(),
            published_at.as_str().into(),
            r.prerelease.into(),
            key.as_slice().into(),
            stable.into(),
        ],
    )?;
    Ok(changed > 0 && stable)
}

/// Records a release ([`record_release`]); a new stable version moves every cell of
/// its stack one further behind, so the stack's `behind` counts are worked out
/// again, and the customers it left behind are queued a `behind` alert.
pub fn upsert_release<C: Sql + ?Sized>(conn: &C, r: &Release) -> Result<(), C::Error> {
    if record_release(conn, r)? {
        let were_current = super::alerts::up_to_date(conn, &r.stack)?;
        refresh_stack_behind(conn, &r.stack)?;
        super::alerts::note_behind(conn, &r.stack, &r.version.to_string(), &were_current)?;
    }
    Ok(())
}

/// Records which token recorded a stack version (the first one to, for this
/// digest): who pushed what.
pub fn note_pusher<C: Sql + ?Sized>(conn: &C, r: &Release, token_id: &str) -> Result<(), C::Error> {
    let (version, digest) = (r.version.to_string(), r.digest.to_string());
    conn.execute(
        "UPDATE releases SET pushed_by = $4
         WHERE stack = $1 AND version = $2 AND digest = $3 AND pushed_by IS NULL",
        &[
            r.stack.as_str().into(),
            version.as_str().into(),
            digest.as_str().into(),
            token_id.into(),
        ],
    )?;
    Ok(())
}

/// The token that recorded a stack version: its id, and its name if it has one;
/// `None` for versions recorded before tokens were kept.
pub fn pusher<C: Sql + ?Sized>(
    conn: &C,
    stack: &str,
    version: &str,
) -> Result<Option<(String, Option<String>)>, C::Error> {
    let row = conn.query_opt(
        "SELECT r.pushed_by, t.name FROM releases r LEFT JOIN tokens t ON t.id = r.pushed_by
         WHERE r.stack = $1 AND r.version = $2 AND r.pushed_by IS NOT NULL",
        &[stack.into(), version.into()],
    )?;
    Ok(match row {
        Some(row) => Some((row.get("pushed_by")?, row.get("name")?)),
        None => None,
    })
}

/// Works out again how many stable releases are newer than what each cell of
/// `stack` runs: after a stable release of it is recorded or deleted.
pub fn refresh_stack_behind<C: Sql + ?Sized>(conn: &C, stack: &str) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE fleet_cells SET behind = (SELECT COUNT(*) FROM releases r
             WHERE r.stack = fleet_cells.stack AND r.stable = 1
             AND r.version_key > fleet_cells.version_key)
         WHERE stack = $1",
        &[stack.into()],
    )?;
    Ok(())
}

/// Records the modules a release vendors, replacing what was recorded before, but
/// only while the release recorded is the one these modules came from (a stable
/// version never changes its digest, so a second push changes nothing). Of two
/// modules at one path, the later is kept.
pub fn set_release_modules<C: Sql + ?Sized>(conn: &C, r: &Release) -> Result<(), C::Error> {
    if release_digest(conn, &r.stack, &r.version)?.as_ref() != Some(&r.digest) {
        return Ok(());
    }
    let version = r.version.to_string();
    conn.execute(
        "DELETE FROM release_modules WHERE stack = $1 AND version = $2",
        &[r.stack.as_str().into(), version.as_str().into()],
    )?;
    for m in &r.modules {
        let key = m.version.as_deref().and_then(crate::version_key::of_text);
        conn.execute(
            "INSERT INTO release_modules (stack, version, module, path, module_version,
                 digest, module_version_key)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (stack, version, path) DO UPDATE SET module = excluded.module,
                 module_version = excluded.module_version, digest = excluded.digest,
                 module_version_key = excluded.module_version_key",
            &[
                r.stack.as_str().into(),
                version.as_str().into(),
                m.name.as_str().into(),
                m.path.as_str().into(),
                m.version.as_deref().into(),
                m.digest.as_str().into(),
                key.as_deref().into(),
            ],
        )?;
    }
    Ok(())
}

impl FromRow for ReleaseModule {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(ReleaseModule {
            name: r.get("module")?,
            path: r.get("path")?,
            version: r.get("module_version")?,
            digest: r.get("digest")?,
        })
    }
}

/// The modules one release vendors, by path.
pub fn release_modules<C: Sql + ?Sized>(
    conn: &C,
    stack: &str,
    version: &str,
) -> Result<Vec<ReleaseModule>, C::Error> {
    let rows = conn.query(
        "SELECT module, path, module_version, digest FROM release_modules
         WHERE stack = $1 AND version = $2 ORDER BY path",
        &[stack.into(), version.into()],
    )?;
    Ok(from_rows(&rows)?)
}

const RELEASE_COLUMNS: &str = "stack, version, repository, digest, source_repository,
    source_commit, source_branch, created, published_at, prerelease";

/// One release, if recorded.
pub fn release<C: Sql + ?Sized>(
    conn: &C,
    stack: &str,
    version: &str,
) -> Result<Option<Release>, C::Error> {
    let row = conn.query_opt(
        &format!("SELECT {RELEASE_COLUMNS} FROM releases WHERE stack = $1 AND version = $2"),
        &[stack.into(), version.into()],
    )?;
    Ok(row.as_ref().map(Release::from_row).transpose()?)
}

/// A release from `RELEASE_COLUMNS`, without its modules.
impl FromRow for Release {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Release {
            stack: r.get("stack")?,
            version: r.parsed("version")?,
            repository: r.get("repository")?,
            digest: r.parsed("digest")?,
            source: Source {
                repository: r.get("source_repository")?,
                commit: r.get("source_commit")?,
                branch: r.get("source_branch")?,
            },
            created: r.get("created")?,
            published_at: r.get("published_at")?,
            prerelease: r.get("prerelease")?,
            modules: Vec::new(),
        })
    }
}

/// The digest recorded for a stack version, if any.
pub fn release_digest<C: Sql + ?Sized>(
    conn: &C,
    stack: &str,
    version: &Version,
) -> Result<Option<Digest>, C::Error> {
    let version = version.to_string();
    let row = conn.query_opt(
        "SELECT digest FROM releases WHERE stack = $1 AND version = $2",
        &[stack.into(), version.as_str().into()],
    )?;
    Ok(row.map(|r| r.parsed("digest")).transpose()?)
}

/// Releases with the modules each vendors, by stack then publication time.
pub fn releases_with_modules<C: Sql + ?Sized>(
    conn: &C,
    stack: Option<&str>,
) -> Result<Vec<Release>, C::Error> {
    let mut releases = releases(conn, stack)?;
    let mut modules: std::collections::HashMap<(String, String), Vec<ReleaseModule>> =
        std::collections::HashMap::new();
    // `CAST`: PostgreSQL types a parameter at its first use, and `IS NULL` fixes none.
    let rows = conn.query(
        "SELECT stack, version, module, path, module_version, digest FROM release_modules
         WHERE (CAST($1 AS TEXT) IS NULL OR stack = $1) ORDER BY path",
        &[stack.into()],
    )?;
    for r in &rows {
        let key: (String, String) = (r.get("stack")?, r.get("version")?);
        modules
            .entry(key)
            .or_default()
            .push(ReleaseModule::from_row(r)?);
    }
    for release in &mut releases {
        if let Some(list) = modules.remove(&(release.stack.clone(), release.version.to_string())) {
            release.modules = list;
        }
    }
    Ok(releases)
}

pub fn releases<C: Sql + ?Sized>(conn: &C, stack: Option<&str>) -> Result<Vec<Release>, C::Error> {
    let rows = conn.query(
        &format!(
            "SELECT {RELEASE_COLUMNS} FROM releases
             WHERE (CAST($1 AS TEXT) IS NULL OR stack = $1) ORDER BY stack, published_at"
        ),
        &[stack.into()],
    )?;
    Ok(from_rows(&rows)?)
}

/// Deletes the releases of a deleted manifest; cells of a stack that lost a stable
/// release have one fewer release to be behind.
pub fn delete_release_by_digest<C: Sql + ?Sized>(
    conn: &C,
    repo: &str,
    digest: &str,
) -> Result<(), C::Error> {
    // Only a push to `repo` records versions at `digest`, and the caller holds
    // that repository: the stacks read here are the ones to hold.
    let rows = conn.query(
        "SELECT DISTINCT stack, stable FROM releases WHERE repository = $1 AND digest = $2",
        &[repo.into(), digest.into()],
    )?;
    let mut stacks: Vec<(String, bool)> = Vec::with_capacity(rows.len());
    for row in &rows {
        stacks.push((row.get("stack")?, row.get::<i64>("stable")? == 1));
    }
    let held: Vec<Lock> = stacks.iter().map(|(s, _)| Lock::Stack(s)).collect();
    conn.lock_all(&held)?;
    conn.execute(
        "DELETE FROM releases WHERE repository = $1 AND digest = $2",
        &[repo.into(), digest.into()],
    )?;
    for (stack, stable) in &stacks {
        if *stable {
            refresh_stack_behind(conn, stack)?;
        }
    }
    Ok(())
}

/// Creates the customer if new; sets the name when one is given.
pub fn upsert_customer<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    name: Option<&str>,
    now: &str,
) -> Result<(), C::Error> {
    register_customer(conn, id, name, None, now)
}

/// Registers the customer (the vendor's act: `customer add`, a customer token),
/// creating it if new; sets the name and environment given.
pub fn register_customer<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    name: Option<&str>,
    environment: Option<&str>,
    now: &str,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO customers (id, name, environment, created, registered_at)
         VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (id) DO UPDATE SET name = COALESCE(excluded.name, customers.name),
             environment = COALESCE(excluded.environment, customers.environment),
             registered_at = COALESCE(customers.registered_at, excluded.registered_at)",
        &[id.into(), name.into(), environment.into(), now.into()],
    )?;
    Ok(())
}

/// Whether the vendor registered the customer (`customer add`, a customer token);
/// false for one unknown or known only from its receipts.
pub fn is_registered<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<bool, C::Error> {
    let row = conn.query_one(
        "SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1 AND registered_at IS NOT NULL)
             AS found",
        &[id.into()],
    )?;
    Ok(row.get("found")?)
}

/// Creates a customer first known from a receipt, not registered by the vendor.
pub fn note_customer<C: Sql + ?Sized>(conn: &C, id: &str, now: &str) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO customers (id, created) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[id.into(), now.into()],
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

/// A customer from `CUSTOMER_SELECT` (`stale` is the caller's to work out).
impl FromRow for Customer {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Customer {
            id: r.get("id")?,
            name: r.get("name")?,
            environment: r.get("environment")?,
            created: r.get("created")?,
            last_seen: r.get("last_seen")?,
            stale: None,
            account: r.get("account")?,
            region: r.get("region")?,
            contact: r.get("contact")?,
            notes: r.get("notes")?,
        })
    }
}

pub fn customer<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<Option<Customer>, C::Error> {
    let row = conn.query_opt(&format!("{CUSTOMER_SELECT} WHERE c.id = $1"), &[id.into()])?;
    Ok(row.as_ref().map(Customer::from_row).transpose()?)
}

/// The public keys (base64 DER) registered for a customer's installations, with
/// whether each was revoked: `(key_id, public_key, revoked)`, by key id.
pub fn installation_keys<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Vec<(String, String, bool)>, C::Error> {
    let rows = conn.query(
        "SELECT key_id, public_key, revoked_at IS NOT NULL AS revoked FROM installation_keys
         WHERE customer = $1 ORDER BY key_id",
        &[customer.into()],
    )?;
    let key =
        |r: &Row| Ok::<_, Decode>((r.get("key_id")?, r.get("public_key")?, r.get("revoked")?));
    Ok(rows.iter().map(key).collect::<Result<_, _>>()?)
}

/// Revokes one of a customer's installation keys; false when it has no such key.
pub fn revoke_installation_key<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    key_id: &str,
    now: &str,
) -> Result<bool, C::Error> {
    let changed = conn.execute(
        "UPDATE installation_keys SET revoked_at = COALESCE(revoked_at, $3)
         WHERE customer = $1 AND key_id = $2",
        &[customer.into(), key_id.into(), now.into()],
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

/// A customer's installation keys with their standing and how each was pinned, by
/// key id.
pub fn installation_key_standing<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Vec<InstallationKey>, C::Error> {
    let rows = conn.query(
        "SELECT key_id, revoked_at IS NOT NULL AS revoked, pinned_by FROM installation_keys
         WHERE customer = $1 ORDER BY key_id",
        &[customer.into()],
    )?;
    let key = |r: &Row| {
        Ok::<_, Decode>(InstallationKey {
            key_id: r.get("key_id")?,
            revoked: r.get("revoked")?,
            pinned_by: PinnedBy::parse(r.get::<Option<String>>("pinned_by")?.as_deref()),
        })
    };
    Ok(rows.iter().map(key).collect::<Result<_, _>>()?)
}

/// The customers a public key (base64 DER) is an installation key of, revoked or
/// not, by id.
pub fn customers_of_key<C: Sql + ?Sized>(
    conn: &C,
    public_key: &str,
) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT customer FROM installation_keys WHERE public_key = $1 ORDER BY customer",
        &[public_key.into()],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("customer"))
        .collect::<Result<_, _>>()?)
}

/// Adds a customer's installation key. An admin adding a key already pinned (from an
/// imported file, say) vouches for it: it is recorded as the admin's from then on.
pub fn add_installation_key<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    key_id: &str,
    public_key: &str,
    now: &str,
    pinned_by: PinnedBy,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO installation_keys (customer, key_id, public_key, first_seen, pinned_by)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (customer, key_id) DO UPDATE SET pinned_by = 'admin'
         WHERE excluded.pinned_by = 'admin'",
        &[
            customer.into(),
            key_id.into(),
            public_key.into(),
            now.into(),
            pinned_by.as_str().into(),
        ],
    )?;
    Ok(())
}

/// The stored document of a receipt id, if any.
pub fn receipt_document<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<Option<String>, C::Error> {
    let row = conn.query_opt("SELECT document FROM receipts WHERE id = $1", &[id.into()])?;
    Ok(row.map(|r| r.get("document")).transpose()?)
}

/// Stores a receipt; `finished_ns` (UTC nanoseconds) is what receipts are ordered by.
pub fn insert_receipt<C: Sql + ?Sized>(
    conn: &C,
    d: &Deployment,
    finished_ns: i64,
    document: &str,
) -> Result<(), C::Error> {
    let (version, digest) = (d.version.to_string(), d.digest.to_string());
    let release = d.release.as_ref();
    let release_version = release.map(|r| r.version.to_string());
    let release_digest = release.map(|r| r.digest.to_string());
    conn.execute(
        "INSERT INTO receipts (id, customer, stack, version, digest, kind, outcome,
             started_at, finished_at, key_id, document, received_at, finished_ns,
             release_name, release_version, release_digest)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        &[
            d.receipt_id.as_str().into(),
            d.customer.as_str().into(),
            d.stack.as_str().into(),
            version.as_str().into(),
            digest.as_str().into(),
            d.kind.as_str().into(),
            d.outcome.as_str().into(),
            d.started_at.as_str().into(),
            d.finished_at.as_str().into(),
            d.key_id.as_str().into(),
            document.into(),
            d.received_at.as_str().into(),
            finished_ns.into(),
            release.map(|r| r.name.as_str()).into(),
            release_version.as_deref().into(),
            release_digest.as_deref().into(),
        ],
    )?;
    Ok(())
}

/// Files a receipt not stored before: stores it, files it in its cell
/// ([`note_in_cell`]) and in adoption ([`note_in_adoption`]), all three or (the
/// caller's transaction rolled back) none.
pub fn file_receipt<C: Sql + ?Sized>(
    conn: &C,
    d: &Deployment,
    finished_ns: i64,
    document: &str,
) -> Result<(), C::Error> {
    insert_receipt(conn, d, finished_ns, document)?;
    note_in_cell(conn, d, finished_ns)?;
    note_in_adoption(conn, d, finished_ns)
}

/// Why the receipt `id` failed, read from its document (by its key, one row).
pub fn failure_reason<C: Sql + ?Sized>(conn: &C, id: &str) -> Result<Option<String>, C::Error> {
    Ok(receipt_document(conn, id)?
        .as_deref()
        .and_then(crate::reason::of_document))
}

/// What the runner verified before the run of receipt `id` (its signing key, the
/// provenance and SBOM it checked), read from its document; `None` for runners
/// that predate the record.
pub fn verification<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
) -> Result<Option<stackpack_schema::receipt::Verification>, C::Error> {
    Ok(receipt_document(conn, id)?
        .as_deref()
        .and_then(|d| serde_json::from_str::<stackpack_schema::receipt::SignedReceipt>(d).ok())
        .and_then(|signed| signed.receipt.verified))
}

/// A deployment from `DEPLOYMENT_COLUMNS` (`reason` is read apart, for a failure).
impl FromRow for Deployment {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Deployment {
            receipt_id: r.get("id")?,
            customer: r.get("customer")?,
            stack: r.get("stack")?,
            version: r.parsed("version")?,
            digest: r.parsed("digest")?,
            kind: r.parsed("kind")?,
            outcome: r.parsed("outcome")?,
            started_at: r.get("started_at")?,
            finished_at: r.get("finished_at")?,
            key_id: r.get("key_id")?,
            received_at: r.get("received_at")?,
            release: match r.get::<Option<String>>("release_name")? {
                Some(name) => Some(crate::api::DeployedRelease {
                    name,
                    version: r.parsed("release_version")?,
                    digest: r.parsed("release_digest")?,
                }),
                None => None,
            },
            reason: None,
        })
    }
}

pub(crate) const DEPLOYMENT_COLUMNS: &str = "id, customer, stack, version, digest, kind, outcome, started_at, finished_at, key_id, received_at, release_name, release_version, release_digest";

/// Receipts, newest first.
pub fn deployments<C: Sql + ?Sized>(
    conn: &C,
    customer: Option<&str>,
    stack: Option<&str>,
    limit: u64,
) -> Result<Vec<Deployment>, C::Error> {
    let customer_is = only("customer", 1, customer.is_some());
    let stack_is = only("stack", 2, stack.is_some());
    let rows = conn.query(
        &format!(
            "SELECT {DEPLOYMENT_COLUMNS} FROM receipts WHERE {customer_is} AND {stack_is}
             ORDER BY finished_ns DESC, id LIMIT $3"
        ),
        &[customer.into(), stack.into(), (limit as i64).into()],
    )?;
    Ok(from_rows(&rows)?)
}

/// `column = $N` when a value is given, else a condition that holds: spelled out per
/// case rather than `$N IS NULL OR column = $N`, which SQLite cannot answer from an
/// index. (`CAST`: PostgreSQL types a parameter at its first use, and `IS NULL`
/// fixes none.)
fn only(column: &str, param: u8, given: bool) -> String {
    if given {
        format!("{column} = ${param}")
    } else {
        format!("CAST(${param} AS TEXT) IS NULL")
    }
}

/// What a receipt may be, for each customer and stack, in `fleet_cells`: the column,
/// and whether a receipt of this kind and outcome counts for it.
type Counts = fn(kind: ReceiptKind, outcome: Outcome) -> bool;

const CELLS: [(&str, Counts); 3] = [
    ("current_id", |kind, outcome| {
        kind.changes_deployment() && outcome.in_place()
    }),
    ("attempt_id", |kind, _| counts_as_attempt(kind)),
    ("drift_id", |kind, outcome| {
        kind == ReceiptKind::Drift
            || (matches!(kind, ReceiptKind::Apply | ReceiptKind::Rollback) && outcome.in_place())
    }),
];

/// Whether a receipt is an attempt at its cell, whose failure `fleet --failed`
/// reports: an apply, rollback or destroy, or a plan (an upgrade that failed to plan
/// failed as surely as one that failed to apply).
pub fn counts_as_attempt(kind: ReceiptKind) -> bool {
    kind.changes_deployment() || kind == ReceiptKind::Plan
}

/// Files a newly stored receipt in its customer's and stack's cell wherever it is
/// now the newest of its kind: latest finish time, then latest arrival, then the
/// smaller id, the order in which "what a customer runs" has always been decided.
pub fn note_in_cell<C: Sql + ?Sized>(
    conn: &C,
    d: &Deployment,
    finished_ns: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO fleet_cells (customer, stack) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        &[d.customer.as_str().into(), d.stack.as_str().into()],
    )?;
    for (column, counts) in CELLS {
        if !counts(d.kind, d.outcome) {
            continue;
        }
        conn.execute(
            &format!(
                "UPDATE fleet_cells SET {column} = $3 WHERE customer = $1 AND stack = $2
                 AND ({column} IS NULL OR EXISTS (
                     SELECT 1 FROM receipts o WHERE o.id = fleet_cells.{column}
                     AND (o.finished_ns < $4 OR (o.finished_ns = $4
                          AND (o.received_at < $5 OR (o.received_at = $5 AND o.id > $3))))))"
            ),
            &[
                d.customer.as_str().into(),
                d.stack.as_str().into(),
                d.receipt_id.as_str().into(),
                finished_ns.into(),
                d.received_at.as_str().into(),
            ],
        )?;
    }
    conn.execute(
        "UPDATE customers SET last_seen = $2, last_seen_ns = $3
         WHERE id = $1 AND (last_seen_ns IS NULL OR last_seen_ns < $3)",
        &[
            d.customer.as_str().into(),
            d.finished_at.as_str().into(),
            finished_ns.into(),
        ],
    )?;
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

/// The change of a customer's stack just before a change (`$3` finish time, `$4`
/// arrival, `$5` id): read through `receipts_current` (customer, stack, finish
/// time), a handful of rows; without `INDEXED BY`, SQLite may pick `receipts_stack`
/// (stack, finish time) and walk every customer's changes of the stack.
const PREVIOUS_CHANGE: Dialects = Dialects {
    sqlite: "SELECT version, kind = 'destroy' AS destroy,
         substr(finished_at, 1, 10) AS day
     FROM receipts INDEXED BY receipts_current
     WHERE customer = $1 AND stack = $2 AND id <> $5
       AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
       AND (finished_ns < $3 OR (finished_ns = $3
            AND (received_at < $4 OR (received_at = $4 AND id > $5))))
     ORDER BY finished_ns DESC, received_at DESC, id LIMIT 1",
    postgres: "SELECT version, kind = 'destroy' AS destroy,
         substr(finished_at, 1, 10) AS day
     FROM receipts
     WHERE customer = $1 AND stack = $2 AND id <> $5
       AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
       AND (finished_ns < $3 OR (finished_ns = $3
            AND (received_at < $4 OR (received_at = $4 AND id > $5))))
     ORDER BY finished_ns DESC, received_at DESC, id LIMIT 1",
};

/// The change of a customer's stack just after a change.
const NEXT_CHANGE: Dialects = Dialects {
    sqlite: "SELECT version, kind = 'destroy' AS destroy,
         substr(finished_at, 1, 10) AS day
     FROM receipts INDEXED BY receipts_current
     WHERE customer = $1 AND stack = $2 AND id <> $5
       AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
       AND (finished_ns > $3 OR (finished_ns = $3
            AND (received_at > $4 OR (received_at = $4 AND id < $5))))
     ORDER BY finished_ns, received_at, id DESC LIMIT 1",
    postgres: "SELECT version, kind = 'destroy' AS destroy,
         substr(finished_at, 1, 10) AS day
     FROM receipts
     WHERE customer = $1 AND stack = $2 AND id <> $5
       AND kind IN ('apply', 'rollback', 'destroy') AND outcome IN ('succeeded', 'no-changes')
       AND (finished_ns > $3 OR (finished_ns = $3
            AND (received_at > $4 OR (received_at = $4 AND id < $5))))
     ORDER BY finished_ns, received_at, id DESC LIMIT 1",
};

/// Adds a newly stored change to `adoption_deltas`. It starts its version on its day
/// and ends the version the customer's previous change left; a receipt that
/// arrives late lands between two changes, so the change after it now ends the new
/// version instead of the previous one. Order as in [`note_in_cell`]: finish time,
/// then arrival, then the smaller id last.
pub fn note_in_adoption<C: Sql + ?Sized>(
    conn: &C,
    d: &Deployment,
    finished_ns: i64,
) -> Result<(), C::Error> {
    if !is_change(d) {
        return Ok(());
    }
    let at: [Param<'_>; 5] = [
        d.customer.as_str().into(),
        d.stack.as_str().into(),
        finished_ns.into(),
        d.received_at.as_str().into(),
        d.receipt_id.as_str().into(),
    ];
    let neighbour = |sql: &str| -> Result<Option<Neighbour>, C::Error> {
        let Some(r) = conn.query_opt(sql, &at)? else {
            return Ok(None);
        };
        let destroy: bool = r.get("destroy")?;
        let version: String = r.get("version")?;
        Ok(Some(((!destroy).then_some(version), r.get("day")?)))
    };
    let previous = neighbour(conn.text(&PREVIOUS_CHANGE))?;
    let next = neighbour(conn.text(&NEXT_CHANGE))?;
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
/// (`adoption_deltas.delta`: PostgreSQL finds a bare `delta` ambiguous beside
/// `excluded.delta`.)
fn add_delta<C: Sql + ?Sized>(
    conn: &C,
    stack: &str,
    day: &str,
    version: Option<&str>,
    delta: i64,
) -> Result<(), C::Error> {
    let Some(version) = version else {
        return Ok(());
    };
    conn.execute(
        "INSERT INTO adoption_deltas (stack, day, version, delta) VALUES ($1, $2, $3, $4)
         ON CONFLICT (stack, day, version)
         DO UPDATE SET delta = adoption_deltas.delta + excluded.delta",
        &[stack.into(), day.into(), version.into(), delta.into()],
    )?;
    conn.execute(
        "DELETE FROM adoption_deltas WHERE stack = $1 AND day = $2 AND version = $3 AND delta = 0",
        &[stack.into(), day.into(), version.into()],
    )?;
    Ok(())
}

/// By the whole primary key, so a day's versions come in one order on both
/// backends (SQLite reads them in key order anyway; PostgreSQL promises none).
fn adoption_statement(one_stack: bool) -> String {
    let stack_is = only("stack", 1, one_stack);
    format!(
        "SELECT stack, day, version, delta FROM adoption_deltas WHERE {stack_is}
         ORDER BY stack, day, version"
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
        (
            "previous change",
            PREVIOUS_CHANGE.sqlite.to_string(),
            &change,
        ),
        ("next change", NEXT_CHANGE.sqlite.to_string(), &change),
    ];
    statements
        .into_iter()
        .map(|(name, sql, values)| Ok((name, super::query_plan(conn, &sql, values)?)))
        .collect()
}

/// One day's change of how many customers run a version of a stack.
#[derive(Debug)]
pub struct AdoptionDelta {
    pub stack: String,
    pub day: String,
    pub version: String,
    pub delta: i64,
}

/// The days' changes of what customers run, of one stack or all, by stack and day:
/// summed from the start, they are how many customers ran each version that day.
pub fn adoption_deltas<C: Sql + ?Sized>(
    conn: &C,
    stack: Option<&str>,
) -> Result<Vec<AdoptionDelta>, C::Error> {
    let rows = conn.query(&adoption_statement(stack.is_some()), &[stack.into()])?;
    let delta = |r: &Row| {
        Ok::<_, Decode>(AdoptionDelta {
            stack: r.get("stack")?,
            day: r.get("day")?,
            version: r.get("version")?,
            delta: r.get("delta")?,
        })
    };
    Ok(rows.iter().map(delta).collect::<Result<_, _>>()?)
}

/// Works out a cell's `drifted` (its latest drift evidence found drift) and `failed`
/// (its last attempt failed) from the receipts it names: one cell, or every cell.
/// (`CASE`: PostgreSQL's `EXISTS` is a boolean, which an integer column refuses.)
pub fn refresh_cell_flags<C: Sql + ?Sized>(
    conn: &C,
    cell: Option<(&str, &str)>,
) -> Result<(), C::Error> {
    let which = match cell {
        Some(_) => "customer = $1 AND stack = $2",
        None => "CAST($1 AS TEXT) IS NULL AND CAST($2 AS TEXT) IS NULL",
    };
    let (customer, stack) = cell.unzip();
    conn.execute(
        &format!(
            "UPDATE fleet_cells SET
                 drifted = CASE WHEN EXISTS (SELECT 1 FROM receipts r
                     WHERE r.id = fleet_cells.drift_id
                     AND r.kind = 'drift' AND r.outcome = 'drifted') THEN 1 ELSE 0 END,
                 failed = CASE WHEN EXISTS (SELECT 1 FROM receipts r
                     WHERE r.id = fleet_cells.attempt_id
                     AND r.outcome = 'failed') THEN 1 ELSE 0 END
             WHERE {which}"
        ),
        &[customer.into(), stack.into()],
    )?;
    Ok(())
}

/// One change of what a customer runs: a successful apply or rollback (`version`
/// from then on) or destroy (nothing from then on).
#[derive(Debug)]
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
pub fn changes<C: Sql + ?Sized>(conn: &C, stack: Option<&str>) -> Result<Vec<Change>, C::Error> {
    let stack_is = only("stack", 1, stack.is_some());
    let rows = conn.query(
        &format!(
            "SELECT customer, stack, version, kind = 'destroy' AS destroy, finished_at
             FROM receipts
             WHERE {stack_is}
               AND kind IN ('apply', 'rollback', 'destroy')
               AND outcome IN ('succeeded', 'no-changes')
             ORDER BY finished_ns, received_at, id DESC"
        ),
        &[stack.into()],
    )?;
    let change = |r: &Row| {
        Ok::<_, Decode>(Change {
            customer: r.get("customer")?,
            stack: r.get("stack")?,
            version: r.parsed("version")?,
            destroy: r.get("destroy")?,
            finished_at: r.get("finished_at")?,
        })
    };
    Ok(rows.iter().map(change).collect::<Result<_, _>>()?)
}

/// The stacks with a recorded release, by name.
pub fn stack_names<C: Sql + ?Sized>(conn: &C) -> Result<Vec<String>, C::Error> {
    let rows = conn.query("SELECT DISTINCT stack FROM releases ORDER BY stack", &[])?;
    Ok(rows
        .iter()
        .map(|r| r.get("stack"))
        .collect::<Result<_, _>>()?)
}

/// The environments customers are registered in, by name (in byte order, sorted
/// here: `customers.environment` keeps the database's collation on PostgreSQL).
pub fn environments<C: Sql + ?Sized>(conn: &C) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT DISTINCT environment FROM customers WHERE environment IS NOT NULL",
        &[],
    )?;
    let mut names: Vec<String> = rows
        .iter()
        .map(|r| r.get("environment"))
        .collect::<Result<_, _>>()?;
    names.sort();
    Ok(names)
}

/// Every receipt of one customer, newest first, with its signed document.
pub fn history_documents<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    limit: u64,
) -> Result<Vec<(Deployment, String)>, C::Error> {
    let rows = conn.query(
        &format!(
            "SELECT {DEPLOYMENT_COLUMNS}, document FROM receipts WHERE customer = $1
             ORDER BY finished_ns DESC, received_at DESC, id LIMIT $2"
        ),
        &[customer.into(), (limit as i64).into()],
    )?;
    let row = |r: &Row| Ok::<_, Decode>((Deployment::from_row(r)?, r.get("document")?));
    Ok(rows.iter().map(row).collect::<Result<_, _>>()?)
}

/// Fills the precedence keys of every release and vendored module, and which
/// releases are stable (migration to v5).
pub fn fill_precedence_keys(conn: &Connection) -> rusqlite::Result<()> {
    let releases: Vec<(String, String)> = conn
        .prepare("SELECT stack, version FROM releases")?
        .query_map([], |r| Ok((r.get("stack")?, r.get("version")?)))?
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
        .query_map([], |r| {
            Ok((
                r.get("stack")?,
                r.get("version")?,
                r.get("path")?,
                r.get("module_version")?,
            ))
        })?
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

impl FromRow for CellFacts {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        let current: Option<ReceiptKind> = r.parsed_opt("current_kind")?;
        let attempt: Option<ReceiptKind> = r.parsed_opt("attempt_kind")?;
        let drift: Option<ReceiptKind> = r.parsed_opt("drift_kind")?;
        Ok(CellFacts {
            customer: r.get("customer")?,
            stack: r.get("stack")?,
            current: match current {
                Some(kind) => Some((
                    kind,
                    r.get("current_version")?,
                    r.get("current_digest")?,
                    r.get("current_finished_at")?,
                )),
                None => None,
            },
            attempt: match attempt {
                Some(kind) => Some((
                    kind,
                    r.parsed("attempt_outcome")?,
                    r.get("attempt_version")?,
                    r.get("attempt_finished_at")?,
                )),
                None => None,
            },
            drift: match drift {
                Some(kind) => Some((kind, r.parsed("drift_outcome")?)),
                None => None,
            },
        })
    }
}

/// Copies into one cell what it shows from the receipts it names.
fn write_cell<C: Sql + ?Sized>(conn: &C, f: &CellFacts) -> Result<(), C::Error> {
    // A destroyed stack runs nothing.
    let running = f
        .current
        .as_ref()
        .filter(|(kind, ..)| *kind != ReceiptKind::Destroy);
    let parsed = running.and_then(|(_, v, ..)| semver::Version::parse(v).ok());
    let key = parsed.as_ref().map(crate::version_key::of);
    let attempt = f.attempt.as_ref();
    conn.execute(
        "UPDATE fleet_cells SET version = $3, version_key = $4, digest = $5, since = $6,
             prerelease = $7, attempt_kind = $8, attempt_outcome = $9,
             attempt_version = $10, attempt_finished_at = $11, drifted = $12, failed = $13,
             behind = (SELECT COUNT(*) FROM releases r WHERE r.stack = $2 AND r.stable = 1
                       AND r.version_key > $4)
         WHERE customer = $1 AND stack = $2",
        &[
            f.customer.as_str().into(),
            f.stack.as_str().into(),
            running.map(|(_, v, ..)| v.as_str()).into(),
            key.as_deref().into(),
            running.map(|(_, _, digest, _)| digest.as_str()).into(),
            running.map(|(.., since)| since.as_str()).into(),
            parsed.as_ref().is_some_and(|v| !v.pre.is_empty()).into(),
            attempt.map(|(kind, ..)| kind.as_str()).into(),
            attempt.map(|(_, outcome, ..)| outcome.as_str()).into(),
            attempt.map(|(_, _, version, _)| version.as_str()).into(),
            attempt.map(|(.., at)| at.as_str()).into(),
            (f.drift == Some((ReceiptKind::Drift, Outcome::Drifted))).into(),
            attempt
                .is_some_and(|(_, outcome, ..)| *outcome == Outcome::Failed)
                .into(),
        ],
    )?;
    Ok(())
}

/// Copies into cells what they show from the receipts they name: the version in
/// place (none after a destroy) with its digest, time, precedence key and whether it
/// is a prerelease; the last attempt; drift and failure; and how many stable releases
/// of the stack are newer. One cell, or every cell in batches.
pub fn refresh_cells<C: Sql + ?Sized>(
    conn: &C,
    cell: Option<(&str, &str)>,
) -> Result<(), C::Error> {
    let mut after = (String::new(), String::new());
    loop {
        let (which, limit) = match cell {
            Some(_) => ("f.customer = $1 AND f.stack = $2", 1),
            None => ("(f.customer, f.stack) > ($1, $2)", REFRESH_BATCH),
        };
        let (customer, stack) = cell.unwrap_or((&after.0, &after.1));
        let rows = conn.query(
            &format!(
                "SELECT f.customer, f.stack,
                     c.kind AS current_kind, c.version AS current_version,
                     c.digest AS current_digest, c.finished_at AS current_finished_at,
                     a.kind AS attempt_kind, a.outcome AS attempt_outcome,
                     a.version AS attempt_version, a.finished_at AS attempt_finished_at,
                     d.kind AS drift_kind, d.outcome AS drift_outcome
                 FROM fleet_cells f
                 LEFT JOIN receipts c ON c.id = f.current_id
                 LEFT JOIN receipts a ON a.id = f.attempt_id
                 LEFT JOIN receipts d ON d.id = f.drift_id
                 WHERE {which} ORDER BY f.customer, f.stack LIMIT {limit}"
            ),
            &[customer.into(), stack.into()],
        )?;
        let facts: Vec<CellFacts> = from_rows(&rows)?;
        for f in &facts {
            write_cell(conn, f)?;
        }
        match (cell, facts.last()) {
            (None, Some(last)) if facts.len() == REFRESH_BATCH => {
                after = (last.customer.clone(), last.stack.clone());
            }
            _ => return Ok(()),
        }
    }
}
