//! Support's questions: which version each customer runs, who is behind the latest
//! stable, who runs a prerelease, who drifted. Each answer is a page (`limit`,
//! `after`), with a `Link` to the next.

use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;

use crate::api::Running;
use crate::auth::Action;
use crate::controllers::ledger::{paged, running_page, Paging};
use crate::controllers::Ctx;
use crate::db::fleet::RunningList;
use crate::error::Result;
use crate::state::SharedState;

/// One page of `list`, for a caller who may read the ledger.
fn answer(state: &SharedState, ctx: &Ctx, uri: &Uri, list: RunningList) -> Result<Response> {
    ctx.authorize(Action::LedgerRead)?;
    let rows = running_page(state, list, None, &Paging::from_query(&ctx.query)?)?;
    Ok(paged(uri, rows))
}

#[utoipa::path(get, path = "/api/v1/support/versions",
    params(
        ("limit" = Option<usize>, Query, description = "Rows in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The previous page's last row as `customer/stack`, as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "What every customer runs of every stack, by customer then stack, a page at a time (`Link` to the next)", body = Vec<Running>),
        (status = 400, description = "`limit` or `after` malformed"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn versions(State(state): State<SharedState>, ctx: Ctx, uri: Uri) -> Result<Response> {
    answer(&state, &ctx, &uri, RunningList::Everything)
}

#[utoipa::path(get, path = "/api/v1/support/behind",
    params(
        ("limit" = Option<usize>, Query, description = "Rows in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The previous page's last row as `customer/stack`, as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "Customers running a version below the stack's latest stable, a page at a time", body = Vec<Running>),
        (status = 400, description = "`limit` or `after` malformed"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn behind(State(state): State<SharedState>, ctx: Ctx, uri: Uri) -> Result<Response> {
    answer(&state, &ctx, &uri, RunningList::Behind)
}

#[utoipa::path(get, path = "/api/v1/support/prerelease",
    params(
        ("limit" = Option<usize>, Query, description = "Rows in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The previous page's last row as `customer/stack`, as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "Customers running a prerelease, a page at a time", body = Vec<Running>),
        (status = 400, description = "`limit` or `after` malformed"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn prerelease(State(state): State<SharedState>, ctx: Ctx, uri: Uri) -> Result<Response> {
    answer(&state, &ctx, &uri, RunningList::Prerelease)
}

#[utoipa::path(get, path = "/api/v1/support/drifted",
    params(
        ("limit" = Option<usize>, Query, description = "Rows in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The previous page's last row as `customer/stack`, as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "Customers whose last drift check found drift, a page at a time", body = Vec<Running>),
        (status = 400, description = "`limit` or `after` malformed"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn drifted(State(state): State<SharedState>, ctx: Ctx, uri: Uri) -> Result<Response> {
    answer(&state, &ctx, &uri, RunningList::Drifted)
}
