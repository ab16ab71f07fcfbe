//! `/ui/rollouts` (every rollout: release@version, channel, state, the wave open,
//! when the next may open, why it halted) and `/ui/rollouts/{id}` (its waves, who
//! was assigned when, who failed, and its history). Like every status read they
//! first move rollouts on to now (the scheduler's own work, on the registry's
//! clock); they never change what anyone decided.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::html::{badge, esc, page, respond, short_digest, table, url, Tone};
use super::{failed, viewer};
use crate::api::{Gate, Rollout, RolloutState};
use crate::controllers::rollouts::{list::rollouts, show::detail};
use crate::state::SharedState;

fn state_badge(state: RolloutState) -> String {
    let tone = match state {
        RolloutState::Running => Tone::Info,
        RolloutState::Completed => Tone::Good,
        RolloutState::Halted | RolloutState::Aborted => Tone::Bad,
        RolloutState::Paused | RolloutState::Superseded => Tone::Warn,
    };
    badge(tone, state.as_str())
}

fn wave_text(r: &Rollout) -> String {
    let name = r.waves.get(r.wave_index).map(String::as_str).unwrap_or("-");
    format!("{} ({}/{})", esc(name), r.wave_index + 1, r.waves.len())
}

fn link(r: &Rollout) -> String {
    format!(
        "<a href=\"/ui/rollouts/{}\">{}@{}</a>",
        r.id,
        esc(&r.release),
        esc(&r.version)
    )
}

/// A value (its backticks shown as code), or a muted dash.
fn dash(value: Option<&str>) -> String {
    value
        .map(super::html::prose)
        .unwrap_or_else(|| "<span class=\"muted\">-</span>".into())
}

pub async fn list(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    if let Err(refusal) = viewer(&state, &headers) {
        return refusal.into_response();
    }
    let all = match rollouts(&state, None, None) {
        Ok(all) => all,
        Err(e) => return failed(e),
    };
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                link(r),
                esc(&r.channel),
                state_badge(r.state),
                wave_text(r),
                dash(r.wave_opened_at.as_deref()),
                dash(r.next_wave_at.as_deref()),
                format!("{}/{} ({} failed)", r.succeeded, r.assigned, r.failed),
                dash(r.halted_reason.as_deref()),
            ]
        })
        .collect();
    let mut body = String::from("<h1>Rollouts</h1>");
    if rows.is_empty() {
        body.push_str(
            "<p class=\"muted\">No rollout yet: <code>stackpack promote</code> starts one.</p>",
        );
    } else {
        body.push_str(&table(
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
        ));
    }
    respond(StatusCode::OK, page("Rollouts", true, &body))
}

/// A rollout's facts: state, waves, soak, times, digest, why halted, who it holds up.
fn facts(r: &crate::api::Rollout) -> String {
    format!(
        "<dl class=\"facts\"><dt>State</dt><dd id=\"state\">{}</dd><dt>Wave</dt><dd>{}</dd>\
         <dt>Waves</dt><dd>{}</dd><dt>Soak</dt><dd>{} s</dd><dt>Opened</dt><dd>{}</dd>\
         <dt>Next wave at</dt><dd>{}</dd><dt>Digest</dt><dd class=\"mono\">{}</dd>\
         <dt>Halted because</dt><dd id=\"halted\">{}</dd><dt>Held up</dt><dd id=\"held-up\">{}</dd>\
         <dt>Promoted by</dt><dd>{}</dd></dl>",
        state_badge(r.state),
        wave_text(r),
        r.waves
            .iter()
            .map(|w| esc(w))
            .collect::<Vec<_>>()
            .join(" → "),
        r.soak_seconds,
        dash(r.wave_opened_at.as_deref()),
        dash(r.next_wave_at.as_deref()),
        esc(&short_digest(&r.digest)),
        dash(r.halted_reason.as_deref()),
        dash(r.held_up.as_deref()),
        dash(r.promoted_by.as_deref()),
    )
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
    let mut body = format!(
        "<h1 id=\"rollout\">Rollout {} · {}@{} to <span class=\"mono\">{}</span></h1>",
        r.id,
        esc(&r.release),
        esc(&r.version),
        esc(&r.channel)
    );
    body.push_str(&facts(r));
    let rows: Vec<Vec<String>> = d
        .assignments
        .iter()
        .map(|a| {
            let tone = match a.gate {
                Gate::Succeeded => Tone::Good,
                Gate::Failed => Tone::Bad,
                Gate::Waiting => Tone::Info,
            };
            vec![
                format!(
                    "<a href=\"/ui/customers/{}\">{}</a>",
                    url(&a.customer),
                    esc(&a.customer)
                ),
                esc(&a.wave),
                super::html::when(&a.assigned_at),
                badge(tone, a.gate.as_str()),
                dash(a.gate_reason.as_deref()),
            ]
        })
        .collect();
    body.push_str("<h2>Assigned</h2>");
    if rows.is_empty() {
        body.push_str("<p class=\"muted\">Nobody yet.</p>");
    } else {
        body.push_str(&table(
            &["Customer", "Wave", "Assigned at", "Gate", "Why"],
            &rows,
            "assignments",
        ));
    }
    match super::forecast::rollout_section(&state, &d) {
        Ok(section) => body.push_str(&section),
        Err(e) => return failed(e),
    }
    let events: Vec<Vec<String>> = d
        .events
        .iter()
        .map(|e| {
            vec![
                super::html::when(&e.at),
                esc(e.kind.as_str()),
                dash(e.customer.as_deref()),
                dash(e.wave.as_deref()),
                dash(e.detail.as_deref()),
            ]
        })
        .collect();
    body.push_str("<h2>History</h2>");
    body.push_str(&table(
        &["At", "What", "Customer", "Wave", "Detail"],
        &events,
        "history",
    ));
    respond(
        StatusCode::OK,
        page(&format!("Rollout {}", r.id), true, &body),
    )
}
