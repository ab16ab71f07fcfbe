//! `GET /ui`: the fleet matrix, customer × stack, with filters for stack,
//! environment, behind, drifted, prerelease, silent and failed, a page at a time.

use std::collections::{BTreeSet, HashMap};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use semver::Version;
use stackpack_schema::receipt::Outcome;

use super::html::{
    badge, html, muted, page, prose, respond, table, url, when, when_for, Markup, Tone,
};
use super::{failed, viewer};
use crate::api::FleetRow;
use crate::controllers::ledger::fleet::{page as fleet_page, FleetQuery};
use crate::controllers::ledger::Paging;
use crate::db;
use crate::state::SharedState;

/// Rows on one page.
pub const PAGE_ROWS: usize = 100;

const FLAGS: [(&str, &str); 5] = [
    ("behind", "Behind"),
    ("drifted", "Drifted"),
    ("prerelease", "Prerelease"),
    ("silent", "Silent"),
    ("failed", "Last attempt failed"),
];

/// The badges that say what is notable about a row, in words.
pub fn notes(row: &FleetRow) -> Markup {
    let latest = row
        .latest_stable
        .as_ref()
        .map_or_else(|| "?".to_string(), ToString::to_string);
    let last_failed = row
        .last_attempt
        .as_ref()
        .is_some_and(|a| a.outcome == Outcome::Failed);
    let noted = row.behind > 0
        || row.drifted
        || row.prerelease
        || last_failed
        || !row.registered
        || row.stale;
    html! {
        @if row.behind > 0 {
            (badge(Tone::Warn, &format!("behind {} (latest {latest})", row.behind)))
        }
        @if row.drifted { (badge(Tone::Bad, "drifted")) }
        @if row.prerelease { (badge(Tone::Info, "prerelease")) }
        @if last_failed { (badge(Tone::Bad, "last attempt failed")) }
        @if !row.registered {
            (badge(Tone::Warn, "not registered: known only from its receipts"))
        }
        @if row.stale {
            @match &row.last_seen {
                Some(seen) => { (badge(Tone::Warn, "silent")) " for " (when_for(seen.as_str())) }
                None => (badge(Tone::Warn, "never reported")),
            }
        }
        @if !noted && row.version.is_some() { (badge(Tone::Good, "up to date")) }
    }
}

/// A link to a customer's page.
pub fn customer_link(customer: &str) -> Markup {
    html! { a href={ "/ui/customers/" (url(customer)) } { (customer) } }
}

/// A stack's name, linking to its page.
pub fn stack_link(stack: &str) -> Markup {
    html! { a href={ "/ui/stacks/" (url(stack)) } { (stack) } }
}

/// A version, linked to its page.
pub fn version_link(stack: &str, version: &Version) -> Markup {
    version_text_link(stack, &version.to_string())
}

/// A version as written, linked to its page.
pub fn version_text_link(stack: &str, version: &str) -> Markup {
    html! { a href={ "/ui/stacks/" (url(stack)) "/" (url(version)) } { (version) } }
}

/// One matrix row as table cells.
fn cells(row: &FleetRow, with_customer: bool) -> Vec<Markup> {
    let dash = || muted("—");
    let mut cells = Vec::new();
    if with_customer {
        cells.push(customer_link(&row.customer));
        cells.push(
            row.environment
                .as_deref()
                .map_or_else(dash, |e| html! { (e) }),
        );
    }
    cells.push(row.stack.as_deref().map_or_else(dash, |s| html! { (s) }));
    cells.push(match (&row.stack, &row.version) {
        (Some(stack), Some(version)) => version_link(stack, version),
        _ => muted("nothing running"),
    });
    cells.push(match &row.last_attempt {
        Some(a) => {
            let tone = if a.outcome == Outcome::Failed {
                Tone::Bad
            } else {
                Tone::Good
            };
            html! {
                (a.kind.as_str()) " " (a.version.to_string()) " " (badge(tone, a.outcome.as_str()))
            }
        }
        None => dash(),
    });
    cells.push(
        row.last_attempt
            .as_ref()
            .map_or_else(dash, |a| when(a.finished_at.as_str())),
    );
    cells.push(notes(row));
    cells
}

/// Matrix rows as a table; `with_customer` adds the customer's columns.
pub fn rows_table(rows: &[FleetRow], with_customer: bool, id: &str) -> Markup {
    let customer: &[&str] = if with_customer {
        &["Customer", "Environment"]
    } else {
        &[]
    };
    let headers: Vec<&str> = customer
        .iter()
        .chain(&["Stack", "Version", "Last attempt", "When", "Notes"])
        .copied()
        .collect();
    let cells: Vec<Vec<Markup>> = rows.iter().map(|r| cells(r, with_customer)).collect();
    table(&headers, &cells, id)
}

fn query_map(uri: &Uri) -> HashMap<String, String> {
    axum::extract::Query::<HashMap<String, String>>::try_from_uri(uri)
        .map(|q| q.0)
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

fn select(name: &str, label: &str, options: &BTreeSet<String>, chosen: Option<&str>) -> Markup {
    html! {
        label {
            (label)
            select name=(name) id={ "filter-" (name) } {
                option value="" { "all" }
                @for option in options {
                    option value=(option) selected[chosen == Some(option.as_str())] { (option) }
                }
            }
        }
    }
}

fn filters_form(
    query: &HashMap<String, String>,
    stacks: &BTreeSet<String>,
    environments: &BTreeSet<String>,
) -> Markup {
    let stale = query.get("staleAfter").map_or("7d", String::as_str);
    html! {
        form.filters method="get" action="/ui" {
            (select("stack", "Stack", stacks, query.get("stack").map(String::as_str)))
            (select(
                "environment",
                "Environment",
                environments,
                query.get("environment").map(String::as_str),
            ))
            @for (name, label) in FLAGS {
                label.check {
                    input type="checkbox" name=(name) id={ "filter-" (name) } value="true"
                        checked[query.get(name).is_some_and(|v| v == "true")];
                    (label)
                }
            }
            label { "Silent after" input type="text" name="staleAfter" value=(stale) size="4"; }
            button type="submit" id="apply-filters" { "Filter" }
            " "
            a href="/ui" { "Clear" }
        }
    }
}

/// `path` with the query's filters (all but the cursor) and then `after`, if any,
/// each name and value percent-encoded.
fn href(path: &str, query: &HashMap<String, String>, after: Option<&str>) -> String {
    let mut pairs: Vec<(&String, &String)> = query.iter().filter(|(k, _)| *k != "after").collect();
    pairs.sort();
    let mut parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| [url(k), url(v)].join("="))
        .collect();
    if let Some(after) = after {
        parts.push(["after".to_string(), url(after)].join("="));
    }
    if parts.is_empty() {
        path.to_string()
    } else {
        [path, parts.join("&").as_str()].join("?")
    }
}

/// A link to the page of `path` after cursor `after`, keeping the filters.
pub fn next_link(path: &str, query: &HashMap<String, String>, after: &str) -> Markup {
    html! { a id="next" href=(href(path, query, Some(after))) { "Next page →" } }
}

/// A link back to the first page of `path`, keeping the filters.
pub fn first_link(path: &str, query: &HashMap<String, String>) -> Markup {
    html! { a id="first" href=(href(path, query, None)) { "← First page" } }
}

/// The pager of a page of rows: back to the first page when not on it, on to the
/// next when there is one; nothing on the only page.
pub fn pager(
    path: &str,
    query: &HashMap<String, String>,
    paged: bool,
    next: Option<&str>,
) -> Markup {
    html! {
        @if paged || next.is_some() {
            p.pager {
                @if paged { (first_link(path, query)) " " }
                @if let Some(next) = next { (next_link(path, query, next)) }
            }
        }
    }
}

/// The sync passes that failed before any plan (they left no row), on the first
/// page: one sentence per release, as `fleet --failed` says it. `None` when none.
fn failed_syncs_section(
    state: &crate::state::AppState,
    filters: &FleetQuery,
    first_page: bool,
) -> crate::error::Result<Option<Markup>> {
    if !first_page {
        return Ok(None);
    }
    let syncs =
        crate::controllers::ledger::fleet::failed_syncs(state, filters.customer.as_deref())?;
    if syncs.is_empty() {
        return Ok(None);
    }
    Ok(Some(html! {
        p.summary id="failed-syncs-count" {
            (stackpack_terminal::words::count(syncs.len() as u64, "sync pass")) " failed"
        }
        ul id="failed-syncs" {
            @for sync in &syncs { li { (prose(&sync.line())) } }
        }
    }))
}

pub async fn show(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let query = query_map(&uri);
    let filters = match FleetQuery::from_query(&query) {
        Ok(filters) => filters,
        Err(e) => return failed(e),
    };
    let paging = Paging {
        after: query.get("after").cloned(),
        limit: PAGE_ROWS,
    };
    let answer = fleet_page(&state, &filters, &paging).and_then(|(rows, next)| {
        let (stacks, environments) = state
            .db
            .support_any(|c| Ok((db::ledger::stack_names(c)?, db::ledger::environments(c)?)))?;
        Ok((rows, next, stacks, environments))
    });
    let (rows, next, stacks, environments) = match answer {
        Ok(answer) => answer,
        Err(e) => return failed(e),
    };
    let stacks: BTreeSet<String> = stacks
        .into_iter()
        .chain(rows.iter().filter_map(|r| r.stack.clone()))
        .collect();
    let environments: BTreeSet<String> = environments.into_iter().collect();

    let customers: BTreeSet<&str> = rows.iter().map(|r| r.customer.as_str()).collect();
    let count = |keep: fn(&FleetRow) -> bool| rows.iter().filter(|r| keep(r)).count();
    let syncs = match failed_syncs_section(&state, &filters, paging.after.is_none()) {
        Ok(section) => section,
        Err(e) => return failed(e),
    };
    let body = html! {
        h1 { "Fleet" }
        (filters_form(&query, &stacks, &environments))
        p.summary id="summary" {
            "On this page: "
            (stackpack_terminal::words::count(rows.len() as u64, "row")) " · "
            (stackpack_terminal::words::count(customers.len() as u64, "customer")) " · "
            (count(|r| r.behind > 0)) " behind · "
            (count(|r| r.drifted)) " drifted · "
            (count(|r| r.last_attempt.as_ref().is_some_and(|a| a.outcome == Outcome::Failed)))
            " failed · "
            (count(|r| r.stale)) " silent"
        }
        @if let Some(syncs) = &syncs { (syncs) }
        @if rows.is_empty() && syncs.is_none() {
            p id="empty" { "No customer matches these filters." }
        } @else if !rows.is_empty() {
            (rows_table(&rows, true, "fleet"))
        }
        (pager("/ui", &query, paging.after.is_some(), next.as_deref()))
    };
    respond(StatusCode::OK, page("Fleet", true, body))
}
