//! `GET /healthz`: 200 when the database and the blob store answer, 503 naming the
//! one that does not. The body says which backends answered and names every
//! alert (by id and its webhook's host) whose last delivery failed (the registry still serves: a failing webhook
//! is something to fix, not an outage), so a monitor reading it sees alerts that
//! reach nobody.

use crate::db::sql::Sql;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::state::SharedState;

pub async fn handle(State(state): State<SharedState>) -> Response {
    let failing = match state.db.read_any(|c| {
        c.query_one("SELECT 1", &[])?;
        crate::db::alerts::failing(c)
    }) {
        Ok(failing) => failing,
        Err(e) => {
            let database = state.db.backend().as_str();
            let body = format!("unavailable\ndatabase ({database}): error: {}\n", e.message);
            return (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
        }
    };
    let database = state.db.backend().as_str();
    let backend = state.blobs.backend().as_str();
    let location = state.blobs.location();
    if let Err(e) = state.blobs.check().await {
        let body = format!(
            "unavailable\ndatabase ({database}): ok\nblobs ({backend}) `{location}`: {e}\n"
        );
        return (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    }
    let mut body = format!("ok\ndatabase ({database}): ok\nblobs ({backend}) `{location}`: ok\n");
    // Anyone may read this: an alert is named by its id and its webhook's host, never
    // the URL (its path or query may be the credential).
    for (id, webhook, error) in failing {
        body.push_str(&format!(
            "alert {id} (`{}`) failing: {}\n",
            crate::alerts::shown(&webhook),
            crate::alerts::scrubbed(&error, &webhook)
        ));
    }
    (StatusCode::OK, body).into_response()
}
