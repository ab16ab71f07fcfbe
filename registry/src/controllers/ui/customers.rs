//! `GET /ui/customers` and `GET /ui/releases`: the indexes of customers and of
//! releases, each with a search (`?q=`): customers by id, name, account, a stack
//! they run or a version; releases by name or version.

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::html::{badge, esc, page, respond, search_form, table, url, when, Tone};
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
fn standing(c: &db::customers::CustomerLine) -> String {
    let mut out = String::new();
    if c.failed > 0 {
        out.push_str(&badge(Tone::Bad, &format!("{} failed", c.failed)));
    }
    if c.drifted > 0 {
        out.push_str(&badge(Tone::Bad, &format!("{} drifted", c.drifted)));
    }
    let silent = c.last_seen.as_deref().is_some_and(|seen| {
        time::OffsetDateTime::parse(seen, &time::format_description::well_known::Rfc3339)
            .is_ok_and(|at| (time::OffsetDateTime::now_utc() - at).whole_seconds() > SILENT_SECS)
    });
    if c.last_seen.is_none() {
        out.push_str(&badge(Tone::Warn, "never reported"));
    } else if silent {
        out.push_str(&badge(Tone::Warn, "silent"));
    } else if out.is_empty() {
        out.push_str(&badge(Tone::Good, "ok"));
    }
    out
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
    let dash = || "<span class=\"muted\">—</span>".to_string();
    let rows: Vec<Vec<String>> = lines
        .iter()
        .take(INDEX_ROWS as usize)
        .map(|c| {
            vec![
                format!(
                    "<a href=\"/ui/customers/{}\">{}</a>",
                    url(&c.id),
                    esc(&c.id)
                ),
                c.name.as_deref().map(esc).unwrap_or_else(dash),
                c.environment.as_deref().map(esc).unwrap_or_else(dash),
                c.account
                    .as_deref()
                    .map(|a| format!("<span class=\"mono\">{}</span>", esc(a)))
                    .unwrap_or_else(dash),
                c.region.as_deref().map(esc).unwrap_or_else(dash),
                c.stacks.to_string(),
                c.last_seen.as_deref().map(when).unwrap_or_else(dash),
                standing(c),
            ]
        })
        .collect();
    let mut body = String::from("<h1>Customers</h1>");
    body.push_str(&search_form(
        "/ui/customers",
        "Customer id, name, account, stack or version",
        &q,
    ));
    let _ = write!(
        body,
        "<p class=\"summary\" id=\"summary\">{}{}</p>",
        match (q.is_empty(), rows.len()) {
            (true, n) => stackpack_terminal::words::count(n as u64, "customer"),
            (false, n) => format!(
                "{} {} “{}”",
                stackpack_terminal::words::count(n as u64, "customer"),
                if n == 1 { "matches" } else { "match" },
                esc(&q)
            ),
        },
        if more {
            format!(" (the first {INDEX_ROWS}; search to narrow down)")
        } else {
            String::new()
        }
    );
    if rows.is_empty() {
        body.push_str("<p id=\"empty\">No customer matches.</p>");
    } else {
        body.push_str(&table(
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
        ));
    }
    respond(StatusCode::OK, page("Customers", true, &body))
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
    let rows: Vec<Vec<String>> = versions
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
                format!(
                    "<span class=\"mono\" title=\"{}\">{}</span>",
                    esc(&v.digest.to_string()),
                    esc(&v.digest.short())
                ),
                when(v.published_at.as_str()),
            ]
        })
        .collect();
    let mut body = String::from("<h1>Releases</h1>");
    body.push_str(&search_form("/ui/releases", "Release name or version", &q));
    if rows.is_empty() {
        body.push_str(if versions.is_empty() {
            "<p id=\"empty\">No release recorded yet: releases appear once <code>stackpack publish</code> pushes one.</p>"
        } else {
            "<p id=\"empty\">No release matches.</p>"
        });
    } else {
        body.push_str(&table(
            &["Release", "Kind", "Index", "Published"],
            &rows,
            "releases",
        ));
    }
    respond(StatusCode::OK, page("Releases", true, &body))
}
