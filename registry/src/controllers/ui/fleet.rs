//! `GET /ui`: the fleet matrix, customer × stack, with filters for stack,
//! environment, behind, drifted, prerelease, silent and failed, a page at a time.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use semver::Version;
use stackpack_schema::receipt::Outcome;

use super::html::{badge, esc, page, respond, table, url, Tone};
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
pub fn notes(row: &FleetRow) -> String {
    let mut out = String::new();
    if row.behind > 0 {
        let latest = row
            .latest_stable
            .as_ref()
            .map_or_else(|| "?".to_string(), ToString::to_string);
        out.push_str(&badge(
            Tone::Warn,
            &format!("behind {} (latest {latest})", row.behind),
        ));
    }
    if row.drifted {
        out.push_str(&badge(Tone::Bad, "drifted"));
    }
    if row.prerelease {
        out.push_str(&badge(Tone::Info, "prerelease"));
    }
    if row
        .last_attempt
        .as_ref()
        .is_some_and(|a| a.outcome == Outcome::Failed)
    {
        out.push_str(&badge(Tone::Bad, "last attempt failed"));
    }
    if !row.registered {
        out.push_str(&badge(
            Tone::Warn,
            "not registered: known only from its receipts",
        ));
    }
    if row.stale {
        match &row.last_seen {
            Some(seen) => {
                let _ = write!(
                    out,
                    "{} for {}",
                    badge(Tone::Warn, "silent"),
                    super::html::when_for(seen.as_str())
                );
            }
            None => out.push_str(&badge(Tone::Warn, "never reported")),
        }
    }
    if out.is_empty() && row.version.is_some() {
        out.push_str(&badge(Tone::Good, "up to date"));
    }
    out
}

/// A version, linked to its page.
/// A stack's name, linking to its page.
pub fn stack_link(stack: &str) -> String {
    format!("<a href=\"/ui/stacks/{}\">{}</a>", url(stack), esc(stack))
}

pub fn version_link(stack: &str, version: &Version) -> String {
    let version = version.to_string();
    format!(
        "<a href=\"/ui/stacks/{}/{}\">{}</a>",
        url(stack),
        url(&version),
        esc(&version)
    )
}

/// One matrix row as table cells.
fn cells(row: &FleetRow, with_customer: bool) -> Vec<String> {
    let dash = || "<span class=\"muted\">—</span>".to_string();
    let mut cells = Vec::new();
    if with_customer {
        cells.push(format!(
            "<a href=\"/ui/customers/{}\">{}</a>",
            url(&row.customer),
            esc(&row.customer)
        ));
        cells.push(row.environment.as_deref().map(esc).unwrap_or_else(dash));
    }
    cells.push(row.stack.as_deref().map(esc).unwrap_or_else(dash));
    cells.push(match (&row.stack, &row.version) {
        (Some(stack), Some(version)) => version_link(stack, version),
        _ => "<span class=\"muted\">nothing running</span>".to_string(),
    });
    cells.push(match &row.last_attempt {
        Some(a) => {
            let tone = if a.outcome == Outcome::Failed {
                Tone::Bad
            } else {
                Tone::Good
            };
            format!(
                "{} {} {}",
                esc(a.kind.as_str()),
                esc(&a.version.to_string()),
                badge(tone, a.outcome.as_str())
            )
        }
        None => dash(),
    });
    cells.push(
        row.last_attempt
            .as_ref()
            .map(|a| super::html::when(a.finished_at.as_str()))
            .unwrap_or_else(dash),
    );
    cells.push(notes(row));
    cells
}

/// Matrix rows as a table; `with_customer` adds the customer's columns.
pub fn rows_table(rows: &[FleetRow], with_customer: bool, id: &str) -> String {
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
    let cells: Vec<Vec<String>> = rows.iter().map(|r| cells(r, with_customer)).collect();
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

fn select(name: &str, label: &str, options: &BTreeSet<String>, chosen: Option<&str>) -> String {
    let mut out = format!(
        "<label>{label}<select name=\"{name}\" id=\"filter-{name}\"><option value=\"\">all</option>"
    );
    for option in options {
        let selected = if chosen == Some(option.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<option value=\"{0}\"{selected}>{0}</option>",
            esc(option)
        );
    }
    out.push_str("</select></label>");
    out
}

fn filters_form(
    query: &HashMap<String, String>,
    stacks: &BTreeSet<String>,
    environments: &BTreeSet<String>,
) -> String {
    let mut out = String::from("<form class=\"filters\" method=\"get\" action=\"/ui\">");
    out.push_str(&select(
        "stack",
        "Stack",
        stacks,
        query.get("stack").map(String::as_str),
    ));
    out.push_str(&select(
        "environment",
        "Environment",
        environments,
        query.get("environment").map(String::as_str),
    ));
    for (name, label) in FLAGS {
        let checked = if query.get(name).is_some_and(|v| v == "true") {
            " checked"
        } else {
            ""
        };
        let _ = write!(
            out,
            "<label class=\"check\"><input type=\"checkbox\" name=\"{name}\" id=\"filter-{name}\" value=\"true\"{checked}>{label}</label>"
        );
    }
    let stale = query.get("staleAfter").map_or("7d", String::as_str);
    let _ = write!(
        out,
        "<label>Silent after<input type=\"text\" name=\"staleAfter\" value=\"{}\" size=\"4\"></label>\
         <button type=\"submit\" id=\"apply-filters\">Filter</button> <a href=\"/ui\">Clear</a></form>",
        esc(stale)
    );
    out
}

/// A link to the page of `path` after cursor `after`, keeping the filters.
pub fn next_link(path: &str, query: &HashMap<String, String>, after: &str) -> String {
    let mut pairs: Vec<(&String, &String)> = query.iter().filter(|(k, _)| *k != "after").collect();
    pairs.sort();
    let mut href = format!("{path}?");
    for (k, v) in pairs {
        let _ = write!(href, "{}={}&", url(k), url(v));
    }
    let _ = write!(href, "after={}", url(after));
    format!("<a id=\"next\" href=\"{}\">Next page →</a>", esc(&href))
}

/// A link back to the first page of `path`, keeping the filters.
pub fn first_link(path: &str, query: &HashMap<String, String>) -> String {
    let mut pairs: Vec<(&String, &String)> = query.iter().filter(|(k, _)| *k != "after").collect();
    pairs.sort();
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", url(k), url(v)))
        .collect();
    let href = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", query.join("&"))
    };
    format!("<a id=\"first\" href=\"{}\">← First page</a>", esc(&href))
}

/// The sync passes that failed before any plan (they left no row), on the first
/// page: one sentence per release, as `fleet --failed` says it. Empty when none.
fn failed_syncs_section(
    state: &crate::state::AppState,
    filters: &FleetQuery,
    first_page: bool,
) -> crate::error::Result<String> {
    if !first_page {
        return Ok(String::new());
    }
    let syncs =
        crate::controllers::ledger::fleet::failed_syncs(state, filters.customer.as_deref())?;
    if syncs.is_empty() {
        return Ok(String::new());
    }
    let mut out = format!(
        "<p class=\"summary\" id=\"failed-syncs-count\">{} failed</p><ul id=\"failed-syncs\">",
        stackpack_terminal::words::count(syncs.len() as u64, "sync pass")
    );
    for sync in &syncs {
        let _ = write!(out, "<li>{}</li>", super::html::prose(&sync.line()));
    }
    out.push_str("</ul>");
    Ok(out)
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
    let mut body = String::from("<h1>Fleet</h1>");
    body.push_str(&filters_form(&query, &stacks, &environments));
    let _ = write!(
        body,
        "<p class=\"summary\" id=\"summary\">On this page: {} · {} · {} behind · {} drifted · {} failed · {} silent</p>",
        stackpack_terminal::words::count(rows.len() as u64, "row"),
        stackpack_terminal::words::count(customers.len() as u64, "customer"),
        count(|r| r.behind > 0),
        count(|r| r.drifted),
        count(|r| r.last_attempt.as_ref().is_some_and(|a| a.outcome == Outcome::Failed)),
        count(|r| r.stale),
    );
    let syncs = match failed_syncs_section(&state, &filters, paging.after.is_none()) {
        Ok(section) => section,
        Err(e) => return failed(e),
    };
    body.push_str(&syncs);
    if rows.is_empty() && syncs.is_empty() {
        body.push_str("<p id=\"empty\">No customer matches these filters.</p>");
    } else if !rows.is_empty() {
        body.push_str(&rows_table(&rows, true, "fleet"));
    }
    if paging.after.is_some() || next.is_some() {
        body.push_str("<p class=\"pager\">");
        if paging.after.is_some() {
            body.push_str(&first_link("/ui", &query));
            body.push(' ');
        }
        if let Some(next) = &next {
            body.push_str(&next_link("/ui", &query, next));
        }
        body.push_str("</p>");
    }
    respond(StatusCode::OK, page("Fleet", true, &body))
}
