//! Rollouts' tables: channels, customers' places, promotions, rollouts with their
//! assignments and history, release receipts and sync reports. Plain functions; the
//! scheduling is [`crate::rollout`].
//!
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL
//! (PG8: these tables; the gate also reads `customers`, PG4, and `receipts`, PG5;
//! see `POSTGRES.md`).

use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::rollout::{ApprovedKind, SyncState};

use super::sql::{from_rows, Decode, FromRow, Row, Sql};
use crate::api::{EventKind, Gate, RolloutAssignment, RolloutEvent, RolloutState};

/// The waves of a channel nobody configured.
pub const DEFAULT_WAVES: [&str; 3] = ["canary", "early", "general"];
/// The soak time of a channel nobody configured: a day.
pub const DEFAULT_SOAK_SECONDS: u64 = 24 * 3600;

pub const PLACEMENT_SQL: &str = "SELECT id, channel, wave, last_sync FROM customers WHERE id = $1";
pub const ROLLOUT_OF_PROMOTION_SQL: &str =
    "SELECT MAX(id) AS rollout FROM rollouts WHERE promotion_id = $1";
pub const ANY_DUE_SQL: &str = "SELECT EXISTS (SELECT 1 FROM rollouts WHERE due_ns <= $1) AS due";
pub const CHANNEL_SQL: &str = "SELECT waves, soak_seconds FROM channels WHERE name = $1";
pub const CUSTOMER_ASSIGNMENTS_SQL: &str =
    "SELECT r.id, r.promotion_id, r.kind, r.release, a.assigned_at
             FROM rollout_assignments a JOIN rollouts r ON r.id = a.rollout_id
             WHERE a.customer = $1 AND r.channel = $2 ORDER BY r.id DESC";
pub const INSTALLED_RELEASE_SQL: &str = "SELECT version FROM release_receipts
         WHERE customer = $1 AND release = $2 AND kind IN ('apply', 'rollback')
           AND outcome IN ('succeeded', 'no-changes')
         ORDER BY finished_ns DESC, received_ns DESC LIMIT 1";
pub const LATEST_STACK_RECEIPT_SQL: &str =
    "SELECT id, stack, kind, outcome, version, finished_ns FROM receipts
         WHERE customer = $1 AND stack = $2 AND kind IN ('apply', 'rollback', 'destroy', 'drift')
         ORDER BY finished_ns DESC, received_at DESC LIMIT 1";
pub const LATEST_RELEASE_RECEIPT_SQL: &str =
    "SELECT id, version, kind, outcome, finished_ns, received_ns FROM release_receipts
         WHERE customer = $1 AND release = $2
         ORDER BY finished_ns DESC, received_ns DESC LIMIT 1";
pub const STACK_FAILURE_IN_RELEASE_SQL: &str =
    "SELECT id, stack, kind, outcome, version, finished_ns FROM receipts
         WHERE release_name = $1 AND customer = $2 AND release_version = $3
           AND outcome IN ('failed', 'drifted') AND finished_ns > $4
         ORDER BY finished_ns DESC LIMIT 1";
pub const OPEN_ROLLOUTS_OF_CUSTOMER_SQL: &str =
    "SELECT r.id FROM rollout_assignments a JOIN rollouts r ON r.id = a.rollout_id
         WHERE a.customer = $1 AND r.state IN ('running', 'paused', 'halted') ORDER BY r.id";
/// `c.channel = $2`, not SQLite's `c.channel IS $2`: PostgreSQL has no `IS` between
/// values, and `channel` is never `NULL`, where the two differ.
pub const ANY_WAITING_SQL: &str = "SELECT EXISTS (SELECT 1 FROM rollout_assignments a
         JOIN customers c ON c.id = a.customer
         WHERE a.rollout_id = $1 AND a.gate = 'waiting' AND c.channel = $2) AS waiting";
pub const FIRST_FAILURE_SQL: &str = "SELECT customer, gate_reason FROM rollout_assignments
         WHERE rollout_id = $1 AND gate = 'failed' ORDER BY gate_at, customer LIMIT 1";

/// The hot path's queries by name: the assignment poll and the gate a receipt
/// re-reads. Each is an indexed lookup; the query-plan test holds them to it.
pub const HOT_QUERIES: &[(&str, &str)] = &[
    ("placement", PLACEMENT_SQL),
    ("rollout_of_promotion", ROLLOUT_OF_PROMOTION_SQL),
    ("any_due", ANY_DUE_SQL),
    ("channel", CHANNEL_SQL),
    ("customer_assignments", CUSTOMER_ASSIGNMENTS_SQL),
    ("installed_release", INSTALLED_RELEASE_SQL),
    ("latest_stack_receipt", LATEST_STACK_RECEIPT_SQL),
    ("latest_release_receipt", LATEST_RELEASE_RECEIPT_SQL),
    ("stack_failure_in_release", STACK_FAILURE_IN_RELEASE_SQL),
    ("open_rollouts_of_customer", OPEN_ROLLOUTS_OF_CUSTOMER_SQL),
    ("any_waiting", ANY_WAITING_SQL),
    ("first_failure", FIRST_FAILURE_SQL),
];

/// A channel's waves and soak time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelConfig {
    pub waves: Vec<String>,
    pub soak_seconds: u64,
    pub configured: bool,
}

impl ChannelConfig {
    pub fn default_config() -> ChannelConfig {
        ChannelConfig {
            waves: DEFAULT_WAVES.iter().map(|w| w.to_string()).collect(),
            soak_seconds: DEFAULT_SOAK_SECONDS,
            configured: false,
        }
    }

    /// The index of `wave` (a customer without one, or with one the channel does not
    /// have, is in the last wave).
    pub fn wave_index(&self, wave: Option<&str>) -> usize {
        wave.and_then(|w| self.waves.iter().position(|x| x == w))
            .unwrap_or(self.waves.len().saturating_sub(1))
    }
}

fn waves_json(waves: &[String]) -> String {
    serde_json::to_string(waves).expect("names serialise")
}

/// The waves stored in column `column` (a JSON list of names).
fn waves_from(row: &Row, column: &str) -> Result<Vec<String>, Decode> {
    row.parsed_with(column, |text| {
        serde_json::from_str(text).map_err(|e| format!("not a JSON list of wave names: {e}"))
    })
}

/// The channel's configuration, or the defaults.
pub fn channel<C: Sql + ?Sized>(conn: &C, name: &str) -> Result<ChannelConfig, C::Error> {
    match conn.query_opt(CHANNEL_SQL, &[name.into()])? {
        Some(row) => Ok(ChannelConfig {
            waves: waves_from(&row, "waves")?,
            soak_seconds: row.get::<i64>("soak_seconds")?.max(0) as u64,
            configured: true,
        }),
        None => Ok(ChannelConfig::default_config()),
    }
}

pub fn set_channel<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    config: &ChannelConfig,
    now: &str,
) -> Result<(), C::Error> {
    let waves = waves_json(&config.waves);
    conn.execute(
        "INSERT INTO channels (name, waves, soak_seconds, created) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE SET waves = excluded.waves, soak_seconds = excluded.soak_seconds",
        &[
            name.into(),
            waves.as_str().into(),
            (config.soak_seconds as i64).into(),
            now.into(),
        ],
    )?;
    Ok(())
}

/// The name of every channel configured (`channel set`) or in use (a customer put
/// in it), sorted (bytes: `channels.name` and `customers.channel` are `"C"` on
/// PostgreSQL): the channels that exist.
pub fn channel_names<C: Sql + ?Sized>(conn: &C) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT name FROM channels UNION
         SELECT DISTINCT channel FROM customers WHERE channel IS NOT NULL ORDER BY 1",
        &[],
    )?;
    rows.iter()
        .map(|row| Ok(row.get::<String>("name")?))
        .collect()
}

/// Every channel configured or in use, by name, with how many customers it has.
pub fn channels<C: Sql + ?Sized>(conn: &C) -> Result<Vec<(String, ChannelConfig, u64)>, C::Error> {
    channel_names(conn)?
        .into_iter()
        .map(|name| {
            let config = channel(conn, &name)?;
            let count: i64 = conn
                .query_one(
                    "SELECT COUNT(*) AS n FROM customers WHERE channel = $1",
                    &[name.as_str().into()],
                )?
                .get("n")?;
            Ok((name, config, count.max(0) as u64))
        })
        .collect()
}

/// Puts a customer in a channel and wave (the wave `None`: the channel's last).
/// False when the customer is not known.
pub fn set_placement<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    channel: &str,
    wave: Option<&str>,
) -> Result<bool, C::Error> {
    Ok(conn.execute(
        "UPDATE customers SET channel = $2, wave = $3 WHERE id = $1",
        &[customer.into(), channel.into(), wave.into()],
    )? > 0)
}

/// A customer's channel, wave and last sync; `None` when the customer is not known.
pub fn placement<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Option<crate::api::Placement>, C::Error> {
    let Some(r) = conn.query_opt(PLACEMENT_SQL, &[customer.into()])? else {
        return Ok(None);
    };
    Ok(Some(crate::api::Placement {
        customer: r.get("id")?,
        channel: r.get("channel")?,
        wave: r.get("wave")?,
        last_sync: r.get("last_sync")?,
    }))
}

/// The customers of a channel with the wave each was put in, by id (bytes).
pub fn channel_customers<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
) -> Result<Vec<(String, Option<String>)>, C::Error> {
    let rows = conn.query(
        "SELECT id, wave FROM customers WHERE channel = $1 ORDER BY id",
        &[channel.into()],
    )?;
    let pair = |r: &Row| Ok::<_, Decode>((r.get("id")?, r.get("wave")?));
    Ok(rows.iter().map(pair).collect::<Result<_, _>>()?)
}

/// A recorded promotion.
#[derive(Clone, Debug)]
pub struct Promotion {
    pub id: i64,
    pub channel: String,
    pub kind: ApprovedKind,
    pub release: String,
    pub version: semver::Version,
    pub digest: String,
    pub required: bool,
    /// The signed statement, as received (JSON).
    pub statement: String,
}

fn kind_text(kind: ApprovedKind) -> &'static str {
    kind.as_str()
}

/// The approved kind stored in column `column` (`release` or `stack`).
fn kind_from(row: &Row, column: &str) -> Result<ApprovedKind, Decode> {
    row.parsed_with(column, |text| match text {
        "release" => Ok(ApprovedKind::Release),
        "stack" => Ok(ApprovedKind::Stack),
        _ => Err("not an approved kind (`release` or `stack`)".into()),
    })
}

const PROMOTION_COLUMNS: &str = "id, channel, kind, release, version, digest, required, statement";

impl FromRow for Promotion {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(Promotion {
            id: r.get("id")?,
            channel: r.get("channel")?,
            kind: kind_from(r, "kind")?,
            release: r.get("release")?,
            version: r.parsed("version")?,
            digest: r.get("digest")?,
            required: r.get("required")?,
            statement: r.get("statement")?,
        })
    }
}

pub fn promotion<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
    kind: ApprovedKind,
    release: &str,
    version: &semver::Version,
) -> Result<Option<Promotion>, C::Error> {
    let version = version.to_string();
    let row = conn.query_opt(
        &format!(
            "SELECT {PROMOTION_COLUMNS} FROM promotions
             WHERE channel = $1 AND kind = $2 AND release = $3 AND version = $4"
        ),
        &[
            channel.into(),
            kind_text(kind).into(),
            release.into(),
            version.as_str().into(),
        ],
    )?;
    Ok(row.as_ref().map(Promotion::from_row).transpose()?)
}

pub fn promotion_by_id<C: Sql + ?Sized>(conn: &C, id: i64) -> Result<Option<Promotion>, C::Error> {
    let row = conn.query_opt(
        &format!("SELECT {PROMOTION_COLUMNS} FROM promotions WHERE id = $1"),
        &[id.into()],
    )?;
    Ok(row.as_ref().map(Promotion::from_row).transpose()?)
}

/// The newest promotion (by version precedence) of a release to a channel.
pub fn newest_promotion<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
    kind: ApprovedKind,
    release: &str,
) -> Result<Option<Promotion>, C::Error> {
    let row = conn.query_opt(
        &format!(
            "SELECT {PROMOTION_COLUMNS} FROM promotions
             WHERE channel = $1 AND kind = $2 AND release = $3 ORDER BY version_key DESC LIMIT 1"
        ),
        &[channel.into(), kind_text(kind).into(), release.into()],
    )?;
    Ok(row.as_ref().map(Promotion::from_row).transpose()?)
}

/// The lowest required promotion of a release to a channel strictly between two
/// versions (by precedence: `version_key` compares as bytes on both backends).
pub fn required_between<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
    kind: ApprovedKind,
    release: &str,
    above: &semver::Version,
    below: &semver::Version,
) -> Result<Option<Promotion>, C::Error> {
    let (above, below) = (crate::version_key::of(above), crate::version_key::of(below));
    let row = conn.query_opt(
        &format!(
            "SELECT {PROMOTION_COLUMNS} FROM promotions
             WHERE channel = $1 AND kind = $2 AND release = $3 AND required = 1
               AND version_key > $4 AND version_key < $5
             ORDER BY version_key LIMIT 1"
        ),
        &[
            channel.into(),
            kind_text(kind).into(),
            release.into(),
            above.as_slice().into(),
            below.as_slice().into(),
        ],
    )?;
    Ok(row.as_ref().map(Promotion::from_row).transpose()?)
}

/// What a promotion records.
pub struct NewPromotion<'a> {
    pub channel: &'a str,
    pub kind: ApprovedKind,
    pub release: &'a str,
    pub version: &'a semver::Version,
    pub digest: &'a str,
    pub required: bool,
    pub statement: &'a str,
    pub key_id: &'a str,
    pub promoted_at: &'a str,
}

/// Records a promotion; returns its id (an identity column on PostgreSQL, the rowid
/// on SQLite). The same version of a release promoted twice to a channel is refused
/// by `UNIQUE (channel, kind, release, version)`.
pub fn insert_promotion<C: Sql + ?Sized>(
    conn: &C,
    p: &NewPromotion<'_>,
    now: &str,
) -> Result<i64, C::Error> {
    let (version, key) = (p.version.to_string(), crate::version_key::of(p.version));
    let row = conn.query_one(
        "INSERT INTO promotions (channel, kind, release, version, version_key, digest, required,
             statement, key_id, promoted_at, received_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         RETURNING id",
        &[
            p.channel.into(),
            kind_text(p.kind).into(),
            p.release.into(),
            version.as_str().into(),
            key.as_slice().into(),
            p.digest.into(),
            p.required.into(),
            p.statement.into(),
            p.key_id.into(),
            p.promoted_at.into(),
            now.into(),
        ],
    )?;
    Ok(row.get("id")?)
}

/// A rollout as stored.
#[derive(Clone, Debug)]
pub struct RolloutRow {
    pub id: i64,
    pub promotion_id: i64,
    pub channel: String,
    pub kind: ApprovedKind,
    pub release: String,
    pub version: semver::Version,
    pub digest: String,
    pub waves: Vec<String>,
    pub soak_seconds: u64,
    pub state: RolloutState,
    pub wave_index: usize,
    pub wave_opened_at: Option<String>,
    pub wave_opened_ns: Option<i64>,
    pub halted_reason: Option<String>,
    pub created: String,
    pub updated: String,
}

const ROLLOUT_COLUMNS: &str = "id, promotion_id, channel, kind, release, version, digest, waves,
    soak_seconds, state, wave_index, wave_opened_at, wave_opened_ns, halted_reason, created, updated";

impl FromRow for RolloutRow {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(RolloutRow {
            id: r.get("id")?,
            promotion_id: r.get("promotion_id")?,
            channel: r.get("channel")?,
            kind: kind_from(r, "kind")?,
            release: r.get("release")?,
            version: r.parsed("version")?,
            digest: r.get("digest")?,
            waves: waves_from(r, "waves")?,
            soak_seconds: r.get::<i64>("soak_seconds")?.max(0) as u64,
            state: r.parsed("state")?,
            wave_index: r.get::<i64>("wave_index")?.max(0) as usize,
            wave_opened_at: r.get("wave_opened_at")?,
            wave_opened_ns: r.get("wave_opened_ns")?,
            halted_reason: r.get("halted_reason")?,
            created: r.get("created")?,
            updated: r.get("updated")?,
        })
    }
}

pub struct NewRollout<'a> {
    pub promotion_id: i64,
    pub channel: &'a str,
    pub kind: ApprovedKind,
    pub release: &'a str,
    pub version: &'a semver::Version,
    pub digest: &'a str,
    pub config: &'a ChannelConfig,
}

/// Starts a rollout (running, no wave open yet: [`crate::rollout::advance`] opens
/// the first); returns its id (`RETURNING id`, as [`insert_promotion`]). A promotion
/// that is not recorded is refused (`promotion_id` references `promotions`).
pub fn insert_rollout<C: Sql + ?Sized>(
    conn: &C,
    r: &NewRollout<'_>,
    now: &str,
) -> Result<i64, C::Error> {
    let (version, waves) = (r.version.to_string(), waves_json(&r.config.waves));
    let row = conn.query_one(
        "INSERT INTO rollouts (promotion_id, channel, kind, release, version, digest, waves,
             soak_seconds, state, wave_index, created, updated)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', -1, $9, $9)
         RETURNING id",
        &[
            r.promotion_id.into(),
            r.channel.into(),
            kind_text(r.kind).into(),
            r.release.into(),
            version.as_str().into(),
            r.digest.into(),
            waves.as_str().into(),
            (r.config.soak_seconds as i64).into(),
            now.into(),
        ],
    )?;
    Ok(row.get("id")?)
}

/// The raw wave index: -1 before the first wave opened.
pub fn raw_wave_index<C: Sql + ?Sized>(conn: &C, id: i64) -> Result<i64, C::Error> {
    let row = conn.query_one(
        "SELECT wave_index FROM rollouts WHERE id = $1",
        &[id.into()],
    )?;
    Ok(row.get("wave_index")?)
}

pub fn rollout<C: Sql + ?Sized>(conn: &C, id: i64) -> Result<Option<RolloutRow>, C::Error> {
    let row = conn.query_opt(
        &format!("SELECT {ROLLOUT_COLUMNS} FROM rollouts WHERE id = $1"),
        &[id.into()],
    )?;
    Ok(row.as_ref().map(RolloutRow::from_row).transpose()?)
}

/// Rollouts in `state`, oldest first.
pub fn rollouts_in<C: Sql + ?Sized>(
    conn: &C,
    state: RolloutState,
) -> Result<Vec<RolloutRow>, C::Error> {
    let state = state.to_string();
    let rows = conn.query(
        &format!("SELECT {ROLLOUT_COLUMNS} FROM rollouts WHERE state = $1 ORDER BY id"),
        &[state.as_str().into()],
    )?;
    Ok(from_rows::<RolloutRow>(&rows)?)
}

/// Rollouts, newest first, of a channel and/or release when given.
pub fn rollouts<C: Sql + ?Sized>(
    conn: &C,
    channel: Option<&str>,
    release: Option<&str>,
    limit: usize,
) -> Result<Vec<RolloutRow>, C::Error> {
    // `CAST`: PostgreSQL types a parameter at its first use, and `IS NULL` gives it
    // none.
    let rows = conn.query(
        &format!(
            "SELECT {ROLLOUT_COLUMNS} FROM rollouts
             WHERE (CAST($1 AS TEXT) IS NULL OR channel = $1)
               AND (CAST($2 AS TEXT) IS NULL OR release = $2)
             ORDER BY id DESC LIMIT $3"
        ),
        &[
            channel.into(),
            release.into(),
            i64::try_from(limit).unwrap_or(i64::MAX).into(),
        ],
    )?;
    Ok(from_rows::<RolloutRow>(&rows)?)
}

/// The open (running, paused, halted) rollouts of a release in a channel.
pub fn open_rollouts_of<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
    kind: ApprovedKind,
    release: &str,
) -> Result<Vec<RolloutRow>, C::Error> {
    let rows = conn.query(
        &format!(
            "SELECT {ROLLOUT_COLUMNS} FROM rollouts
             WHERE channel = $1 AND kind = $2 AND release = $3
               AND state IN ('running', 'paused', 'halted') ORDER BY id"
        ),
        &[channel.into(), kind_text(kind).into(), release.into()],
    )?;
    Ok(from_rows::<RolloutRow>(&rows)?)
}

/// The newest completed rollout of each release in `channel`: what a customer
/// joining the channel runs.
pub fn completed_rollouts<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
) -> Result<Vec<RolloutRow>, C::Error> {
    let rows = conn.query(
        &format!(
            "SELECT {ROLLOUT_COLUMNS} FROM rollouts WHERE id IN (
                 SELECT MAX(id) FROM rollouts WHERE channel = $1 AND state = 'completed'
                 GROUP BY kind, release)
             ORDER BY id"
        ),
        &[channel.into()],
    )?;
    Ok(from_rows::<RolloutRow>(&rows)?)
}

/// The newest rollout started from a promotion.
pub fn rollout_of_promotion<C: Sql + ?Sized>(
    conn: &C,
    promotion: i64,
) -> Result<Option<i64>, C::Error> {
    Ok(conn
        .query_one(ROLLOUT_OF_PROMOTION_SQL, &[promotion.into()])?
        .get("rollout")?)
}

pub fn set_state<C: Sql + ?Sized>(
    conn: &C,
    id: i64,
    state: RolloutState,
    halted_reason: Option<&str>,
    now: &str,
) -> Result<(), C::Error> {
    let state = state.to_string();
    conn.execute(
        "UPDATE rollouts SET state = $2, halted_reason = $3, updated = $4,
             due_ns = CASE WHEN $2 = 'running' THEN due_ns ELSE NULL END
         WHERE id = $1",
        &[
            id.into(),
            state.as_str().into(),
            halted_reason.into(),
            now.into(),
        ],
    )?;
    Ok(())
}

pub fn set_wave<C: Sql + ?Sized>(
    conn: &C,
    id: i64,
    wave_index: usize,
    opened_at: &str,
    opened_ns: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE rollouts SET wave_index = $2, wave_opened_at = $3, wave_opened_ns = $4,
             due_ns = NULL, updated = $3
         WHERE id = $1",
        &[
            id.into(),
            (wave_index as i64).into(),
            opened_at.into(),
            opened_ns.into(),
        ],
    )?;
    Ok(())
}

/// When the rollout next needs looking at by the clock alone (its wave is healthy
/// and soaking), or `None`. Written only when it changes (`IS DISTINCT FROM`: both
/// backends' spelling of SQLite's `IS NOT`, `NULL` equal to `NULL`).
pub fn set_due<C: Sql + ?Sized>(conn: &C, id: i64, due_ns: Option<i64>) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE rollouts SET due_ns = $2 WHERE id = $1 AND due_ns IS DISTINCT FROM $2",
        &[id.into(), due_ns.into()],
    )?;
    Ok(())
}

/// Whether a running rollout's next wave is due by `now_ns`: one indexed probe, so
/// the assignment poll only writes when the clock moved a rollout on.
pub fn any_due<C: Sql + ?Sized>(conn: &C, now_ns: i64) -> Result<bool, C::Error> {
    Ok(conn.query_one(ANY_DUE_SQL, &[now_ns.into()])?.get("due")?)
}

/// Assigns `customer` to a rollout, waiting at the gate; false when it was assigned
/// already (one assignment per customer and rollout: the first is kept).
pub fn insert_assignment<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
    customer: &str,
    wave: &str,
    wave_index: usize,
    now: &str,
) -> Result<bool, C::Error> {
    Ok(conn.execute(
        "INSERT INTO rollout_assignments
             (rollout_id, customer, wave, wave_index, assigned_at, gate, gate_at)
         VALUES ($1, $2, $3, $4, $5, 'waiting', $5)
         ON CONFLICT DO NOTHING",
        &[
            rollout.into(),
            customer.into(),
            wave.into(),
            (wave_index as i64).into(),
            now.into(),
        ],
    )? > 0)
}

/// The customers a rollout assigned, in byte order (the scheduler binary-searches
/// them).
pub fn assigned_customers<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
) -> Result<Vec<String>, C::Error> {
    let rows = conn.query(
        "SELECT customer FROM rollout_assignments WHERE rollout_id = $1 ORDER BY customer",
        &[rollout.into()],
    )?;
    Ok(rows
        .iter()
        .map(|r| r.get("customer"))
        .collect::<Result<_, _>>()?)
}

pub fn assignments<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
) -> Result<Vec<RolloutAssignment>, C::Error> {
    let rows = conn.query(
        "SELECT customer, wave, assigned_at, gate, gate_reason, gate_at FROM rollout_assignments
         WHERE rollout_id = $1 ORDER BY wave_index, assigned_at, customer",
        &[rollout.into()],
    )?;
    let assignment = |r: &Row| {
        Ok::<_, Decode>(RolloutAssignment {
            customer: r.get("customer")?,
            wave: r.get("wave")?,
            assigned_at: r.get("assigned_at")?,
            gate: r.parsed("gate")?,
            gate_reason: r.get("gate_reason")?,
            gate_at: r.get("gate_at")?,
        })
    };
    Ok(rows.iter().map(assignment).collect::<Result<_, _>>()?)
}

/// How many of a rollout's customers stand at each gate: (assigned, succeeded, failed).
/// Who a halted rollout holds up: the customers it assigned that fail its gate, and
/// those of its channel it has not assigned yet (waiting for a later wave), by name,
/// at most `limit` of each.
pub fn held_up<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
    channel: &str,
    limit: u64,
) -> Result<(Vec<String>, Vec<String>), C::Error> {
    let failed = conn.query(
        "SELECT customer FROM rollout_assignments WHERE rollout_id = $1 AND gate = 'failed'
         ORDER BY customer LIMIT $2",
        &[rollout.into(), (limit as i64).into()],
    )?;
    let waiting = conn.query(
        "SELECT c.id FROM customers c WHERE c.channel = $2 AND NOT EXISTS (
             SELECT 1 FROM rollout_assignments a WHERE a.rollout_id = $1 AND a.customer = c.id)
         ORDER BY c.id LIMIT $3",
        &[rollout.into(), channel.into(), (limit as i64).into()],
    )?;
    let names = |rows: Vec<Row>, column: &str| {
        rows.iter()
            .map(|r| r.get(column))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok((names(failed, "customer")?, names(waiting, "id")?))
}

pub fn gate_counts<C: Sql + ?Sized>(conn: &C, rollout: i64) -> Result<(u64, u64, u64), C::Error> {
    // `CASE`, not SQLite's `SUM(gate = 'succeeded')`: PostgreSQL sums no booleans.
    let r = conn.query_one(
        "SELECT COUNT(*) AS n,
             COALESCE(SUM(CASE WHEN gate = 'succeeded' THEN 1 ELSE 0 END), 0) AS succeeded,
             COALESCE(SUM(CASE WHEN gate = 'failed' THEN 1 ELSE 0 END), 0) AS failed
         FROM rollout_assignments WHERE rollout_id = $1",
        &[rollout.into()],
    )?;
    Ok((
        r.get::<i64>("n")?.max(0) as u64,
        r.get::<i64>("succeeded")?.max(0) as u64,
        r.get::<i64>("failed")?.max(0) as u64,
    ))
}

/// The first failed customer of a rollout, with why.
pub fn first_failure<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
) -> Result<Option<(String, Option<String>)>, C::Error> {
    let Some(r) = conn.query_opt(FIRST_FAILURE_SQL, &[rollout.into()])? else {
        return Ok(None);
    };
    Ok(Some((r.get("customer")?, r.get("gate_reason")?)))
}

/// Whether any customer of a rollout in `channel` is still waiting at the gate. A
/// customer moved to another channel since it was assigned no longer holds the
/// rollout up (a failure it reported still halts it).
pub fn any_waiting<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
    channel: &str,
) -> Result<bool, C::Error> {
    Ok(conn
        .query_one(ANY_WAITING_SQL, &[rollout.into(), channel.into()])?
        .get("waiting")?)
}

/// Where a customer stands at a rollout's gate: the gate, why (a failure's cause),
/// and the wave it was assigned in.
pub type GateStanding = (Gate, Option<String>, String);

/// A customer's gate standing in a rollout; `None` when not assigned.
pub fn gate<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
    customer: &str,
) -> Result<Option<GateStanding>, C::Error> {
    let Some(r) = conn.query_opt(
        "SELECT gate, gate_reason, wave FROM rollout_assignments WHERE rollout_id = $1 AND customer = $2",
        &[rollout.into(), customer.into()],
    )?
    else {
        return Ok(None);
    };
    Ok(Some((
        r.parsed("gate")?,
        r.get("gate_reason")?,
        r.get("wave")?,
    )))
}

pub fn set_gate<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
    customer: &str,
    gate: Gate,
    reason: Option<&str>,
    now: &str,
) -> Result<(), C::Error> {
    let gate = gate.to_string();
    conn.execute(
        "UPDATE rollout_assignments SET gate = $3, gate_reason = $4, gate_at = $5
         WHERE rollout_id = $1 AND customer = $2",
        &[
            rollout.into(),
            customer.into(),
            gate.as_str().into(),
            reason.into(),
            now.into(),
        ],
    )?;
    Ok(())
}

/// The open rollouts that assigned `customer`.
pub fn open_rollouts_of_customer<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Vec<i64>, C::Error> {
    let rows = conn.query(OPEN_ROLLOUTS_OF_CUSTOMER_SQL, &[customer.into()])?;
    Ok(rows.iter().map(|r| r.get("id")).collect::<Result<_, _>>()?)
}

/// One assignment of a customer: the rollout, its release and promotion, when.
#[derive(Clone, Debug)]
pub struct CustomerAssignment {
    pub rollout: i64,
    pub promotion_id: i64,
    pub kind: ApprovedKind,
    pub release: String,
    pub assigned_at: String,
}

/// The newest assignment of `customer` per release in `channel` (read through
/// `rollout_assignments_customer`), by release name in byte order.
pub fn customer_assignments<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    channel: &str,
) -> Result<Vec<CustomerAssignment>, C::Error> {
    let rows = conn.query(CUSTOMER_ASSIGNMENTS_SQL, &[customer.into(), channel.into()])?;
    let mut newest: Vec<CustomerAssignment> = Vec::new();
    for r in &rows {
        let row = CustomerAssignment {
            rollout: r.get("id")?,
            promotion_id: r.get("promotion_id")?,
            kind: kind_from(r, "kind")?,
            release: r.get("release")?,
            assigned_at: r.get("assigned_at")?,
        };
        if !newest
            .iter()
            .any(|n| n.kind == row.kind && n.release == row.release)
        {
            newest.push(row);
        }
    }
    newest.sort_by(|a, b| a.release.cmp(&b.release));
    Ok(newest)
}

/// Adds to a rollout's history (a rollout that does not exist is refused:
/// `rollout_id` references `rollouts`).
pub fn insert_event<C: Sql + ?Sized>(
    conn: &C,
    rollout: i64,
    at: &str,
    kind: EventKind,
    customer: Option<&str>,
    wave: Option<&str>,
    detail: Option<&str>,
) -> Result<(), C::Error> {
    let kind = kind.to_string();
    conn.execute(
        "INSERT INTO rollout_events (rollout_id, at, kind, customer, wave, detail)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            rollout.into(),
            at.into(),
            kind.as_str().into(),
            customer.into(),
            wave.into(),
            detail.into(),
        ],
    )?;
    Ok(())
}

/// A rollout's history, in the order it happened (by id).
pub fn events<C: Sql + ?Sized>(conn: &C, rollout: i64) -> Result<Vec<RolloutEvent>, C::Error> {
    let rows = conn.query(
        "SELECT at, kind, customer, wave, detail FROM rollout_events
         WHERE rollout_id = $1 ORDER BY id",
        &[rollout.into()],
    )?;
    let event = |r: &Row| {
        Ok::<_, Decode>(RolloutEvent {
            at: r.get("at")?,
            kind: r.parsed("kind")?,
            customer: r.get("customer")?,
            wave: r.get("wave")?,
            detail: r.get("detail")?,
        })
    };
    Ok(rows.iter().map(event).collect::<Result<_, _>>()?)
}

/// A release receipt as the gate reads it.
#[derive(Clone, Debug)]
pub struct ReleaseReceiptRow {
    pub id: String,
    pub version: semver::Version,
    pub kind: ReceiptKind,
    pub outcome: Outcome,
    pub finished_ns: i64,
    pub received_ns: i64,
}

pub struct NewReleaseReceipt<'a> {
    pub id: &'a str,
    pub customer: &'a str,
    pub release: &'a str,
    pub version: &'a semver::Version,
    pub digest: &'a str,
    pub kind: ReceiptKind,
    pub outcome: Outcome,
    pub finished_at: &'a str,
    pub finished_ns: i64,
    pub key_id: &'a str,
    pub document: &'a str,
}

/// The document of release receipt `id` as first received (a receipt is recorded
/// once: the caller compares a second delivery with it).
pub fn release_receipt_document<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
) -> Result<Option<String>, C::Error> {
    let row = conn.query_opt(
        "SELECT document FROM release_receipts WHERE id = $1",
        &[id.into()],
    )?;
    Ok(row.map(|r| r.get("document")).transpose()?)
}

/// Records a release receipt; one with an id already recorded is refused (the
/// primary key), so a receipt counts once.
pub fn insert_release_receipt<C: Sql + ?Sized>(
    conn: &C,
    r: &NewReleaseReceipt<'_>,
    now: &str,
    now_ns: i64,
) -> Result<(), C::Error> {
    let (version, kind, outcome) = (
        r.version.to_string(),
        r.kind.to_string(),
        r.outcome.to_string(),
    );
    conn.execute(
        "INSERT INTO release_receipts (id, customer, release, version, digest, kind, outcome,
             finished_at, finished_ns, key_id, received_at, received_ns, document)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        &[
            r.id.into(),
            r.customer.into(),
            r.release.into(),
            version.as_str().into(),
            r.digest.into(),
            kind.as_str().into(),
            outcome.as_str().into(),
            r.finished_at.into(),
            r.finished_ns.into(),
            r.key_id.into(),
            now.into(),
            now_ns.into(),
            r.document.into(),
        ],
    )?;
    Ok(())
}

impl FromRow for ReleaseReceiptRow {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(ReleaseReceiptRow {
            id: r.get("id")?,
            version: r.parsed("version")?,
            kind: r.parsed("kind")?,
            outcome: r.parsed("outcome")?,
            finished_ns: r.get("finished_ns")?,
            received_ns: r.get("received_ns")?,
        })
    }
}

/// A customer's latest release receipt of `release` (apply, rollback or destroy).
pub fn latest_release_receipt<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    release: &str,
) -> Result<Option<ReleaseReceiptRow>, C::Error> {
    let row = conn.query_opt(
        LATEST_RELEASE_RECEIPT_SQL,
        &[customer.into(), release.into()],
    )?;
    Ok(row.as_ref().map(ReleaseReceiptRow::from_row).transpose()?)
}

/// The version of `release` a customer runs: its latest release receipt that left
/// one in place (an apply or rollback that succeeded).
pub fn installed_release<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    release: &str,
) -> Result<Option<semver::Version>, C::Error> {
    let row = conn.query_opt(INSTALLED_RELEASE_SQL, &[customer.into(), release.into()])?;
    Ok(row.map(|r| r.parsed("version")).transpose()?)
}

/// A stack receipt that counts against a release version at the gate.
#[derive(Clone, Debug)]
pub struct StackEvidence {
    pub id: String,
    pub stack: String,
    pub kind: ReceiptKind,
    pub outcome: Outcome,
    pub version: semver::Version,
    pub finished_ns: i64,
}

impl FromRow for StackEvidence {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(StackEvidence {
            id: r.get("id")?,
            stack: r.get("stack")?,
            kind: r.parsed("kind")?,
            outcome: r.parsed("outcome")?,
            version: r.parsed("version")?,
            finished_ns: r.get("finished_ns")?,
        })
    }
}

/// The latest failed or drifted stack receipt of a customer made as part of
/// `release@version` finishing after `after_ns` (read through `receipts_release`).
pub fn stack_failure_in_release<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    release: &str,
    version: &semver::Version,
    after_ns: i64,
) -> Result<Option<StackEvidence>, C::Error> {
    let version = version.to_string();
    let row = conn.query_opt(
        STACK_FAILURE_IN_RELEASE_SQL,
        &[
            release.into(),
            customer.into(),
            version.as_str().into(),
            after_ns.into(),
        ],
    )?;
    Ok(row.as_ref().map(StackEvidence::from_row).transpose()?)
}

/// A customer's latest stack receipt of `stack` (apply, rollback, destroy, drift).
pub fn latest_stack_receipt<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    stack: &str,
) -> Result<Option<StackEvidence>, C::Error> {
    let row = conn.query_opt(LATEST_STACK_RECEIPT_SQL, &[customer.into(), stack.into()])?;
    Ok(row.as_ref().map(StackEvidence::from_row).transpose()?)
}

/// A customer's last sync state for one release.
#[derive(Clone, Debug)]
pub struct SyncRow {
    pub release: String,
    pub kind: ApprovedKind,
    pub state: SyncState,
    pub assigned: Option<semver::Version>,
    pub running: Option<semver::Version>,
    pub pending: Option<String>,
    pub message: Option<String>,
    pub reported_at: String,
    pub reported_ns: i64,
}

pub struct NewSync<'a> {
    pub customer: &'a str,
    pub release: &'a str,
    pub kind: ApprovedKind,
    pub state: SyncState,
    pub assigned: Option<&'a semver::Version>,
    pub running: Option<&'a semver::Version>,
    pub pending: Option<&'a str>,
    pub message: Option<&'a str>,
}

/// Records a customer's sync state for one release: one row per customer and
/// release, the latest report replacing the one before.
pub fn upsert_sync<C: Sql + ?Sized>(
    conn: &C,
    s: &NewSync<'_>,
    now: &str,
    now_ns: i64,
) -> Result<(), C::Error> {
    let state = s.state.to_string();
    let (assigned, running) = (
        s.assigned.map(ToString::to_string),
        s.running.map(ToString::to_string),
    );
    conn.execute(
        "INSERT INTO customer_sync (customer, release, kind, state, assigned, running, pending,
             message, reported_at, reported_ns)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (customer, release) DO UPDATE SET kind = excluded.kind,
             state = excluded.state, assigned = excluded.assigned, running = excluded.running,
             pending = excluded.pending, message = excluded.message,
             reported_at = excluded.reported_at, reported_ns = excluded.reported_ns",
        &[
            s.customer.into(),
            s.release.into(),
            kind_text(s.kind).into(),
            state.as_str().into(),
            assigned.as_deref().into(),
            running.as_deref().into(),
            s.pending.into(),
            s.message.into(),
            now.into(),
            now_ns.into(),
        ],
    )?;
    Ok(())
}

/// Records a sync pass: its time, and the customer as seen then (a pass that
/// changed nothing leaves no receipt, yet its runner is alive).
pub fn note_sync<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    now: &str,
    now_ns: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE customers SET last_sync = $2 WHERE id = $1",
        &[customer.into(), now.into()],
    )?;
    note_seen(conn, customer, now, now_ns)
}

/// The customer was seen at `at` (a release receipt's finish, a sync pass), unless
/// it was seen later already.
pub fn note_seen<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    at: &str,
    at_ns: i64,
) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE customers SET last_seen = $2, last_seen_ns = $3
         WHERE id = $1 AND (last_seen_ns IS NULL OR last_seen_ns < $3)",
        &[customer.into(), at.into(), at_ns.into()],
    )?;
    Ok(())
}

impl FromRow for SyncRow {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(SyncRow {
            release: r.get("release")?,
            kind: kind_from(r, "kind")?,
            state: r.parsed("state")?,
            assigned: r.parsed_opt("assigned")?,
            running: r.parsed_opt("running")?,
            pending: r.get("pending")?,
            message: r.get("message")?,
            reported_at: r.get("reported_at")?,
            reported_ns: r.get("reported_ns")?,
        })
    }
}

const SYNC_COLUMNS: &str =
    "release, kind, state, assigned, running, pending, message, reported_at, reported_ns";

pub fn sync_of<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    release: &str,
) -> Result<Option<SyncRow>, C::Error> {
    let row = conn.query_opt(
        &format!("SELECT {SYNC_COLUMNS} FROM customer_sync WHERE customer = $1 AND release = $2"),
        &[customer.into(), release.into()],
    )?;
    Ok(row.as_ref().map(SyncRow::from_row).transpose()?)
}

/// Every customer's releases whose last sync pass failed, by customer then release:
/// what `fleet --failed` adds to the stacks whose last attempt failed (a pull,
/// verification or preflight that failed before any plan leaves no receipt).
pub fn failed_syncs<C: Sql + ?Sized>(
    conn: &C,
    customer: Option<&str>,
) -> Result<Vec<(String, SyncRow)>, C::Error> {
    let rows = match customer {
        Some(customer) => conn.query(
            &format!("SELECT {SYNC_COLUMNS}, customer FROM customer_sync WHERE state = 'failed' AND customer = $1 ORDER BY customer, release"),
            &[customer.into()],
        )?,
        None => conn.query(
            &format!("SELECT {SYNC_COLUMNS}, customer FROM customer_sync WHERE state = 'failed' ORDER BY customer, release"),
            &[],
        )?,
    };
    Ok(rows
        .iter()
        .map(|r| Ok((r.get("customer")?, SyncRow::from_row(r)?)))
        .collect::<Result<Vec<_>, Decode>>()?)
}

impl SyncRow {
    /// As the API gives it.
    pub fn view(&self, customer: &str) -> crate::api::CustomerSync {
        crate::api::CustomerSync {
            customer: customer.to_string(),
            release: self.release.clone(),
            state: self.state,
            assigned: self.assigned.clone(),
            running: self.running.clone(),
            message: self.message.clone(),
            reported_at: self.reported_at.clone(),
        }
    }
}

/// A customer's sync state per release, by release name (bytes).
pub fn syncs<C: Sql + ?Sized>(conn: &C, customer: &str) -> Result<Vec<SyncRow>, C::Error> {
    let rows = conn.query(
        &format!("SELECT {SYNC_COLUMNS} FROM customer_sync WHERE customer = $1 ORDER BY release"),
        &[customer.into()],
    )?;
    Ok(from_rows(&rows)?)
}
