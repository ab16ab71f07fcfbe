//! `GET /api/v1/deployments?customer=&stack=&limit=`: receipts, newest first.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::Json;

use crate::api::Deployment;
use crate::auth::Action;
use crate::controllers::Ctx;
use crate::db;
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

#[utoipa::path(
    get,
    path = "/api/v1/deployments",
    params(
        ("customer" = Option<String>, Query, description = "Only this customer's"),
        ("stack" = Option<String>, Query, description = "Only this stack's"),
        ("limit" = Option<u64>, Query, description = "At most this many (default 100, at most 1000)"),
    ),
    responses((status = 200, description = "Receipts, newest first", body = Vec<Deployment>)),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn handle(
    State(state): State<SharedState>,
    ctx: Ctx,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Vec<Deployment>>> {
    let customer = query.get("customer").map(String::as_str);
    match customer {
        Some(id) => ctx.authorize(Action::CustomerRead(id))?,
        None => ctx.authorize(Action::LedgerRead)?,
    }
    let limit = match query.get("limit") {
        Some(l) => l
            .parse::<u64>()
            .map_err(|_| Error::new(Code::BadRequest, format!("`limit={l}` is not a count")))?,
        None => 100,
    }
    .min(1000);
    let stack = query.get("stack").map(String::as_str);
    state
        .db
        .scan_any(|c| db::ledger::deployments(c, customer, stack, limit))
        .map(Json)
}
