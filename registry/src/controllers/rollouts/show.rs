//! `GET /api/v1/rollouts/{id}`: one rollout with who got it when, who failed, and
//! its history.

use axum::extract::{Path, State};
use axum::Json;

use crate::api::RolloutDetail;
use crate::auth::Action;
use crate::controllers::Ctx;
use crate::error::{Code, Error, Result};
use crate::rollout;
use crate::state::{AppState, SharedState};

/// One rollout, moved on to now first; `NOT_FOUND` when there is none.
pub fn detail(state: &AppState, id: i64) -> Result<RolloutDetail> {
    let now = rollout::now_ns();
    // A write only when a wave is due: a read of rollouts takes no write lock.
    rollout::advance_if_due(&state.db, now)?;
    state
        .db
        .support_any(|c| rollout::detail(c, id))?
        .ok_or_else(|| Error::new(Code::NotFound, format!("there is no rollout {id}")))
}

#[utoipa::path(
    get,
    path = "/api/v1/rollouts/{id}",
    params(("id" = i64, Path, description = "Rollout id")),
    responses(
        (status = 200, description = "The rollout, each assigned customer (wave, when, gate standing and why), and its history", body = RolloutDetail),
        (status = 404, description = "No such rollout"),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn handle(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path(id): Path<i64>,
) -> Result<Json<RolloutDetail>> {
    ctx.authorize(Action::LedgerRead)?;
    Ok(Json(detail(&state, id)?))
}
