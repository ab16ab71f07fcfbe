//! `GET /api/v1/fleet`: the matrix customer × stack → version, the last attempt's
//! outcome and time, how far behind, drift, prerelease, environment, last seen. The
//! `fleet` command answers from it, over `--data` or `--url`.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use semver::Version;

use crate::api::FleetRow;
use crate::auth::Action;
use crate::controllers::ledger::{
    cell_cursor, paged, silent_before_ns, split_page, stale_after, Paging, MAX_LIMIT,
};
use crate::controllers::Ctx;
use crate::db;
use crate::error::Result;
use crate::state::{AppState, SharedState};

/// Which rows to keep; every filter given must hold.
#[derive(Clone, Debug, Default)]
pub struct FleetQuery {
    pub customer: Option<String>,
    pub environment: Option<String>,
    pub stack: Option<String>,
    pub behind: bool,
    pub prerelease: bool,
    pub drifted: bool,
    pub silent: bool,
    pub failed: bool,
    pub stale_after_secs: u64,
    /// Only rows running a version below this one, by semver precedence.
    pub below: Option<Version>,
    /// Only rows running exactly this version.
    pub version: Option<String>,
    /// Only rows running this bundle digest.
    pub digest: Option<String>,
    /// Only rows running a bundle that vendors this module.
    pub module: Option<String>,
    /// With `module`: only where the vendored module's version is below this one.
    pub module_below: Option<Version>,
}

impl FleetQuery {
    /// From a request's query string (`?customer=…&prerelease=true&staleAfter=7d`).
    pub fn from_query(query: &HashMap<String, String>) -> Result<FleetQuery> {
        let flag = |key: &str| query.get(key).is_some_and(|v| v == "true" || v == "1");
        if query.contains_key("moduleBelow") && !query.contains_key("module") {
            return Err(crate::error::Error::new(
                crate::error::Code::BadRequest,
                "`moduleBelow` needs `module`: which module's version to compare; try `module=network&moduleBelow=1.3.0`",
            ));
        }
        Ok(FleetQuery {
            customer: query.get("customer").cloned(),
            environment: query.get("environment").cloned(),
            stack: query.get("stack").cloned(),
            behind: flag("behind"),
            prerelease: flag("prerelease"),
            drifted: flag("drifted"),
            silent: flag("silent"),
            failed: flag("failed"),
            stale_after_secs: stale_after(query.get("staleAfter").map(String::as_str))?,
            below: query
                .get("below")
                .map(|v| parse_version("below", v))
                .transpose()?,
            version: query.get("version").cloned(),
            digest: query.get("digest").cloned(),
            module: query.get("module").cloned(),
            module_below: query
                .get("moduleBelow")
                .map(|v| parse_version("moduleBelow", v))
                .transpose()?,
        })
    }

    /// The filter in the database's terms: versions as precedence keys, the silence
    /// age as a time.
    fn filter(&self) -> db::fleet::Filter<'_> {
        db::fleet::Filter {
            customer: self.customer.as_deref(),
            environment: self.environment.as_deref(),
            stack: self.stack.as_deref(),
            behind: self.behind,
            prerelease: self.prerelease,
            drifted: self.drifted,
            failed: self.failed,
            silent_before_ns: self.silent.then(|| silent_before_ns(self.stale_after_secs)),
            version: self.version.as_deref(),
            digest: self.digest.as_deref(),
            below_key: self.below.as_ref().map(crate::version_key::of),
            module: self.module.as_deref(),
            module_below_key: self.module_below.as_ref().map(crate::version_key::of),
        }
    }
}

fn parse_version(what: &str, text: &str) -> Result<Version> {
    Version::parse(text).map_err(|e| {
        crate::error::Error::new(
            crate::error::Code::BadRequest,
            format!("`{what}` takes a version such as `2.0.0`, not `{text}`: {e}"),
        )
    })
}

/// One page of the fleet matrix, filtered by `query`, by customer then stack, with
/// the cursor of the next page when one may follow.
pub fn page(
    state: &AppState,
    query: &FleetQuery,
    paging: &Paging,
) -> Result<(Vec<FleetRow>, Option<String>)> {
    let after = paging.cell()?;
    let after = after.as_ref().map(|(c, s)| (c.as_str(), s.as_str()));
    let filter = query.filter();
    let stale_before = silent_before_ns(query.stale_after_secs);
    let rows = state.db.support_any(|c| {
        db::fleet::fleet_page(c, &filter, stale_before, after, paging.limit + 1)
    })?;
    Ok(split_page(rows, paging.limit, |r| {
        cell_cursor(&r.customer, r.stack.as_deref())
    }))
}

/// Whether [`each_page`] goes on to the next page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Go,
    Stop,
}

/// Every page of the fleet matrix, handed to `each` in order, `MAX_LIMIT` rows at a
/// time: the whole answer is never in memory at once.
pub fn each_page<E: From<crate::error::Error>>(
    state: &AppState,
    query: &FleetQuery,
    mut each: impl FnMut(Vec<FleetRow>) -> std::result::Result<Flow, E>,
) -> std::result::Result<(), E> {
    let mut paging = Paging {
        after: None,
        limit: MAX_LIMIT,
    };
    loop {
        let (rows, next) = page(state, query, &paging)?;
        if each(rows)? == Flow::Stop {
            return Ok(());
        }
        match next {
            Some(next) => paging.after = Some(next),
            None => return Ok(()),
        }
    }
}

/// Refuses a `customer` or `stack` the registry does not have (the question's
/// entry, from `--data` and on the API): a misspelt name is not an empty fleet.
pub fn check_names(state: &AppState, query: &FleetQuery, may_list: bool) -> Result<()> {
    use super::known::{check, Kind};
    check(
        state,
        &[
            (Kind::Customer, query.customer.as_deref()),
            (Kind::Stack, query.stack.as_deref()),
        ],
        may_list,
    )
}

/// The whole fleet matrix, filtered by `query`, by customer then stack. For small
/// answers (one customer's, one stack version's); lists page with [`page`].
pub fn matrix(state: &AppState, query: &FleetQuery) -> Result<Vec<FleetRow>> {
    let mut all = Vec::new();
    each_page(state, query, |rows| {
        all.extend(rows);
        Ok::<_, crate::error::Error>(Flow::Go)
    })?;
    Ok(all)
}

#[utoipa::path(get, path = "/api/v1/fleet",
    params(
        ("customer" = Option<String>, Query, description = "Only this customer (a customer token may ask only for its own)"),
        ("environment" = Option<String>, Query, description = "Only customers in this environment (`production`)"),
        ("stack" = Option<String>, Query, description = "Only this stack"),
        ("behind" = Option<bool>, Query, description = "Only rows behind the latest stable"),
        ("prerelease" = Option<bool>, Query, description = "Only rows running a prerelease"),
        ("drifted" = Option<bool>, Query, description = "Only drifted rows"),
        ("silent" = Option<bool>, Query, description = "Only customers silent for `staleAfter`"),
        ("failed" = Option<bool>, Query, description = "Only rows whose last attempt failed"),
        ("staleAfter" = Option<String>, Query, description = "Age after which a customer is silent: `7d` (default)"),
        ("below" = Option<String>, Query, description = "Only rows running a version below this one (`2.0.0`)"),
        ("version" = Option<String>, Query, description = "Only rows running exactly this version"),
        ("digest" = Option<String>, Query, description = "Only rows running this bundle digest"),
        ("module" = Option<String>, Query, description = "Only rows running a bundle that vendors this module (`network`)"),
        ("moduleBelow" = Option<String>, Query, description = "With `module`: only where the vendored module's version is below this one (`1.3.0`); a module without a recorded version does not count"),
        ("limit" = Option<usize>, Query, description = "Rows in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The cursor of the page to answer: the previous page's last row as `customer/stack` (the stack empty for a customer that never reported), as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "One page of the fleet matrix, customer × stack, by customer then stack; when another page may follow, `Link: </api/v1/fleet?…&after=customer/stack>; rel=\"next\"` says where", body = Vec<FleetRow>),
        (status = 400, description = "`staleAfter` is not an age, `below` or `moduleBelow` not a version, `limit` not a number from 1 to 2000, or `after` not a cursor"),
        (status = 404, description = "`customer` or `stack` names one the registry does not have: the message names the nearest and (to a support token) the ones there are"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn handle(State(state): State<SharedState>, ctx: Ctx, uri: Uri) -> Result<Response> {
    let query = FleetQuery::from_query(&ctx.query)?;
    match &query.customer {
        Some(id) => ctx.authorize(Action::CustomerRead(id))?,
        None => ctx.authorize(Action::LedgerRead)?,
    }
    check_names(&state, &query, ctx.authorize(Action::LedgerRead).is_ok())?;
    let rows = page(&state, &query, &Paging::from_query(&ctx.query)?)?;
    Ok(paged(&uri, rows))
}

/// Every release whose last sync pass failed (of one customer, with `customer`):
/// what `fleet --failed` shows beside the stacks whose last attempt failed, since a
/// pass that failed before any plan (pull, verification, inputs) left no receipt.
pub fn failed_syncs(
    state: &AppState,
    customer: Option<&str>,
) -> Result<Vec<crate::api::CustomerSync>> {
    let rows = state
        .db
        .read_any(|c| db::rollouts::failed_syncs(c, customer))?;
    Ok(rows.iter().map(|(id, row)| row.view(id)).collect())
}

#[utoipa::path(get, path = "/api/v1/fleet/failed-syncs",
    params(
        ("customer" = Option<String>, Query, description = "Only this customer (a customer token may ask only for its own)"),
    ),
    responses(
        (status = 200, description = "Each customer's releases whose last sync pass failed, by customer then release, with the runner's reason", body = Vec<crate::api::CustomerSync>),
        (status = 404, description = "`customer` names one the registry does not have: the message names the nearest and (to a support token) the ones there are"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn failed_syncs_handle(
    State(state): State<SharedState>,
    ctx: Ctx,
) -> Result<axum::Json<Vec<crate::api::CustomerSync>>> {
    let query = FleetQuery {
        customer: ctx.query.get("customer").cloned(),
        ..FleetQuery::default()
    };
    match &query.customer {
        Some(id) => ctx.authorize(Action::CustomerRead(id))?,
        None => ctx.authorize(Action::LedgerRead)?,
    }
    check_names(&state, &query, ctx.authorize(Action::LedgerRead).is_ok())?;
    Ok(axum::Json(failed_syncs(&state, query.customer.as_deref())?))
}
