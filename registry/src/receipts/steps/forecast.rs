//! A real plan is held against the forecast its release published: one that
//! differs fails the customer's gate until someone acknowledges it.

use crate::db::sql::Sql;
use crate::error::{Error, Result};

use super::Storing;

pub(super) fn run<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    if let Some(receipt) = &s.checked.planned {
        crate::forecast::hold_receipt(tx, receipt, s.now.as_str())?;
    }
    Ok(())
}
