//! `POST /api/v1/customers/{id}/sync`: a runner reports a sync pass.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use stackpack_schema::rollout::SyncReport;

use crate::auth::Action;
use crate::controllers::{read_limited, Authorised, MayReport};
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

#[utoipa::path(
    post,
    path = "/api/v1/customers/{id}/sync",
    params(("id" = String, Path, description = "Customer id")),
    request_body(
        content = Object,
        description = "A `SyncReport` (`stackpack_schema::rollout`): `{customer, startedAt, finishedAt, releases: [{release, kind, assigned, running, state, pending, message, receiptId}]}`",
        content_type = "application/json"
    ),
    responses(
        (status = 204, description = "Stored: last seen and each release's sync state; a failure at the assigned version halts its rollout"),
        (status = 400, description = "Malformed, or the report is another customer's"),
        (status = 403, description = "The token may not report for this customer"),
        (status = 404, description = "No such customer"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn create(
    State(state): State<SharedState>,
    Path(id): Path<String>,
    Authorised { ctx, body, .. }: Authorised<MayReport>,
) -> Result<impl IntoResponse> {
    ctx.authorize(Action::Report(&id))?;
    let body = read_limited(body, &state.config, "the sync report").await?;
    let report: SyncReport = serde_json::from_slice(&body).map_err(|e| {
        Error::new(
            Code::BadRequest,
            format!("the body is not a sync report: {e}"),
        )
    })?;
    crate::rollout::record_sync(&state.db, &id, &report)?;
    Ok(StatusCode::NO_CONTENT)
}
