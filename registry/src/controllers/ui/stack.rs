//! `GET /ui/stacks` and `GET /ui/stacks/{stack}`: the index of stacks (search by
//! name), and one stack: its adoption drawn (customers per version over days, an
//! SVG made here), its versions with how many customers run each, and the
//! customers whose last attempt failed or who drifted, with their reasons.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::customers::search_text;
use super::fleet::{rows_table, stack_link, version_text_link};
use super::html::{badge, html, muted, page, respond, search_form, table, url, when, Markup, Tone};
use super::{failed, viewer};
use crate::controllers::ledger::adoption::{answer as adoption, Bucket};
use crate::controllers::ledger::fleet::{page as fleet_page, FleetQuery};
use crate::controllers::ledger::Paging;
use crate::db;
use crate::state::SharedState;

/// Silent after the fleet page's default of seven days.
const DEFAULT_SILENT_SECS: u64 = 7 * 86_400;

/// Customers listed as failed or drifted on a stack's page, at most.
const TROUBLE_ROWS: usize = 100;

pub async fn index(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let q = search_text(&uri);
    let lines = match state.db.support_any(|c| db::customers::stacks(c, &q)) {
        Ok(lines) => lines,
        Err(e) => return failed(e),
    };
    let rows: Vec<Vec<Markup>> = lines
        .iter()
        .map(|s| {
            let state = html! {
                @if s.failed > 0 { (badge(Tone::Bad, &format!("{} failed", s.failed))) }
                @if s.drifted > 0 { (badge(Tone::Bad, &format!("{} drifted", s.drifted))) }
                @if s.failed == 0 && s.drifted == 0 { (badge(Tone::Good, "ok")) }
            };
            vec![
                stack_link(&s.stack),
                s.latest
                    .as_deref()
                    .map_or_else(|| muted("none stable"), |v| version_text_link(&s.stack, v)),
                html! { (s.versions) },
                html! { (s.customers) },
                state,
            ]
        })
        .collect();
    let body = html! {
        h1 { "Stacks" }
        (search_form("/ui/stacks", "Stack name", &q))
        @if rows.is_empty() {
            p id="empty" { "No stack matches." }
        } @else {
            (table(
                &["Stack", "Latest stable", "Versions", "Customers", "State"],
                &rows,
                "stacks",
            ))
        }
    };
    respond(StatusCode::OK, page("Stacks", true, body))
}

pub async fn show(
    State(state): State<SharedState>,
    headers: HeaderMap,
    Path(stack): Path<String>,
) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let found = state.db.support_any(|c| {
        Ok((
            db::customers::versions(c, &stack)?,
            adoption(c, Some(&stack), Bucket::Day)?,
        ))
    });
    let (versions, drawn) = match found {
        Ok(found) => found,
        Err(e) => return failed(e),
    };
    if versions.is_empty() {
        // The API's and the CLI's words: the nearest stack and the stacks there are.
        let unknown = crate::controllers::ledger::known::unknown(
            &state,
            crate::controllers::ledger::known::Kind::Stack,
            &stack,
            true,
        );
        return super::html::error_page(StatusCode::NOT_FOUND, &unknown.message, true);
    }
    let trouble = |query: FleetQuery| {
        fleet_page(
            &state,
            &query,
            &Paging {
                after: None,
                limit: TROUBLE_ROWS,
            },
        )
        .map(|(rows, _)| rows)
    };
    let failing = trouble(FleetQuery {
        stack: Some(stack.clone()),
        failed: true,
        stale_after_secs: DEFAULT_SILENT_SECS,
        ..FleetQuery::default()
    });
    let drifting = trouble(FleetQuery {
        stack: Some(stack.clone()),
        drifted: true,
        stale_after_secs: DEFAULT_SILENT_SECS,
        ..FleetQuery::default()
    });
    let (failing, drifting) = match (failing, drifting) {
        (Ok(f), Ok(d)) => (f, d),
        (Err(e), _) | (_, Err(e)) => return failed(e),
    };

    let running: u64 = versions.iter().map(|v| v.customers).sum();
    let body = html! {
        h1 id="stack" { (stack) }
        p.summary id="summary" {
            (stackpack_terminal::words::count(running, "customer")) " run it · "
            (failing.len()) " failed · "
            (drifting.len()) " drifted · "
            (stackpack_terminal::words::count(versions.len() as u64, "version"))
        }
        h2 { "Adoption" }
        (crate::chart::adoption_markup(&drawn, time::OffsetDateTime::now_utc().date()))
        (versions_section(&stack, &versions))
        h2 { "Last attempt failed" }
        (section(&failing, "failing"))
        h2 { "Drifted" }
        (section(&drifting, "drifting"))
    };
    respond(StatusCode::OK, page(&stack, true, body))
}

/// A stack's versions, newest first, each with how many customers run it (a link
/// to them on the customers index).
fn versions_section(stack: &str, versions: &[db::customers::VersionLine]) -> Markup {
    let rows: Vec<Vec<Markup>> = versions
        .iter()
        .map(|v| {
            vec![
                version_text_link(stack, &v.version),
                if v.prerelease {
                    badge(Tone::Info, "prerelease")
                } else {
                    badge(Tone::Good, "stable")
                },
                v.published_at
                    .as_deref()
                    .map_or_else(|| muted("not published here"), when),
                html! { a href={ "/ui/customers?q=" (url(&v.version)) } { (v.customers) } },
            ]
        })
        .collect();
    html! {
        h2 { "Versions" }
        (table(&["Version", "Kind", "Published", "Customers"], &rows, "versions"))
    }
}

fn section(rows: &[crate::api::FleetRow], id: &str) -> Markup {
    html! {
        @if rows.is_empty() {
            p.muted id={ (id) "-none" } { "None." }
        } @else {
            (rows_table(rows, true, id))
        }
    }
}
