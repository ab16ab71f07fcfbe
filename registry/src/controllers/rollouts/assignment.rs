//! `GET /api/v1/customers/{id}/assignment`: what a customer's runner should run.

use axum::extract::{Path, State};
use axum::Json;
use stackpack_schema::rollout::AssignmentResponse;

use crate::auth::Action;
use crate::controllers::Ctx;
use crate::error::{Code, Error, Result};
use crate::rollout;
use crate::state::SharedState;

#[utoipa::path(
    get,
    path = "/api/v1/customers/{id}/assignment",
    params(("id" = String, Path, description = "Customer id")),
    responses(
        (status = 200, description = "`AssignmentResponse` (`stackpack_schema::rollout`): the customer's channel and wave, and per release the version its wave was assigned, with the vendor's signed channel statement (a required version first, `onTheWayTo` the target)", body = Object),
        (status = 403, description = "Another customer's token"),
        (status = 404, description = "No such customer"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn show(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Json<AssignmentResponse>> {
    ctx.authorize(Action::CustomerRead(&id))?;
    let now = rollout::now_ns();
    rollout::advance_if_due(&state.db, now)?;
    state
        .db
        .read_any(|c| rollout::assignment(c, &id, now))?
        .map(Json)
        .ok_or_else(|| Error::new(Code::NotFound, format!("customer `{id}` is not known")))
}
