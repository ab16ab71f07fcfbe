//! `GET /api/v1/fleet`: the matrix customer × stack → version, the last attempt's
//! outcome and time, how far behind, drift, prerelease, environment, last seen. The
//! `fleet` command answers from it, over `--data` or `--url`.

use std::collections::{BTreeMap, HashMap, HashSet};

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use semver::Version;

use crate::api::{Attempt, Customer, Deployment, FleetRow, Release};
use crate::auth::Action;
use crate::controllers::context;
use crate::controllers::ledger::{mark_stale, reply, stale_after};
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

    fn keeps(&self, row: &FleetRow, carriers: Option<&HashSet<Key>>) -> bool {
        let failed = row
            .last_attempt
            .as_ref()
            .is_some_and(|a| a.outcome == "failed");
        (self.environment.is_none() || row.environment == self.environment)
            && (self.stack.is_none() || row.stack == self.stack)
            && (!self.behind || row.behind > 0)
            && (!self.prerelease || row.prerelease)
            && (!self.drifted || row.drifted)
            && (!self.silent || row.stale)
            && (!self.failed || failed)
            && (self.version.is_none() || row.version == self.version)
            && (self.digest.is_none() || row.digest == self.digest)
            && carriers.is_none_or(|keys| match (&row.stack, &row.version) {
                (Some(stack), Some(version)) => keys.contains(&(stack.clone(), version.clone())),
                _ => false,
            })
            && self.below.as_ref().is_none_or(|below| {
                let running = row.version.as_deref().and_then(|v| Version::parse(v).ok());
                running.is_some_and(|v| v.cmp_precedence(below).is_lt())
            })
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

/// Every stable version of each stack, by semver.
fn stable_versions(releases: &[Release]) -> HashMap<String, Vec<Version>> {
    let mut stable: HashMap<String, Vec<Version>> = HashMap::new();
    for release in releases {
        if let Ok(version) = Version::parse(&release.version) {
            if stackpack_schema::version::is_stable(&version) {
                stable
                    .entry(release.stack.clone())
                    .or_default()
                    .push(version);
            }
        }
    }
    for versions in stable.values_mut() {
        versions.sort_by(|a, b| a.cmp_precedence(b));
    }
    stable
}

type Key = (String, String);

struct Facts {
    customers: Vec<Customer>,
    /// With a `module` filter: the releases (stack, version) that pass it.
    carriers: Option<HashSet<Key>>,
    current: HashMap<Key, Deployment>,
    attempts: HashMap<Key, Deployment>,
    drifted: HashMap<Key, bool>,
    stable: HashMap<String, Vec<Version>>,
}

fn by_key(rows: Vec<Deployment>) -> HashMap<Key, Deployment> {
    rows.into_iter()
        .map(|d| ((d.customer.clone(), d.stack.clone()), d))
        .collect()
}

fn gather(state: &AppState, query: &FleetQuery) -> Result<Facts> {
    let customer = query.customer.as_deref();
    // Drift and failure are kept per cell, so asking for them reads only those cells.
    let narrow = db::ledger::Narrow {
        drifted: query.drifted,
        failed: query.failed,
    };
    let scope = (customer, query.stack.as_deref(), narrow);
    let (mut customers, current, attempts, releases, evidence, carriers) = state.db.scan(|c| {
        let customers: Vec<Customer> = match customer {
            Some(id) => db::ledger::customer(c, id)?.into_iter().collect(),
            None => db::ledger::customers(c)?,
        };
        Ok((
            customers,
            db::ledger::current(c, scope)?,
            db::ledger::last_attempts(c, scope)?,
            db::ledger::releases(c, query.stack.as_deref())?,
            db::ledger::latest_drift_evidence(c, scope)?,
            match &query.module {
                Some(module) => Some(db::ledger::releases_with_module(c, module)?),
                None => None,
            },
        ))
    })?;
    let carriers = carriers.map(|releases| {
        releases
            .into_iter()
            .filter(|(_, _, version)| match &query.module_below {
                None => true,
                Some(below) => version
                    .as_deref()
                    .and_then(|v| Version::parse(v).ok())
                    .is_some_and(|v| v.cmp_precedence(below).is_lt()),
            })
            .map(|(stack, version, _)| (stack, version))
            .collect()
    });
    mark_stale(&mut customers, query.stale_after_secs);
    let drifted = evidence
        .into_iter()
        .map(|d| {
            let drifted = d.kind == "drift" && d.outcome == "drifted";
            ((d.customer, d.stack), drifted)
        })
        .collect();
    Ok(Facts {
        customers,
        carriers,
        current: by_key(current),
        attempts: by_key(attempts),
        drifted,
        stable: stable_versions(&releases),
    })
}

fn row(facts: &Facts, customer: &Customer, stack: Option<&str>) -> FleetRow {
    let key = (customer.id.clone(), stack.unwrap_or_default().to_string());
    let current = facts.current.get(&key);
    let stable = stack.and_then(|s| facts.stable.get(s));
    let version = current.and_then(|d| Version::parse(&d.version).ok());
    let behind = match (&version, stable) {
        (Some(v), Some(all)) => all.iter().filter(|s| s.cmp_precedence(v).is_gt()).count(),
        _ => 0,
    };
    FleetRow {
        customer: customer.id.clone(),
        environment: customer.environment.clone(),
        stack: stack.map(str::to_string),
        version: current.map(|d| d.version.clone()),
        digest: current.map(|d| d.digest.clone()),
        since: current.map(|d| d.finished_at.clone()),
        last_attempt: facts.attempts.get(&key).map(|d| Attempt {
            kind: d.kind.clone(),
            outcome: d.outcome.clone(),
            version: d.version.clone(),
            finished_at: d.finished_at.clone(),
            receipt_id: d.receipt_id.clone(),
        }),
        latest_stable: stable.and_then(|all| all.last()).map(ToString::to_string),
        behind: behind as u64,
        prerelease: version.as_ref().is_some_and(|v| !v.pre.is_empty()),
        drifted: facts.drifted.get(&key).copied().unwrap_or(false),
        last_seen: customer.last_seen.clone(),
        stale: customer.stale == Some(true),
    }
}

/// The fleet matrix, filtered by `query`, by customer then stack.
pub fn matrix(state: &AppState, query: &FleetQuery) -> Result<Vec<FleetRow>> {
    let facts = gather(state, query)?;
    let mut stacks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (customer, stack) in facts.current.keys().chain(facts.attempts.keys()) {
        let list = stacks.entry(customer).or_default();
        if !list.contains(&stack.as_str()) {
            list.push(stack);
        }
    }
    let mut rows = Vec::new();
    for customer in &facts.customers {
        match stacks.get_mut(customer.id.as_str()) {
            Some(list) => {
                list.sort_unstable();
                rows.extend(list.iter().map(|s| row(&facts, customer, Some(*s))));
            }
            None => rows.push(row(&facts, customer, None)),
        }
    }
    rows.retain(|r| query.keeps(r, facts.carriers.as_ref()));
    Ok(rows)
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
    ),
    responses(
        (status = 200, description = "The fleet matrix: customer × stack", body = Vec<FleetRow>),
        (status = 400, description = "`staleAfter` is not an age, or `below` or `moduleBelow` not a version"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn handle(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    reply((|| {
        let ctx = context(&state, &headers, &uri)?;
        let query = FleetQuery::from_query(&ctx.query)?;
        match &query.customer {
            Some(id) => ctx.authorize(Action::CustomerRead(id))?,
            None => ctx.authorize(Action::LedgerRead)?,
        }
        matrix(&state, &query)
    })())
}
