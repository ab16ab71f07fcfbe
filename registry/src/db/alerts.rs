//! Alerts in the database: the webhooks with the events each wants and how its
//! deliveries go, and the outbox of events waiting to be delivered.
//!
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL
//! (PG6: `alerts` and `alert_outbox`, whose ids are identity columns; `customers`
//! and `fleet_cells`, which silence and standing read, came with PG4).

use super::sql::{from_rows, Decode, FromRow, Row, Sql};
use crate::alert_event::{Body, Event};
use serde::Serialize;

/// One webhook.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Alert {
    pub id: i64,
    pub webhook: String,
    /// The events it wants, as written (`failed,drifted`).
    pub events: Vec<String>,
    /// `cli` (`alert add`) or `config` (`serve --alert`).
    pub source: String,
    pub created: String,
    /// Events delivered so far.
    pub delivered: u64,
    pub last_ok_at: Option<String>,
    /// The last delivery's failure, until one succeeds.
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
    /// Events waiting for delivery.
    pub pending: u64,
}

const ALERT_SELECT: &str = "SELECT a.id, a.webhook, a.events, a.source, a.created, a.delivered,
        a.last_ok_at, a.last_error, a.last_error_at,
        (SELECT COUNT(*) FROM alert_outbox o WHERE o.alert = a.id) AS pending
     FROM alerts a";

impl FromRow for Alert {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        let events: String = r.get("events")?;
        Ok(Alert {
            id: r.get("id")?,
            webhook: r.get("webhook")?,
            events: events.split(',').map(str::to_string).collect(),
            source: r.get("source")?,
            created: r.get("created")?,
            delivered: r.get("delivered")?,
            last_ok_at: r.get("last_ok_at")?,
            last_error: r.get("last_error")?,
            last_error_at: r.get("last_error_at")?,
            pending: r.get("pending")?,
        })
    }
}

pub fn list<C: Sql + ?Sized>(conn: &C) -> Result<Vec<Alert>, C::Error> {
    let rows = conn.query(&format!("{ALERT_SELECT} ORDER BY a.id"), &[])?;
    Ok(from_rows(&rows)?)
}

/// Adds a webhook, or sets the events of the one with the same address and source.
/// Returns its id.
pub fn add<C: Sql + ?Sized>(
    conn: &C,
    webhook: &str,
    events: &[&str],
    source: &str,
    now: &str,
) -> Result<i64, C::Error> {
    let events = events.join(",");
    let row = conn.query_one(
        "INSERT INTO alerts (webhook, events, source, created) VALUES ($1, $2, $3, $4)
         ON CONFLICT (webhook, source) DO UPDATE SET events = excluded.events
         RETURNING id",
        &[
            webhook.into(),
            events.as_str().into(),
            source.into(),
            now.into(),
        ],
    )?;
    Ok(row.get("id")?)
}

/// Removes a webhook and its undelivered events; false when there was none.
pub fn remove<C: Sql + ?Sized>(conn: &C, id: i64) -> Result<bool, C::Error> {
    conn.execute("DELETE FROM alert_outbox WHERE alert = $1", &[id.into()])?;
    Ok(conn.execute("DELETE FROM alerts WHERE id = $1", &[id.into()])? > 0)
}

/// Removes the webhooks from the configuration that it no longer names.
pub fn keep_configured<C: Sql + ?Sized>(conn: &C, webhooks: &[String]) -> Result<(), C::Error> {
    let rows = conn.query(
        "SELECT id, webhook FROM alerts WHERE source = 'config' ORDER BY id",
        &[],
    )?;
    for row in rows {
        let (id, webhook): (i64, String) = (row.get("id")?, row.get("webhook")?);
        if !webhooks.contains(&webhook) {
            remove(conn, id)?;
        }
    }
    Ok(())
}

/// The webhooks that want `event`, by id.
pub fn wanting<C: Sql + ?Sized>(conn: &C, event: &str) -> Result<Vec<i64>, C::Error> {
    let rows = conn.query("SELECT id, events FROM alerts ORDER BY id", &[])?;
    let mut ids = Vec::new();
    for row in rows {
        let (id, events): (i64, String) = (row.get("id")?, row.get("events")?);
        if events.split(',').any(|e| e == event) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Queues `body` for every webhook that wants its event, due at once.
pub fn enqueue<C: Sql + ?Sized>(
    conn: &C,
    body: &Body,
    now: &str,
    now_ns: i64,
) -> Result<usize, C::Error> {
    let event = body.event.as_str();
    let ids = wanting(conn, event)?;
    let json = body.to_json();
    for id in &ids {
        conn.execute(
            "INSERT INTO alert_outbox (alert, event, body, customer, created, next_ns)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                (*id).into(),
                event.into(),
                json.as_str().into(),
                body.customer.into(),
                now.into(),
                now_ns.into(),
            ],
        )?;
    }
    Ok(ids.len())
}

/// One queued event with where it goes.
#[derive(Clone, Debug)]
pub struct Due {
    pub id: i64,
    pub alert: i64,
    pub webhook: String,
    pub body: String,
    /// The customer it is about: one customer's events reach a webhook in order.
    pub customer: String,
    pub attempts: u32,
}

impl FromRow for Due {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        let attempts: i64 = r.get("attempts")?;
        Ok(Due {
            id: r.get("id")?,
            alert: r.get("alert")?,
            webhook: r.get("webhook")?,
            body: r.get("body")?,
            customer: r.get("customer")?,
            attempts: u32::try_from(attempts).unwrap_or(u32::MAX),
        })
    }
}

/// Claims the events due by `now_ns`, oldest first, at most `limit`, for the caller
/// to deliver: each is claimed until `now_ns` plus `per_event_ns` for every event of
/// its webhook and customer claimed with it, and one more. Nothing claimed by
/// another (a replica delivering it, or whose claim has not lapsed) is claimed
/// again, and neither is anything of a webhook and customer with an event in
/// flight, so their events are not sent side by side out of order. Run in a write
/// transaction: the claim and the reading are one.
///
/// Each claim is also taken only if the event is still unclaimed when its row is
/// written, so the claim holds without one lock for all writers: on PostgreSQL two
/// replicas may read the same due events at once (each its own snapshot); the
/// second's write waits for the first's and, finding the event claimed (or
/// delivered), takes none of that webhook and customer's events, giving back any
/// it took. Under SQLite's single writer that never happens.
pub fn claim<C: Sql + ?Sized>(
    conn: &C,
    now_ns: i64,
    limit: usize,
    per_event_ns: i64,
) -> Result<Vec<Due>, C::Error> {
    let rows = conn.query(
        "SELECT o.id, o.alert, a.webhook, o.body, o.customer, o.attempts FROM alert_outbox o
         JOIN alerts a ON a.id = o.alert
         WHERE o.next_ns <= $1 AND o.claimed_until_ns <= $1
           AND NOT EXISTS (SELECT 1 FROM alert_outbox p WHERE p.alert = o.alert
               AND p.customer = o.customer AND p.claimed_until_ns > $1)
         ORDER BY o.next_ns, o.id LIMIT $2",
        &[
            now_ns.into(),
            i64::try_from(limit).unwrap_or(i64::MAX).into(),
        ],
    )?;
    let due: Vec<Due> = from_rows(&rows)?;
    let same_key = |a: &Due, b: &Due| a.alert == b.alert && a.customer == b.customer;
    let mut claimed: Vec<Due> = Vec::with_capacity(due.len());
    let mut lost: Vec<&Due> = Vec::new();
    for item in &due {
        if lost.iter().any(|l| same_key(l, item)) {
            continue;
        }
        let together = due.iter().filter(|d| same_key(d, item)).count() as i64;
        let until = now_ns.saturating_add(per_event_ns.saturating_mul(together + 1));
        let taken = conn.execute(
            "UPDATE alert_outbox SET claimed_until_ns = $2 WHERE id = $1 AND claimed_until_ns <= $3",
            &[item.id.into(), until.into(), now_ns.into()],
        )?;
        if taken == 0 {
            let given_back: Vec<i64> = claimed
                .iter()
                .filter(|c| same_key(c, item))
                .map(|c| c.id)
                .collect();
            unclaim(conn, &given_back)?;
            claimed.retain(|c| !same_key(c, item));
            lost.push(item);
            continue;
        }
        claimed.push(item.clone());
    }
    Ok(claimed)
}

/// Gives back the claims on events that were not tried (a delivery before them
/// failed): a later tick claims them again.
pub fn unclaim<C: Sql + ?Sized>(conn: &C, ids: &[i64]) -> Result<(), C::Error> {
    for id in ids {
        conn.execute(
            "UPDATE alert_outbox SET claimed_until_ns = 0 WHERE id = $1",
            &[(*id).into()],
        )?;
    }
    Ok(())
}

/// A delivery that succeeded: the event leaves the outbox.
pub fn delivered<C: Sql + ?Sized>(conn: &C, due: &Due, now: &str) -> Result<(), C::Error> {
    conn.execute("DELETE FROM alert_outbox WHERE id = $1", &[due.id.into()])?;
    conn.execute(
        "UPDATE alerts SET delivered = delivered + 1, last_ok_at = $2, last_error = NULL,
             last_error_at = NULL WHERE id = $1",
        &[due.alert.into(), now.into()],
    )?;
    Ok(())
}

/// A delivery that failed: tried again at `next_ns`, or dropped when `give_up`.
pub fn failed<C: Sql + ?Sized>(
    conn: &C,
    due: &Due,
    error: &str,
    now: &str,
    next_ns: Option<i64>,
) -> Result<(), C::Error> {
    match next_ns {
        Some(next) => conn.execute(
            "UPDATE alert_outbox SET attempts = attempts + 1, next_ns = $2, claimed_until_ns = 0
             WHERE id = $1",
            &[due.id.into(), next.into()],
        )?,
        None => conn.execute("DELETE FROM alert_outbox WHERE id = $1", &[due.id.into()])?,
    };
    conn.execute(
        "UPDATE alerts SET last_error = $2, last_error_at = $3 WHERE id = $1",
        &[due.alert.into(), error.into(), now.into()],
    )?;
    Ok(())
}

/// Webhooks whose last delivery failed: `(webhook, error)`.
/// Each alert whose last delivery failed: its id, webhook and error.
pub fn failing<C: Sql + ?Sized>(conn: &C) -> Result<Vec<(i64, String, String)>, C::Error> {
    let rows = conn.query(
        "SELECT id, webhook, last_error FROM alerts WHERE last_error IS NOT NULL ORDER BY id",
        &[],
    )?;
    let triple = |r: &Row| Ok::<_, Decode>((r.get("id")?, r.get("webhook")?, r.get("last_error")?));
    Ok(rows.iter().map(triple).collect::<Result<_, _>>()?)
}

/// Columns `a` and `b` of `r`.
fn pair(r: &Row, a: &str, b: &str) -> Result<(String, String), Decode> {
    Ok((r.get(a)?, r.get(b)?))
}

/// A cell's standing before and after a receipt: `(failed, drifted, behind)`.
pub fn cell_flags<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    stack: &str,
) -> Result<Option<(bool, bool, bool)>, C::Error> {
    // `behind > 0` is an integer on SQLite and a boolean on PostgreSQL: both read
    // as a `bool`.
    let row = conn.query_opt(
        "SELECT failed, drifted, behind > 0 AS behind FROM fleet_cells WHERE customer = $1 AND stack = $2",
        &[customer.into(), stack.into()],
    )?;
    let flags = |r: &Row| Ok::<_, Decode>((r.get("failed")?, r.get("drifted")?, r.get("behind")?));
    Ok(row.as_ref().map(flags).transpose()?)
}

/// Customers that reported once but not since `before_ns`, not yet announced
/// silent: marks them announced at `now` and returns `(id, last_seen)`, by id. One
/// statement that only marks a customer still unmarked, so of two replicas noting
/// the same silence at once, one returns it and the other nothing: `silent` is
/// queued once per silence.
pub fn newly_silent<C: Sql + ?Sized>(
    conn: &C,
    before_ns: i64,
    now: &str,
) -> Result<Vec<(String, String)>, C::Error> {
    let rows = conn.query(
        "UPDATE customers SET silent_since = $2
         WHERE last_seen_ns IS NOT NULL AND last_seen_ns < $1 AND silent_since IS NULL
         RETURNING id, last_seen",
        &[before_ns.into(), now.into()],
    )?;
    // `RETURNING` promises no order on either backend: events go out by id.
    let mut silent: Vec<(String, String)> = rows
        .iter()
        .map(|r| pair(r, "id", "last_seen"))
        .collect::<Result<_, _>>()?;
    silent.sort();
    Ok(silent)
}

/// A receipt arrived: the customer is no longer silent.
pub fn heard_from<C: Sql + ?Sized>(conn: &C, customer: &str) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE customers SET silent_since = NULL WHERE id = $1 AND silent_since IS NOT NULL",
        &[customer.into()],
    )?;
    Ok(())
}

/// Before a stable release of `stack` is recorded: the customers up to date on it,
/// by id (only when a webhook wants `behind`, else none, and nothing is read).
pub fn up_to_date<C: Sql + ?Sized>(tx: &C, stack: &str) -> Result<Vec<(String, String)>, C::Error> {
    if wanting(tx, Event::Behind.as_str())?.is_empty() {
        return Ok(Vec::new());
    }
    let rows = tx.query(
        "SELECT customer, version FROM fleet_cells
         WHERE stack = $1 AND behind = 0 AND version IS NOT NULL",
        &[stack.into()],
    )?;
    // Sorted here, not by the query, which keeps the plan SQLite has always had;
    // the events then go out in the same order on both backends.
    let mut current: Vec<(String, String)> = rows
        .iter()
        .map(|r| pair(r, "customer", "version"))
        .collect::<Result<_, _>>()?;
    current.sort();
    Ok(current)
}

/// After it was recorded: queues `behind` for each of `were_current` that the new
/// release `latest` left behind.
pub fn note_behind<C: Sql + ?Sized>(
    tx: &C,
    stack: &str,
    latest: &str,
    were_current: &[(String, String)],
) -> Result<(), C::Error> {
    let now = crate::timestamp::Timestamp::now();
    let now_ns = i64::try_from(now.at().unix_timestamp_nanos()).unwrap_or(i64::MAX);
    for (customer, version) in were_current {
        let behind = cell_flags(tx, customer, stack)?.is_some_and(|f| f.2);
        if !behind {
            continue;
        }
        let body = Body {
            event: Event::Behind,
            customer,
            stack: Some(stack),
            version: Some(version.clone()),
            receipt: None,
            at: now.as_str(),
            reason: Some(format!("{stack} {latest} is out")),
        };
        enqueue(tx, &body, now.as_str(), now_ns)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<'a>(customer: &'a str, receipt: &'a str) -> Body<'a> {
        Body {
            event: Event::Failed,
            customer,
            stack: Some("data-plane"),
            version: Some("1.0.0".into()),
            receipt: Some(receipt),
            at: "2026-12-02T10:00:00Z",
            reason: None,
        }
    }

    #[test]
    fn a_claimed_event_is_claimed_by_nobody_else_until_its_claim_lapses_and_a_customers_next_waits()
    {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::Db::open(&dir.path().join("registry.db"), 1).unwrap();
        let now = "2026-12-02T10:00:00Z";
        let claimed = db
            .write_keyed(&[], |tx| {
                add(tx, "http://127.0.0.1:1/hook", &["failed"], "cli", now)?;
                enqueue(tx, &event("globex", "r1"), now, 100)?;
                enqueue(tx, &event("globex", "r2"), now, 100)?;
                enqueue(tx, &event("initech", "r3"), now, 100)?;
                Ok(claim(tx, 1_000, 1, 500)?)
            })
            .unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].customer, "globex");
        // Another replica at the same moment: globex's second event waits behind
        // the first, still in flight; initech's goes.
        let other = db
            .write_keyed(&[], |tx| Ok(claim(tx, 1_001, 64, 500)?))
            .unwrap();
        let others: Vec<&str> = other.iter().map(|d| d.customer.as_str()).collect();
        assert_eq!(others, ["initech"]);
        // The first claimant died: its claim (one event, so two spans) lapses.
        let later = db
            .write_keyed(&[], |tx| Ok(claim(tx, 2_000, 64, 500)?))
            .unwrap();
        let ids: Vec<i64> = later.iter().map(|d| d.id).collect();
        assert_eq!(ids, [claimed[0].id, claimed[0].id + 1]);
        db.write_keyed(&[], |tx| Ok(unclaim(tx, &ids)?)).unwrap();
        let again = db
            .write_keyed(&[], |tx| Ok(claim(tx, 2_000, 64, 500)?))
            .unwrap();
        assert_eq!(again.len(), 2, "given back, claimed again");
    }
}
