//! `GET /api/v1/forecast-targets?release=R&version=V[&channel=C]`: whom a rollout
//! would reach and where each customer stands.

use axum::extract::State;
use axum::Json;
use stackpack_schema::forecast::ForecastTargets;

use crate::controllers::Ctx;
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

#[utoipa::path(
    get,
    path = "/api/v1/forecast-targets",
    params(
        ("release" = String, Query, description = "Release (or stack) name"),
        ("version" = String, Query, description = "The candidate version"),
        ("channel" = Option<String>, Query, description = "Only the customers placed in this channel (without it: every customer the ledger knows)"),
    ),
    responses(
        (status = 200, description = "A `ForecastTargets` (`stackpack_schema::forecast`): each customer with its channel, wave, approval policy, the release version it runs, what runs of each stack, and the required versions it passes through", body = Object),
        (status = 400, description = "`release` or `version` missing or malformed"),
        (status = 403, description = "The token may not read forecasts (publish, support or admin)"),
    ),
    security(("bearer" = [])),
    tag = "forecasts"
)]
pub async fn handle(State(state): State<SharedState>, ctx: Ctx) -> Result<Json<ForecastTargets>> {
    super::may_read(&ctx)?;
    let needed = |key: &str| {
        ctx.query(key).ok_or_else(|| {
            Error::new(
                Code::BadRequest,
                format!("`{key}` is missing; ask `/api/v1/forecast-targets?release=R&version=V`"),
            )
        })
    };
    let release = needed("release")?.to_string();
    let version = super::version(needed("version")?)?;
    stackpack_schema::reference::validate_name(&release)
        .map_err(|e| Error::new(Code::BadRequest, format!("release `{release}`: {e}")))?;
    let channel = ctx.query("channel").map(str::to_string);
    Ok(Json(state.db.support_any(|c| {
        crate::forecast::targets(c, &release, &version, channel.as_deref())
    })?))
}
