//! `GET /v2/`: the version check. 200 for a caller who may use the registry, else a
//! 401 challenge that tells docker-style clients where to get a token.

use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::{empty, Ctx};
use crate::error::Result;

pub async fn handle(ctx: Ctx) -> Result<Response> {
    ctx.authorize(Action::Base)?;
    let mut response = empty(
        StatusCode::OK,
        &[("Content-Type", "application/json".into())],
    );
    *response.body_mut() = "{}".into();
    Ok(response)
}
