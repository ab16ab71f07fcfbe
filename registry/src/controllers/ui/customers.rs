//! `GET /ui/customers` and `GET /ui/releases`: the indexes of customers and of
//! releases, each with a search (`?q=`): customers by id, name, account, a stack
//! they run or a version; releases by name or version.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::fleet::customer_link;
use super::html::{
    badge, html, mono, muted, page, respond, search_form, table, when, Markup, Tone,
};
use super::release::release_link;
use super::{failed, viewer};
use crate::db;
use crate::state::SharedState;

/// Silent after the fleet page's default of seven days without a receipt.
const SILENT_SECS: i64 = 7 * 86_400;

/// Customers listed at most; a search narrows the rest down.
pub const INDEX_ROWS: u64 = 200;

/// The `q` of a request, trimmed.
pub fn search_text(uri: &Uri) -> String {
    axum::extract::Query::<HashMap<String, String>>::try_from_uri(uri)
        .ok()
        .and_then(|q| q.0.get("q").cloned())
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A customer's standing on the index, in words.
fn standing(c: &db::customers::CustomerLine) -> Markup {
    let silent = c.last_seen.as_deref().is_some_and(|seen| {
        time::OffsetDateTime::parse(seen, &time::format_description::well_known::Rfc3339)
            .is_ok_and(|at| (time::OffsetDateTime::now_utc() - at).whole_seconds() > SILENT_SECS)
    });
    html! {
        @if c.failed > 0 { (badge(Tone::Bad, &format!("{} failed", c.failed))) }
        @if c.drifted > 0 { (badge(Tone::Bad, &format!("{} drifted", c.drifted))) }
        @if c.last_seen.is_none() {
            (badge(Tone::Warn, "never reported"))
        } @else if silent {
            (badge(Tone::Warn, "silent"))
        } @else if c.failed == 0 && c.drifted == 0 {
            (badge(Tone::Good, "ok"))
        }
    }
}

pub async fn index(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let q = search_text(&uri);
    let lines = match state
        .db
        .support_any(|c| db::customers::search(c, &q, INDEX_ROWS + 1))
    {
        Ok(lines) => lines,
        Err(e) => return failed(e),
    };
    let more = lines.len() as u64 > INDEX_ROWS;
    let dash = || muted("—");
    let text = |t: &str| html! { (t) };
    let rows: Vec<Vec<Markup>> = lines
        .iter()
        .take(INDEX_ROWS as usize)
        .map(|c| {
            vec![
                customer_link(&c.id),
                c.name.as_deref().map_or_else(dash, text),
                c.environment.as_deref().map_or_else(dash, text),
                c.account.as_deref().map_or_else(dash, mono),
                c.region.as_deref().map_or_else(dash, text),
                html! { (c.stacks) },
                c.last_seen.as_deref().map_or_else(dash, when),
                standing(c),
            ]
        })
        .collect();
    let n = rows.len();
    let counted = stackpack_terminal::words::count(n as u64, "customer");
    let body = html! {
        h1 { "Customers" }
        (search_form("/ui/customers", "Customer id, name, account, stack or version", &q))
        p.summary id="summary" {
            (counted)
            @if !q.is_empty() {
                " " (if n == 1 { "matches" } else { "match" }) " “" (q) "”"
            }
            @if more { " (the first " (INDEX_ROWS) "; search to narrow down)" }
        }
        @if rows.is_empty() {
            p id="empty" { "No customer matches." }
        } @else {
            (table(
                &[
                    "Customer",
                    "Name",
                    "Environment",
                    "Account",
                    "Region",
                    "Stacks",
                    "Last seen",
                    "State",
                ],
                &rows,
                "customers",
            ))
        }
    };
    respond(StatusCode::OK, page("Customers", true, body))
}

/// `GET /ui/releases`: every release version recorded, newest first per release.
pub async fn releases(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let q = search_text(&uri);
    let versions = match state
        .db
        .support_any(|c| db::release_index::versions(c, None))
    {
        Ok(versions) => versions,
        Err(e) => return failed(e),
    };
    let needle = q.to_lowercase();
    let rows: Vec<Vec<Markup>> = versions
        .iter()
        .filter(|v| {
            needle.is_empty()
                || v.name.to_lowercase().contains(&needle)
                || v.version.to_string() == q
        })
        .map(|v| {
            vec![
                release_link(&v.name, &v.version),
                if v.prerelease {
                    badge(Tone::Info, "prerelease")
                } else {
                    badge(Tone::Good, "stable")
                },
                html! { span.mono title=(v.digest.to_string()) { (v.digest.short()) } },
                when(v.published_at.as_str()),
            ]
        })
        .collect();
    let body = html! {
        h1 { "Releases" }
        (search_form("/ui/releases", "Release name or version", &q))
        @if rows.is_empty() && versions.is_empty() {
            p id="empty" {
                "No release recorded yet: releases appear once "
                code { "stackpack publish" } " pushes one."
            }
        } @else if rows.is_empty() {
            p id="empty" { "No release matches." }
        } @else {
            (table(&["Release", "Kind", "Index", "Published"], &rows, "releases"))
        }
    };
    respond(StatusCode::OK, page("Releases", true, body))
}
