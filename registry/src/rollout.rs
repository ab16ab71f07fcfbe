//! Rollouts: the vendor promotes, the registry schedules.
//!
//! A promotion is the vendor's signed [`SignedChannelStatement`], pushed as an OCI
//! artifact into the release's repository ([`promote`] records it and starts a
//! rollout in the manifest's own transaction). The registry cannot approve
//! anything: it only decides *when* each customer of the channel is assigned what
//! the vendor signed, wave by wave:
//!
//! - the first wave with customers opens at once;
//! - wave k+1 opens when every customer assigned so far stands `succeeded` at the
//!   health gate and wave k has soaked (its soak time on the registry's clock,
//!   never a runner's); waves without customers are skipped;
//! - any assigned customer standing `failed` (a failed apply, a failed stack
//!   receipt or smoke check, drift, a failed sync) halts the rollout: nobody else is
//!   assigned, and the halt says who and why.
//!
//! Each assigned customer's gate standing is kept in `rollout_assignments`, updated
//! as that customer's receipts and sync reports arrive ([`refresh_customer`]), so
//! [`advance`] reads a rollout's health by key. Everything takes the time as an
//! argument (`now_ns`, UTC nanoseconds), so the schedule is a deterministic function
//! of the database and the clock, and tests inject the clock.

use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::release_receipt::SignedReleaseReceipt;
use stackpack_schema::rollout::{
    ApprovedKind, Assignment, AssignmentResponse, SignedChannelStatement, SyncReport, SyncState,
};

use crate::api::{EventKind, Gate, Rollout, RolloutDetail, RolloutState};
use crate::db::locks::Lock;
use crate::db::rollouts::{self as rdb, ChannelConfig, RolloutRow};
use crate::db::sql::{Decode, Sql};
use crate::db::{self, Db};
use crate::error::{Code, Error, Result};
use crate::receipt_keys::{check_key, FirstUse, SigningKey};

const NS: i64 = 1_000_000_000;

/// The registry's clock: now, UTC nanoseconds.
pub fn now_ns() -> i64 {
    i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos()).unwrap_or(i64::MAX)
}

/// A registry-clock time as RFC 3339, UTC, to the millisecond.
pub fn format_ns(ns: i64) -> String {
    let at =
        time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns / 1_000_000) * 1_000_000)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    at.format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(Code::BadRequest, message)
}

/// A soak time as `channel set --soak` and `PUT /api/v1/channels` take it.
pub fn parse_soak(text: &str) -> Option<u64> {
    crate::age::parse_secs(text)
}

// ---------------------------------------------------------------------------
// Promotion

/// What [`promote`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Promoted {
    pub promotion: i64,
    pub rollout: i64,
    /// False: the same statement was promoted before; nothing changed.
    pub created: bool,
}

/// Records a promotion of the statement `signed` (already read from the manifest
/// pushed to `repository`, its subject checked to be the digest it approves) and
/// starts its rollout, superseding the release's older open rollouts in the
/// channel. Refused (`MANIFEST_INVALID`, nothing stored) when the signature does
/// not verify or the registry does not hold what it approves; `CONFLICT` when the
/// channel already has a newer version of the release, or this version with another
/// statement. The same statement again changes nothing.
pub fn promote<C: Sql + ?Sized>(
    conn: &C,
    repository: &str,
    signed: &SignedChannelStatement,
    now_ns: i64,
) -> Result<Promoted>
where
    Error: From<C::Error>,
{
    check_held(conn, repository, signed)?;
    let s = &signed.statement;
    check_channel(conn, &s.channel)?;
    let document = String::from_utf8(signed.to_bytes()).expect("JSON is UTF-8");
    if let Some(existing) = rdb::promotion(conn, &s.channel, s.kind, &s.release, &s.version)? {
        if existing.statement == document {
            let rollout = rdb::rollout_of_promotion(conn, existing.id)?.unwrap_or_default();
            return Ok(Promoted {
                promotion: existing.id,
                rollout,
                created: false,
            });
        }
        return Err(Error::new(
            Code::Conflict,
            format!(
                "`{}@{}` was already promoted to channel `{}` with another statement",
                s.release, s.version, s.channel
            ),
        ));
    }
    if let Some(newest) = rdb::newest_promotion(conn, &s.channel, s.kind, &s.release)? {
        if newest.version.cmp_precedence(&s.version) == std::cmp::Ordering::Greater {
            return Err(Error::new(
                Code::Conflict,
                format!(
                    "channel `{}` already has `{}@{}`, newer than `{}`; promote a newer version",
                    s.channel, s.release, newest.version, s.version
                ),
            ));
        }
    }
    start_rollout(conn, signed, &document, now_ns)
}

/// A promotion goes to a channel that exists (configured, or with customers in it):
/// a misspelt one would start a rollout nobody is on. Creating a channel is an
/// explicit `channel set`.
fn check_channel<C: Sql + ?Sized>(conn: &C, channel: &str) -> Result<()>
where
    Error: From<C::Error>,
{
    let channels = rdb::channel_names(conn)?;
    if channels.iter().any(|c| c == channel) {
        return Ok(());
    }
    Err(crate::names::unknown(
        "channel",
        "channels",
        channel,
        Some(&channels),
        &format!("to start a new channel, create it first with `stackpack-registry channel set {channel}`"),
    ))
}

/// The statement verifies against its own key, names things by valid names, and
/// approves a release version (or bundle) this registry holds, with that digest, in
/// `repository`.
fn check_held<C: Sql + ?Sized>(
    conn: &C,
    repository: &str,
    signed: &SignedChannelStatement,
) -> Result<()>
where
    Error: From<C::Error>,
{
    let refused = |message: String| {
        Error::new(
            Code::ManifestInvalid,
            format!("channel statement in `{repository}`: {message}"),
        )
    };
    signed
        .verify_integrity()
        .map_err(|e| refused(e.to_string()))?;
    let s = &signed.statement;
    for (what, name) in [("channel", &s.channel), ("release", &s.release)] {
        stackpack_schema::reference::validate_name(name)
            .map_err(|e| refused(format!("{what} `{name}`: {e}")))?;
    }
    let digest = s.digest.to_string();
    match s.kind {
        ApprovedKind::Release => {
            let held = db::release_index::version(conn, &s.release, &s.version.to_string())?;
            match held {
                Some(v) if v.digest == s.digest && v.repository != repository => Err(refused(format!(
                    "`{}@{}` lives in `{}`; push the statement there",
                    s.release, s.version, v.repository
                ))),
                Some(v) if v.digest == s.digest => Ok(()),
                Some(v) => Err(refused(format!(
                    "it approves `{}@{}` with digest `{digest}`, but the registry holds that version with digest `{}`",
                    s.release, s.version, v.digest
                ))),
                None => Err(refused(format!(
                    "it approves `{}@{}`, which the registry does not hold; push the release first (`stackpack publish`)",
                    s.release, s.version
                ))),
            }
        }
        ApprovedKind::Stack => match db::ledger::release_digest(conn, &s.release, &s.version)? {
            Some(held)
                if held == s.digest && db::manifests::exists(conn, repository, &digest)? =>
            {
                Ok(())
            }
            _ => Err(refused(format!(
                "it approves stack `{}@{}` with digest `{digest}`, which the registry does not hold; push the bundle first",
                s.release, s.version
            ))),
        },
    }
}

/// Records the promotion, starts its rollout (superseding the release's open ones
/// in the channel) and opens its first wave.
fn start_rollout<C: Sql + ?Sized>(
    conn: &C,
    signed: &SignedChannelStatement,
    document: &str,
    now_ns: i64,
) -> Result<Promoted>
where
    Error: From<C::Error>,
{
    let s = &signed.statement;
    let digest = s.digest.to_string();
    let now = format_ns(now_ns);
    let promotion = rdb::insert_promotion(
        conn,
        &rdb::NewPromotion {
            channel: &s.channel,
            kind: s.kind,
            release: &s.release,
            version: &s.version,
            digest: &digest,
            required: s.required,
            statement: document,
            key_id: &s.key_id,
            promoted_at: &s.promoted_at,
        },
        &now,
    )?;
    let config = rdb::channel(conn, &s.channel)?;
    let older = open_rollouts_held(conn, &s.channel, s.kind, &s.release)?;
    let rollout = rdb::insert_rollout(
        conn,
        &rdb::NewRollout {
            promotion_id: promotion,
            channel: &s.channel,
            kind: s.kind,
            release: &s.release,
            version: &s.version,
            digest: &digest,
            config: &config,
        },
        &now,
    )?;
    for old in older {
        rdb::set_state(conn, old.id, RolloutState::Superseded, None, &now)?;
        let detail = format!("by rollout {rollout} (`{}@{}`)", s.release, s.version);
        rdb::insert_event(
            conn,
            old.id,
            &now,
            EventKind::Superseded,
            None,
            None,
            Some(&detail),
        )?;
    }
    let detail = format!(
        "`{}@{}` approved for `{}` by key `{}`{}{}",
        s.release,
        s.version,
        s.channel,
        s.key_id,
        s.promoted_by
            .as_deref()
            .map(|by| format!(" ({by})"))
            .unwrap_or_default(),
        if s.required { "; required" } else { "" }
    );
    rdb::insert_event(
        conn,
        rollout,
        &now,
        EventKind::Promoted,
        None,
        None,
        Some(&detail),
    )?;
    advance_one(conn, rollout, now_ns, Joiners::Assign)?;
    Ok(Promoted {
        promotion,
        rollout,
        created: true,
    })
}

/// The release's open rollouts in `channel`, each held ([`Lock::Rollout`], in id
/// order) and then read again: a tick or a person may have been moving one on, and
/// one that finished meanwhile is open no more. None starts meanwhile: starting one
/// takes the channel's lock, which the caller holds.
fn open_rollouts_held<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
    kind: ApprovedKind,
    release: &str,
) -> Result<Vec<RolloutRow>, C::Error> {
    for row in rdb::open_rollouts_of(conn, channel, kind, release)? {
        conn.lock(Lock::Rollout(row.id))?;
    }
    rdb::open_rollouts_of(conn, channel, kind, release)
}

// ---------------------------------------------------------------------------
// Scheduling

/// Moves every running rollout (of `channel`, when given) on as far as `now_ns`
/// allows: opens due waves, assigns customers who joined an open wave, halts on a
/// failure, completes. The registry's clock only; deterministic for a database and
/// a time. Each rollout is held ([`Lock::Rollout`], in id order) while it moves, so
/// this is safe inside any write; the scheduler's own tick is [`tick`].
pub fn advance<C: Sql + ?Sized>(
    conn: &C,
    channel: Option<&str>,
    now_ns: i64,
) -> Result<(), C::Error> {
    for row in rdb::rollouts_in(conn, RolloutState::Running)? {
        if channel.is_some_and(|c| c != row.channel) {
            continue;
        }
        conn.lock(Lock::Rollout(row.id))?;
        advance_one(conn, row.id, now_ns, Joiners::Assign)?;
    }
    Ok(())
}

/// The scheduler's tick: [`advance`], one rollout per transaction holding only that
/// rollout, so a tick waits for no push, receipt or other rollout, and none waits
/// for it. (`advance_one` reads the rollout again under its lock: one a person
/// paused or a promotion superseded meanwhile is left alone.)
pub fn tick(db: &Db, now_ns: i64) -> Result<()> {
    let running = db.read_any(|c| rdb::rollouts_in(c, RolloutState::Running))?;
    for row in running {
        db.write_keyed(&[Lock::Rollout(row.id)], |tx| {
            Ok(advance_one(tx, row.id, now_ns, Joiners::Assign)?)
        })?;
    }
    Ok(())
}

/// [`tick`] only when a rollout's next wave is due by the clock (one indexed
/// probe): what the assignment poll runs, so it writes only when there is news.
pub fn advance_if_due(db: &Db, now_ns: i64) -> Result<()> {
    if db.read_any(|c| rdb::any_due(c, now_ns))? {
        tick(db, now_ns)?;
    }
    Ok(())
}

/// Whether a move looks for customers placed in an open wave since it opened: the
/// tick does (it reads the channel's whole list); a receipt's move does not, so a
/// receipt costs the same in a channel of ten customers or ten thousand.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Joiners {
    Assign,
    Skip,
}

fn advance_one<C: Sql + ?Sized>(
    conn: &C,
    id: i64,
    now_ns: i64,
    joiners: Joiners,
) -> Result<(), C::Error> {
    let Some(row) = rdb::rollout(conn, id)? else {
        return Ok(());
    };
    if row.state != RolloutState::Running {
        return Ok(());
    }
    if rdb::raw_wave_index(conn, id)? < 0 {
        open_from(conn, &row, 0, now_ns)?;
    } else if joiners == Joiners::Assign {
        assign_late_joiners(conn, &row, now_ns)?;
    }
    loop {
        if halt_on_failure(conn, id, now_ns)? {
            return Ok(());
        }
        let row = rdb::rollout(conn, id)?.expect("the rollout is there");
        if rdb::any_waiting(conn, id, &row.channel)? {
            return rdb::set_due(conn, id, None);
        }
        if row.wave_index + 1 >= row.waves.len() {
            let now = format_ns(now_ns);
            rdb::set_state(conn, id, RolloutState::Completed, None, &now)?;
            return rdb::insert_event(conn, id, &now, EventKind::Completed, None, None, None);
        }
        let next_at = next_wave_ns(&row);
        if now_ns < next_at {
            return rdb::set_due(conn, id, Some(next_at));
        }
        open_from(conn, &row, row.wave_index + 1, now_ns)?;
    }
}

/// When the wave after the current one may open (if healthy): opened + soak.
fn next_wave_ns(row: &RolloutRow) -> i64 {
    let soak = i64::try_from(row.soak_seconds)
        .unwrap_or(i64::MAX / NS)
        .saturating_mul(NS);
    row.wave_opened_ns.unwrap_or(0).saturating_add(soak)
}

/// Opens wave `start`, and the ones after it while they have no customers.
fn open_from<C: Sql + ?Sized>(
    conn: &C,
    row: &RolloutRow,
    start: usize,
    now_ns: i64,
) -> Result<(), C::Error> {
    let now = format_ns(now_ns);
    let config = ChannelConfig {
        waves: row.waves.clone(),
        soak_seconds: row.soak_seconds,
        configured: true,
    };
    let customers = rdb::channel_customers(conn, &row.channel)?;
    for index in start..row.waves.len() {
        let wave = &row.waves[index];
        rdb::set_wave(conn, row.id, index, &now, now_ns)?;
        let members: Vec<&String> = customers
            .iter()
            .filter(|(_, w)| config.wave_index(w.as_deref()) == index)
            .map(|(c, _)| c)
            .collect();
        if members.is_empty() {
            rdb::insert_event(
                conn,
                row.id,
                &now,
                EventKind::WaveSkipped,
                None,
                Some(wave),
                Some("no customers"),
            )?;
            continue;
        }
        let detail = stackpack_terminal::words::count(members.len() as u64, "customer");
        rdb::insert_event(
            conn,
            row.id,
            &now,
            EventKind::WaveOpened,
            None,
            Some(wave),
            Some(&detail),
        )?;
        for customer in members {
            assign(conn, row, customer, wave, index, now_ns)?;
        }
        return Ok(());
    }
    Ok(())
}

/// Customers put into a wave already open (or an earlier one) after it opened.
fn assign_late_joiners<C: Sql + ?Sized>(
    conn: &C,
    row: &RolloutRow,
    now_ns: i64,
) -> Result<(), C::Error> {
    let config = ChannelConfig {
        waves: row.waves.clone(),
        soak_seconds: row.soak_seconds,
        configured: true,
    };
    let assigned = rdb::assigned_customers(conn, row.id)?;
    for (customer, wave) in rdb::channel_customers(conn, &row.channel)? {
        let index = config.wave_index(wave.as_deref());
        if index <= row.wave_index && assigned.binary_search(&customer).is_err() {
            assign(conn, row, &customer, &row.waves[index], index, now_ns)?;
        }
    }
    Ok(())
}

fn assign<C: Sql + ?Sized>(
    conn: &C,
    row: &RolloutRow,
    customer: &str,
    wave: &str,
    index: usize,
    now_ns: i64,
) -> Result<(), C::Error> {
    let now = format_ns(now_ns);
    if rdb::insert_assignment(conn, row.id, customer, wave, index, &now)? {
        rdb::insert_event(
            conn,
            row.id,
            &now,
            EventKind::Assigned,
            Some(customer),
            Some(wave),
            None,
        )?;
        refresh_gate(conn, row, customer, now_ns)?;
    }
    Ok(())
}

/// Halts a running rollout with a failed customer; true when it did.
fn halt_on_failure<C: Sql + ?Sized>(conn: &C, id: i64, now_ns: i64) -> Result<bool, C::Error> {
    let Some((customer, reason)) = rdb::first_failure(conn, id)? else {
        return Ok(false);
    };
    let wave = rdb::gate(conn, id, &customer)?.map(|(_, _, wave)| wave);
    let why = format!(
        "customer `{customer}`{} failed: {}",
        wave.as_deref()
            .map(|w| format!(" (wave `{w}`)"))
            .unwrap_or_default(),
        reason.as_deref().unwrap_or("no reason recorded")
    );
    let now = format_ns(now_ns);
    rdb::set_state(conn, id, RolloutState::Halted, Some(&why), &now)?;
    rdb::insert_event(
        conn,
        id,
        &now,
        EventKind::Halted,
        Some(&customer),
        wave.as_deref(),
        Some(&why),
    )?;
    Ok(true)
}

// ---------------------------------------------------------------------------
// The health gate

/// `said` about a failed stack receipt, followed by why it failed when the receipt
/// says (in `fleet`'s and `customer show`'s words, [`crate::reason::failure`]).
fn with_reason<C: Sql + ?Sized>(
    conn: &C,
    said: String,
    e: &rdb::StackEvidence,
) -> Result<String, C::Error> {
    if e.outcome != Outcome::Failed {
        return Ok(said);
    }
    Ok(match crate::db::ledger::failure_reason(conn, &e.id)? {
        Some(reason) => format!("{said}: {reason}"),
        None => said,
    })
}

/// Where one customer stands for one rollout, from its receipts and sync reports.
pub fn evaluate<C: Sql + ?Sized>(
    conn: &C,
    row: &RolloutRow,
    customer: &str,
) -> Result<(Gate, Option<String>), C::Error> {
    let target = &row.version;
    let name = &row.release;
    if let Some(reason) = crate::forecast::gate_reason(conn, name, target, customer)? {
        return Ok((Gate::Failed, Some(reason)));
    }
    // The time of the success the gate stands on: failures reported after it count.
    let mut success: Option<(i64, i64)> = None;
    match row.kind {
        ApprovedKind::Release => {
            if let Some(r) = rdb::latest_release_receipt(conn, customer, name)? {
                if &r.version == target && r.outcome == Outcome::Failed {
                    return Ok((
                        Gate::Failed,
                        Some(format!(
                            "release receipt `{}`: {} of `{name}@{target}` failed",
                            r.id, r.kind
                        )),
                    ));
                }
                if &r.version == target && r.kind == ReceiptKind::Apply && r.outcome.in_place() {
                    success = Some((r.finished_ns, r.received_ns));
                }
            }
            let after = success.map_or(i64::MIN, |(finished, _)| finished);
            if let Some(e) = rdb::stack_failure_in_release(conn, customer, name, target, after)? {
                let said = format!(
                    "stack receipt `{}`: {} of stack `{}@{}` {}",
                    e.id, e.kind, e.stack, e.version, e.outcome
                );
                return Ok((Gate::Failed, Some(with_reason(conn, said, &e)?)));
            }
        }
        ApprovedKind::Stack => {
            if let Some(e) = rdb::latest_stack_receipt(conn, customer, name)? {
                let failed = e.outcome == Outcome::Failed && &e.version == target;
                let drifted = e.kind == ReceiptKind::Drift && e.outcome == Outcome::Drifted;
                if failed || drifted {
                    let said = format!(
                        "stack receipt `{}`: {} of `{}@{}` {}",
                        e.id, e.kind, e.stack, e.version, e.outcome
                    );
                    return Ok((Gate::Failed, Some(with_reason(conn, said, &e)?)));
                }
                if &e.version == target && e.kind == ReceiptKind::Apply && e.outcome.in_place() {
                    success = Some((e.finished_ns, 0));
                }
            }
        }
    }
    if let Some(sync) = rdb::sync_of(conn, customer, name)? {
        let reported_after = success.is_none_or(|(_, received)| sync.reported_ns > received);
        let about_target =
            sync.assigned.as_ref() == Some(target) || sync.running.as_ref() == Some(target);
        if reported_after
            && about_target
            && matches!(sync.state, SyncState::Failed | SyncState::Drifted)
        {
            return Ok((
                Gate::Failed,
                Some(format!(
                    "its runner reported `{}` for `{name}@{target}`{}",
                    sync.state,
                    sync.message.map(|m| format!(": {m}")).unwrap_or_default()
                )),
            ));
        }
    }
    Ok(match success {
        Some(_) => (Gate::Succeeded, None),
        None => (Gate::Waiting, None),
    })
}

/// Re-reads one customer's gate standing in one rollout; records a change.
fn refresh_gate<C: Sql + ?Sized>(
    conn: &C,
    row: &RolloutRow,
    customer: &str,
    now_ns: i64,
) -> Result<(), C::Error> {
    let Some((old, old_reason, wave)) = rdb::gate(conn, row.id, customer)? else {
        return Ok(());
    };
    let (gate, reason) = evaluate(conn, row, customer)?;
    if gate == old && reason == old_reason {
        return Ok(());
    }
    let now = format_ns(now_ns);
    rdb::set_gate(conn, row.id, customer, gate, reason.as_deref(), &now)?;
    let kind = match gate {
        Gate::Succeeded => Some(EventKind::Succeeded),
        Gate::Failed => Some(EventKind::Failed),
        Gate::Waiting => None,
    };
    if let Some(kind) = kind {
        rdb::insert_event(
            conn,
            row.id,
            &now,
            kind,
            Some(customer),
            Some(&wave),
            reason.as_deref(),
        )?;
    }
    Ok(())
}

/// Re-reads `customer`'s standing in every open rollout that assigned it, then moves
/// those rollouts on: what a receipt or sync report of the customer runs.
pub fn refresh_customer<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    now_ns: i64,
) -> Result<(), C::Error> {
    let mut ids = rdb::open_rollouts_of_customer(conn, customer)?;
    // In id order, as every keyed write takes them (`db::locks`).
    ids.sort_unstable();
    for id in ids {
        conn.lock(Lock::Rollout(id))?;
        if let Some(row) = rdb::rollout(conn, id)? {
            refresh_gate(conn, &row, customer, now_ns)?;
            advance_one(conn, id, now_ns, Joiners::Skip)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// People's controls

/// What a person does to a rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Pause,
    Resume,
    Abort,
}

impl Control {
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Pause => "pause",
            Control::Resume => "resume",
            Control::Abort => "abort",
        }
    }
}

/// Pauses, resumes (clearing a halt; the gate is read again, so a cause still
/// failing halts it again) or aborts rollout `id`. Returns it as it then stands.
pub fn control<C: Sql + ?Sized>(
    conn: &C,
    id: i64,
    control: Control,
    now_ns: i64,
) -> Result<RolloutRow>
where
    Error: From<C::Error>,
{
    let row = rdb::rollout(conn, id)?
        .ok_or_else(|| Error::new(Code::NotFound, format!("there is no rollout {id}")))?;
    let now = format_ns(now_ns);
    let refuse = |hint: &str| {
        Error::new(
            Code::Conflict,
            format!(
                "rollout {id} is {}; it cannot {}: {hint}",
                row.state,
                control.as_str()
            ),
        )
    };
    match (control, row.state) {
        (Control::Pause, RolloutState::Running | RolloutState::Halted) => {
            rdb::set_state(
                conn,
                id,
                RolloutState::Paused,
                row.halted_reason.as_deref(),
                &now,
            )?;
            rdb::insert_event(conn, id, &now, EventKind::Paused, None, None, None)?;
        }
        (Control::Pause, RolloutState::Paused) => {}
        (Control::Resume, RolloutState::Paused | RolloutState::Halted) => {
            // A person looked at the forecast's misses: they halt no more.
            crate::forecast::acknowledge(conn, &row.release, &row.version)?;
            rdb::set_state(conn, id, RolloutState::Running, None, &now)?;
            rdb::insert_event(
                conn,
                id,
                &now,
                EventKind::Resumed,
                None,
                None,
                row.halted_reason.as_deref(),
            )?;
            for customer in rdb::assigned_customers(conn, id)? {
                refresh_gate(conn, &row, &customer, now_ns)?;
            }
            advance_one(conn, id, now_ns, Joiners::Assign)?;
        }
        (Control::Resume, RolloutState::Running) => {}
        (Control::Abort, state) if state.is_open() => {
            rdb::set_state(conn, id, RolloutState::Aborted, None, &now)?;
            rdb::insert_event(
                conn,
                id,
                &now,
                EventKind::Aborted,
                None,
                None,
                Some("no further assignments; those assigned keep theirs"),
            )?;
        }
        (Control::Abort, RolloutState::Aborted) => {}
        _ => return Err(refuse("it is over; a new promotion starts a new rollout")),
    }
    Ok(rdb::rollout(conn, id)?.expect("the rollout is there"))
}

/// [`control`] as a person's command runs it: holding only rollout `id`, so
/// receipts, pushes and other rollouts go on meanwhile. Returns the rollout as it
/// then stands.
pub fn control_held(db: &Db, id: i64, what: Control) -> Result<Rollout> {
    db.write_keyed(&[Lock::Rollout(id)], |tx| {
        let row = control(tx, id, what, now_ns())?;
        Ok(summary(tx, &row)?)
    })
}

// ---------------------------------------------------------------------------
// Reading

/// A rollout as the API answers it.
pub fn summary<C: Sql + ?Sized>(conn: &C, row: &RolloutRow) -> Result<Rollout, C::Error> {
    let (assigned, succeeded, failed) = rdb::gate_counts(conn, row.id)?;
    let promotion = rdb::promotion_by_id(conn, row.promotion_id)?;
    let statement = promotion
        .as_ref()
        .and_then(|p| serde_json::from_str::<SignedChannelStatement>(&p.statement).ok());
    let open = row.wave_opened_ns.is_some();
    let has_next = row.wave_index + 1 < row.waves.len();
    Ok(Rollout {
        id: row.id,
        channel: row.channel.clone(),
        kind: row.kind,
        release: row.release.clone(),
        version: row.version.to_string(),
        digest: row.digest.clone(),
        required: promotion.as_ref().is_some_and(|p| p.required),
        state: row.state,
        waves: row.waves.clone(),
        wave_index: row.wave_index,
        soak_seconds: row.soak_seconds,
        wave_opened_at: row.wave_opened_at.clone(),
        next_wave_at: (open && has_next && row.state == RolloutState::Running)
            .then(|| format_ns(next_wave_ns(row))),
        halted_reason: row.halted_reason.clone(),
        held_up: held_up(conn, row, failed)?,
        promoted_by: statement.and_then(|s| s.statement.promoted_by),
        created: row.created.clone(),
        updated: row.updated.clone(),
        assigned,
        succeeded,
        failed,
    })
}

/// Names shown of those a halted rollout holds up, of each kind.
const HELD_UP_SHOWN: u64 = 10;

/// Who a halted rollout holds up and what to do ([`Rollout::held_up`]).
fn held_up<C: Sql + ?Sized>(
    conn: &C,
    row: &RolloutRow,
    failed: u64,
) -> Result<Option<String>, C::Error> {
    if row.state != RolloutState::Halted {
        return Ok(None);
    }
    let resume = format!("`stackpack-registry rollout resume {}`", row.id);
    if failed == 0 {
        return Ok(Some(format!(
            "no assigned customer fails the gate any more: {resume} goes on"
        )));
    }
    let (failing, waiting) = rdb::held_up(conn, row.id, &row.channel, HELD_UP_SHOWN)?;
    let list = |names: &[String], total: Option<u64>| {
        let mut out: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        if let Some(more) = total.and_then(|t| t.checked_sub(names.len() as u64)) {
            if more > 0 {
                out.push(format!("{more} more"));
            }
        }
        out.join(", ")
    };
    let verb = if failed == 1 { "fails" } else { "fail" };
    let mut text = format!("{} {verb} the gate", list(&failing, Some(failed)));
    if !waiting.is_empty() {
        text.push_str(&format!("; waiting: {}", list(&waiting, None)));
    }
    text.push_str(&format!("; once they succeed, {resume} goes on"));
    Ok(Some(text))
}

/// Rollouts, newest first.
pub fn list<C: Sql + ?Sized>(
    conn: &C,
    channel: Option<&str>,
    release: Option<&str>,
) -> Result<Vec<Rollout>, C::Error> {
    rdb::rollouts(conn, channel, release, 1000)?
        .iter()
        .map(|row| summary(conn, row))
        .collect()
}

/// One rollout with who got it when, who failed, and its history.
pub fn detail<C: Sql + ?Sized>(conn: &C, id: i64) -> Result<Option<RolloutDetail>, C::Error> {
    let Some(row) = rdb::rollout(conn, id)? else {
        return Ok(None);
    };
    Ok(Some(RolloutDetail {
        rollout: summary(conn, &row)?,
        assignments: rdb::assignments(conn, id)?,
        events: rdb::events(conn, id)?,
        forecast: crate::db::forecasts::forecast(conn, &row.release, &row.version)?
            .map(|f| f.summary()),
        misses: crate::db::forecasts::misses(conn, &row.release, &row.version)?,
    }))
}

/// A promotion's stored statement, read back (`promotions.statement`).
fn stored_statement(text: &str) -> Result<SignedChannelStatement, Decode> {
    SignedChannelStatement::from_bytes(text.as_bytes()).map_err(|e| Decode::Parse {
        column: "statement".into(),
        value: text.chars().take(80).collect(),
        message: e.to_string(),
    })
}

/// What `customer`'s runner should run: per release of its channel, the newest
/// rollout that assigned it (a required version first, when it runs one below it).
/// `None` when the customer is not known. Indexed lookups only.
pub fn assignment<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    now_ns: i64,
) -> Result<Option<AssignmentResponse>, C::Error> {
    let Some(placement) = rdb::placement(conn, customer)? else {
        return Ok(None);
    };
    let mut assignments = Vec::new();
    if let Some(channel) = &placement.channel {
        for a in rdb::customer_assignments(conn, customer, channel)? {
            let Some(promotion) = rdb::promotion_by_id(conn, a.promotion_id)? else {
                continue;
            };
            let target = promotion.version.clone();
            let installed = match a.kind {
                ApprovedKind::Release => rdb::installed_release(conn, customer, &a.release)?,
                ApprovedKind::Stack => rdb::latest_stack_receipt(conn, customer, &a.release)?
                    .filter(|e| e.outcome.in_place() && e.kind != ReceiptKind::Drift)
                    .map(|e| e.version),
            };
            let step = match &installed {
                Some(installed) => {
                    rdb::required_between(conn, channel, a.kind, &a.release, installed, &target)?
                }
                None => None,
            };
            let (promotion, rollout, on_the_way_to) = match step {
                Some(required) => {
                    let rollout =
                        rdb::rollout_of_promotion(conn, required.id)?.unwrap_or(a.rollout);
                    (required, rollout, Some(target))
                }
                None => (promotion, a.rollout, None),
            };
            let statement = stored_statement(&promotion.statement)?;
            assignments.push(Assignment {
                kind: a.kind,
                release: a.release.clone(),
                version: promotion.version.clone(),
                digest: statement.statement.digest.clone(),
                rollout,
                assigned_at: a.assigned_at.clone(),
                statement,
                hold: crate::forecast::hold(conn, &a.release, &promotion.version, customer)?,
                on_the_way_to,
            });
        }
    }
    Ok(Some(AssignmentResponse {
        customer: customer.to_string(),
        channel: placement.channel.clone(),
        wave: placement.channel.as_ref().map(|channel| {
            let config =
                rdb::channel(conn, channel).unwrap_or_else(|_| ChannelConfig::default_config());
            let index = config.wave_index(placement.wave.as_deref());
            config.waves.get(index).cloned().unwrap_or_default()
        }),
        assignments,
        now: format_ns(now_ns),
    }))
}

// ---------------------------------------------------------------------------
// What runners report

/// Checks and stores a signed release receipt reported over HTTP by a token allowed
/// to report for its customer (installation keys pinned as for stack receipts), and
/// re-reads the customer's gate. True when it was new.
pub fn record_release_receipt(db: &Db, signed: &SignedReleaseReceipt) -> Result<bool> {
    let r = &signed.receipt;
    if !signed.verifies() {
        return Err(bad(format!(
            "the release receipt `{}`'s signature does not verify against the key it names",
            r.id
        )));
    }
    for (what, name) in [("customer", &r.customer), ("release", &r.release)] {
        stackpack_schema::reference::validate_name(name)
            .map_err(|e| bad(format!("{what}: {e}")))?;
    }
    if r.id.is_empty() || r.id.len() > 128 || r.id.chars().any(char::is_control) {
        return Err(bad(
            "the receipt id must be 1 to 128 characters, none of them control characters",
        ));
    }
    let (finished_at, finished_ns) = db::utc_time(&r.finished_at).ok_or_else(|| {
        bad(format!(
            "`finishedAt` `{}` is not an RFC 3339 time",
            r.finished_at
        ))
    })?;
    db::utc_time(&r.started_at).ok_or_else(|| {
        bad(format!(
            "`startedAt` `{}` is not an RFC 3339 time",
            r.started_at
        ))
    })?;
    let document = String::from_utf8(stackpack_schema::signature::canonical_json(signed))
        .expect("JSON is UTF-8");
    let digest = r.digest.to_string();
    // Keyed as a stack's receipt is: its customer, its id and its key; the rollouts it
    // moves on are locked one by one as `refresh_customer` reaches them.
    let locks = [
        Lock::Customer(&r.customer),
        Lock::Receipt(&r.id),
        Lock::InstallationKey(&r.key_id),
    ];
    db.write_keyed(&locks, |tx| {
        let now_ns = now_ns();
        let now = format_ns(now_ns);
        if let Some(existing) = rdb::release_receipt_document(tx, &r.id)? {
            return if existing == document {
                Ok(false)
            } else {
                Err(Error::new(
                    Code::Conflict,
                    format!(
                        "another release receipt with id `{}` is already stored",
                        r.id
                    ),
                ))
            };
        }
        db::ledger::note_customer(tx, &r.customer, &now)?;
        let key = SigningKey {
            key_id: &r.key_id,
            public_key: &signed.public_key,
        };
        check_key(tx, &r.customer, &key, &FirstUse::Reporter, &now)?;
        rdb::insert_release_receipt(
            tx,
            &rdb::NewReleaseReceipt {
                id: &r.id,
                customer: &r.customer,
                release: &r.release,
                version: &r.version,
                digest: &digest,
                kind: r.kind,
                outcome: r.outcome,
                finished_at: &finished_at,
                finished_ns,
                key_id: &r.key_id,
                document: &document,
            },
            &now,
            now_ns,
        )?;
        rdb::note_seen(tx, &r.customer, &finished_at, finished_ns)?;
        refresh_customer(tx, &r.customer, now_ns)?;
        Ok(true)
    })
}

/// Stores a runner's sync report for `customer`: last seen, and each release's state
/// (a failure at the assigned version counts at the gate).
pub fn record_sync(db: &Db, customer: &str, report: &SyncReport) -> Result<()> {
    if report.customer != customer {
        return Err(bad(format!(
            "the report is customer `{}`'s, but was sent for `{customer}`",
            report.customer
        )));
    }
    for release in &report.releases {
        stackpack_schema::reference::validate_name(&release.release)
            .map_err(|e| bad(format!("release: {e}")))?;
    }
    db.write_keyed(&[Lock::Customer(customer)], |tx| {
        if db::ledger::customer(tx, customer)?.is_none() {
            return Err(Error::new(
                Code::NotFound,
                format!("customer `{customer}` is not known"),
            ));
        }
        let now_ns = now_ns();
        let now = format_ns(now_ns);
        rdb::note_sync(tx, customer, &now, now_ns)?;
        if let Some(approve) = report.approve {
            db::forecasts::set_approve(tx, customer, approve)?;
        }
        for release in &report.releases {
            let pending = release
                .pending
                .as_ref()
                .map(|p| serde_json::to_string(p).expect("a pending approval serialises"));
            rdb::upsert_sync(
                tx,
                &rdb::NewSync {
                    customer,
                    release: &release.release,
                    kind: release.kind,
                    state: release.state,
                    assigned: release.assigned.as_ref(),
                    running: release.running.as_ref(),
                    pending: pending.as_deref(),
                    message: release.message.as_deref(),
                },
                &now,
                now_ns,
            )?;
        }
        refresh_customer(tx, customer, now_ns)?;
        Ok(())
    })
}

/// Puts `customer` in `channel` and `wave` (checked against the channel's waves)
/// and assigns it what the channel's open waves already carry.
pub fn place<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    channel: &str,
    wave: Option<&str>,
    now_ns: i64,
) -> Result<()>
where
    Error: From<C::Error>,
{
    stackpack_schema::reference::validate_name(channel)
        .map_err(|e| bad(format!("channel `{channel}`: {e}")))?;
    let config = rdb::channel(conn, channel)?;
    if let Some(wave) = wave {
        if !config.waves.iter().any(|w| w == wave) {
            return Err(bad(format!(
                "channel `{channel}` has no wave `{wave}`; its waves are {}",
                config
                    .waves
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    if !rdb::set_placement(conn, customer, channel, wave)? {
        return Err(Error::new(
            Code::NotFound,
            format!("customer `{customer}` is not known; register it with `stackpack-registry customer add {customer}`"),
        ));
    }
    // A customer joining a channel runs what its rollouts completed; the running
    // ones assign it when their waves reach its own (`advance`).
    for row in rdb::completed_rollouts(conn, channel)? {
        let index = ChannelConfig {
            waves: row.waves.clone(),
            soak_seconds: row.soak_seconds,
            configured: true,
        }
        .wave_index(wave);
        assign(conn, &row, customer, &row.waves[index], index, now_ns)?;
    }
    advance(conn, Some(channel), now_ns)?;
    Ok(())
}

/// [`place`] as a person's command runs it, holding the customer and the channel
/// it joins (its rollouts one by one as they move); returns the placement, `None`
/// for a customer nobody registered.
pub fn place_held(
    db: &Db,
    customer: &str,
    channel: &str,
    wave: Option<&str>,
) -> Result<Option<crate::api::Placement>> {
    db.write_keyed(&[Lock::Customer(customer), Lock::Channel(channel)], |tx| {
        place(tx, customer, channel, wave, now_ns())?;
        Ok(rdb::placement(tx, customer)?)
    })
}

/// [`set_channel`] as a person's command runs it, holding only that channel.
pub fn set_channel_held(
    db: &Db,
    name: &str,
    waves: Option<Vec<String>>,
    soak_seconds: Option<u64>,
) -> Result<ChannelConfig> {
    db.write_keyed(&[Lock::Channel(name)], |tx| {
        set_channel(tx, name, waves.clone(), soak_seconds, now_ns())
    })
}

/// Sets a channel's waves and soak time (what is not given keeps its value).
pub fn set_channel<C: Sql + ?Sized>(
    conn: &C,
    name: &str,
    waves: Option<Vec<String>>,
    soak_seconds: Option<u64>,
    now_ns: i64,
) -> Result<ChannelConfig>
where
    Error: From<C::Error>,
{
    stackpack_schema::reference::validate_name(name)
        .map_err(|e| bad(format!("channel `{name}`: {e}")))?;
    let mut config = rdb::channel(conn, name)?;
    if let Some(waves) = waves {
        if waves.is_empty() {
            return Err(bad("a channel needs at least one wave"));
        }
        for (i, wave) in waves.iter().enumerate() {
            stackpack_schema::reference::validate_name(wave)
                .map_err(|e| bad(format!("wave `{wave}`: {e}")))?;
            if waves[..i].contains(wave) {
                return Err(bad(format!("wave `{wave}` is listed twice")));
            }
        }
        config.waves = waves;
    }
    if let Some(soak) = soak_seconds {
        config.soak_seconds = soak;
    }
    config.configured = true;
    rdb::set_channel(conn, name, &config, &format_ns(now_ns))?;
    Ok(config)
}

#[cfg(test)]
mod tests;
