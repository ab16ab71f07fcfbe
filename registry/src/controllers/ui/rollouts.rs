//! `/ui/rollouts` (every rollout: release@version, channel, state, the wave open,
//! when the next may open, why it halted) and `/ui/rollouts/{id}` (its waves, who
//! was assigned when, who failed, and its history). Like every status read they
//! first move rollouts on to now (the scheduler's own work, on the registry's
//! clock); they never change what anyone decided.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::fleet::customer_link;
use super::html::{
    badge, html, muted, page, prose, respond, short_digest, table, when, Markup, Tone,
};
use super::{failed, viewer};
use crate::api::{Gate, Rollout, RolloutState};
use crate::controllers::rollouts::{list::rollouts, show::detail};
use crate::state::SharedState;

fn state_badge(state: RolloutState) -> Markup {
    let tone = match state {
        RolloutState::Running => Tone::Info,
        RolloutState::Completed => Tone::Good,
        RolloutState::Halted | RolloutState::Aborted => Tone::Bad,
        RolloutState::Paused | RolloutState::Superseded => Tone::Warn,
    };
    badge(tone, state.as_str())
}

fn wave_text(r: &Rollout) -> Markup {
    let name = r.waves.get(r.wave_index).map(String::as_str).unwrap_or("-");
    html! { (name) " (" (r.wave_index + 1) "/" (r.waves.len()) ")" }
}

fn link(r: &Rollout) -> Markup {
    html! { a href={ "/ui/rollouts/" (r.id) } { (r.release) "@" (r.version) } }
}

/// A value (its backticks shown as code), or a muted dash.
fn dash(value: Option<&str>) -> Markup {
    value.map_or_else(|| muted("-"), prose)
}

pub async fn list(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let all = match rollouts(&state, None, None) {
        Ok(all) => all,
        Err(e) => return failed(e),
    };
    let rows: Vec<Vec<Markup>> = all
        .iter()
        .map(|r| {
            vec![
                html! { (r.id) },
                link(r),
                html! { (r.channel) },
                state_badge(r.state),
                wave_text(r),
                dash(r.wave_opened_at.as_deref()),
                dash(r.next_wave_at.as_deref()),
                html! { (r.succeeded) "/" (r.assigned) " (" (r.failed) " failed)" },
                dash(r.halted_reason.as_deref()),
            ]
        })
        .collect();
    let body = html! {
        h1 { "Rollouts" }
        @if rows.is_empty() {
            p.muted { "No rollout yet: " code { "stackpack promote" } " starts one." }
        } @else {
            (table(
                &[
                    "Id",
                    "Release",
                    "Channel",
                    "State",
                    "Wave",
                    "Opened",
                    "Next wave at",
                    "Succeeded",
                    "Halted because",
                ],
                &rows,
                "rollouts",
            ))
        }
    };
    respond(StatusCode::OK, page("Rollouts", true, body))
}

/// A rollout's facts: state, waves, soak, times, digest, why halted, who it holds up.
fn facts(r: &crate::api::Rollout) -> Markup {
    html! {
        dl.facts {
            dt { "State" } dd id="state" { (state_badge(r.state)) }
            dt { "Wave" } dd { (wave_text(r)) }
            dt { "Waves" } dd { (r.waves.join(" → ")) }
            dt { "Soak" } dd { (r.soak_seconds) " s" }
            dt { "Opened" } dd { (dash(r.wave_opened_at.as_deref())) }
            dt { "Next wave at" } dd { (dash(r.next_wave_at.as_deref())) }
            dt { "Digest" } dd.mono { (short_digest(&r.digest)) }
            dt { "Halted because" } dd id="halted" { (dash(r.halted_reason.as_deref())) }
            dt { "Held up" } dd id="held-up" { (dash(r.held_up.as_deref())) }
            dt { "Promoted by" } dd { (dash(r.promoted_by.as_deref())) }
        }
    }
}

pub async fn show(
    State(state): State<SharedState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let d = match detail(&state, id) {
        Ok(d) => d,
        Err(e) => return failed(e),
    };
    let r = &d.rollout;
    let rows: Vec<Vec<Markup>> = d
        .assignments
        .iter()
        .map(|a| {
            let tone = match a.gate {
                Gate::Succeeded => Tone::Good,
                Gate::Failed => Tone::Bad,
                Gate::Waiting => Tone::Info,
            };
            vec![
                customer_link(&a.customer),
                html! { (a.wave) },
                when(&a.assigned_at),
                badge(tone, a.gate.as_str()),
                dash(a.gate_reason.as_deref()),
            ]
        })
        .collect();
    let forecast = match super::forecast::rollout_section(&state, &d) {
        Ok(section) => section,
        Err(e) => return failed(e),
    };
    let events: Vec<Vec<Markup>> = d
        .events
        .iter()
        .map(|e| {
            vec![
                when(&e.at),
                html! { (e.kind.as_str()) },
                dash(e.customer.as_deref()),
                dash(e.wave.as_deref()),
                dash(e.detail.as_deref()),
            ]
        })
        .collect();
    let body = html! {
        h1 id="rollout" {
            "Rollout " (r.id) " · " (r.release) "@" (r.version) " to " span.mono { (r.channel) }
        }
        (facts(r))
        h2 { "Assigned" }
        @if rows.is_empty() {
            p.muted { "Nobody yet." }
        } @else {
            (table(&["Customer", "Wave", "Assigned at", "Gate", "Why"], &rows, "assignments"))
        }
        (forecast)
        h2 { "History" }
        (table(&["At", "What", "Customer", "Wave", "Detail"], &events, "history"))
    };
    respond(
        StatusCode::OK,
        page(&format!("Rollout {}", r.id), true, body),
    )
}
