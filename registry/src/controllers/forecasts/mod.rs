//! Forecasts under `/api/v1/`: the packager sends a release version's forecast and
//! reads it back; it asks whom to forecast and from where. The meaning is
//! [`crate::forecast`].

pub mod put;
pub mod show;
pub mod targets;

use crate::auth::{Action, Role};
use crate::controllers::Ctx;
use crate::error::{Code, Error, Result};

/// Publishers, support and admins read forecasts and their targets.
pub(crate) fn may_read(ctx: &Ctx) -> Result<()> {
    ctx.authorize_role(
        &[Role::Publisher, Role::Support, Role::Admin],
        Action::LedgerRead,
    )
}

/// A version from the path or the query.
pub(crate) fn version(text: &str) -> Result<semver::Version> {
    semver::Version::parse(text)
        .map_err(|e| Error::new(Code::BadRequest, format!("`{text}` is not a version: {e}")))
}
