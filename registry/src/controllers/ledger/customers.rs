//! Customers: `GET /api/v1/customers`, `POST /api/v1/customers` (admin),
//! `GET /api/v1/customers/{id}` (one snapshot of what it runs: each stack with its
//! last attempt, its releases with their services; and its recent receipts),
//! `GET /api/v1/customers/{id}/history` (every receipt, oldest first).

use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use base64::Engine as _;

use crate::api::{
    Customer, CustomerRelease, Deployment, FleetRow, InstallationKey, NewCustomer,
    NewInstallationKey, Running,
};
use crate::auth::Action;
use crate::controllers::ledger::fleet::{matrix, FleetQuery};
use crate::controllers::ledger::release_fleet::customer_snapshot;
use crate::controllers::ledger::{
    mark_stale, paged, running, silent_before_ns, split_page, stale_after, Paging,
};
use crate::controllers::{read_limited, Authorised, Ctx, MayAdminister};
use crate::db;
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

/// One customer in detail: what exactly it runs, as one snapshot.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerDetail {
    pub customer: Customer,
    pub running: Vec<Running>,
    /// Each stack it runs (or last tried to), by stack: the version and bundle
    /// digest in place, and the last attempt (kind, outcome, when) even when it
    /// failed or nothing is in place.
    #[serde(default)]
    pub stacks: Vec<FleetRow>,
    /// The releases it runs, by name: the version, index digest, the stacks that
    /// are mixed (not at the bundle the version pins), and the version's stacks
    /// and services with their digests.
    #[serde(default)]
    pub releases: Vec<CustomerRelease>,
    /// The latest receipts, newest first.
    pub recent: Vec<Deployment>,
    /// Its rollout channel and wave, and when its runner last synced.
    #[serde(default)]
    pub rollout: Option<crate::api::Placement>,
    /// Per release, what its runner's last sync pass did, and why it failed, was
    /// refused or waits.
    #[serde(default)]
    pub syncs: Vec<crate::api::CustomerSync>,
    /// For each stack in place, what its runner verified before applying it;
    /// stacks applied by runners that predate the record are left out.
    #[serde(default)]
    pub verified: Vec<crate::api::VerifiedRun>,
}

/// What the runner verified before each apply that put a stack of `running` in
/// place, read from those receipts.
pub fn verified_runs(
    state: &crate::state::AppState,
    running: &[crate::api::Running],
) -> Result<Vec<crate::api::VerifiedRun>> {
    state.db.support_any(|c| {
        let mut runs = Vec::new();
        for r in running {
            if let Some(verification) = db::ledger::verification(c, &r.receipt_id)? {
                runs.push(crate::api::VerifiedRun {
                    stack: r.stack.clone(),
                    version: r.version.clone(),
                    receipt_id: r.receipt_id.clone(),
                    summary: verification.summary(),
                    verification,
                });
            }
        }
        Ok(runs)
    })
}

/// One customer's snapshot, or `None` when the customer is not known. The API, the
/// `customer show` command and the customer page answer from it.
pub fn detail(state: &crate::state::AppState, id: &str) -> Result<Option<CustomerDetail>> {
    let found = state.db.support_any(|c| {
        let Some(customer) = db::ledger::customer(c, id)? else {
            return Ok(None);
        };
        Ok(Some((
            customer,
            customer_snapshot(c, id)?,
            db::ledger::deployments(c, Some(id), None, 50)?,
            db::rollouts::placement(c, id)?,
            db::rollouts::syncs(c, id)?,
        )))
    })?;
    let Some((customer, releases, recent, rollout, syncs)) = found else {
        return Ok(None);
    };
    let mut stacks = matrix(
        state,
        &FleetQuery {
            customer: Some(id.to_string()),
            stale_after_secs: stale_after(None)?,
            ..FleetQuery::default()
        },
    )?;
    stacks.retain(|r| r.stack.is_some());
    let running = running(state, id)?;
    Ok(Some(CustomerDetail {
        customer,
        verified: verified_runs(state, &running)?,
        running,
        stacks,
        releases,
        recent,
        rollout,
        syncs: syncs.iter().map(|s| s.view(id)).collect(),
    }))
}

#[utoipa::path(
    get,
    path = "/api/v1/customers",
    params(
        ("staleAfter" = Option<String>, Query,
            description = "Age after which a customer without a receipt is stale: `7d` (default), `12h`, `2w`"),
        ("silent" = Option<bool>, Query, description = "Only the customers stale by `staleAfter`"),
        ("limit" = Option<usize>, Query, description = "Customers in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The previous page's last customer id, as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "Customers by id, a page at a time (`Link` to the next), with environment, last seen and whether each is stale", body = Vec<Customer>),
        (status = 400, description = "`staleAfter` is not an age, or `limit` not a number from 1 to 2000"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn list(State(state): State<SharedState>, ctx: Ctx, uri: Uri) -> Result<Response> {
    ctx.authorize(Action::LedgerRead)?;
    let age = stale_after(ctx.query("staleAfter"))?;
    let silent = matches!(ctx.query("silent"), Some("true" | "1"));
    let rows = customers_page(&state, age, silent, &Paging::from_query(&ctx.query)?)?;
    Ok(paged(&uri, rows))
}

/// One page of customers by id, each marked stale or not by `age_secs`; only the
/// stale ones when `silent`.
pub fn customers_page(
    state: &crate::state::AppState,
    age_secs: u64,
    silent: bool,
    paging: &Paging,
) -> Result<(Vec<Customer>, Option<String>)> {
    let before = silent_before_ns(age_secs);
    let mut customers = state.db.support_any(|c| {
        db::fleet::customers_page(
            c,
            silent.then_some(before),
            paging.after.as_deref(),
            paging.limit + 1,
        )
    })?;
    mark_stale(&mut customers, age_secs);
    Ok(split_page(customers, paging.limit, |c| c.id.clone()))
}

/// One page of a customer's receipts, oldest first; `None` when the customer is not
/// known.
pub fn history_page(
    state: &crate::state::AppState,
    id: &str,
    paging: &Paging,
) -> Result<Option<(Vec<Deployment>, Option<String>)>> {
    let (customer, receipts) = state.db.support_any(|c| {
        Ok((
            db::ledger::customer(c, id)?,
            db::fleet::history_page(c, id, paging.after.as_deref(), paging.limit + 1)?,
        ))
    })?;
    Ok(customer.map(|_| split_page(receipts, paging.limit, |d| d.receipt_id.clone())))
}

#[utoipa::path(
    post,
    path = "/api/v1/customers",
    request_body = NewCustomer,
    responses(
        (status = 201, description = "Created or updated", body = Customer),
        (status = 400, description = "Malformed body or customer id"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn create(
    State(state): State<SharedState>,
    Authorised { body, .. }: Authorised<MayAdminister>,
) -> Result<impl IntoResponse> {
    let body = read_limited(body, &state.config, "the request body").await?;
    let new: NewCustomer = serde_json::from_slice(&body)
        .map_err(|e| Error::new(Code::BadRequest, format!("the body is not a customer: {e}")))?;
    for name in std::iter::once(&new.id).chain(&new.environment) {
        stackpack_schema::reference::validate_name(name)
            .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
    }
    let now = db::now_rfc3339();
    let customer = state.db.write_keyed(&[Lock::Customer(&new.id)], |tx| {
        let (name, environment) = (new.name.as_deref(), new.environment.as_deref());
        db::ledger::register_customer(tx, &new.id, name, environment, &now)?;
        Ok(db::ledger::customer(tx, &new.id)?)
    })?;
    Ok((StatusCode::CREATED, Json(customer)))
}

#[utoipa::path(
    get,
    path = "/api/v1/customers/{id}",
    params(("id" = String, Path, description = "Customer id")),
    responses(
        (status = 200, description = "What exactly the customer runs, as one snapshot: each stack's version, bundle digest and last attempt; each release it runs with its version, index digest, mixed stacks and the services it pins by digest; and its recent receipts", body = CustomerDetail),
        (status = 404, description = "No such customer"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn show(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path(id): Path<String>,
) -> Result<Json<CustomerDetail>> {
    ctx.authorize(Action::CustomerRead(&id))?;
    detail(&state, &id)?.map(Json).ok_or_else(|| {
        let may_list = ctx.authorize(Action::LedgerRead).is_ok();
        super::known::unknown(&state, super::known::Kind::Customer, &id, may_list)
    })
}

#[utoipa::path(
    post,
    path = "/api/v1/customers/{id}/keys",
    params(("id" = String, Path, description = "Customer id")),
    request_body = NewInstallationKey,
    responses(
        (status = 201, description = "The key is trusted for the customer's receipts", body = InstallationKey),
        (status = 400, description = "Not an ed25519 public key in SPKI PEM"),
        (status = 404, description = "No such customer"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
/// Trusts another installation key for a customer (admin). Without any, the first
/// key a customer reports with is pinned.
pub async fn add_key(
    State(state): State<SharedState>,
    Path(id): Path<String>,
    Authorised { body, .. }: Authorised<MayAdminister>,
) -> Result<impl IntoResponse> {
    let body = read_limited(body, &state.config, "the request body").await?;
    let new: NewInstallationKey = serde_json::from_slice(&body)
        .map_err(|e| Error::new(Code::BadRequest, format!("the body is not a key: {e}")))?;
    let key = stackpack_schema::signature::PublicKey::from_pem(&new.public_key_pem)
        .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
    let key_id = key.key_id();
    let der = base64::engine::general_purpose::STANDARD.encode(key.to_der());
    let now = db::now_rfc3339();
    let locks = [Lock::Customer(&id), Lock::InstallationKey(&key_id)];
    state.db.write_keyed(&locks, |tx| {
        if db::ledger::customer(tx, &id)?.is_none() {
            return Err(Error::new(
                Code::NotFound,
                format!("customer `{id}` is not known"),
            ));
        }
        db::ledger::add_installation_key(
            tx,
            &id,
            &key_id,
            &der,
            &now,
            db::ledger::PinnedBy::Admin,
        )?;
        Ok(())
    })?;
    let key = InstallationKey {
        customer: id,
        key_id,
    };
    Ok((StatusCode::CREATED, Json(key)))
}

#[utoipa::path(
    get,
    path = "/api/v1/customers/{id}/history",
    params(
        ("id" = String, Path, description = "Customer id"),
        ("limit" = Option<usize>, Query, description = "Receipts in this answer: 500 unless given, at most 2000"),
        ("after" = Option<String>, Query, description = "The previous page's last receipt id, as the `Link` header gives it"),
    ),
    responses(
        (status = 200, description = "Every receipt of the customer, oldest first, a page at a time (`Link` to the next): applies, failed applies, rollbacks, drift reports, destroys", body = Vec<Deployment>),
        (status = 400, description = "`limit` not a number from 1 to 2000"),
        (status = 404, description = "No such customer"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn history(
    State(state): State<SharedState>,
    ctx: Ctx,
    uri: Uri,
    Path(id): Path<String>,
) -> Result<Response> {
    ctx.authorize(Action::CustomerRead(&id))?;
    let rows = history_page(&state, &id, &Paging::from_query(&ctx.query)?)?.ok_or_else(|| {
        let may_list = ctx.authorize(Action::LedgerRead).is_ok();
        super::known::unknown(&state, super::known::Kind::Customer, &id, may_list)
    })?;
    Ok(paged(&uri, rows))
}

#[utoipa::path(
    delete,
    path = "/api/v1/customers/{id}/keys/{keyId}",
    params(
        ("id" = String, Path, description = "Customer id"),
        ("keyId" = String, Path, description = "The installation key's id"),
    ),
    responses(
        (status = 200, description = "Revoked: receipts signed with the key are refused from now on", body = InstallationKey),
        (status = 404, description = "The customer has no such key"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
/// Revokes one of a customer's installation keys (admin). A revoked key still
/// counts as pinned: revoking the last key never reopens trust on first use.
pub async fn revoke_key(
    State(state): State<SharedState>,
    ctx: Ctx,
    Path((id, key_id)): Path<(String, String)>,
) -> Result<Json<InstallationKey>> {
    ctx.authorize(Action::Admin)?;
    let now = db::now_rfc3339();
    let locks = [Lock::Customer(&id), Lock::InstallationKey(&key_id)];
    let revoked = state.db.write_keyed(&locks, |tx| {
        Ok(db::ledger::revoke_installation_key(tx, &id, &key_id, &now)?)
    })?;
    if !revoked {
        return Err(Error::new(
            Code::NotFound,
            format!("customer `{id}` has no key `{key_id}`"),
        ));
    }
    Ok(Json(InstallationKey {
        customer: id,
        key_id,
    }))
}
