//! `POST /api/v1/rollouts/{id}/pause|resume|abort` (admin).

use axum::extract::{Path, State};
use axum::Json;

use crate::api::Rollout;
use crate::controllers::{Authorised, MayAdminister};
use crate::error::Result;
use crate::rollout::{self, Control};
use crate::state::SharedState;

fn run(state: &SharedState, id: i64, control: Control) -> Result<Rollout> {
    rollout::control_held(&state.db, id, control)
}

#[utoipa::path(
    post,
    path = "/api/v1/rollouts/{id}/pause",
    params(("id" = i64, Path, description = "Rollout id")),
    responses(
        (status = 200, description = "Paused: nobody else is assigned until it is resumed", body = Rollout),
        (status = 404, description = "No such rollout"),
        (status = 409, description = "It is over (completed, aborted, superseded)"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn pause(
    State(state): State<SharedState>,
    Path(id): Path<i64>,
    _admin: Authorised<MayAdminister>,
) -> Result<Json<Rollout>> {
    Ok(Json(run(&state, id, Control::Pause)?))
}

#[utoipa::path(
    post,
    path = "/api/v1/rollouts/{id}/resume",
    params(("id" = i64, Path, description = "Rollout id")),
    responses(
        (status = 200, description = "Running again (a halt cleared); the health gate is read again, so a cause still failing halts it again", body = Rollout),
        (status = 404, description = "No such rollout"),
        (status = 409, description = "It is over (completed, aborted, superseded)"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn resume(
    State(state): State<SharedState>,
    Path(id): Path<i64>,
    _admin: Authorised<MayAdminister>,
) -> Result<Json<Rollout>> {
    Ok(Json(run(&state, id, Control::Resume)?))
}

#[utoipa::path(
    post,
    path = "/api/v1/rollouts/{id}/abort",
    params(("id" = i64, Path, description = "Rollout id")),
    responses(
        (status = 200, description = "Aborted: nobody else is assigned; those assigned keep it", body = Rollout),
        (status = 404, description = "No such rollout"),
        (status = 409, description = "It is over (completed, superseded)"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn abort(
    State(state): State<SharedState>,
    Path(id): Path<i64>,
    _admin: Authorised<MayAdminister>,
) -> Result<Json<Rollout>> {
    Ok(Json(run(&state, id, Control::Abort)?))
}
