//! The forecast parts of the support pages: on `/ui/rollouts/{id}` the version's
//! forecast (its line, each customer's outcome and changes) and the real plans that
//! missed it; on `/ui/customers/{id}` that customer's misses. Every value escaped.

use stackpack_schema::forecast::{CustomerForecast, ForecastMiss, ForecastOutcome};

use super::fleet::customer_link;
use super::html::{badge, br, html, joined, muted, prose, table, when, Markup, Tone};
use crate::api::RolloutDetail;
use crate::db::forecasts as fdb;
use crate::error::Result;
use crate::state::AppState;

/// How many changes a customer's row lists before "and N more".
const CHANGES_SHOWN: usize = 5;
/// How many of a customer's misses its page lists.
const CUSTOMER_MISSES: usize = 50;

fn outcome_badge(outcome: ForecastOutcome) -> Markup {
    let tone = match outcome {
        ForecastOutcome::NoChange | ForecastOutcome::InPlace => Tone::Good,
        ForecastOutcome::Replace | ForecastOutcome::Destroy => Tone::Bad,
        ForecastOutcome::NotForecast | ForecastOutcome::Skipped => Tone::Warn,
    };
    badge(tone, outcome.words())
}

/// `network: update `aws_vpc.main``, a few, escaped.
fn changes_text(customer: &CustomerForecast) -> Markup {
    let all: Vec<Markup> = customer
        .stacks
        .iter()
        .flat_map(|s| {
            s.changes
                .iter()
                .map(move |c| html! { (s.stack) ": " (c.action) " " (c.address) })
        })
        .collect();
    if all.is_empty() {
        return match &customer.reason {
            Some(reason) => prose(reason),
            None => muted("-"),
        };
    }
    let shown = &all[..all.len().min(CHANGES_SHOWN)];
    html! {
        (joined(shown, &br()))
        @if all.len() > CHANGES_SHOWN {
            br; "and " (all.len() - CHANGES_SHOWN) " more"
        }
    }
}

/// The misses as a table (or a line saying there are none).
fn misses_table(misses: &[ForecastMiss], id: &str) -> Markup {
    if misses.is_empty() {
        return html! { p.muted { "Every real plan reported so far matched its forecast." } };
    }
    let rows: Vec<Vec<Markup>> = misses
        .iter()
        .map(|m| {
            let cause = if m.explained_by_drift() {
                badge(Tone::Warn, "changed by hand")
            } else {
                badge(Tone::Bad, "forecast wrong")
            };
            vec![
                when(&m.at),
                customer_link(&m.customer),
                html! { (m.release) "@" (m.version) },
                html! { (m.stack) },
                html! { (m.receipt_id) },
                cause,
                html! { (m.describe()) },
            ]
        })
        .collect();
    table(
        &[
            "At",
            "Customer",
            "Version",
            "Stack",
            "Receipt",
            "Cause",
            "Difference",
        ],
        &rows,
        id,
    )
}

/// The forecast section of a rollout's page.
pub fn rollout_section(state: &AppState, d: &RolloutDetail) -> Result<Markup> {
    let r = &d.rollout;
    let Ok(version) = semver::Version::parse(&r.version) else {
        return Ok(html! {});
    };
    let forecast = state
        .db
        .support_any(|c| fdb::forecast(c, &r.release, &version))?;
    let Some(forecast) = forecast else {
        return Ok(html! {
            h2 { "Forecast" }
            p.muted {
                "No forecast of this version; "
                span.mono { "stackpack forecast " (r.release) "@" (r.version) } " makes one."
            }
        });
    };
    let dash = || html! { "-" };
    let rows: Vec<Vec<Markup>> = forecast
        .customers
        .iter()
        .map(|c| {
            vec![
                customer_link(&c.customer),
                c.wave.as_deref().map_or_else(dash, |w| html! { (w) }),
                c.running.as_ref().map_or_else(dash, |v| html! { (v) }),
                outcome_badge(c.outcome),
                changes_text(c),
            ]
        })
        .collect();
    Ok(html! {
        h2 { "Forecast" }
        p.summary id="forecast-summary" { (prose(&forecast.summary())) }
        (table(&["Customer", "Wave", "Running", "Outcome", "Changes"], &rows, "forecast"))
        h2 { "Forecast misses" }
        (misses_table(&d.misses, "misses"))
    })
}

/// The misses section of a customer's page.
pub fn customer_section(state: &AppState, customer: &str) -> Result<Markup> {
    let misses = state
        .db
        .support_any(|c| fdb::customer_misses(c, customer, CUSTOMER_MISSES))?;
    if misses.is_empty() {
        return Ok(html! {});
    }
    Ok(html! {
        h2 { "Forecast misses" }
        p.summary { "Real plans that differed from the vendor's forecast, newest first." }
        (misses_table(&misses, "misses"))
    })
}
