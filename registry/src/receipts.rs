//! Recording a signed deployment receipt, shared by `POST /api/v1/receipts` and
//! `stackpack-registry receipts import`.
//!
//! The signature must verify against the key the receipt carries. That key must be
//! one of the customer's installation keys; a customer with none yet has its first
//! key pinned (trust on first use), and from then on a receipt signed by another key
//! is refused until an admin registers it. Receipt ids are unique: the same receipt
//! again is accepted and changes nothing; another receipt under a used id is refused.

use stackpack_schema::receipt::SignedReceipt;

use crate::api::Deployment;
use crate::db::{self, Db};
use crate::error::{Code, Error, Result};

/// Checks and stores `signed`. True when it was new.
pub fn record(db: &Db, signed: &SignedReceipt) -> Result<bool> {
    let receipt = &signed.receipt;
    let public_key = signed
        .verify_integrity()
        .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
    stackpack_schema::reference::validate_name(&receipt.customer)
        .map_err(|e| Error::new(Code::BadRequest, format!("customer: {e}")))?;
    if receipt.id.is_empty() || receipt.id.len() > 128 {
        return Err(Error::new(
            Code::BadRequest,
            "the receipt id must be 1 to 128 characters",
        ));
    }
    for (what, value) in [
        ("startedAt", &receipt.started_at),
        ("finishedAt", &receipt.finished_at),
    ] {
        time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
            .map_err(|_| {
                Error::new(
                    Code::BadRequest,
                    format!("`{what}` `{value}` is not an RFC 3339 time"),
                )
            })?;
    }
    let document = String::from_utf8(stackpack_schema::signature::canonical_json(signed))
        .expect("JSON is UTF-8");
    let now = db::now_rfc3339();
    let key_id = public_key.key_id();
    let public_key_b64 = signed.public_key.clone();
    db.write(|tx| {
        if let Some(existing) = db::ledger::receipt_document(tx, &receipt.id)? {
            return if existing == document {
                Ok(false)
            } else {
                Err(Error::new(
                    Code::Conflict,
                    format!("another receipt with id `{}` is already stored", receipt.id),
                ))
            };
        }
        db::ledger::upsert_customer(tx, &receipt.customer, None, &now)?;
        let keys = db::ledger::installation_keys(tx, &receipt.customer)?;
        if keys.is_empty() {
            db::ledger::add_installation_key(
                tx,
                &receipt.customer,
                &key_id,
                &public_key_b64,
                &now,
            )?;
        } else if !keys.iter().any(|(_, k)| k == &public_key_b64) {
            return Err(Error::new(
                Code::Denied,
                format!(
                    "key `{key_id}` is not an installation key of customer `{}`",
                    receipt.customer
                ),
            ));
        }
        db::ledger::insert_receipt(
            tx,
            &Deployment {
                receipt_id: receipt.id.clone(),
                customer: receipt.customer.clone(),
                stack: receipt.stack.clone(),
                version: receipt.version.to_string(),
                digest: receipt.bundle_digest.to_string(),
                kind: receipt.kind.as_str().to_string(),
                outcome: receipt.outcome.as_str().to_string(),
                started_at: receipt.started_at.clone(),
                finished_at: receipt.finished_at.clone(),
                key_id: key_id.clone(),
                received_at: now.clone(),
            },
            &document,
        )?;
        Ok(true)
    })
}
