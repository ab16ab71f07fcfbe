//! The metrics and access-log middleware: every request is counted by route,
//! method and status, timed, and logged at debug level (never with its token).

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use crate::controllers::v2_paths::{route, V2Route};
use crate::state::SharedState;

fn route_label(path: &str) -> &'static str {
    if path == "/v2/" || path == "/v2" {
        return "base";
    }
    if path.starts_with("/api/") {
        return "api";
    }
    if path == "/healthz" || path == "/metrics" {
        return "health";
    }
    match path.strip_prefix("/v2/").and_then(route) {
        Some(V2Route::Tags(_)) => "tags",
        Some(V2Route::Manifest(..)) => "manifests",
        Some(V2Route::Referrers(..)) => "referrers",
        Some(V2Route::Uploads(..)) => "uploads",
        Some(V2Route::Blob(..)) => "blobs",
        None => "other",
    }
}

pub async fn observe(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let label = route_label(request.uri().path());
    let path = request.uri().path().to_string();
    let mut response = next.run(request).await;
    if path.starts_with("/v2") {
        response.headers_mut().insert(
            "Docker-Distribution-API-Version",
            HeaderValue::from_static("registry/2.0"),
        );
    }
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    state
        .metrics
        .observe(label, method.as_str(), status, elapsed);
    tracing::debug!(
        target: "stackpack_registry::access",
        %method, path, status, elapsed_ms = elapsed.as_secs_f64() * 1000.0,
        "request"
    );
    response
}
