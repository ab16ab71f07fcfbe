//! `GET /api/v1/releases/{name}` (the versions of a release recorded here) and
//! `GET /api/v1/releases/{name}/{version}` (one version's snapshot: its stacks and
//! services pinned by digest, and who runs it). A release is a customer's whole
//! environment as one version; `GET /api/v1/releases?stack=` is older and lists
//! single stack versions (bundles).

use axum::extract::{Path, State};
use axum::Json;

use crate::api::{ReleaseSnapshot, ReleaseVersion};
use crate::auth::Action;
use crate::controllers::ledger::release_fleet::{rows, ReleaseFleetQuery};
use crate::controllers::Ctx;
use crate::db;
use crate::error::{Code, Error, Result};
use crate::state::{AppState, SharedState};

#[utoipa::path(get, path = "/api/v1/releases/{name}",
    params(("name" = String, Path, description = "The release (`data-plane`)")),
    responses(
        (status = 200, description = "The release's recorded versions, newest first by semver precedence (empty when none was pushed here)", body = Vec<ReleaseVersion>),
    ),
    security(("bearer" = [])), tag = "ledger")]
pub async fn list(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path(name): Path<String>,
) -> Result<Json<Vec<ReleaseVersion>>> {
    ctx.authorize(Action::LedgerRead)?;
    state
        .db
        .scan_any(|c| db::release_index::versions(c, Some(&name)))
        .map(Json)
}

/// Every recorded version of every release, by name then newest first.
pub fn all(state: &AppState) -> Result<Vec<ReleaseVersion>> {
    state.db.scan_any(|c| db::release_index::versions(c, None))
}

/// One release version's snapshot, or `NOT_FOUND` naming what is recorded.
/// Release `name` has no version `version` here: an unknown release is refused as
/// such ([`super::known`]); a known one names the versions it has, newest first.
fn unknown_version(state: &AppState, name: &str, version: &str) -> Error {
    if let Err(unknown) =
        super::known::check(state, &[(super::known::Kind::Release, Some(name))], true)
    {
        return unknown;
    }
    let versions = match state
        .db
        .scan_any(|c| db::release_index::versions(c, Some(name)))
    {
        Ok(versions) => versions,
        Err(error) => return error,
    };
    let listed: Vec<String> = versions
        .iter()
        .map(|v| format!("`{}`", v.version))
        .collect();
    let published = if listed.is_empty() {
        format!("; no version of `{name}` is recorded here, only its customers' receipts")
    } else {
        format!("; its versions here: {}", listed.join(", "))
    };
    Error::new(
        Code::NotFound,
        format!("release `{name}` has no version `{version}` recorded here{published}"),
    )
    .with_detail(serde_json::json!({
        "name": name,
        "version": version,
        "known": versions.iter().map(|v| v.version.to_string()).collect::<Vec<_>>(),
    }))
}

pub fn snapshot(state: &AppState, name: &str, version: &str) -> Result<ReleaseSnapshot> {
    let found = state.db.scan_any(|c| {
        Ok(match db::release_index::version(c, name, version)? {
            Some(release) => Some((
                release,
                db::release_index::stacks(c, name, version)?,
                db::release_index::services(c, name, version)?,
            )),
            None => None,
        })
    })?;
    let Some((release, stacks, services)) = found else {
        return Err(unknown_version(state, name, version));
    };
    let mut customers = rows(state, name, &ReleaseFleetQuery::default())?;
    customers.retain(|r| r.version == release.version);
    Ok(ReleaseSnapshot {
        release,
        stacks,
        services,
        customers,
    })
}

#[utoipa::path(get, path = "/api/v1/releases/{name}/{version}",
    params(
        ("name" = String, Path, description = "The release (`data-plane`)"),
        ("version" = String, Path, description = "Its version (`1.4.0`, `1.5.0-gpu.2`)"),
    ),
    responses(
        (status = 200, description = "What the version pins: each stack's version and bundle digest in apply order, each service's digest; and the customers whose latest deployments carry it, with their mixed stacks", body = ReleaseSnapshot),
        (status = 404, description = "That version of the release was not pushed to this registry"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn show(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path((name, version)): Path<(String, String)>,
) -> Result<Json<ReleaseSnapshot>> {
    ctx.authorize(Action::LedgerRead)?;
    snapshot(&state, &name, &version).map(Json)
}
