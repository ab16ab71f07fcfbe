//! The forecast parts of the support pages: on `/ui/rollouts/{id}` the version's
//! forecast (its line, each customer's outcome and changes) and the real plans that
//! missed it; on `/ui/customers/{id}` that customer's misses. Every value escaped.

use stackpack_schema::forecast::{CustomerForecast, ForecastMiss, ForecastOutcome};

use super::html::{badge, esc, table, url, Tone};
use crate::api::RolloutDetail;
use crate::db::forecasts as fdb;
use crate::error::Result;
use crate::state::AppState;

/// How many changes a customer's row lists before "and N more".
const CHANGES_SHOWN: usize = 5;
/// How many of a customer's misses its page lists.
const CUSTOMER_MISSES: usize = 50;

fn outcome_badge(outcome: ForecastOutcome) -> String {
    let tone = match outcome {
        ForecastOutcome::NoChange | ForecastOutcome::InPlace => Tone::Good,
        ForecastOutcome::Replace | ForecastOutcome::Destroy => Tone::Bad,
        ForecastOutcome::NotForecast | ForecastOutcome::Skipped => Tone::Warn,
    };
    badge(tone, outcome.words())
}

/// `network: update `aws_vpc.main``, a few, escaped.
fn changes_text(customer: &CustomerForecast) -> String {
    let all: Vec<String> = customer
        .stacks
        .iter()
        .flat_map(|s| {
            s.changes
                .iter()
                .map(move |c| format!("{}: {} {}", s.stack, c.action, c.address))
        })
        .collect();
    if all.is_empty() {
        return match &customer.reason {
            Some(reason) => super::html::prose(reason),
            None => "<span class=\"muted\">-</span>".into(),
        };
    }
    let mut text = all
        .iter()
        .take(CHANGES_SHOWN)
        .map(|c| esc(c))
        .collect::<Vec<_>>()
        .join("<br>");
    if all.len() > CHANGES_SHOWN {
        text.push_str(&format!("<br>and {} more", all.len() - CHANGES_SHOWN));
    }
    text
}

fn customer_link(customer: &str) -> String {
    format!(
        "<a href=\"/ui/customers/{}\">{}</a>",
        url(customer),
        esc(customer)
    )
}

/// The misses as a table (or a line saying there are none).
fn misses_table(misses: &[ForecastMiss], id: &str) -> String {
    if misses.is_empty() {
        return "<p class=\"muted\">Every real plan reported so far matched its forecast.</p>"
            .into();
    }
    let rows: Vec<Vec<String>> = misses
        .iter()
        .map(|m| {
            let cause = if m.explained_by_drift() {
                badge(Tone::Warn, "changed by hand")
            } else {
                badge(Tone::Bad, "forecast wrong")
            };
            vec![
                super::html::when(&m.at),
                customer_link(&m.customer),
                esc(&format!("{}@{}", m.release, m.version)),
                esc(&m.stack),
                esc(&m.receipt_id),
                cause,
                esc(&m.describe()),
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
pub fn rollout_section(state: &AppState, d: &RolloutDetail) -> Result<String> {
    let r = &d.rollout;
    let Ok(version) = semver::Version::parse(&r.version) else {
        return Ok(String::new());
    };
    let forecast = state
        .db
        .support_any(|c| fdb::forecast(c, &r.release, &version))?;
    let mut body = String::from("<h2>Forecast</h2>");
    let Some(forecast) = forecast else {
        body.push_str(&format!(
            "<p class=\"muted\">No forecast of this version; <span class=\"mono\">stackpack forecast {}@{}</span> makes one.</p>",
            esc(&r.release),
            esc(&r.version)
        ));
        return Ok(body);
    };
    body.push_str(&format!(
        "<p class=\"summary\" id=\"forecast-summary\">{}</p>",
        super::html::prose(&forecast.summary())
    ));
    let rows: Vec<Vec<String>> = forecast
        .customers
        .iter()
        .map(|c| {
            vec![
                customer_link(&c.customer),
                c.wave.as_deref().map(esc).unwrap_or_else(|| "-".into()),
                c.running
                    .as_ref()
                    .map(|v| esc(&v.to_string()))
                    .unwrap_or_else(|| "-".into()),
                outcome_badge(c.outcome),
                changes_text(c),
            ]
        })
        .collect();
    body.push_str(&table(
        &["Customer", "Wave", "Running", "Outcome", "Changes"],
        &rows,
        "forecast",
    ));
    body.push_str("<h2>Forecast misses</h2>");
    body.push_str(&misses_table(&d.misses, "misses"));
    Ok(body)
}

/// The misses section of a customer's page.
pub fn customer_section(state: &AppState, customer: &str) -> Result<String> {
    let misses = state
        .db
        .support_any(|c| fdb::customer_misses(c, customer, CUSTOMER_MISSES))?;
    if misses.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "<h2>Forecast misses</h2><p class=\"summary\">Real plans that differed from the vendor's forecast, newest first.</p>{}",
        misses_table(&misses, "misses")
    ))
}
