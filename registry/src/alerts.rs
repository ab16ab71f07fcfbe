//! Alerts that reach a person: when a customer's stack starts failing, drifts, falls
//! behind a new stable release, or the customer goes silent, every webhook that
//! wants that event gets one JSON POST (with a Slack-compatible `text`), once per
//! change.
//!
//! A change is queued in the outbox inside the transaction that stores the receipt
//! (so it is never lost and never sent for a receipt that was rolled back), and
//! delivered by a background task: a slow or failing webhook never holds a receipt
//! or any other request up. A failed delivery is tried again with backoff, up to
//! [`MAX_ATTEMPTS`]; the webhook's last error shows in `alert list` and on
//! `/healthz`.

use crate::db::sql::Sql;
use std::sync::Arc;
use std::time::Duration;

use crate::alert_event::Body;
pub use crate::alert_event::{check_webhook, parse_events, Event};
use crate::db;
use crate::db::locks::Lock;
use crate::state::AppState;

/// Tries a delivery gets before it is dropped (about an hour and a half in all).
pub const MAX_ATTEMPTS: u32 = 12;

/// The wait before the try after `attempts` failed ones: 1 s, 2 s, 4 s, … up to
/// 15 minutes.
pub fn backoff(attempts: u32) -> Duration {
    Duration::from_secs((1u64 << attempts.min(10)).min(900))
}

/// Where a person reads more: the customer's page, when the registry knows its
/// public address.
fn page_url(public_url: Option<&str>, customer: &str) -> Option<String> {
    public_url.map(|base| {
        format!(
            "{}/ui/customers/{}",
            base.trim_end_matches('/'),
            crate::controllers::ui::html::url(customer)
        )
    })
}

/// A queued event as sent: with the customer's page (`url`, and a link at the end
/// of `text`) when the registry knows its public address.
fn as_sent(body: &str, public_url: Option<&str>) -> String {
    let Ok(mut json) = serde_json::from_str::<serde_json::Value>(body) else {
        return body.to_string();
    };
    let customer = json["customer"].as_str().unwrap_or_default().to_string();
    if let Some(url) = page_url(public_url, &customer) {
        let text = json["text"].as_str().unwrap_or_default().to_string();
        json["text"] = format!("{text} (<{url}|details>)").into();
        json["url"] = url.into();
    }
    json.to_string()
}

/// Customers silent longer than `after` and not yet announced: queues `silent` for
/// each, once per silence.
pub fn note_silent<C: Sql + ?Sized>(tx: &C, after: Duration) -> Result<usize, C::Error> {
    let now = crate::timestamp::Timestamp::now();
    let now_ns = i64::try_from(now.at().unix_timestamp_nanos()).unwrap_or(i64::MAX);
    let before_ns = now_ns.saturating_sub(i64::try_from(after.as_nanos()).unwrap_or(i64::MAX));
    let silent = db::alerts::newly_silent(tx, before_ns, now.as_str())?;
    for (customer, last_seen) in &silent {
        let body = Body {
            event: Event::Silent,
            customer,
            stack: None,
            version: None,
            receipt: None,
            at: now.as_str(),
            reason: Some(format!("no receipt since {last_seen}")),
        };
        db::alerts::enqueue(tx, &body, now.as_str(), now_ns)?;
    }
    Ok(silent.len())
}

/// The setting key ([`crate::db::locks::Lock::Setting`]) that changes to the
/// webhooks hold: the configuration a replica applies as it starts, and a person's
/// `alert add` and `remove`.
pub const SETTING: &str = "alerts";

/// Events one tick claims at most.
const CLAIM_LIMIT: usize = 64;

/// Runs for as long as the server: every `alert_tick`, notes silent customers and
/// starts the deliveries that are due, one task per webhook and customer: one slow
/// webhook delays no other, a fleet's events reach a webhook side by side, and one
/// customer's events reach it in the order they happened (a `failed` before the
/// `drifted` that followed it) for as long as it answers.
///
/// Every replica runs this on the one database. What keeps two from sending one
/// event is the outbox's claim ([`db::alerts::claim`]), taken in a write
/// transaction, not anything in this process: the claim lasts as long as its
/// deliveries may take (each is bounded by `alert_timeout`), so a replica killed
/// mid-delivery holds its events only until then, and another sends them.
pub async fn run(state: Arc<AppState>) {
    // reqwest is built without a TLS provider of its own: choose rustls's, once.
    stackpack_bundle::remote::tls();
    let client = match reqwest::Client::builder()
        .connect_timeout(state.config.alert_timeout)
        .timeout(state.config.alert_timeout)
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "alerts cannot be delivered: no HTTP client");
            return;
        }
    };
    let mut interval =
        tokio::time::interval(state.config.alert_tick.max(Duration::from_millis(50)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        let reading = state.clone();
        let due = tokio::task::spawn_blocking(move || {
            let silent_after = reading.config.silent_after;
            // A delivery's bound, and a margin for writing its outcome.
            let per_event = reading.config.alert_timeout + Duration::from_secs(15);
            let per_event_ns = i64::try_from(per_event.as_nanos()).unwrap_or(i64::MAX);
            // No lock of its own: marking a customer silent and claiming an
            // event are each one conditional `UPDATE` the database keeps whole
            // (see `db::alerts::claim`), so replicas claim beside each other and
            // beside receipts.
            reading.db.write_keyed(&[], |tx| {
                note_silent(tx, silent_after)?;
                let now = crate::rollout::now_ns();
                Ok(db::alerts::claim(tx, now, CLAIM_LIMIT, per_event_ns)?)
            })
        })
        .await;
        let due = match due {
            Ok(Ok(due)) => due,
            Ok(Err(e)) => {
                tracing::warn!(error = %e.message, "reading the alert outbox failed");
                continue;
            }
            Err(e) => {
                tracing::error!(error = %e, "the alert task panicked");
                continue;
            }
        };
        let mut queues: Vec<((i64, String), Vec<db::alerts::Due>)> = Vec::new();
        for item in due {
            let key = (item.alert, item.customer.clone());
            match queues.iter_mut().find(|(k, _)| *k == key) {
                Some((_, items)) => items.push(item),
                None => queues.push((key, vec![item])),
            }
        }
        for (_, items) in queues {
            let (state, client) = (state.clone(), client.clone());
            tokio::spawn(deliver_in_order(state, client, items));
        }
    }
}

/// Delivers one webhook's events about one customer, in order. A failed one waits
/// for its backoff; the ones after it are given back, to be tried on a later tick
/// rather than overtaking it now.
async fn deliver_in_order(
    state: Arc<AppState>,
    client: reqwest::Client,
    items: Vec<db::alerts::Due>,
) {
    let mut items = items.into_iter();
    for item in items.by_ref() {
        if !deliver(state.clone(), client.clone(), item).await {
            break;
        }
    }
    let untried: Vec<i64> = items.map(|item| item.id).collect();
    if untried.is_empty() {
        return;
    }
    let released = tokio::task::spawn_blocking(move || {
        let locks: Vec<Lock> = untried.iter().map(|id| Lock::Outbox(*id)).collect();
        state
            .db
            .write_keyed(&locks, |tx| Ok(db::alerts::unclaim(tx, &untried)?))
    })
    .await;
    if let Ok(Err(e)) = released {
        tracing::warn!(error = %e.message, "giving back alert claims failed; they lapse on their own");
    }
}

/// One POST, and its outcome written back. True when the webhook took it.
async fn deliver(state: Arc<AppState>, client: reqwest::Client, item: db::alerts::Due) -> bool {
    let sent = client
        .post(&item.webhook)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(as_sent(&item.body, state.config.public_url.as_deref()))
        .send()
        .await;
    let error = match sent {
        Ok(answer) if answer.status().is_success() => None,
        Ok(answer) => Some(format!("the webhook answered {}", answer.status())),
        Err(e) if e.is_timeout() => Some(format!(
            "the webhook did not answer within {} s",
            state.config.alert_timeout.as_secs()
        )),
        // The error names no URL (`without_url`), and what remains is scrubbed of
        // it too: it is stored, logged and shown on `/healthz`.
        Err(e) => Some(scrubbed(
            &format!(
                "the webhook cannot be reached: {}",
                error_chain(&e.without_url())
            ),
            &item.webhook,
        )),
    };
    let took_it = error.is_none();
    let writing = state.clone();
    let written = tokio::task::spawn_blocking(move || {
        let now = crate::timestamp::Timestamp::now();
        if let Some(error) = &error {
            tracing::warn!(alert = item.alert, webhook = %shown(&item.webhook), error = %error, attempt = item.attempts + 1, "alert delivery failed");
        }
        let next = (item.attempts + 1 < MAX_ATTEMPTS).then(|| {
            crate::rollout::now_ns() + backoff(item.attempts).as_nanos().min(i64::MAX as u128) as i64
        });
        // Keyed by the event this replica claimed: deliveries of others are recorded
        // beside it; a claim (which runs alone) waits for them.
        writing.db.write_keyed(&[Lock::Outbox(item.id)], |tx| {
            match &error {
                None => db::alerts::delivered(tx, &item, now.as_str())?,
                Some(error) => db::alerts::failed(tx, &item, error, now.as_str(), next)?,
            }
            Ok(())
        })
    })
    .await;
    if let Ok(Err(e)) = written {
        tracing::warn!(error = %e.message, "recording an alert delivery failed");
    }
    took_it
}

/// A webhook as anyone but an admin's `alert list` shows it: scheme, host and port.
/// Its user, password, path and query stay out: a Slack incoming-webhook URL is
/// itself a credential, and `/healthz` answers anyone.
pub fn shown(webhook: &str) -> String {
    match reqwest::Url::parse(webhook) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(host), Some(port)) => format!("{}://{host}:{port}", url.scheme()),
            (Some(host), None) => format!("{}://{host}", url.scheme()),
            (None, _) => format!("{}:", url.scheme()),
        },
        Err(_) => "an unreadable URL".to_string(),
    }
}

/// `text` (a delivery error, perhaps stored before errors were kept free of URLs)
/// with the webhook's full URL replaced by its [`shown`] form.
pub fn scrubbed(text: &str, webhook: &str) -> String {
    if webhook.is_empty() {
        return text.to_string();
    }
    text.replace(webhook, &shown(webhook))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_once_each_and_a_wrong_one_is_named() {
        assert_eq!(
            parse_events("failed, drifted,failed").unwrap(),
            [Event::Failed, Event::Drifted]
        );
        assert!(parse_events("failed,late").unwrap_err().contains("`late`"));
        assert!(parse_events("").is_err());
        assert!(check_webhook("https://hooks.example/x").is_ok());
        assert!(check_webhook("ftp://x").is_err());
        assert_eq!(backoff(0), Duration::from_secs(1));
        assert_eq!(backoff(3), Duration::from_secs(8));
        assert_eq!(backoff(30), Duration::from_secs(900));
    }

    #[test]
    fn an_event_says_what_happened_in_text_slack_reads() {
        let body = Body {
            event: Event::Failed,
            customer: "globex",
            stack: Some("data-plane"),
            version: Some("2.0.0".into()),
            receipt: Some("r1"),
            at: "2026-12-02T10:00:00Z",
            reason: Some("`aws_eks_node_group.gpu`: <Insufficient> & more".into()),
        };
        let json: serde_json::Value =
            serde_json::from_str(&as_sent(&body.to_json(), Some("https://registry.example/")))
                .unwrap();
        assert_eq!(json["event"], "failed");
        assert_eq!(
            json["text"],
            "globex: data-plane 2.0.0 failed: `aws_eks_node_group.gpu`: &lt;Insufficient&gt; &amp; more (<https://registry.example/ui/customers/globex|details>)"
        );
        assert_eq!(json["url"], "https://registry.example/ui/customers/globex");
    }
}
