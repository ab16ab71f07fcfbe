//! `GET /healthz`: 200 when the database answers.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::state::SharedState;

pub async fn handle(State(state): State<SharedState>) -> Response {
    match state
        .db
        .read(|c| c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0)))
    {
        Ok(_) => (StatusCode::OK, "ok\n").into_response(),
        Err(e) => e.into_response(),
    }
}
