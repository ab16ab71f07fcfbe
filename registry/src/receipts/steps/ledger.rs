//! The ledger's steps: the customer noted, then the receipt filed (its history,
//! the customer's cell of the stack, adoption by day).

use crate::db;
use crate::db::sql::Sql;
use crate::error::{Error, Result};

use super::Storing;

pub(super) fn note_customer<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    db::ledger::note_customer(tx, &s.deployment.customer, s.now.as_str())?;
    Ok(())
}

pub(super) fn run<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    db::ledger::file_receipt(
        tx,
        &s.deployment,
        s.checked.finished_ns,
        &s.checked.document,
    )?;
    Ok(())
}
