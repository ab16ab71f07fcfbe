//! `GET /api/v1/rollouts`: rollouts, newest first.

use axum::extract::State;
use axum::Json;

use crate::api::Rollout;
use crate::auth::Action;
use crate::controllers::Ctx;
use crate::error::Result;
use crate::rollout;
use crate::state::{AppState, SharedState};

/// Rollouts (of a channel, of a release), moved on to now first.
pub fn rollouts(
    state: &AppState,
    channel: Option<&str>,
    release: Option<&str>,
) -> Result<Vec<Rollout>> {
    let now = rollout::now_ns();
    // A write only when a wave is due: a read of rollouts takes no write lock.
    rollout::advance_if_due(&state.db, now)?;
    state.db.support_any(|c| rollout::list(c, channel, release))
}

#[utoipa::path(
    get,
    path = "/api/v1/rollouts",
    params(
        ("channel" = Option<String>, Query, description = "Only this channel's"),
        ("release" = Option<String>, Query, description = "Only this release's (or stack's)"),
    ),
    responses(
        (status = 200, description = "Rollouts, newest first: release@version, channel, state, the wave open, when the next may open, why it halted", body = Vec<Rollout>),
    ),
    security(("bearer" = [])),
    tag = "rollouts"
)]
pub async fn handle(State(state): State<SharedState>, ctx: Ctx) -> Result<Json<Vec<Rollout>>> {
    ctx.authorize(Action::LedgerRead)?;
    Ok(Json(rollouts(
        &state,
        ctx.query("channel"),
        ctx.query("release"),
    )?))
}
