//! `GET /v2/`: the version check. 200 for a caller who may use the registry, else a
//! 401 challenge that tells docker-style clients where to get a token.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::auth::Action;
use crate::controllers::{context, empty};
use crate::state::SharedState;

pub async fn handle(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    let result = context(&state, &headers, &uri).and_then(|ctx| ctx.authorize(Action::Base));
    match result {
        Ok(()) => {
            let mut response = empty(
                StatusCode::OK,
                &[("Content-Type", "application/json".into())],
            );
            *response.body_mut() = "{}".into();
            response
        }
        Err(e) => e.into_response(),
    }
}
