//! `PUT /api/v1/forecasts/{release}/{version}`: the packager sends a release
//! version's forecast (`stackpack forecast`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use stackpack_schema::forecast::ReleaseForecast;

use crate::controllers::{read_limited_to, Authorised, MayPublish};
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};
use crate::forecast::{self, MAX_FORECAST_BYTES};
use crate::state::SharedState;

#[utoipa::path(
    put,
    path = "/api/v1/forecasts/{release}/{version}",
    params(
        ("release" = String, Path, description = "Release (or stack) name"),
        ("version" = String, Path, description = "The candidate version"),
    ),
    request_body(
        content = Object,
        description = "A `ReleaseForecast` (`stackpack_schema::forecast`): `{format, kind, release, version, digest, channel, createdAt, account, customers: [CustomerForecast]}`; at most 16 MiB",
        content_type = "application/json"
    ),
    responses(
        (status = 204, description = "Stored, replacing an earlier forecast of this version"),
        (status = 400, description = "Malformed, or the body's release and version are not the path's"),
        (status = 401, description = "No token"),
        (status = 403, description = "The token may not publish"),
        (status = 413, description = "Larger than 16 MiB"),
    ),
    security(("bearer" = [])),
    tag = "forecasts"
)]
pub async fn handle(
    State(state): State<SharedState>,
    Path((release, version)): Path<(String, String)>,
    Authorised { body, .. }: Authorised<MayPublish>,
) -> Result<impl IntoResponse> {
    let version = super::version(&version)?;
    let body = read_limited_to(body, &state.config, "the forecast", MAX_FORECAST_BYTES).await?;
    let sent: ReleaseForecast = serde_json::from_slice(&body)
        .map_err(|e| Error::new(Code::BadRequest, format!("the body is not a forecast: {e}")))?;
    let now = crate::rollout::format_ns(crate::rollout::now_ns());
    // Keyed by the release: a forecast replaces only its own rows, and a rollout's
    // tick or a receipt reads either the forecast before or the one after.
    state.db.write_keyed(&[Lock::Release(&release)], |tx| {
        forecast::publish(tx, &release, &version, &sent, &now)
    })?;
    Ok(StatusCode::NO_CONTENT)
}
