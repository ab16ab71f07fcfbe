//! `GET /api/v1/releases/{name}/fleet`: per customer, the release version it runs
//! and the stacks that deviate from it. The `fleet --release` command and the
//! support pages answer from the same functions.
//!
//! A customer runs the version its most recent deployment carrying the release was
//! part of. A stack of that version is *mixed* when the bundle in place is not the
//! one the version pins: applied on its own, left at another version of the
//! release, or not deployed at all. Bundles are compared, not the release version
//! each receipt names, because a runner does not re-apply a stack whose bundle the
//! new release did not change: that stack's receipt still names the older version,
//! yet it runs exactly what the new one pins.

use crate::db::sql::Sql;
use std::collections::{BTreeSet, HashMap};

use axum::extract::{Path, State};
use axum::Json;

use crate::api::{CustomerRelease, MixedReason, MixedStack, ReleaseFleetRow, ReleaseStackPart};
use crate::auth::Action;
use crate::controllers::Ctx;
use crate::db;
use crate::db::release_index::Cell;
use crate::error::Result;
use crate::state::{AppState, SharedState};

/// Which customers to answer for.
#[derive(Clone, Debug, Default)]
pub struct ReleaseFleetQuery {
    pub customer: Option<String>,
    pub environment: Option<String>,
}

/// Refuses a release or `customer` the registry does not have (the question's
/// entry, from `--data` and on the API): a misspelt name is not an empty fleet.
pub fn check_names(
    state: &AppState,
    name: &str,
    query: &ReleaseFleetQuery,
    may_list: bool,
) -> Result<()> {
    use super::known::{check, Kind};
    check(
        state,
        &[
            (Kind::Release, Some(name)),
            (Kind::Customer, query.customer.as_deref()),
        ],
        may_list,
    )
}

/// Per customer that ever deployed release `name`, the version it runs now and its
/// mixed stacks, by customer. A customer whose every stack of the release has since
/// been applied on its own runs no version of it and is left out.
pub fn rows(
    state: &AppState,
    name: &str,
    query: &ReleaseFleetQuery,
) -> Result<Vec<ReleaseFleetRow>> {
    state.db.support_any(|c| {
        let mut rows = Vec::new();
        for customer in db::release_index::customers_of(c, name)? {
            if query
                .customer
                .as_ref()
                .is_some_and(|only| *only != customer)
            {
                continue;
            }
            rows.extend(customer_releases(c, &customer, Some(name))?);
        }
        rows.retain(|r| {
            query.environment.is_none() || r.environment.as_deref() == query.environment.as_deref()
        });
        Ok(rows)
    })
}

/// The releases one customer runs (or only `only`), by name.
pub fn customer_releases<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    only: Option<&str>,
) -> Result<Vec<ReleaseFleetRow>, C::Error> {
    let cells = db::release_index::cells(conn, customer)?;
    let names: BTreeSet<&str> = cells
        .iter()
        .filter(|c| c.version.is_some())
        .filter_map(|c| c.release.as_ref().map(|r| r.name.as_str()))
        .filter(|name| only.is_none_or(|only| only == *name))
        .collect();
    let mut pinned: HashMap<(String, String), Option<Vec<ReleaseStackPart>>> = HashMap::new();
    let mut rows = Vec::new();
    for name in names {
        let Some(latest) = cells
            .iter()
            .filter(|c| c.version.is_some())
            .filter_map(|c| Some((c.release.as_ref()?, c.finished_ns)))
            .filter(|(r, _)| r.name == name)
            .max_by_key(|(_, finished_ns)| *finished_ns)
            .map(|(r, _)| r.clone())
        else {
            continue;
        };
        let key = (name.to_string(), latest.version.to_string());
        if !pinned.contains_key(&key) {
            let recorded = db::release_index::version(conn, &key.0, &key.1)?.is_some();
            let stacks = if recorded {
                Some(db::release_index::stacks(conn, &key.0, &key.1)?)
            } else {
                None
            };
            pinned.insert(key.clone(), stacks);
        }
        let stacks = pinned[&key].as_deref();
        rows.push(ReleaseFleetRow {
            customer: customer.to_string(),
            environment: cells.first().and_then(|c| c.environment.clone()),
            release: name.to_string(),
            mixed: mixed(name, &latest.version, &cells, stacks),
            recorded: stacks.is_some(),
            version: latest.version,
            digest: latest.digest,
        });
    }
    Ok(rows)
}

/// The releases one customer runs, each with the stacks and services its version
/// pins (none when the version is not recorded here): the customer's snapshot.
pub fn customer_snapshot<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Vec<CustomerRelease>, C::Error> {
    customer_releases(conn, customer, None)?
        .into_iter()
        .map(|standing| {
            let (name, version) = (&standing.release, standing.version.to_string());
            let (stacks, services) = if standing.recorded {
                (
                    db::release_index::stacks(conn, name, &version)?,
                    db::release_index::services(conn, name, &version)?,
                )
            } else {
                (Vec::new(), Vec::new())
            };
            Ok(CustomerRelease {
                standing,
                stacks,
                services,
            })
        })
        .collect()
}

/// The stacks of release `name` at `version` that run something other than what it
/// pins (`pinned`, when recorded); unrecorded, only the stacks deployed as part of
/// another version of the release can be told.
fn mixed(
    name: &str,
    version: &semver::Version,
    cells: &[Cell],
    pinned: Option<&[ReleaseStackPart]>,
) -> Vec<MixedStack> {
    let of_release = |cell: &Cell| {
        cell.release
            .as_ref()
            .filter(|r| r.name == name)
            .map(|r| r.version.clone())
    };
    let Some(pinned) = pinned else {
        return cells
            .iter()
            .filter(|c| c.version.is_some())
            .filter(|c| of_release(c).is_some_and(|v| v != *version))
            .map(|c| MixedStack {
                stack: c.stack.clone(),
                expected: None,
                running: c.version.clone(),
                digest: c.digest.clone(),
                deployed_with: of_release(c),
                reason: MixedReason::OtherReleaseVersion,
            })
            .collect();
    };
    pinned
        .iter()
        .filter_map(|part| {
            let cell = cells
                .iter()
                .find(|c| c.stack == part.stack && c.version.is_some());
            let reason = match cell {
                None => MixedReason::NotDeployed,
                Some(c) if c.digest.as_ref() == Some(&part.digest) => return None,
                Some(c) if of_release(c).is_some() => MixedReason::OtherReleaseVersion,
                Some(_) => MixedReason::AppliedOnItsOwn,
            };
            Some(MixedStack {
                stack: part.stack.clone(),
                expected: Some(part.version.clone()),
                running: cell.and_then(|c| c.version.clone()),
                digest: cell.and_then(|c| c.digest.clone()),
                deployed_with: cell.and_then(of_release),
                reason,
            })
        })
        .collect()
}

#[utoipa::path(get, path = "/api/v1/releases/{name}/fleet",
    params(
        ("name" = String, Path, description = "The release (`data-plane`): a customer environment as one version, not a stack"),
        ("customer" = Option<String>, Query, description = "Only this customer (a customer token may ask only for its own)"),
        ("environment" = Option<String>, Query, description = "Only customers in this environment (`production`)"),
    ),
    responses(
        (status = 200, description = "Per customer that deployed the release, by customer: the release version its latest deployments carry, and each stack of that version whose bundle in place is not the one the version pins (`mixed`)", body = Vec<ReleaseFleetRow>),
        (status = 404, description = "The release, or `customer`, is not one the registry has: the message names the nearest and (to a support token) the ones there are"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn handle(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path(name): Path<String>,
) -> Result<Json<Vec<ReleaseFleetRow>>> {
    let query = ReleaseFleetQuery {
        customer: ctx.query("customer").map(str::to_string),
        environment: ctx.query("environment").map(str::to_string),
    };
    match &query.customer {
        Some(id) => ctx.authorize(Action::CustomerRead(id))?,
        None => ctx.authorize(Action::LedgerRead)?,
    }
    check_names(
        &state,
        &name,
        &query,
        ctx.authorize(Action::LedgerRead).is_ok(),
    )?;
    rows(&state, &name, &query).map(Json)
}
