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

/// Queues `body` for every webhook that wants `event`, due at once.
pub fn enqueue(
    conn: &Connection,
    event: &str,
    body: &str,
    now: &str,
    now_ns: i64,
) -> rusqlite::Result<usize> {
    let ids = wanting(conn, event)?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO alert_outbox (alert, event, body, created, next_ns) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for id in &ids {
        insert.execute(params![id, event, body, now, now_ns])?;
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
    pub attempts: u32,
}

/// Events due by `now_ns`, oldest first, at most `limit`.
pub fn due(conn: &Connection, now_ns: i64, limit: usize) -> rusqlite::Result<Vec<Due>> {
    conn.prepare_cached(
        "SELECT o.id, o.alert, a.webhook, o.body, o.attempts FROM alert_outbox o
         JOIN alerts a ON a.id = o.alert
         WHERE o.next_ns <= ?1 ORDER BY o.next_ns, o.id LIMIT ?2",
    )?
    .query_map(params![now_ns, limit as i64], |r| {
        Ok(Due {
            id: r.get(0)?,
            alert: r.get(1)?,
            webhook: r.get(2)?,
            body: r.get(3)?,
            attempts: r.get::<_, i64>(4)? as u32,
        })
    })?
    .collect()
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
            "UPDATE alert_outbox SET attempts = attempts + 1, next_ns = ?2 WHERE id = ?1",
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
/// silent: marks them announced at `now` and returns `(id, last_seen)`.
pub fn newly_silent(
    conn: &Connection,
    before_ns: i64,
    now: &str,
) -> rusqlite::Result<Vec<(String, String)>> {
    let found: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT id, last_seen FROM customers
             WHERE last_seen_ns IS NOT NULL AND last_seen_ns < ?1 AND silent_since IS NULL",
        )?
        .query_map(params![before_ns], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut mark = conn.prepare_cached("UPDATE customers SET silent_since = ?2 WHERE id = ?1")?;
    for (id, _) in &found {
        mark.execute(params![id, now])?;
    }
    Ok(found)
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
        enqueue(tx, "behind", &body.to_json(), now.as_str(), now_ns)?;
    }
    Ok(())
}
