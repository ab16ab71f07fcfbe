//! `GET /ui/customers/{id}`: one customer: environment, last seen, installation
//! keys, the release it runs (index digest, mixed stacks, the services it pins by
//! digest: the snapshot), what it runs now, and its receipts, each with its inputs
//! hash and whether its signature verifies with a key the ledger trusts for the
//! customer.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use stackpack_schema::receipt::{Outcome, SignedReceipt};

use super::fleet::{rows_table, version_link};
use super::html::{
    badge, br, digest, error_page, html, joined, mono, muted, page, prose, respond, table, when,
    when_for, Markup, Tone,
};
use super::release::{release_link, services_table, standing};
use super::why;
use super::{failed, viewer};
use crate::api::{Customer, CustomerRelease, Deployment, FleetRow};
use crate::controllers::ledger::fleet::{matrix, FleetQuery};
use crate::controllers::ledger::release_fleet::customer_snapshot;
use crate::controllers::ledger::{mark_stale, stale_after};
use crate::db;
use crate::db::ledger::PinnedBy;
use crate::state::SharedState;

/// Receipts shown, newest first.
const HISTORY_ROWS: u64 = 500;

/// A customer's installation keys by id: revoked, and how each was pinned.
type Keys = HashMap<String, (bool, Option<PinnedBy>)>;

/// A key's standing in words. A key pinned by `receipts import --customer` came from
/// the same file as the receipts it signs, so it is not called trusted: the vendor
/// named the customer, no token of the customer's vouched for it (until an admin
/// adds it with `customer key add`).
fn key_standing(revoked: bool, pinned_by: Option<PinnedBy>) -> (Tone, &'static str) {
    match (revoked, pinned_by) {
        (true, _) => (Tone::Warn, "key since revoked"),
        (false, Some(PinnedBy::Import)) => (
            Tone::Warn,
            "key pinned from an imported file; not yet trusted",
        ),
        // Registered by an admin, or vouched for by a token that may report for the
        // customer (and before the ledger recorded how: a first receipt).
        (false, Some(PinnedBy::Admin | PinnedBy::Report) | None) => (Tone::Good, "trusted key"),
    }
}

/// Whether a stored receipt's signature verifies, and with which key.
fn signature(document: &str, keys: &Keys) -> (Markup, Markup) {
    let signed: SignedReceipt = match serde_json::from_str(document) {
        Ok(signed) => signed,
        Err(_) => return (badge(Tone::Bad, "unreadable"), html! {}),
    };
    let inputs = digest(&signed.receipt.inputs_hash.to_string());
    let verdict = match signed.verify_integrity() {
        Ok(key) => {
            let id = key.key_id();
            let known = keys.get(&id);
            let (tone, standing) = match known {
                Some((revoked, pinned_by)) => key_standing(*revoked, *pinned_by),
                None => (Tone::Bad, "key not trusted"),
            };
            // The signature checks out against the key the receipt carries; that
            // says something only when someone other than the file vouched for it.
            let checked = match known {
                Some((_, Some(PinnedBy::Admin | PinnedBy::Report) | None)) => {
                    badge(Tone::Good, "signature verified")
                }
                _ => badge(Tone::Warn, "signature matches the key in the file"),
            };
            html! { (checked) " " (mono(&id)) " " (badge(tone, standing)) }
        }
        Err(e) => html! {
            (badge(Tone::Bad, "signature does not verify")) " "
            span.muted { (prose(&e.to_string())) }
        },
    };
    (verdict, inputs)
}

fn history_row(d: &Deployment, document: &str, keys: &Keys) -> Vec<Markup> {
    let tone = match d.outcome {
        Outcome::Failed | Outcome::Drifted => Tone::Bad,
        Outcome::Succeeded | Outcome::NoChanges => Tone::Good,
    };
    let (verdict, inputs) = signature(document, keys);
    let receipt = why::receipt(document);
    vec![
        when(d.finished_at.as_str()),
        html! { (d.kind.as_str()) },
        badge(tone, d.outcome.as_str()),
        super::fleet::stack_link(&d.stack),
        version_link(&d.stack, &d.version),
        receipt.as_ref().map(why::reason).unwrap_or_default(),
        receipt.as_ref().map(why::runner).unwrap_or_default(),
        verdict,
        html! {
            span.mono title=(d.digest.to_string()) { (d.digest.short()) }
            br; (inputs) br; (mono(&d.receipt_id))
        },
    ]
}

/// The customer's rollout, what its runner verified before applying, and its
/// forecast misses: the sections read apart from the customer's own rows.
fn sections(
    state: &crate::state::AppState,
    id: &str,
) -> crate::error::Result<(Markup, Markup, Markup)> {
    let (placement, syncs) = state
        .db
        .read_any(|c| Ok((db::rollouts::placement(c, id)?, db::rollouts::syncs(c, id)?)))?;
    let runs = crate::controllers::ledger::running(state, id)
        .and_then(|r| crate::controllers::ledger::customers::verified_runs(state, &r))?;
    Ok((
        rollout_section(placement.as_ref(), &syncs),
        verified_section(&runs),
        super::forecast::customer_section(state, id)?,
    ))
}

pub async fn show(
    State(state): State<SharedState>,
    headers: HeaderMap,
    uri: Uri,
    Path(id): Path<String>,
) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let query = axum::extract::Query::<HashMap<String, String>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default();
    let age = match stale_after(query.get("staleAfter").map(String::as_str)) {
        Ok(age) => age,
        Err(e) => return failed(e),
    };
    let found = state.db.scan_any(|c| {
        Ok((
            db::ledger::customer(c, &id)?,
            db::ledger::installation_key_standing(c, &id)?,
            db::ledger::history_documents(c, &id, HISTORY_ROWS)?,
            customer_snapshot(c, &id)?,
            (
                db::customers::details(c, &id)?.unwrap_or_default(),
                db::customers::cell_receipts(c, &id)?,
            ),
        ))
    });
    let (customer, keys, history, releases, (details, why_cells)) = match found {
        Ok((Some(customer), keys, history, releases, more)) => {
            (customer, keys, history, releases, more)
        }
        Ok((None, ..)) => {
            // The API's and the CLI's words: the nearest id and the ids there are.
            let unknown = crate::controllers::ledger::known::unknown(
                &state,
                crate::controllers::ledger::known::Kind::Customer,
                &id,
                true,
            );
            return error_page(StatusCode::NOT_FOUND, &unknown.message, true);
        }
        Err(e) => return failed(e),
    };
    let mut running = match matrix(
        &state,
        &FleetQuery {
            customer: Some(id.clone()),
            stale_after_secs: age,
            ..FleetQuery::default()
        },
    ) {
        Ok(rows) => rows,
        Err(e) => return failed(e),
    };
    let mut customer = customer;
    mark_stale(std::slice::from_mut(&mut customer), age);
    let keys: Keys = keys
        .into_iter()
        .map(|k| (k.key_id, (k.revoked, k.pinned_by)))
        .collect();

    // Every fleet row carries whether the customer was registered by the vendor.
    let registered = running.first().is_none_or(|r| r.registered);
    running.retain(|r| r.stack.is_some());
    let (rollout, verified, misses) = match sections(&state, &id) {
        Ok(sections) => sections,
        Err(e) => return failed(e),
    };
    let body = html! {
        h1 id="customer" { (customer.id) }
        (state_lines(&customer, &running, &why_cells))
        (facts(&customer, registered, &keys, &details, &why_cells))
        (super::support_bundle::link(&state, &id))
        (rollout)
        (releases_section(&releases))
        (verified)
        h2 { "Runs now" }
        @if running.is_empty() {
            p.muted { "No deployment reported yet." }
        } @else {
            (rows_table(&running, false, "running"))
        }
        (misses)
        (history_section(&history, &keys))
    };
    respond(StatusCode::OK, page(&customer.id, true, body))
}

/// The customer's state first, one line per stack, in words: "runs data-plane
/// 1.4.0 since 3 days; last attempt failed 2 h ago: `aws_eks_node_group.gpu`:
/// InsufficientInstanceCapacity".
fn state_lines(
    customer: &Customer,
    running: &[FleetRow],
    why_cells: &BTreeMap<String, db::customers::CellReceipts>,
) -> Markup {
    let mut lines = Vec::new();
    match (&customer.last_seen, customer.stale == Some(true)) {
        (None, _) => lines.push(html! { (badge(Tone::Warn, "never reported")) " no receipt yet" }),
        (Some(seen), true) => lines.push(html! {
            (badge(Tone::Warn, "silent")) " last receipt " (when(seen.as_str()))
        }),
        (Some(_), false) => {}
    }
    for row in running {
        let Some(stack) = &row.stack else { continue };
        lines.push(stack_line(row, stack, why_cells.get(stack)));
    }
    if lines.is_empty() {
        lines.push(muted("No deployment reported yet."));
    }
    html! {
        ul.state id="state" { @for line in &lines { li { (line) } } }
    }
}

/// Why a stack's last failure failed, in a line's words: "; last attempt failed
/// apply 1.4.0 2 h ago: `aws_eks_node_group.gpu`: …", or nothing.
fn failure_words(row: &FleetRow, cell: Option<&db::customers::CellReceipts>) -> Option<Markup> {
    let failure = cell
        .and_then(|c| c.failed.as_deref())
        .and_then(why::receipt);
    let last_failed = row
        .last_attempt
        .as_ref()
        .is_some_and(|a| a.outcome == Outcome::Failed);
    if let Some(r) = &failure {
        let reason = why::failure(r).unwrap_or_else(|| html! { "no reason in the receipt" });
        let (badge_text, after) = match (&row.last_attempt, last_failed) {
            (_, true) => ("last attempt failed", ""),
            (Some(a), false) if a.kind == stackpack_schema::receipt::ReceiptKind::Rollback => {
                ("failed", " (since rolled back)")
            }
            _ => ("failed", ""),
        };
        return Some(html! {
            "; " (badge(Tone::Bad, badge_text)) " " (r.kind.as_str()) " " (r.version.to_string())
            " " (when(&r.finished_at)) ": " (reason) (after)
        });
    }
    let a = row.last_attempt.as_ref().filter(|_| last_failed)?;
    Some(html! {
        "; " (badge(Tone::Bad, "last attempt failed")) " " (a.kind.as_str()) " "
        (a.version.to_string()) " " (when(a.finished_at.as_str())) ": no reason in the receipt"
    })
}

/// One stack's line: what runs since when, then why it is not simply fine (an
/// unmended failure, a drift, how far behind), each with its reason.
fn stack_line(row: &FleetRow, stack: &str, cell: Option<&db::customers::CellReceipts>) -> Markup {
    let failure = failure_words(row, cell);
    let drift = row.drifted.then(|| {
        let r = cell
            .and_then(|c| c.drifted.as_deref())
            .and_then(why::receipt);
        let reason = r
            .as_ref()
            .and_then(why::drift)
            .unwrap_or_else(|| html! { "no resource in the receipt" });
        html! {
            "; " (badge(Tone::Bad, "drifted")) " "
            @if let Some(r) = &r { (when(&r.finished_at)) }
            ": " (reason)
        }
    });
    let latest = row
        .latest_stable
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let fine = failure.is_none() && drift.is_none() && row.behind == 0;
    html! {
        @match (&row.version, &row.since) {
            (Some(v), Some(since)) => {
                "runs " (stack) " " (version_link(stack, v)) " since " (when_for(since.as_str()))
            }
            (Some(v), None) => { "runs " (stack) " " (version_link(stack, v)) }
            (None, _) => { "runs nothing of " (stack) }
        }
        @if let Some(failure) = failure { (failure) }
        @if let Some(drift) = drift { (drift) }
        @if row.behind > 0 {
            "; " (badge(Tone::Warn, &format!("behind {} (latest {latest})", row.behind)))
        }
        @if fine { "; " (badge(Tone::Good, "up to date")) }
    }
}

/// The customer's details and facts: account, region, environment, contact,
/// notes, registration, last seen, the runner that reported last, and its
/// installation keys with their standing.
fn facts(
    customer: &Customer,
    registered: bool,
    keys: &Keys,
    details: &db::customers::Details,
    why_cells: &BTreeMap<String, db::customers::CellReceipts>,
) -> Markup {
    let seen = match (&customer.last_seen, customer.stale == Some(true)) {
        (None, _) => badge(Tone::Warn, "never reported"),
        (Some(seen), true) => html! { (when(seen.as_str())) " " (badge(Tone::Warn, "silent")) },
        (Some(seen), false) => {
            html! { (when(seen.as_str())) " " (badge(Tone::Good, "reporting")) }
        }
    };
    let not_set = || muted("not set");
    let detail = |v: &Option<String>| v.as_deref().map_or_else(not_set, |v| html! { (v) });
    let mut runners: Vec<Markup> = why_cells
        .iter()
        .filter_map(|(stack, c)| {
            let r = why::receipt(c.newest.as_deref()?)?;
            Some(html! { (stack) ": " (why::runner(&r)) })
        })
        .collect();
    runners.dedup_by(|a, b| a.0 == b.0);
    let mut keys: Vec<(&String, &(bool, Option<PinnedBy>))> = keys.iter().collect();
    keys.sort_by(|a, b| a.0.cmp(b.0));
    let key_list: Vec<Markup> = keys
        .iter()
        .map(|(key, (revoked, pinned_by))| {
            let (tone, standing) = key_standing(*revoked, *pinned_by);
            html! { (mono(key)) " " (badge(tone, standing)) }
        })
        .collect();
    html! {
        dl.facts {
            dt { "Account" } dd id="account" { (detail(&details.account)) }
            dt { "Region" } dd id="region" { (detail(&details.region)) }
            dt { "Contact" } dd id="contact" { (detail(&details.contact)) }
            dt { "Notes" } dd id="notes" { (detail(&details.notes)) }
            dt { "Runs with" }
            dd id="runner" {
                @if runners.is_empty() { (not_set()) } @else { (joined(&runners, &br())) }
            }
            dt { "Name" } dd { (customer.name.as_deref().unwrap_or_default()) }
            dt { "Environment" } dd id="environment" { (detail(&customer.environment)) }
            dt { "Registered" }
            dd {
                @if registered {
                    (when(customer.created.as_str()))
                } @else {
                    (badge(Tone::Warn, "not registered: known only from its receipts")) " "
                    span.muted { "first seen " (when(customer.created.as_str())) }
                }
            }
            dt { "Last seen" } dd id="last-seen" { (seen) }
            dt { "Installation keys" }
            dd {
                @if key_list.is_empty() {
                    (muted("none yet (the first receipt pins one)"))
                } @else {
                    (joined(&key_list, &br()))
                }
            }
        }
    }
}

/// One release's last sync, as a row of the rollout section.
fn sync_row(s: &db::rollouts::SyncRow) -> Vec<Markup> {
    use stackpack_schema::rollout::{PendingApproval, SyncState};
    let tone = match s.state {
        SyncState::Converged | SyncState::Applied => Tone::Good,
        SyncState::Failed | SyncState::Drifted | SyncState::Refused => Tone::Bad,
        SyncState::PendingApproval | SyncState::OutsideWindow => Tone::Warn,
    };
    let pending: Option<PendingApproval> = s
        .pending
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok());
    let waiting = match (&s.state, pending) {
        (SyncState::PendingApproval, Some(p)) => html! {
            "waiting for approval since " (when_for(&p.since))
            " (" (mono(&p.id)) ": +" (p.add) " ~" (p.change) " -" (p.destroy) ")"
        },
        _ => s.message.as_deref().map(prose).unwrap_or_default(),
    };
    let version = |v: &Option<semver::Version>| {
        html! {
            @if let Some(v) = v { (v.to_string()) }
        }
    };
    vec![
        html! { (s.release) },
        version(&s.assigned),
        version(&s.running),
        badge(tone, s.state.as_str()),
        waiting,
        when(&s.reported_at),
    ]
}

/// The customer's channel and wave, when its runner last synced, and per release
/// its last sync state ("waiting for approval since …").
fn rollout_section(
    placement: Option<&crate::api::Placement>,
    syncs: &[db::rollouts::SyncRow],
) -> Markup {
    let (channel, wave, last_sync) = match placement {
        Some(p) => (
            p.channel.as_deref(),
            p.wave.as_deref(),
            p.last_sync.as_deref(),
        ),
        None => (None, None, None),
    };
    let or = |value: Option<&str>, otherwise: &str| {
        value.map_or_else(|| muted(otherwise), |v| html! { (v) })
    };
    let rows: Vec<Vec<Markup>> = syncs.iter().map(sync_row).collect();
    html! {
        h2 { "Rollout" }
        dl.facts {
            dt { "Channel" } dd id="channel" { (or(channel, "none: nothing is assigned")) }
            dt { "Wave" } dd id="wave" { (or(wave, "the channel's last")) }
            dt { "Last sync" } dd id="last-sync" { (or(last_sync, "never")) }
        }
        @if !rows.is_empty() {
            (table(
                &["Release", "Assigned", "Running", "Sync", "Detail", "Reported"],
                &rows,
                "sync",
            ))
        }
    }
}

/// What the runner verified before each apply in place, in the API's words.
fn verified_section(runs: &[crate::api::VerifiedRun]) -> Markup {
    if runs.is_empty() {
        return html! {};
    }
    let rows: Vec<Vec<Markup>> = runs
        .iter()
        .map(|r| {
            vec![
                html! { (r.stack) " " (version_link(&r.stack, &r.version)) },
                html! { (prose(&r.summary)) ", verified before apply" },
            ]
        })
        .collect();
    html! {
        h2 { "Verified before apply" }
        (table(&["Stack", "Proof"], &rows, "verified"))
    }
}

/// The releases the customer runs, each with its index digest, the stacks that
/// deviate from it, and the services its version pins by digest.
fn releases_section(releases: &[CustomerRelease]) -> Markup {
    if releases.is_empty() {
        return html! {};
    }
    let rows: Vec<Vec<Markup>> = releases
        .iter()
        .map(|r| {
            let s = &r.standing;
            vec![
                release_link(&s.release, &s.version),
                digest(&s.digest.to_string()),
                standing(s),
            ]
        })
        .collect();
    html! {
        h2 { "Release" }
        (table(&["Release", "Index", "Stacks"], &rows, "releases"))
        @for r in releases.iter().filter(|r| !r.services.is_empty()) {
            h3 { "Services of " (release_link(&r.standing.release, &r.standing.version)) }
            (services_table(&r.services, &format!("services-{}", r.standing.release)))
        }
    }
}

/// The customer's receipts, newest first, each with its signature's verdict.
fn history_section(history: &[(Deployment, String)], keys: &Keys) -> Markup {
    let rows: Vec<Vec<Markup>> = history
        .iter()
        .map(|(d, document)| history_row(d, document, keys))
        .collect();
    html! {
        h2 { "History" }
        p.summary {
            "Every receipt, newest first"
            @if history.len() as u64 == HISTORY_ROWS {
                " (the latest " (HISTORY_ROWS) "; " code { "customer history" } " lists all)"
            }
            ": applies, failures, rollbacks, drift reports and destroys."
        }
        @if rows.is_empty() {
            p.muted { "No receipt yet." }
        } @else {
            (table(
                &[
                    "Finished",
                    "Kind",
                    "Outcome",
                    "Stack",
                    "Version",
                    "Why",
                    "Runner",
                    "Signature",
                    "Bundle · inputs · receipt",
                ],
                &rows,
                "history",
            ))
        }
    }
}
