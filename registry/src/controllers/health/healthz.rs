//! `GET /healthz`: which backends answer, one line each (`database: ok`), 200 when
//! all do and 503 naming the one that does not, so a load balancer takes a replica
//! whose database fails out of rotation. The body also names every webhook whose
//! last delivery failed (the registry still serves: a failing webhook is something
//! to fix, not an outage), so a monitor reading it sees alerts that reach nobody.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::state::SharedState;

pub async fn handle(State(state): State<SharedState>) -> Response {
    let checked = state.db.read(|c| {
        c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?;
        crate::db::alerts::failing(c)
    });
    match checked {
        Ok(failing) => {
            let mut body = String::from("ok\ndatabase: ok\n");
            for (webhook, error) in failing {
                body.push_str(&format!("alert webhook `{webhook}` failing: {error}\n"));
            }
            (StatusCode::OK, body).into_response()
        }
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unavailable\ndatabase: error: {}\n", e.message),
        )
            .into_response(),
    }
}
