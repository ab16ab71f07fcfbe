//! `GET /api/v1/stacks`: each stack with its latest stable and latest version.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::Json;
use semver::Version;

use crate::api::Stack;
use crate::auth::Action;
use crate::controllers::Ctx;
use crate::db;
use crate::error::Result;
use crate::state::SharedState;

#[utoipa::path(
    get,
    path = "/api/v1/stacks",
    responses((status = 200, description = "Stacks with their latest versions", body = Vec<Stack>)),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn handle(State(state): State<SharedState>, ctx: Ctx) -> Result<Json<Vec<Stack>>> {
    ctx.authorize(Action::LedgerRead)?;
    let releases = state.db.scan_any(|c| db::ledger::releases(c, None))?;
    let mut by_stack: BTreeMap<String, Vec<Version>> = BTreeMap::new();
    for r in &releases {
        by_stack
            .entry(r.stack.clone())
            .or_default()
            .push(r.version.clone());
    }
    Ok(Json(
        by_stack
            .into_iter()
            .map(|(stack, versions)| Stack {
                latest_stable: stackpack_schema::version::latest_stable(&versions).cloned(),
                latest: stackpack_schema::version::latest(&versions).cloned(),
                releases: versions.len() as u64,
                stack,
            })
            .collect(),
    ))
}
