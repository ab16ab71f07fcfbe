//! Support's questions: which version each customer runs, who is behind the latest
//! stable, who runs a prerelease, who drifted.

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;

use crate::api::Running;
use crate::auth::Action;
use crate::controllers::context;
use crate::controllers::ledger::{reply, running};
use crate::error::Result;
use crate::state::SharedState;

fn answer(
    state: &SharedState,
    headers: &HeaderMap,
    uri: &Uri,
    keep: impl Fn(&Running) -> bool,
) -> Result<Vec<Running>> {
    context(state, headers, uri)?.authorize(Action::LedgerRead)?;
    Ok(running(state, None)?
        .into_iter()
        .filter(|r| keep(r))
        .collect())
}

#[utoipa::path(get, path = "/api/v1/support/versions",
    responses((status = 200, description = "What every customer runs of every stack", body = Vec<Running>)),
    security(("bearer" = [])), tag = "support")]
pub async fn versions(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    reply(answer(&state, &headers, &uri, |_| true))
}

#[utoipa::path(get, path = "/api/v1/support/behind",
    responses((status = 200, description = "Customers running a version below the stack's latest stable", body = Vec<Running>)),
    security(("bearer" = [])), tag = "support")]
pub async fn behind(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    reply(answer(&state, &headers, &uri, |r| r.behind))
}

#[utoipa::path(get, path = "/api/v1/support/prerelease",
    responses((status = 200, description = "Customers running a prerelease", body = Vec<Running>)),
    security(("bearer" = [])), tag = "support")]
pub async fn prerelease(
    State(state): State<SharedState>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    reply(answer(&state, &headers, &uri, |r| r.prerelease))
}

#[utoipa::path(get, path = "/api/v1/support/drifted",
    responses((status = 200, description = "Customers whose last drift check found drift", body = Vec<Running>)),
    security(("bearer" = [])), tag = "support")]
pub async fn drifted(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    reply(answer(&state, &headers, &uri, |r| r.drifted))
}
