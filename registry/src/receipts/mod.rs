//! Recording signed deployment receipts, shared by `POST /api/v1/receipts` and
//! `stackpack-registry receipts import`.
//!
//! The signature must verify against the key the receipt carries. That key must be
//! one of the customer's installation keys; a customer with none yet has its first
//! key pinned (trust on first use) only through a path that says who the customer
//! is, and a key pinned to one customer is refused for another (see
//! [`crate::receipt_keys`]). Receipt ids are unique: the same receipt
//! again is accepted and changes nothing; another receipt under a used id is refused.
//!
//! Times are stored as UTC, and receipts are ordered by the parsed finish time, so
//! `+05:00` offsets, fractions and a lowercase `t`/`z` compare as the times they are.

pub mod steps;

use stackpack_schema::receipt::SignedReceipt;

use crate::api::{DeployedRelease, Deployment};
use crate::db::locks::Lock;
use crate::db::sql::Sql;
use crate::db::{self, Db};
use crate::error::{Code, Error, Result};
use crate::timestamp::Timestamp;

pub use crate::receipt_keys::FirstUse;

/// A receipt whose signature and fields were checked, ready to store.
pub struct Checked {
    pub deployment: Deployment,
    pub finished_ns: i64,
    document: String,
    public_key_b64: String,
    /// The receipt itself when it carries a plan to hold against a forecast.
    planned: Option<stackpack_schema::receipt::Receipt>,
}

fn bad(message: impl Into<String>) -> Error {
    Error::new(Code::BadRequest, message)
}

/// Checks what needs no database: signature, names, id and times.
pub fn check(signed: &SignedReceipt) -> Result<Checked> {
    let receipt = &signed.receipt;
    let public_key = signed.verify_integrity().map_err(|e| bad(e.to_string()))?;
    stackpack_schema::reference::validate_name(&receipt.customer)
        .map_err(|e| bad(format!("customer: {e}")))?;
    stackpack_schema::reference::validate_name(&receipt.stack)
        .map_err(|e| bad(format!("stack: {e}")))?;
    if let Some(release) = &receipt.release {
        stackpack_schema::reference::validate_name(&release.name)
            .map_err(|e| bad(format!("release: {e}")))?;
    }
    if receipt.id.is_empty() || receipt.id.len() > 128 || receipt.id.chars().any(char::is_control) {
        return Err(bad(
            "the receipt id must be 1 to 128 characters, none of them control characters",
        ));
    }
    let time = |what: &str, value: &str| {
        let (utc, ns) = db::utc_time(value)
            .ok_or_else(|| bad(format!("`{what}` `{value}` is not an RFC 3339 time")))?;
        let utc: Timestamp = utc.parse().expect("a formatted UTC time parses");
        Ok::<_, Error>((utc, ns))
    };
    let (started_at, _) = time("startedAt", &receipt.started_at)?;
    let (finished_at, finished_ns) = time("finishedAt", &receipt.finished_at)?;
    let document = String::from_utf8(stackpack_schema::signature::canonical_json(signed))
        .expect("JSON is UTF-8");
    Ok(Checked {
        deployment: Deployment {
            receipt_id: receipt.id.clone(),
            customer: receipt.customer.clone(),
            stack: receipt.stack.clone(),
            version: receipt.version.clone(),
            digest: receipt.bundle_digest.clone(),
            kind: receipt.kind,
            outcome: receipt.outcome,
            started_at,
            finished_at,
            key_id: public_key.key_id(),
            // Until it is stored: `store` stamps the time it arrived.
            received_at: Timestamp::now(),
            release: receipt.release.as_ref().map(|r| DeployedRelease {
                name: r.name.clone(),
                version: r.version.clone(),
                digest: r.digest.clone(),
            }),
            reason: None,
        },
        finished_ns,
        document,
        public_key_b64: signed.public_key.clone(),
        planned: receipt.changes_digest.is_some().then(|| receipt.clone()),
    })
}

/// Stores a checked receipt inside the caller's transaction, running
/// `steps::STEPS` in order. True when it was new; the same receipt again
/// changes nothing, another under its id is refused.
pub fn store<C: Sql + ?Sized>(
    tx: &C,
    checked: &Checked,
    now: &Timestamp,
    first_use: &FirstUse<'_>,
) -> Result<bool>
where
    Error: From<C::Error>,
{
    let d = &checked.deployment;
    if let Some(existing) = db::ledger::receipt_document(tx, &d.receipt_id)? {
        return if existing == checked.document {
            Ok(false)
        } else {
            Err(Error::new(
                Code::Conflict,
                format!(
                    "another receipt with id `{}` is already stored",
                    d.receipt_id
                ),
            ))
        };
    }
    let mut storing = steps::Storing::new(checked, now, first_use);
    for step in steps::STEPS {
        step.run(tx, &mut storing)?;
    }
    Ok(true)
}

/// Checks and stores `signed`, reported over HTTP by a token allowed to report for
/// its customer. True when it was new.
pub fn record(db: &Db, signed: &SignedReceipt) -> Result<bool> {
    let checked = check(signed)?;
    let now = Timestamp::now();
    db.write_keyed(&checked.locks(), |tx| {
        store(tx, &checked, &now, &FirstUse::Reporter)
    })
}

impl Checked {
    /// What storing this receipt must hold alone (see [`crate::db::locks`]): its
    /// customer (cells, keys, forecasts, alerts), its id (stored once) and its
    /// signing key (pinned to one customer). The rollouts it moves on are locked
    /// as they are reached ([`crate::rollout::refresh_customer`]).
    pub fn locks(&self) -> [Lock<'_>; 3] {
        let d = &self.deployment;
        [
            Lock::Customer(&d.customer),
            Lock::Receipt(&d.receipt_id),
            Lock::InstallationKey(&d.key_id),
        ]
    }
}

/// What became of one receipt of a batch.
pub struct Outcome {
    pub receipt_id: String,
    /// `Ok(true)` new, `Ok(false)` already stored, `Err` refused.
    pub result: Result<bool>,
}

/// Records every receipt or none: each is checked (and tried, in order, inside one
/// transaction), and if any is refused the transaction is rolled back. Returns
/// whether all were recorded, and what became of each.
pub fn record_all(
    db: &Db,
    receipts: &[SignedReceipt],
    first_use: &FirstUse<'_>,
) -> Result<(bool, Vec<Outcome>)> {
    let now = Timestamp::now();
    let checked: Vec<Result<Checked>> = receipts.iter().map(check).collect();
    let mut outcomes = Vec::with_capacity(receipts.len());
    let locks: Vec<Lock<'_>> = checked.iter().flatten().flat_map(Checked::locks).collect();
    let committed = db.write_keyed(&locks, |tx| {
        // From the start each time: a transaction broken off by a deadlock runs again.
        outcomes.clear();
        for (signed, checked) in receipts.iter().zip(&checked) {
            let result = match checked {
                Ok(checked) => store(tx, checked, &now, first_use),
                Err(e) => Err(Error::new(e.code, e.message.clone())),
            };
            outcomes.push(Outcome {
                receipt_id: signed.receipt.id.clone(),
                result,
            });
        }
        if outcomes.iter().any(|o| o.result.is_err()) {
            // Rolls the whole batch back; the outcomes say why.
            return Err(Error::new(Code::BadRequest, "a receipt was refused"));
        }
        Ok(())
    });
    match committed {
        Ok(()) => Ok((true, outcomes)),
        Err(_) if outcomes.iter().any(|o| o.result.is_err()) => Ok((false, outcomes)),
        Err(e) => Err(e),
    }
}
