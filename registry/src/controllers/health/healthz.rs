//! `GET /healthz`: 200 when the database answers; the body names every webhook
//! whose last delivery failed (the registry still serves: a failing webhook is
//! something to fix, not an outage), so a monitor reading it sees alerts that
//! reach nobody.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::state::SharedState;

pub async fn handle(State(state): State<SharedState>) -> Response {
    match state.db.read(|c| {
        c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?;
        crate::db::alerts::failing(c)
    }) {
        Ok(failing) if failing.is_empty() => (StatusCode::OK, "ok\n").into_response(),
        Ok(failing) => {
            let mut body = String::from("ok\n");
            for (webhook, error) in failing {
                body.push_str(&format!("alert webhook `{webhook}` failing: {error}\n"));
            }
            (StatusCode::OK, body).into_response()
        }
        Err(e) => e.into_response(),
    }
}
