//! `GET /v2/token`: where a `WWW-Authenticate: Bearer realm=…` challenge points.
//!
//! Docker-style clients call it with the user's credentials (Basic, the password
//! being a Stackpack token) and then send what it returns as a bearer token. Our
//! tokens are already bearer tokens, so the endpoint checks the presented one and
//! hands it back; nothing new is minted and nothing is logged.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::{self, Action, Principal};
use crate::controllers::Ctx;
use crate::error::Result;
use crate::state::SharedState;

pub async fn handle(
    State(state): State<SharedState>,
    ctx: Ctx,
    headers: HeaderMap,
) -> Result<Response> {
    match (&ctx.principal, auth::presented_token(&headers)) {
        (Principal::Token { .. }, Some(token)) => Ok(axum::Json(json!({
            "token": token,
            "access_token": token,
            "expires_in": 3600,
            "issued_at": crate::db::now_rfc3339(),
        }))
        .into_response()),
        _ if state.config.anonymous_pull => Ok(axum::Json(json!({
            "token": "",
            "access_token": "",
            "expires_in": 3600,
            "issued_at": crate::db::now_rfc3339(),
        }))
        .into_response()),
        // Neither a token nor anonymous pulls: the challenge that says what to send.
        _ => ctx.authorize(Action::Base).map(|()| Response::default()),
    }
}
