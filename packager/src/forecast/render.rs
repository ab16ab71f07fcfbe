//! How a forecast reads on a terminal: one row per customer, its destructive changes
//! first, and the one-line summary the registry shows too.

use stackpack_schema::forecast::{CustomerForecast, ReleaseForecast};
use stackpack_schema::plan::Action;

const HEADERS: [&str; 5] = ["customer", "wave", "from", "outcome", "changes"];

/// `forecast: `acme`: replace (2.1 s)`, as each customer finishes.
pub fn progress_line(forecast: &CustomerForecast) -> String {
    format!(
        "forecast: `{}`: {} ({:.1} s)",
        forecast.customer,
        forecast.outcome.words(),
        forecast.seconds
    )
}

/// What the customer runs: the release version, else each stack's.
fn from(c: &CustomerForecast) -> String {
    if let Some(running) = &c.running {
        return running.to_string();
    }
    let stacks: Vec<String> = c
        .stacks
        .iter()
        .filter_map(|s| s.from.as_ref().map(|v| format!("{}@{v}", s.stack)))
        .collect();
    if stacks.is_empty() {
        "-".to_string()
    } else {
        stacks.join(", ")
    }
}

/// `replace app: terraform_data.app (triggers_replace); update …`: destructive
/// changes first; or why there is no plan.
fn changes(c: &CustomerForecast) -> String {
    if !c.outcome.is_known() {
        let reason = c.reason.as_deref().unwrap_or_default();
        return reason.lines().next().unwrap_or_default().to_string();
    }
    let mut all: Vec<(u8, String)> = c
        .stacks
        .iter()
        .flat_map(|s| {
            s.changes.iter().map(move |r| {
                let rank = match r.action {
                    Action::Destroy => 0,
                    Action::Replace => 1,
                    Action::Update => 2,
                    Action::Create => 3,
                };
                let attributes = if r.attributes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.attributes.join(", "))
                };
                (
                    rank,
                    format!("{} {}: {}{attributes}", r.action, s.stack, r.address),
                )
            })
        })
        .collect();
    all.sort_by_key(|(rank, _)| *rank);
    let text: Vec<String> = all.into_iter().map(|(_, t)| t).collect();
    if text.is_empty() {
        "-".to_string()
    } else {
        text.join("; ")
    }
}

/// The table and the summary, for a terminal.
pub fn human(forecast: &ReleaseForecast) -> String {
    let rows: Vec<Vec<String>> = forecast
        .customers
        .iter()
        .map(|c| {
            let mut outcome = c.outcome.words().to_string();
            if c.cached {
                outcome.push_str(" (cached)");
            }
            vec![
                c.customer.clone(),
                c.wave.clone().unwrap_or_else(|| "-".into()),
                from(c),
                outcome,
                changes(c),
            ]
        })
        .collect();
    let mut out = if rows.is_empty() {
        String::new()
    } else {
        stackpack_terminal::table(&HEADERS, &rows)
    };
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "{}@{}: {}\n",
        forecast.release,
        forecast.version,
        forecast.summary()
    ));
    out
}

/// Customers the forecast says nothing of (skipped, not forecast), for stderr.
pub fn unknown(forecast: &ReleaseForecast) -> Vec<String> {
    forecast
        .customers
        .iter()
        .filter(|c| !c.outcome.is_known())
        .map(|c| {
            format!(
                "customer `{}` {}: {}",
                c.customer,
                if c.outcome == stackpack_schema::forecast::ForecastOutcome::Skipped {
                    "was skipped"
                } else {
                    "was not forecast"
                },
                c.reason
                    .as_deref()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
            )
        })
        .collect()
}
