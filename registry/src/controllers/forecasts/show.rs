//! `GET /api/v1/forecasts/{release}/{version}`: a release version's forecast, its
//! one-line summary and the real plans that missed it.

use axum::extract::{Path, State};
use axum::Json;
use stackpack_schema::forecast::ForecastView;

use crate::controllers::Ctx;
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

#[utoipa::path(
    get,
    path = "/api/v1/forecasts/{release}/{version}",
    params(
        ("release" = String, Path, description = "Release (or stack) name"),
        ("version" = String, Path, description = "The candidate version"),
    ),
    responses(
        (status = 200, description = "A `ForecastView` (`stackpack_schema::forecast`): `{forecast, summary, misses}`", body = Object),
        (status = 400, description = "The version is not a version"),
        (status = 403, description = "The token may not read forecasts (publish, support or admin)"),
        (status = 404, description = "No forecast of this version"),
    ),
    security(("bearer" = [])),
    tag = "forecasts"
)]
pub async fn handle(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path((release, version)): Path<(String, String)>,
) -> Result<Json<ForecastView>> {
    super::may_read(&ctx)?;
    let version = super::version(&version)?;
    state
        .db
        .support_any(|c| crate::forecast::view(c, &release, &version))?
        .map(Json)
        .ok_or_else(|| {
            Error::new(
                Code::NotFound,
                format!(
                    "there is no forecast of `{release}@{version}`; send one with `stackpack forecast {release}@{version}`"
                ),
            )
        })
}
