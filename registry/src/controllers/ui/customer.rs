//! `GET /ui/customers/{id}`: one customer: environment, last seen, installation
//! keys, the release it runs (index digest, mixed stacks, the services it pins by
//! digest: the snapshot), what it runs now, and its receipts, each with its inputs
//! hash and whether its signature verifies with a key the ledger trusts for the
//! customer.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use stackpack_schema::receipt::{Outcome, SignedReceipt};

use super::fleet::{rows_table, version_link};
use super::html;
use super::html::{badge, error_page, esc, page, respond, short_digest, table, when, Tone};
use super::release::{digest, release_link, services_table, standing};
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
fn signature(document: &str, keys: &Keys) -> (String, String) {
    let signed: SignedReceipt = match serde_json::from_str(document) {
        Ok(signed) => signed,
        Err(_) => return (badge(Tone::Bad, "unreadable"), String::new()),
    };
    let inputs = signed.receipt.inputs_hash.to_string();
    let inputs = format!(
        "<span class=\"mono\" title=\"{}\">{}</span>",
        esc(&inputs),
        esc(&short_digest(&inputs))
    );
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
            format!(
                "{checked} <span class=\"mono\">{}</span> {}",
                esc(&id),
                badge(tone, standing)
            )
        }
        Err(e) => format!(
            "{} <span class=\"muted\">{}</span>",
            badge(Tone::Bad, "signature does not verify"),
            super::html::prose(&e.to_string())
        ),
    };
    (verdict, inputs)
}

fn history_row(d: &Deployment, document: &str, keys: &Keys) -> Vec<String> {
    let tone = match d.outcome {
        Outcome::Failed | Outcome::Drifted => Tone::Bad,
        Outcome::Succeeded | Outcome::NoChanges => Tone::Good,
    };
    let (verdict, inputs) = signature(document, keys);
    let receipt = why::receipt(document);
    vec![
        when(d.finished_at.as_str()),
        esc(d.kind.as_str()),
        badge(tone, d.outcome.as_str()),
        super::fleet::stack_link(&d.stack),
        version_link(&d.stack, &d.version),
        receipt.as_ref().map(why::reason).unwrap_or_default(),
        receipt.as_ref().map(why::runner).unwrap_or_default(),
        verdict,
        format!(
            "<span class=\"mono\" title=\"{}\">{}</span><br>{inputs}<br><span class=\"mono\">{}</span>",
            esc(&d.digest.to_string()),
            esc(&d.digest.short()),
            esc(&d.receipt_id)
        ),
    ]
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
    let mut body = format!("<h1 id=\"customer\">{}</h1>", esc(&customer.id));
    body.push_str(&state_lines(&customer, &running, &why_cells));
    body.push_str(&facts(&customer, registered, &keys, &details, &why_cells));
    body.push_str(&super::support_bundle::link(&state, &id));
    match state.db.read_any(|c| {
        Ok((
            db::rollouts::placement(c, &id)?,
            db::rollouts::syncs(c, &id)?,
        ))
    }) {
        Ok((placement, syncs)) => body.push_str(&rollout_section(placement.as_ref(), &syncs)),
        Err(e) => return failed(e),
    }
    body.push_str(&releases_section(&releases));
    match crate::controllers::ledger::running(&state, &id)
        .and_then(|r| crate::controllers::ledger::customers::verified_runs(&state, &r))
    {
        Ok(runs) => body.push_str(&verified_section(&runs)),
        Err(e) => return failed(e),
    }
    body.push_str("<h2>Runs now</h2>");
    if running.is_empty() {
        body.push_str("<p class=\"muted\">No deployment reported yet.</p>");
    } else {
        body.push_str(&rows_table(&running, false, "running"));
    }
    match super::forecast::customer_section(&state, &id) {
        Ok(section) => body.push_str(&section),
        Err(e) => return failed(e),
    }
    body.push_str(&history_section(&history, &keys));
    respond(StatusCode::OK, page(&customer.id, true, &body))
}

/// The customer's state first, one line per stack, in words: "runs data-plane
/// 1.4.0 since 3 days; last attempt failed 2 h ago: `aws_eks_node_group.gpu`:
/// InsufficientInstanceCapacity".
fn state_lines(
    customer: &Customer,
    running: &[FleetRow],
    why_cells: &BTreeMap<String, db::customers::CellReceipts>,
) -> String {
    let mut lines = Vec::new();
    match (&customer.last_seen, customer.stale == Some(true)) {
        (None, _) => lines.push(format!(
            "{} no receipt yet",
            badge(Tone::Warn, "never reported")
        )),
        (Some(seen), true) => lines.push(format!(
            "{} last receipt {}",
            badge(Tone::Warn, "silent"),
            when(seen.as_str())
        )),
        (Some(_), false) => {}
    }
    for row in running {
        let Some(stack) = &row.stack else { continue };
        lines.push(stack_line(row, stack, why_cells.get(stack)));
    }
    if lines.is_empty() {
        lines.push("<span class=\"muted\">No deployment reported yet.</span>".into());
    }
    let items: String = lines.iter().map(|l| format!("<li>{l}</li>")).collect();
    format!("<ul class=\"state\" id=\"state\">{items}</ul>")
}

/// One stack's line: what runs since when, then why it is not simply fine (an
/// unmended failure, a drift, how far behind), each with its reason.
fn stack_line(row: &FleetRow, stack: &str, cell: Option<&db::customers::CellReceipts>) -> String {
    let mut line = match (&row.version, &row.since) {
        (Some(v), Some(since)) => format!(
            "runs {} {} since {}",
            esc(stack),
            version_link(stack, v),
            html::when_for(since.as_str())
        ),
        (Some(v), None) => format!("runs {} {}", esc(stack), version_link(stack, v)),
        (None, _) => format!("runs nothing of {}", esc(stack)),
    };
    let failure = cell
        .and_then(|c| c.failed.as_deref())
        .and_then(why::receipt);
    let last_failed = row
        .last_attempt
        .as_ref()
        .is_some_and(|a| a.outcome == Outcome::Failed);
    if let Some(r) = &failure {
        let reason = why::failure(r).unwrap_or_else(|| "no reason in the receipt".into());
        let (badge_text, after) = match (&row.last_attempt, last_failed) {
            (_, true) => ("last attempt failed", String::new()),
            (Some(a), false) if a.kind == stackpack_schema::receipt::ReceiptKind::Rollback => {
                ("failed", " (since rolled back)".to_string())
            }
            _ => ("failed", String::new()),
        };
        let _ = write!(
            line,
            "; {} {} {} {}: {reason}{after}",
            badge(Tone::Bad, badge_text),
            esc(r.kind.as_str()),
            esc(&r.version.to_string()),
            when(&r.finished_at),
        );
    } else if let Some(a) = row.last_attempt.as_ref().filter(|_| last_failed) {
        let _ = write!(
            line,
            "; {} {} {} {}: no reason in the receipt",
            badge(Tone::Bad, "last attempt failed"),
            esc(a.kind.as_str()),
            esc(&a.version.to_string()),
            when(a.finished_at.as_str()),
        );
    }
    if row.drifted {
        let r = cell
            .and_then(|c| c.drifted.as_deref())
            .and_then(why::receipt);
        let at = r.as_ref().map(|r| when(&r.finished_at)).unwrap_or_default();
        let reason = r
            .as_ref()
            .and_then(why::drift)
            .unwrap_or_else(|| "no resource in the receipt".into());
        let _ = write!(line, "; {} {at}: {reason}", badge(Tone::Bad, "drifted"));
    }
    if row.behind > 0 {
        let latest = row
            .latest_stable
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let _ = write!(
            line,
            "; {}",
            badge(
                Tone::Warn,
                &format!("behind {} (latest {latest})", row.behind)
            )
        );
    }
    if !line.contains("class=\"badge") {
        let _ = write!(line, "; {}", badge(Tone::Good, "up to date"));
    }
    line
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
) -> String {
    let mut body = String::new();
    let seen = match (&customer.last_seen, customer.stale == Some(true)) {
        (None, _) => badge(Tone::Warn, "never reported"),
        (Some(seen), true) => format!("{} {}", when(seen.as_str()), badge(Tone::Warn, "silent")),
        (Some(seen), false) => {
            format!("{} {}", when(seen.as_str()), badge(Tone::Good, "reporting"))
        }
    };
    let not_set = || "<span class=\"muted\">not set</span>".to_string();
    let detail = |v: &Option<String>| v.as_deref().map(esc).unwrap_or_else(not_set);
    let mut runners: Vec<String> = why_cells
        .iter()
        .filter_map(|(stack, c)| {
            let r = why::receipt(c.newest.as_deref()?)?;
            Some(format!("{}: {}", esc(stack), why::runner(&r)))
        })
        .collect();
    runners.dedup();
    let _ = write!(
        body,
        "<dl class=\"facts\"><dt>Account</dt><dd id=\"account\">{}</dd><dt>Region</dt><dd id=\"region\">{}</dd>\
         <dt>Contact</dt><dd id=\"contact\">{}</dd><dt>Notes</dt><dd id=\"notes\">{}</dd>\
         <dt>Runs with</dt><dd id=\"runner\">{}</dd>",
        detail(&details.account),
        detail(&details.region),
        detail(&details.contact),
        detail(&details.notes),
        if runners.is_empty() { not_set() } else { runners.join("<br>") },
    );
    let mut key_list: Vec<String> = keys
        .iter()
        .map(|(key, (revoked, pinned_by))| {
            let (tone, standing) = key_standing(*revoked, *pinned_by);
            format!(
                "<span class=\"mono\">{}</span> {}",
                esc(key),
                badge(tone, standing)
            )
        })
        .collect();
    key_list.sort();
    let _ = write!(
        body,
        "<dt>Name</dt><dd>{}</dd><dt>Environment</dt><dd id=\"environment\">{}</dd>\
         <dt>Registered</dt><dd>{}</dd><dt>Last seen</dt><dd id=\"last-seen\">{seen}</dd>\
         <dt>Installation keys</dt><dd>{}</dd></dl>",
        customer.name.as_deref().map(esc).unwrap_or_default(),
        customer
            .environment
            .as_deref()
            .map(esc)
            .unwrap_or_else(|| "<span class=\"muted\">not set</span>".into()),
        if registered {
            when(customer.created.as_str())
        } else {
            format!(
                "{} <span class=\"muted\">first seen {}</span>",
                badge(Tone::Warn, "not registered: known only from its receipts"),
                when(customer.created.as_str())
            )
        },
        if key_list.is_empty() {
            "<span class=\"muted\">none yet (the first receipt pins one)</span>".to_string()
        } else {
            key_list.join("<br>")
        },
    );
    body
}

/// The customer's channel and wave, when its runner last synced, and per release
/// its last sync state ("waiting for approval since …").
fn rollout_section(
    placement: Option<&crate::api::Placement>,
    syncs: &[db::rollouts::SyncRow],
) -> String {
    let muted = |text: &str| format!("<span class=\"muted\">{}</span>", esc(text));
    let (channel, wave, last_sync) = match placement {
        Some(p) => (
            p.channel.as_deref(),
            p.wave.as_deref(),
            p.last_sync.as_deref(),
        ),
        None => (None, None, None),
    };
    let mut body = format!(
        "<h2>Rollout</h2><dl class=\"facts\"><dt>Channel</dt><dd id=\"channel\">{}</dd>\
         <dt>Wave</dt><dd id=\"wave\">{}</dd><dt>Last sync</dt><dd id=\"last-sync\">{}</dd></dl>",
        channel
            .map(esc)
            .unwrap_or_else(|| muted("none: nothing is assigned")),
        wave.map(esc).unwrap_or_else(|| muted("the channel's last")),
        last_sync.map(esc).unwrap_or_else(|| muted("never")),
    );
    if syncs.is_empty() {
        return body;
    }
    let rows: Vec<Vec<String>> = syncs
        .iter()
        .map(|s| {
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
                (SyncState::PendingApproval, Some(p)) => format!(
                    "waiting for approval since {} (<span class=\"mono\">{}</span>: +{} ~{} -{})",
                    super::html::when_for(&p.since),
                    esc(&p.id),
                    p.add,
                    p.change,
                    p.destroy
                ),
                _ => s.message.as_deref().map(html::prose).unwrap_or_default(),
            };
            vec![
                esc(&s.release),
                s.assigned
                    .as_ref()
                    .map(|v| esc(&v.to_string()))
                    .unwrap_or_default(),
                s.running
                    .as_ref()
                    .map(|v| esc(&v.to_string()))
                    .unwrap_or_default(),
                badge(tone, s.state.as_str()),
                waiting,
                when(&s.reported_at),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "Release", "Assigned", "Running", "Sync", "Detail", "Reported",
        ],
        &rows,
        "sync",
    ));
    body
}

/// The releases the customer runs, each with its index digest, the stacks that
/// deviate from it, and the services its version pins by digest.
/// What the runner verified before each apply in place, in the API's words.
fn verified_section(runs: &[crate::api::VerifiedRun]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                format!("{} {}", esc(&r.stack), version_link(&r.stack, &r.version)),
                format!("{}, verified before apply", html::prose(&r.summary)),
            ]
        })
        .collect();
    format!(
        "<h2>Verified before apply</h2>{}",
        table(&["Stack", "Proof"], &rows, "verified")
    )
}

fn releases_section(releases: &[CustomerRelease]) -> String {
    if releases.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = releases
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
    let mut body = format!(
        "<h2>Release</h2>{}",
        table(&["Release", "Index", "Stacks"], &rows, "releases")
    );
    for r in releases.iter().filter(|r| !r.services.is_empty()) {
        let s = &r.standing;
        let _ = write!(
            body,
            "<h3>Services of {}</h3>{}",
            release_link(&s.release, &s.version),
            services_table(&r.services, &format!("services-{}", s.release))
        );
    }
    body
}

/// The customer's receipts, newest first, each with its signature's verdict.
fn history_section(history: &[(Deployment, String)], keys: &Keys) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<h2>History</h2><p class=\"summary\">Every receipt, newest first{}: applies, failures, rollbacks, drift reports and destroys.</p>",
        if history.len() as u64 == HISTORY_ROWS {
            format!(" (the latest {HISTORY_ROWS}; <code>customer history</code> lists all)")
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = history
        .iter()
        .map(|(d, document)| history_row(d, document, keys))
        .collect();
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">No receipt yet.</p>");
    } else {
        body.push_str(&table(
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
        ));
    }
    body
}
