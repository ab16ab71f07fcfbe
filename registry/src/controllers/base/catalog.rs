//! `GET /v2/_catalog`: repository names, paginated like the tag list.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::Action;
use crate::controllers::tags::list::page_size;
use crate::controllers::Ctx;
use crate::db;
use crate::error::Result;
use crate::state::SharedState;

pub async fn handle(State(state): State<SharedState>, ctx: Ctx) -> Result<Response> {
    ctx.authorize(Action::Pull("_catalog"))?;
    let n = page_size(ctx.query("n"))?;
    let last = ctx.query("last");
    let mut repos = state
        .db
        .scan_any(|c| db::manifests::list_repositories(c, last, n.map(|n| n + 1)))?;
    let mut more = false;
    if let Some(n) = n {
        if repos.len() as u64 > n {
            repos.truncate(n as usize);
            more = true;
        }
    }
    let mut response = axum::Json(json!({ "repositories": repos })).into_response();
    if let (true, Some(n), Some(last)) = (more, n, repos.last()) {
        let link = format!("</v2/_catalog?n={n}&last={last}>; rel=\"next\"");
        if let Ok(value) = link.parse() {
            response.headers_mut().insert("Link", value);
        }
    }
    Ok(response)
}
