//! The router. OCI repository names contain slashes, so every `/v2/<name>/…`
//! request goes through `v2_dispatch`, which splits the path the way the
//! distribution spec defines it ([`v2_paths`](super::v2_paths)) and calls the action.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::Method;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post, put};
use axum::Router;

use crate::controllers::body::{drain, DRAIN_CAP};
use crate::controllers::context::context;
use crate::controllers::v2_paths::{route, V2Route};
use crate::controllers::{
    base, blobs, forecasts, health, ledger, manifests, observe, referrers, rollouts, tags, token,
    ui, uploads,
};
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

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
    let result = dispatch(&state, &parts, &mut body).await;
    if result.is_err() {
        if let Some(body) = body.take() {
            drain(body, DRAIN_CAP).await;
        }
    }
    result.unwrap_or_else(IntoResponse::into_response)
}

/// Calls the action of a `/v2/<name>/…` request, after checking the name.
async fn dispatch(state: &SharedState, parts: &Parts, body: &mut Option<Body>) -> Result<Response> {
    let path = parts.uri.path();
    let Some(route) = route(path.strip_prefix("/v2/").unwrap_or("")) else {
        return Err(Error::new(Code::NotFound, format!("no such path `{path}`")));
    };
    if let V2Route::Manifest(name, reference) = route {
        if matches!(parts.method, Method::GET | Method::HEAD) {
            let head = parts.method == Method::HEAD;
            if let Some(answer) =
                manifests::get::prefetched(state, parts, name, reference, head).await?
            {
                return Ok(answer);
            }
        }
    }
    let ctx = context(state, &parts.headers, &parts.uri)?;
    crate::names::validate_repository(route.repository())?;
    let method = &parts.method;
    match route {
        V2Route::Tags(name) if method == Method::GET => tags::list::handle(ctx, name).await,
        V2Route::Manifest(name, reference) => match *method {
            Method::GET => manifests::get::handle(ctx, name, reference, false).await,
            Method::HEAD => manifests::get::handle(ctx, name, reference, true).await,
            Method::PUT => manifests::put::handle(ctx, name, reference, body).await,
            Method::DELETE => manifests::delete::handle(ctx, name, reference).await,
            _ => Err(unsupported(method)),
        },
        V2Route::Referrers(name, digest) if method == Method::GET => {
            referrers::list::handle(ctx, name, digest).await
        }
        V2Route::Uploads(name, None) if method == Method::POST => {
            uploads::start::handle(ctx, name, body).await
        }
        V2Route::Uploads(name, Some(id)) => match *method {
            Method::GET => uploads::status::handle(ctx, name, id).await,
            Method::PATCH => uploads::append::handle(ctx, name, id, body).await,
            Method::PUT => uploads::finish::handle(ctx, name, id, body).await,
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

/// Rollouts: the runner's assignment poll and reports, channels and placement, the
/// rollouts themselves and their pages.
fn rollout_routes() -> Router<SharedState> {
    Router::new()
        .route(
            "/api/v1/customers/{id}/assignment",
            get(rollouts::assignment::show),
        )
        .route("/api/v1/customers/{id}/sync", post(rollouts::sync::create))
        .route(
            "/api/v1/customers/{id}/rollout",
            put(rollouts::placement::update),
        )
        .route(
            "/api/v1/release-receipts",
            post(rollouts::release_receipts::create),
        )
        .route("/api/v1/channels", get(rollouts::channels::list))
        .route("/api/v1/channels/{name}", put(rollouts::channels::update))
        .route("/api/v1/rollouts", get(rollouts::list::handle))
        .route("/api/v1/rollouts/{id}", get(rollouts::show::handle))
        .route(
            "/api/v1/rollouts/{id}/pause",
            post(rollouts::control::pause),
        )
        .route(
            "/api/v1/rollouts/{id}/resume",
            post(rollouts::control::resume),
        )
        .route(
            "/api/v1/rollouts/{id}/abort",
            post(rollouts::control::abort),
        )
        .route(
            "/api/v1/forecasts/{release}/{version}",
            put(forecasts::put::handle).get(forecasts::show::handle),
        )
        .route("/api/v1/forecast-targets", get(forecasts::targets::handle))
        .route("/ui/rollouts", get(ui::rollouts::list))
        .route("/ui/rollouts/{id}", get(ui::rollouts::show))
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
        .route(
            "/api/v1/releases/{name}",
            get(ledger::release_versions::list),
        )
        .route(
            "/api/v1/releases/{name}/fleet",
            get(ledger::release_fleet::handle),
        )
        .route(
            "/api/v1/releases/{name}/{version}",
            get(ledger::release_versions::show),
        )
        .route("/api/v1/stacks", get(ledger::stacks::handle))
        .route(
            "/api/v1/customers",
            get(ledger::customers::list).post(ledger::customers::create),
        )
        .route("/api/v1/customers/{id}", get(ledger::customers::show))
        .route(
            "/api/v1/customers/{id}/history",
            get(ledger::customers::history),
        )
        .route(
            "/api/v1/customers/{id}/keys",
            post(ledger::customers::add_key),
        )
        .route(
            "/api/v1/customers/{id}/keys/{key_id}",
            delete(ledger::customers::revoke_key),
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
        .route("/api/v1/fleet", get(ledger::fleet::handle))
        .route(
            "/api/v1/fleet/failed-syncs",
            get(ledger::fleet::failed_syncs_handle),
        )
        .route("/api/v1/adoption", get(ledger::adoption::handle))
        .route("/", get(ui::root))
        .route("/ui", get(ui::fleet::show))
        .route("/ui/", get(ui::fleet::show))
        .route("/ui/login", get(ui::login::show).post(ui::login::sign_in))
        .route("/ui/logout", get(ui::login::sign_out))
        .route("/ui/customers", get(ui::customers::index))
        .route("/ui/customers/{id}", get(ui::customer::show))
        .route("/ui/stacks", get(ui::stack::index))
        .route("/ui/stacks/{stack}", get(ui::stack::show))
        .route("/ui/releases", get(ui::customers::releases))
        .route(
            "/ui/customers/{id}/support-bundles/{n}",
            get(ui::support_bundle::download),
        )
        .route("/ui/stacks/{stack}/{version}", get(ui::stack_version::show))
        .route("/ui/releases/{name}/{version}", get(ui::release::show))
        .merge(rollout_routes())
        .fallback(|| async { Error::new(Code::NotFound, "no such path").into_response() })
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .with_state(state)
}
