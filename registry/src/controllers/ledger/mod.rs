//! The ledger API under `/api/v1/`: releases, customers, deployments (receipts) and
//! support's questions. Documented by [`openapi::ApiDoc`], served at
//! `/api/v1/openapi.json`.

pub mod adoption;
pub mod customers;
pub mod deployments;
pub mod fleet;
pub mod openapi;
pub mod receipts;
pub mod releases;
pub mod stacks;
pub mod support;

use std::collections::HashMap;

use axum::response::{IntoResponse, Response};
use semver::Version;

use crate::api::{Customer, Deployment, Release, Running};
use crate::db;
use crate::error::Result;
use crate::state::AppState;

/// A JSON answer, or the error's.
pub fn reply<T: serde::Serialize>(result: Result<T>) -> Response {
    match result {
        Ok(value) => axum::Json(value).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The highest stable version of each stack, by semver precedence.
pub fn latest_stable(releases: &[Release]) -> HashMap<String, Version> {
    let mut latest: HashMap<String, Version> = HashMap::new();
    for release in releases {
        let Ok(version) = Version::parse(&release.version) else {
            continue;
        };
        if !stackpack_schema::version::is_stable(&version) {
            continue;
        }
        match latest.get(&release.stack) {
            Some(current) if current.cmp_precedence(&version).is_ge() => {}
            _ => {
                latest.insert(release.stack.clone(), version);
            }
        }
    }
    latest
}

/// What every customer (or one) runs, with behind / prerelease / drifted worked out.
pub fn running(state: &AppState, customer: Option<&str>) -> Result<Vec<Running>> {
    let (current, releases, evidence) = state.db.scan(|c| {
        Ok((
            db::ledger::current(c, (customer, None, Default::default()))?,
            db::ledger::releases(c, None)?,
            db::ledger::latest_drift_evidence(c, (customer, None, Default::default()))?,
        ))
    })?;
    let latest = latest_stable(&releases);
    let drifted: HashMap<(String, String), &Deployment> = evidence
        .iter()
        .filter(|d| d.kind == "drift" && d.outcome == "drifted")
        .map(|d| ((d.customer.clone(), d.stack.clone()), d))
        .collect();
    Ok(current
        .into_iter()
        .map(|d| {
            let version = Version::parse(&d.version).ok();
            let latest_stable = latest.get(&d.stack);
            let behind = match (&version, latest_stable) {
                (Some(v), Some(l)) => v.cmp_precedence(l).is_lt(),
                _ => false,
            };
            let prerelease = version.as_ref().is_some_and(|v| !v.pre.is_empty());
            Running {
                drifted: drifted.contains_key(&(d.customer.clone(), d.stack.clone())),
                customer: d.customer,
                stack: d.stack,
                version: d.version,
                digest: d.digest,
                since: d.finished_at,
                receipt_id: d.receipt_id,
                latest_stable: latest_stable.map(ToString::to_string),
                behind,
                prerelease,
            }
        })
        .collect())
}

/// Marks each customer stale when its last receipt is older than `age_secs` (or it
/// never reported).
pub fn mark_stale(customers: &mut [Customer], age_secs: u64) {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let cutoff = now - i128::from(age_secs) * 1_000_000_000;
    for customer in customers {
        let seen = customer.last_seen.as_deref().and_then(db::utc_time);
        customer.stale = Some(seen.is_none_or(|(_, ns)| i128::from(ns) < cutoff));
    }
}

/// The `staleAfter` query parameter (`7d` when absent), in seconds.
pub fn stale_after(query: Option<&str>) -> Result<u64> {
    let text = query.unwrap_or("7d");
    crate::age::parse_secs(text).ok_or_else(|| {
        crate::error::Error::new(
            crate::error::Code::BadRequest,
            format!(
                "{}; try `staleAfter=7d`",
                crate::age::invalid("staleAfter", text)
            ),
        )
    })
}
