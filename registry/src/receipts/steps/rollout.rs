//! A stack receipt can fail or drift a release a rollout assigned: each of the
//! customer's open rollouts hears of it at once (its gate read again, the rollout
//! moved on), each locked as it is reached (see [`crate::db::locks`]).

use crate::db::sql::Sql;
use crate::error::{Error, Result};

use super::Storing;

pub(super) fn run<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    let now_ns = i64::try_from(s.now.at().unix_timestamp_nanos()).unwrap_or(i64::MAX);
    crate::rollout::refresh_customer(tx, &s.deployment.customer, now_ns)?;
    Ok(())
}
