//! `GET /api/v1/releases?stack=<stack>`: releases recorded as bundles arrived.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;

use crate::api::Release;
use crate::auth::Action;
use crate::controllers::context;
use crate::controllers::ledger::reply;
use crate::db;
use crate::state::SharedState;

#[utoipa::path(
    get,
    path = "/api/v1/releases",
    params(("stack" = Option<String>, Query, description = "Only this stack's releases")),
    responses(
        (status = 200, description = "Releases, by stack then publication time", body = Vec<Release>),
        (status = 401, description = "No or an invalid token"),
        (status = 403, description = "The token's role may not read the ledger"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn handle(
    State(state): State<SharedState>,
    headers: HeaderMap,
    uri: Uri,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    reply((|| {
        context(&state, &headers, &uri)?.authorize(Action::LedgerRead)?;
        let stack = query.get("stack").map(String::as_str);
        state.db.read(|c| db::ledger::releases(c, stack))
    })())
}
