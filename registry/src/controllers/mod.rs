//! HTTP handlers, one file per action under `<resource>/<action>.rs`, and the router.
//!
//! OCI repository names contain slashes, so every `/v2/<name>/…` request goes
//! through [`v2_dispatch`], which splits the path the way the distribution spec
//! defines it and calls the action.

pub mod base;
pub mod blobs;
pub mod health;
pub mod ledger;
pub mod manifests;
pub mod referrers;
pub mod tags;
pub mod token;
pub mod uploads;

use std::collections::HashMap;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;

use crate::auth::{self, Action, Principal};
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

/// What a handler knows about its request besides the body.
pub struct Ctx {
    pub state: SharedState,
    pub principal: Principal,
    pub headers: HeaderMap,
    pub query: HashMap<String, String>,
    realm: String,
}

impl Ctx {
    /// Checks that the caller may do `action`.
    pub fn authorize(&self, action: Action<'_>) -> Result<()> {
        auth::authorize(
            &self.principal,
            action,
            self.state.config.anonymous_pull,
            &self.realm,
        )
    }

    /// Refuses, before any body is read, a caller whose role may never do `action`
    /// whatever the body names: no token gets `401` at once, not a parse error.
    pub fn authorize_role(&self, roles: &[auth::Role], action: Action<'_>) -> Result<()> {
        match self.principal.role() {
            Some(role) if roles.contains(&role) => Ok(()),
            _ => auth::authorize(&self.principal, action, false, &self.realm).and(Err(Error::new(
                Code::Denied,
                "this token does not allow the request",
            ))),
        }
    }

    pub fn query(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

fn parse_query(uri: &Uri) -> HashMap<String, String> {
    axum::extract::Query::<HashMap<String, String>>::try_from_uri(uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// Builds the request context: credentials resolved, the challenge realm known.
pub fn context(state: &SharedState, headers: &HeaderMap, uri: &Uri) -> Result<Ctx> {
    let realm = match &state.config.public_url {
        Some(url) => format!("{}/v2/token", url.trim_end_matches('/')),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("localhost");
            format!("http://{host}/v2/token")
        }
    };
    let principal = match auth::authenticate(&state.db, headers) {
        Ok(principal) => principal,
        Err(e) if e.code == Code::Unauthorized => {
            return Err(auth::unauthorized(Action::Base, &realm)
                .with_detail(serde_json::json!({"reason": "the presented token is not valid"})))
        }
        Err(e) => return Err(e),
    };
    Ok(Ctx {
        state: state.clone(),
        principal,
        headers: headers.clone(),
        query: parse_query(uri),
        realm,
    })
}

/// The route of a `/v2/<name>/…` path.
#[derive(Debug, PartialEq, Eq)]
enum V2Route<'a> {
    Tags(&'a str),
    Manifest(&'a str, &'a str),
    Referrers(&'a str, &'a str),
    Uploads(&'a str, Option<&'a str>),
    Blob(&'a str, &'a str),
}

fn route(rest: &str) -> Option<V2Route<'_>> {
    if let Some(name) = rest.strip_suffix("/tags/list") {
        return Some(V2Route::Tags(name));
    }
    if let Some(name) = rest
        .strip_suffix("/blobs/uploads/")
        .or_else(|| rest.strip_suffix("/blobs/uploads"))
    {
        return Some(V2Route::Uploads(name, None));
    }
    if let Some((name, id)) = rest.rsplit_once("/blobs/uploads/") {
        return Some(V2Route::Uploads(name, Some(id)));
    }
    if let Some((name, reference)) = rest.rsplit_once("/manifests/") {
        return Some(V2Route::Manifest(name, reference));
    }
    if let Some((name, digest)) = rest.rsplit_once("/referrers/") {
        return Some(V2Route::Referrers(name, digest));
    }
    if let Some((name, digest)) = rest.rsplit_once("/blobs/") {
        return Some(V2Route::Blob(name, digest));
    }
    None
}

fn unsupported(method: &Method) -> Error {
    Error::new(
        Code::Unsupported,
        format!("`{method}` is not supported on this path"),
    )
}

async fn v2_dispatch(State(state): State<SharedState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // Handlers take the body when they are ready to read it; one that refuses first
    // leaves it here, and it is drained so the client, still sending, reads the error.
    let mut body = Some(body);
    let path = parts.uri.path().to_string();
    let rest = path.strip_prefix("/v2/").unwrap_or("");
    let result = async {
        let Some(route) = route(rest) else {
            return Err(Error::new(Code::NotFound, format!("no such path `{path}`")));
        };
        let ctx = context(&state, &parts.headers, &parts.uri)?;
        let name = match &route {
            V2Route::Tags(n)
            | V2Route::Manifest(n, _)
            | V2Route::Referrers(n, _)
            | V2Route::Uploads(n, _)
            | V2Route::Blob(n, _) => *n,
        };
        crate::names::validate_repository(name)?;
        let method = &parts.method;
        match route {
            V2Route::Tags(name) if method == Method::GET => tags::list::handle(ctx, name).await,
            V2Route::Manifest(name, reference) => match *method {
                Method::GET => manifests::get::handle(ctx, name, reference, false).await,
                Method::HEAD => manifests::get::handle(ctx, name, reference, true).await,
                Method::PUT => manifests::put::handle(ctx, name, reference, &mut body).await,
                Method::DELETE => manifests::delete::handle(ctx, name, reference).await,
                _ => Err(unsupported(method)),
            },
            V2Route::Referrers(name, digest) if method == Method::GET => {
                referrers::list::handle(ctx, name, digest).await
            }
            V2Route::Uploads(name, None) if method == Method::POST => {
                uploads::start::handle(ctx, name, &mut body).await
            }
            V2Route::Uploads(name, Some(id)) => match *method {
                Method::GET => uploads::status::handle(ctx, name, id).await,
                Method::PATCH => uploads::append::handle(ctx, name, id, &mut body).await,
                Method::PUT => uploads::finish::handle(ctx, name, id, &mut body).await,
                Method::DELETE => uploads::cancel::handle(ctx, name, id).await,
                _ => Err(unsupported(method)),
            },
            V2Route::Blob(name, digest) => match *method {
                Method::GET => blobs::get::handle(ctx, name, digest, false).await,
                Method::HEAD => blobs::get::handle(ctx, name, digest, true).await,
                Method::DELETE => blobs::delete::handle(ctx, name, digest).await,
                _ => Err(unsupported(method)),
            },
            _ => Err(unsupported(method)),
        }
    }
    .await;
    if result.is_err() {
        if let Some(body) = body.take() {
            drain(body, DRAIN_CAP).await;
        }
    }
    result.unwrap_or_else(IntoResponse::into_response)
}

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

async fn observe(State(state): State<SharedState>, request: Request, next: Next) -> Response {
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

/// The whole application.
pub fn router(state: SharedState) -> Router {
    Router::new()
        .route("/v2", get(base::check::handle))
        .route("/v2/", get(base::check::handle))
        .route("/v2/token", get(token::issue::handle))
        .route("/v2/_catalog", get(base::catalog::handle))
        .route("/v2/{*rest}", any(v2_dispatch))
        .route("/healthz", get(health::healthz::handle))
        .route("/metrics", get(health::metrics::handle))
        .route("/api/v1/openapi.json", get(ledger::openapi::handle))
        .route(
            "/api/v1/releases",
            get(ledger::releases::handle).post(ledger::releases::create),
        )
        .route("/api/v1/stacks", get(ledger::stacks::handle))
        .route(
            "/api/v1/customers",
            get(ledger::customers::list).post(ledger::customers::create),
        )
        .route("/api/v1/customers/{id}", get(ledger::customers::show))
        .route(
            "/api/v1/customers/{id}/keys",
            post(ledger::customers::add_key),
        )
        .route("/api/v1/deployments", get(ledger::deployments::handle))
        .route("/api/v1/receipts", post(ledger::receipts::create))
        .route("/api/v1/support/versions", get(ledger::support::versions))
        .route("/api/v1/support/behind", get(ledger::support::behind))
        .route(
            "/api/v1/support/prerelease",
            get(ledger::support::prerelease),
        )
        .route("/api/v1/support/drifted", get(ledger::support::drifted))
        .fallback(|| async { Error::new(Code::NotFound, "no such path").into_response() })
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// An empty response with a status and headers.
pub fn empty(status: axum::http::StatusCode, headers: &[(&str, String)]) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(
                header::HeaderName::from_bytes(name.as_bytes()).expect("static header names"),
                value,
            );
        }
    }
    response
}

/// Reads and drops what is left of a refused body (up to `cap` bytes), so that the
/// client, still sending, gets to read the error instead of a broken pipe.
pub async fn drain(body: Body, cap: u64) {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut seen = 0u64;
    let deadline = tokio::time::sleep(std::time::Duration::from_secs(10));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            chunk = stream.next() => match chunk {
                Some(Ok(chunk)) => {
                    seen += chunk.len() as u64;
                    if seen > cap {
                        return;
                    }
                }
                _ => return,
            },
            _ = &mut deadline => return,
        }
    }
}

/// Answers now and reads what is left of a refused body in the background (without
/// keeping it), so the client, still sending, reads the answer instead of a broken pipe.
pub fn discard(body: Body) {
    tokio::spawn(drain(body, DRAIN_CAP));
}

/// How much of a refused body is read before the connection is given up.
pub const DRAIN_CAP: u64 = 64 * 1024 * 1024;

/// Reads a JSON API body of at most `limit` bytes.
pub async fn read_limited(body: Body, limit: u64, what: &str) -> Result<axum::body::Bytes> {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| Error::new(Code::BadRequest, format!("{what} was cut off: {e}")))?;
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            let rest = Body::from_stream(stream);
            drain(rest, DRAIN_CAP).await;
            return Err(Error::too_large(what, limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_paths_split_as_the_spec_says() {
        assert_eq!(route("a/b/tags/list"), Some(V2Route::Tags("a/b")));
        assert_eq!(
            route("a/manifests/1.0"),
            Some(V2Route::Manifest("a", "1.0"))
        );
        assert_eq!(
            route("a/b/blobs/uploads/"),
            Some(V2Route::Uploads("a/b", None))
        );
        assert_eq!(
            route("a/blobs/uploads/xyz"),
            Some(V2Route::Uploads("a", Some("xyz")))
        );
        assert_eq!(
            route("a/blobs/sha256:00"),
            Some(V2Route::Blob("a", "sha256:00"))
        );
        assert_eq!(
            route("a/referrers/sha256:00"),
            Some(V2Route::Referrers("a", "sha256:00"))
        );
        assert_eq!(route("a/b"), None);
    }
}
