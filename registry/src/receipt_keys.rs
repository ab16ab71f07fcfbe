//! Which installation key may sign a customer's receipts.
//!
//! A receipt carries its own public key, so a signature that verifies proves only
//! that someone holding that key wrote it. The ledger trusts it for a customer when
//! the key is one of that customer's installation keys. A customer's first key is
//! pinned on first use, but only through a path that already says who the customer
//! is: a token allowed to report for it (its own customer token, or an admin's), or
//! `receipts import --customer ID` typed by the vendor for a customer it registered
//! (`customer add`). A file carried out of an airgapped site proves nothing about
//! whose it is, so without `--customer` it may only carry receipts signed by keys
//! already pinned. A key pinned to one customer
//! is refused for another unless an admin registered it for that one too
//! (`customer key add`): otherwise one customer's installation could write, and then
//! lock, another customer's history.

use serde_json::json;

use crate::db;
use crate::db::sql::Sql;
use crate::error::{Code, Error, Result};

/// Who may pin a customer's first installation key.
pub enum FirstUse<'a> {
    /// Reported over HTTP with a token allowed to report for the receipt's customer.
    Reporter,
    /// `receipts import --customer`: only the customers named.
    Named(&'a [String]),
}

impl FirstUse<'_> {
    fn allows(&self, customer: &str) -> bool {
        match self {
            FirstUse::Reporter => true,
            FirstUse::Named(names) => names.iter().any(|n| n == customer),
        }
    }

    /// How a key pinned through this path is recorded (`installation_keys.pinned_by`).
    fn pinned_by(&self) -> db::ledger::PinnedBy {
        match self {
            FirstUse::Reporter => db::ledger::PinnedBy::Report,
            FirstUse::Named(_) => db::ledger::PinnedBy::Import,
        }
    }
}

fn denied(message: String, hint: String) -> Error {
    Error::new(Code::Denied, message).with_detail(json!({ "hint": hint }))
}

/// A receipt's signing key: its id and the public key, base64 DER (as
/// `installation_keys` keeps it).
pub struct SigningKey<'a> {
    pub key_id: &'a str,
    pub public_key: &'a str,
}

/// Refuses a receipt of `customer` unless `key` is a current installation key of
/// that customer, pinning the customer's first key when `first_use` allows it.
pub fn check_key<C: Sql + ?Sized>(
    tx: &C,
    customer: &str,
    key: &SigningKey<'_>,
    first_use: &FirstUse<'_>,
    now: &str,
) -> Result<()>
where
    Error: From<C::Error>,
{
    let key_id = key.key_id;
    let keys = db::ledger::installation_keys(tx, customer)?;
    match keys.iter().find(|(_, k, _)| k == key.public_key) {
        Some((_, _, false)) => return Ok(()),
        Some((_, _, true)) => {
            return Err(Error::new(
                Code::Denied,
                format!(
                    "key `{key_id}` of customer `{customer}` was revoked; sign with a current installation key"
                ),
            ))
        }
        None => {}
    }
    let owners = db::ledger::customers_of_key(tx, key.public_key)?;
    if let Some(owner) = owners.iter().find(|o| *o != customer) {
        return Err(denied(
            format!(
                "the receipt claims customer `{customer}`, but its key `{key_id}` is pinned to customer `{owner}`"
            ),
            format!(
                "if `{customer}` really runs a second installation with this key, register it: \
                 `stackpack-registry customer key add {customer} KEY.pub`"
            ),
        ));
    }
    // A revoked key still counts, so revoking the last one does not reopen pinning.
    if !keys.is_empty() {
        return Err(denied(
            format!("key `{key_id}` is not an installation key of customer `{customer}`"),
            format!(
                "if it is a new installation of `{customer}`, register it: \
                 `stackpack-registry customer key add {customer} KEY.pub`"
            ),
        ));
    }
    if !first_use.allows(customer) {
        return Err(denied(
            format!(
                "customer `{customer}` has no installation key yet, and nothing says this file is `{customer}`'s: \
                 key `{key_id}` would be pinned to it on first use"
            ),
            format!(
                "if the file came from `{customer}`'s installation, import it with `--customer {customer}`"
            ),
        ));
    }
    // A file names its own customer and carries its own key: for a customer the
    // vendor never registered, nothing but the file would vouch for either, and the
    // ledger would grow a customer (a typo, someone else's file) nobody added.
    if matches!(first_use, FirstUse::Named(_)) && !db::ledger::is_registered(tx, customer)? {
        return Err(denied(
            format!(
                "customer `{customer}` is not registered: key `{key_id}` from this file would be \
                 the only thing vouching for it"
            ),
            format!(
                "if `{customer}` is your customer, register it first: \
                 `stackpack-registry customer add {customer}`, then import the file again"
            ),
        ));
    }
    db::ledger::add_installation_key(
        tx,
        customer,
        key_id,
        key.public_key,
        now,
        first_use.pinned_by(),
    )?;
    Ok(())
}
