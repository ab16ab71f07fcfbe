//! `GET /ui/customers/{id}/support-bundles/{n}`: a support bundle imported for the
//! customer (`stackpack-registry support-bundle import`), as the file it was; and
//! the line of the customer's page that links the newest.

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::html::{error_page, html, url, Markup};
use super::{failed, viewer};
use crate::db;
use crate::state::SharedState;

pub async fn download(
    State(state): State<SharedState>,
    headers: HeaderMap,
    Path((customer, id)): Path<(String, i64)>,
) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    match state
        .db
        .scan_any(|c| db::support_bundles::bytes(c, &customer, id))
    {
        Ok(Some(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/gzip".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"support-{customer}-{id}.tar.gz\""),
                ),
            ],
            bytes,
        )
            .into_response(),
        Ok(None) => error_page(
            StatusCode::NOT_FOUND,
            &format!("customer `{customer}` has no support bundle {id}"),
            true,
        ),
        Err(e) => failed(e),
    }
}

/// The customer page's line: the newest support bundle, or nothing.
pub fn link(state: &SharedState, customer: &str) -> Markup {
    match state
        .db
        .read_any(|c| db::support_bundles::latest(c, customer))
    {
        Ok(Some(b)) => html! {
            p id="support-bundle" {
                "Support bundle: "
                a href={ "/ui/customers/" (url(customer)) "/support-bundles/" (b.id) } { (b.id) }
                ", imported " (super::html::when(&b.imported_at)) ", " (b.size) " bytes"
            }
        },
        _ => html! {},
    }
}
