//! The receipt's last step: an alert queued for each state its cell entered
//! (failed, drifted, behind), in the receipt's transaction; the alert task
//! (`crate::alerts`) delivers it, never waited for here. The customer is heard
//! from, so no longer silent.

use stackpack_schema::receipt::{plain_text, SignedReceipt};

use crate::alert_event::{Body, Event};
use crate::api::Deployment;
use crate::db;
use crate::db::sql::Sql;
use crate::error::{Error, Result};

use super::Storing;

/// The cell's `(failed, drifted, behind)` before the receipt is filed, kept for
/// [`run`] to compare with after.
pub(super) fn flags_before<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    let d = s.deployment();
    s.flags_before = db::alerts::cell_flags(tx, &d.customer, &d.stack)?;
    Ok(())
}

pub(super) fn run<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    Ok(note_receipt(
        tx,
        s.deployment(),
        s.document(),
        s.flags_before,
    )?)
}

/// The reason a receipt gives, on one line: the failure, or what drifted.
fn reason(document: &str, event: Event) -> Option<String> {
    let r = serde_json::from_str::<SignedReceipt>(document)
        .ok()?
        .receipt;
    let text = match event {
        Event::Failed => crate::reason::failure(r.failure.as_ref()?),
        Event::Drifted => {
            let mut names: Vec<String> = if r.drift.is_empty() {
                r.drifted.iter().map(|a| format!("`{a}`")).collect()
            } else {
                r.drift
                    .iter()
                    .map(|d| match d.attributes.is_empty() {
                        true => format!("`{}`", d.address),
                        false => format!("`{}` ({})", d.address, d.attributes.join(", ")),
                    })
                    .collect()
            };
            let more = names.len().saturating_sub(3);
            names.truncate(3);
            if names.is_empty() {
                return None;
            }
            let mut text = names.join(", ");
            if more > 0 {
                text.push_str(&format!(" and {more} more"));
            }
            text
        }
        Event::Silent | Event::Behind => return None,
    };
    Some(plain_text(&text, 500))
}

/// Inside a receipt's transaction, after it was filed: queues an event for each
/// state its cell entered (`before` is the cell's `(failed, drifted, behind)` before
/// the receipt). The customer is heard from, so no longer silent.
pub fn note_receipt<C: Sql + ?Sized>(
    tx: &C,
    d: &Deployment,
    document: &str,
    before: Option<(bool, bool, bool)>,
) -> Result<(), C::Error> {
    db::alerts::heard_from(tx, &d.customer)?;
    let Some(after) = db::alerts::cell_flags(tx, &d.customer, &d.stack)? else {
        return Ok(());
    };
    let before = before.unwrap_or((false, false, false));
    let entered = [
        (Event::Failed, !before.0 && after.0),
        (Event::Drifted, !before.1 && after.1),
        (Event::Behind, !before.2 && after.2),
    ];
    let now = crate::timestamp::Timestamp::now();
    let now_ns = i64::try_from(now.at().unix_timestamp_nanos()).unwrap_or(i64::MAX);
    for (event, entered) in entered {
        if !entered || db::alerts::wanting(tx, event.as_str())?.is_empty() {
            continue;
        }
        let body = Body {
            event,
            customer: &d.customer,
            stack: Some(&d.stack),
            version: Some(d.version.to_string()),
            receipt: Some(&d.receipt_id),
            at: d.finished_at.as_str(),
            reason: reason(document, event),
        };
        db::alerts::enqueue(tx, &body, now.as_str(), now_ns)?;
    }
    Ok(())
}
