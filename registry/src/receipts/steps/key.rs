//! The signing key: one of the customer's installation keys, or its first, pinned
//! through a path that says who the customer is (see [`crate::receipt_keys`]).

use crate::db::sql::Sql;
use crate::error::{Error, Result};
use crate::receipt_keys::{check_key, SigningKey};

use super::Storing;

pub(super) fn run<C: Sql + ?Sized>(tx: &C, s: &mut Storing<'_>) -> Result<()>
where
    Error: From<C::Error>,
{
    let key = SigningKey {
        key_id: &s.deployment.key_id,
        public_key: &s.checked.public_key_b64,
    };
    check_key(
        tx,
        &s.deployment.customer,
        &key,
        s.first_use,
        s.now.as_str(),
    )
}
