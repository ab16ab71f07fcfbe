//! Alerts in the database: the webhooks with the events each wants and how its
//! deliveries go, and the outbox of events waiting to be delivered.

use rusqlite::{params, Connection, OptionalExtension};

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
        (SELECT COUNT(*) FROM alert_outbox o WHERE o.alert = a.id)
     FROM alerts a";

fn alert_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Alert> {
    let events: String = r.get(2)?;
    Ok(Alert {
        id: r.get(0)?,
        webhook: r.get(1)?,
        events: events.split(',').map(str::to_string).collect(),
        source: r.get(3)?,
        created: r.get(4)?,
        delivered: r.get::<_, i64>(5)? as u64,
        last_ok_at: r.get(6)?,
        last_error: r.get(7)?,
        last_error_at: r.get(8)?,
        pending: r.get::<_, i64>(9)? as u64,
    })
}

pub fn list(conn: &Connection) -> rusqlite::Result<Vec<Alert>> {
    conn.prepare_cached(&format!("{ALERT_SELECT} ORDER BY a.id"))?
        .query_map([], alert_row)?
        .collect()
}

/// Adds a webhook, or sets the events of the one with the same address and source.
/// Returns its id.
pub fn add(
    conn: &Connection,
    webhook: &str,
    events: &[&str],
    source: &str,
    now: &str,
) -> rusqlite::Result<i64> {
    conn.query_row(
        "INSERT INTO alerts (webhook, events, source, created) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (webhook, source) DO UPDATE SET events = excluded.events
         RETURNING id",
        params![webhook, events.join(","), source, now],
        |r| r.get(0),
    )
}

/// Removes a webhook and its undelivered events; false when there was none.
pub fn remove(conn: &Connection, id: i64) -> rusqlite::Result<bool> {
    conn.execute("DELETE FROM alert_outbox WHERE alert = ?1", params![id])?;
    Ok(conn.execute("DELETE FROM alerts WHERE id = ?1", params![id])? > 0)
}

/// Removes the webhooks from the configuration that it no longer names.
pub fn keep_configured(conn: &Connection, webhooks: &[String]) -> rusqlite::Result<()> {
    let ids: Vec<(i64, String)> = conn
        .prepare("SELECT id, webhook FROM alerts WHERE source = 'config'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, webhook) in ids {
        if !webhooks.contains(&webhook) {
            remove(conn, id)?;
        }
    }
    Ok(())
}

/// The webhooks that want `event`: `(id, webhook)`.
pub fn wanting(conn: &Connection, event: &str) -> rusqlite::Result<Vec<i64>> {
    conn.prepare_cached("SELECT id, events FROM alerts")?
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
        .filter_map(|row| match row {
            Ok((id, events)) => events.split(',').any(|e| e == event).then_some(Ok(id)),
            Err(e) => Some(Err(e)),
        })
        .collect()
}

/// Queues `body` for every webhook that wants its event, due at once.
pub fn enqueue(conn: &Connection, body: &Body, now: &str, now_ns: i64) -> rusqlite::Result<usize> {
    let event = body.event.as_str();
    let ids = wanting(conn, event)?;
    let json = body.to_json();
    let mut insert = conn.prepare_cached(
        "INSERT INTO alert_outbox (alert, event, body, customer, created, next_ns)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for id in &ids {
        insert.execute(params![id, event, json, body.customer, now, now_ns])?;
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

/// Claims the events due by `now_ns`, oldest first, at most `limit`, for the caller
/// to deliver: each is claimed until `now_ns` plus `per_event_ns` for every event of
/// its webhook and customer claimed with it, and one more. Nothing claimed by
/// another (a replica delivering it, or whose claim has not lapsed) is claimed
/// again, and neither is anything of a webhook and customer with an event in
/// flight, so their events are not sent side by side out of order. Run in a write
/// transaction: the claim and the reading are one.
pub fn claim(
    conn: &Connection,
    now_ns: i64,
    limit: usize,
    per_event_ns: i64,
) -> rusqlite::Result<Vec<Due>> {
    let due: Vec<Due> = conn
        .prepare_cached(
            "SELECT o.id, o.alert, a.webhook, o.body, o.customer, o.attempts FROM alert_outbox o
             JOIN alerts a ON a.id = o.alert
             WHERE o.next_ns <= ?1 AND o.claimed_until_ns <= ?1
               AND NOT EXISTS (SELECT 1 FROM alert_outbox p WHERE p.alert = o.alert
                   AND p.customer = o.customer AND p.claimed_until_ns > ?1)
             ORDER BY o.next_ns, o.id LIMIT ?2",
        )?
        .query_map(params![now_ns, limit as i64], |r| {
            Ok(Due {
                id: r.get(0)?,
                alert: r.get(1)?,
                webhook: r.get(2)?,
                body: r.get(3)?,
                customer: r.get(4)?,
                attempts: r.get::<_, i64>(5)? as u32,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut mark =
        conn.prepare_cached("UPDATE alert_outbox SET claimed_until_ns = ?2 WHERE id = ?1")?;
    for item in &due {
        let together = due
            .iter()
            .filter(|d| d.alert == item.alert && d.customer == item.customer)
            .count() as i64;
        let until = now_ns.saturating_add(per_event_ns.saturating_mul(together + 1));
        mark.execute(params![item.id, until])?;
    }
    Ok(due)
}

/// Gives back the claims on events that were not tried (a delivery before them
/// failed): a later tick claims them again.
pub fn unclaim(conn: &Connection, ids: &[i64]) -> rusqlite::Result<()> {
    let mut release =
        conn.prepare_cached("UPDATE alert_outbox SET claimed_until_ns = 0 WHERE id = ?1")?;
    for id in ids {
        release.execute([id])?;
    }
    Ok(())
}

/// A delivery that succeeded: the event leaves the outbox.
pub fn delivered(conn: &Connection, due: &Due, now: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM alert_outbox WHERE id = ?1", params![due.id])?;
    conn.execute(
        "UPDATE alerts SET delivered = delivered + 1, last_ok_at = ?2, last_error = NULL,
             last_error_at = NULL WHERE id = ?1",
        params![due.alert, now],
    )?;
    Ok(())
}

/// A delivery that failed: tried again at `next_ns`, or dropped when `give_up`.
pub fn failed(
    conn: &Connection,
    due: &Due,
    error: &str,
    now: &str,
    next_ns: Option<i64>,
) -> rusqlite::Result<()> {
    match next_ns {
        Some(next) => conn.execute(
            "UPDATE alert_outbox SET attempts = attempts + 1, next_ns = ?2, claimed_until_ns = 0
             WHERE id = ?1",
            params![due.id, next],
        )?,
        None => conn.execute("DELETE FROM alert_outbox WHERE id = ?1", params![due.id])?,
    };
    conn.execute(
        "UPDATE alerts SET last_error = ?2, last_error_at = ?3 WHERE id = ?1",
        params![due.alert, error, now],
    )?;
    Ok(())
}

/// Webhooks whose last delivery failed: `(webhook, error)`.
pub fn failing(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached(
        "SELECT webhook, last_error FROM alerts WHERE last_error IS NOT NULL ORDER BY id",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// A cell's standing before and after a receipt: `(failed, drifted, behind)`.
pub fn cell_flags(
    conn: &Connection,
    customer: &str,
    stack: &str,
) -> rusqlite::Result<Option<(bool, bool, bool)>> {
    conn.prepare_cached(
        "SELECT failed, drifted, behind > 0 FROM fleet_cells WHERE customer = ?1 AND stack = ?2",
    )?
    .query_row(params![customer, stack], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
    .optional()
}

/// Customers that reported once but not since `before_ns`, not yet announced
/// silent: marks them announced at `now` and returns `(id, last_seen)`. One
/// statement that only marks a customer still unmarked, so of two replicas noting
/// the same silence at once, one returns it and the other nothing: `silent` is
/// queued once per silence.
pub fn newly_silent(
    conn: &Connection,
    before_ns: i64,
    now: &str,
) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare_cached(
        "UPDATE customers SET silent_since = ?2
         WHERE last_seen_ns IS NOT NULL AND last_seen_ns < ?1 AND silent_since IS NULL
         RETURNING id, last_seen",
    )?
    .query_map(params![before_ns, now], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// A receipt arrived: the customer is no longer silent.
pub fn heard_from(conn: &Connection, customer: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE customers SET silent_since = NULL WHERE id = ?1 AND silent_since IS NOT NULL",
    )?
    .execute(params![customer])?;
    Ok(())
}

/// Before a stable release of `stack` is recorded: the customers up to date on it
/// (only when a webhook wants `behind`, else none, and nothing is read).
pub fn up_to_date(tx: &Connection, stack: &str) -> rusqlite::Result<Vec<(String, String)>> {
    if wanting(tx, Event::Behind.as_str())?.is_empty() {
        return Ok(Vec::new());
    }
    tx.prepare_cached(
        "SELECT customer, version FROM fleet_cells
         WHERE stack = ?1 AND behind = 0 AND version IS NOT NULL",
    )?
    .query_map([stack], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// After it was recorded: queues `behind` for each of `were_current` that the new
/// release `latest` left behind.
pub fn note_behind(
    tx: &Connection,
    stack: &str,
    latest: &str,
    were_current: &[(String, String)],
) -> rusqlite::Result<()> {
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
            .write(|tx| {
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
        let other = db.write(|tx| Ok(claim(tx, 1_001, 64, 500)?)).unwrap();
        let others: Vec<&str> = other.iter().map(|d| d.customer.as_str()).collect();
        assert_eq!(others, ["initech"]);
        // The first claimant died: its claim (one event, so two spans) lapses.
        let later = db.write(|tx| Ok(claim(tx, 2_000, 64, 500)?)).unwrap();
        let ids: Vec<i64> = later.iter().map(|d| d.id).collect();
        assert_eq!(ids, [claimed[0].id, claimed[0].id + 1]);
        db.write(|tx| Ok(unclaim(tx, &ids)?)).unwrap();
        let again = db.write(|tx| Ok(claim(tx, 2_000, 64, 500)?)).unwrap();
        assert_eq!(again.len(), 2, "given back, claimed again");
    }
}
