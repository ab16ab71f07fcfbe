//! `GET /ui/stacks` and `GET /ui/stacks/{stack}`: the index of stacks (search by
//! name), and one stack: its adoption drawn (customers per version over days, an
//! SVG made here), its versions with how many customers run each, and the
//! customers whose last attempt failed or who drifted, with their reasons.

use std::fmt::Write as _;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::customers::search_text;
use super::fleet::rows_table;
use super::html::{badge, esc, page, respond, search_form, table, url, when, Tone};
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
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|s| {
            let mut state = String::new();
            if s.failed > 0 {
                state.push_str(&badge(Tone::Bad, &format!("{} failed", s.failed)));
            }
            if s.drifted > 0 {
                state.push_str(&badge(Tone::Bad, &format!("{} drifted", s.drifted)));
            }
            if state.is_empty() {
                state = badge(Tone::Good, "ok");
            }
            vec![
                format!(
                    "<a href=\"/ui/stacks/{}\">{}</a>",
                    url(&s.stack),
                    esc(&s.stack)
                ),
                s.latest
                    .as_deref()
                    .map(|v| {
                        format!(
                            "<a href=\"/ui/stacks/{}/{}\">{}</a>",
                            url(&s.stack),
                            url(v),
                            esc(v)
                        )
                    })
                    .unwrap_or_else(|| "<span class=\"muted\">none stable</span>".into()),
                s.versions.to_string(),
                s.customers.to_string(),
                state,
            ]
        })
        .collect();
    let mut body = String::from("<h1>Stacks</h1>");
    body.push_str(&search_form("/ui/stacks", "Stack name", &q));
    if rows.is_empty() {
        body.push_str("<p id=\"empty\">No stack matches.</p>");
    } else {
        body.push_str(&table(
            &["Stack", "Latest stable", "Versions", "Customers", "State"],
            &rows,
            "stacks",
        ));
    }
    respond(StatusCode::OK, page("Stacks", true, &body))
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

    let mut body = format!("<h1 id=\"stack\">{}</h1>", esc(&stack));
    let running: u64 = versions.iter().map(|v| v.customers).sum();
    let _ = write!(
        body,
        "<p class=\"summary\" id=\"summary\">{} run it · {} failed · {} drifted · {}</p>",
        stackpack_terminal::words::count(running, "customer"),
        failing.len(),
        drifting.len(),
        stackpack_terminal::words::count(versions.len() as u64, "version")
    );
    body.push_str("<h2>Adoption</h2>");
    body.push_str(&crate::chart::adoption_svg(
        &drawn,
        time::OffsetDateTime::now_utc().date(),
    ));
    body.push_str(&versions_section(&stack, &versions));
    body.push_str("<h2>Last attempt failed</h2>");
    section(&mut body, &failing, "failing");
    body.push_str("<h2>Drifted</h2>");
    section(&mut body, &drifting, "drifting");
    respond(StatusCode::OK, page(&stack, true, &body))
}

/// A stack's versions, newest first, each with how many customers run it (a link
/// to them on the customers index).
fn versions_section(stack: &str, versions: &[db::customers::VersionLine]) -> String {
    let mut body = String::new();
    let rows: Vec<Vec<String>> = versions
        .iter()
        .map(|v| {
            vec![
                format!(
                    "<a href=\"/ui/stacks/{}/{}\">{}</a>",
                    url(stack),
                    url(&v.version),
                    esc(&v.version)
                ),
                if v.prerelease {
                    badge(Tone::Info, "prerelease")
                } else {
                    badge(Tone::Good, "stable")
                },
                v.published_at
                    .as_deref()
                    .map(when)
                    .unwrap_or_else(|| "<span class=\"muted\">not published here</span>".into()),
                format!(
                    "<a href=\"/ui/customers?q={}\">{}</a>",
                    url(&v.version),
                    v.customers
                ),
            ]
        })
        .collect();
    body.push_str("<h2>Versions</h2>");
    body.push_str(&table(
        &["Version", "Kind", "Published", "Customers"],
        &rows,
        "versions",
    ));
    body
}

fn section(body: &mut String, rows: &[crate::api::FleetRow], id: &str) {
    if rows.is_empty() {
        let _ = write!(body, "<p class=\"muted\" id=\"{id}-none\">None.</p>");
    } else {
        body.push_str(&rows_table(rows, true, id));
    }
}
