//! Forecasts: the packager plans each customer's real path to a candidate
//! (`stackpack forecast`) and the registry keeps the result, tells the packager whom
//! to forecast and from where ([`targets`]), holds every real plan a runner reports
//! against its customer's forecast ([`hold_receipt`]) and fails the customer's
//! health gate on a miss until a person resumes the rollout ([`gate_reason`],
//! [`acknowledge`]). An assignment whose forecast replaces or destroys a resource
//! asks the runner to hold it for a person ([`hold`]).

use semver::Version;
use stackpack_schema::forecast::{
    ForecastMiss, ForecastTarget, ForecastTargets, ForecastView, ReleaseForecast, RunningStack,
    FORECAST_FORMAT,
};
use stackpack_schema::plan::{self, Action};
use stackpack_schema::receipt::{Receipt, ReceiptKind};
use stackpack_schema::rollout::ApprovedKind;

use crate::db::forecasts as fdb;
use crate::db::rollouts as rdb;
use crate::db::sql::Sql;
use crate::error::{Code, Error, Result};

/// The largest forecast document `PUT /api/v1/forecasts/...` reads: a fleet of
/// thousands of customers with their resource changes.
pub const MAX_FORECAST_BYTES: u64 = 16 * 1024 * 1024;

fn bad(message: impl Into<String>) -> Error {
    Error::new(Code::BadRequest, message)
}

/// Checks a forecast sent for `release@version` (the path) and stores it,
/// replacing an earlier forecast of the same version.
pub fn publish<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &Version,
    forecast: &ReleaseForecast,
    now: &str,
) -> Result<()>
where
    Error: From<C::Error>,
{
    if forecast.release != release || &forecast.version != version {
        return Err(bad(format!(
            "the forecast is of `{}@{}`, but was sent to `{release}@{version}`; send it to `/api/v1/forecasts/{}/{}`",
            forecast.release, forecast.version, forecast.release, forecast.version
        )));
    }
    if forecast.format != FORECAST_FORMAT {
        return Err(bad(format!(
            "the forecast's format is `{}`; this registry reads format `{FORECAST_FORMAT}`",
            forecast.format
        )));
    }
    stackpack_schema::reference::validate_name(release)
        .map_err(|e| bad(format!("release `{release}`: {e}")))?;
    let mut seen = std::collections::BTreeSet::new();
    for customer in &forecast.customers {
        stackpack_schema::reference::validate_name(&customer.customer)
            .map_err(|e| bad(format!("customer `{}`: {e}", customer.customer)))?;
        if !seen.insert(customer.customer.as_str()) {
            return Err(bad(format!(
                "customer `{}` is forecast twice",
                customer.customer
            )));
        }
    }
    fdb::put(conn, forecast, now)?;
    Ok(())
}

/// The stored forecast of `release@version` with its summary and misses.
pub fn view<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &Version,
) -> Result<Option<ForecastView>, C::Error> {
    let Some(forecast) = fdb::forecast(conn, release, version)? else {
        return Ok(None);
    };
    Ok(Some(ForecastView {
        summary: forecast.summary(),
        misses: fdb::misses(conn, release, version)?,
        forecast,
    }))
}

/// Whom a rollout of `release@version` (in `channel`, or every customer the ledger
/// knows) would reach, and where each stands: what it runs and the required
/// versions it passes through on the way.
pub fn targets<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &Version,
    channel: Option<&str>,
) -> Result<ForecastTargets, C::Error> {
    let kind = if fdb::is_release(conn, release)? {
        ApprovedKind::Release
    } else {
        ApprovedKind::Stack
    };
    let mut customers = Vec::new();
    for (customer, placed, wave, approve) in fdb::target_customers(conn, channel)? {
        let stacks: Vec<RunningStack> = fdb::running_stacks(conn, &customer)?
            .into_iter()
            .filter_map(|(stack, version, digest)| {
                Some(RunningStack {
                    stack,
                    version,
                    digest: digest.parse().ok()?,
                })
            })
            .collect();
        // A stack rolled out on its own is its own release: it runs its version.
        let running = match kind {
            ApprovedKind::Release => rdb::installed_release(conn, &customer, release)?,
            ApprovedKind::Stack => stacks
                .iter()
                .find(|s| s.stack == release)
                .map(|s| s.version.clone()),
        };
        let through = match (&placed, &running) {
            (Some(placed), Some(running)) => {
                required_path(conn, placed, kind, release, running, version)?
            }
            _ => Vec::new(),
        };
        let wave = placed.as_ref().map(|placed| {
            let config =
                rdb::channel(conn, placed).unwrap_or_else(|_| rdb::ChannelConfig::default_config());
            let index = config.wave_index(wave.as_deref());
            config.waves.get(index).cloned().unwrap_or_default()
        });
        customers.push(ForecastTarget {
            customer,
            channel: placed,
            wave,
            approve,
            running,
            stacks,
            through,
        });
    }
    Ok(ForecastTargets {
        release: release.to_string(),
        version: version.clone(),
        channel: channel.map(str::to_string),
        customers,
    })
}

/// Required versions promoted to `channel` strictly between `from` and `to`, ascending.
fn required_path<C: Sql + ?Sized>(
    conn: &C,
    channel: &str,
    kind: ApprovedKind,
    release: &str,
    from: &Version,
    to: &Version,
) -> Result<Vec<Version>, C::Error> {
    let mut path = Vec::new();
    let mut at = from.clone();
    while let Some(step) = rdb::required_between(conn, channel, kind, release, &at, to)? {
        at = step.version.clone();
        path.push(step.version);
    }
    Ok(path)
}

/// Holds a stored receipt's real plan against its customer's forecast; records a
/// miss when they differ. True when a new miss was recorded. A receipt without a
/// plan digest, of another kind than plan or apply, without a stored forecast, or
/// whose customer or stack the forecast could not plan, is not compared.
pub fn hold_receipt<C: Sql + ?Sized>(
    conn: &C,
    receipt: &Receipt,
    now: &str,
) -> Result<bool, C::Error> {
    let Some(actual) = &receipt.changes_digest else {
        return Ok(false);
    };
    if !matches!(receipt.kind, ReceiptKind::Plan | ReceiptKind::Apply) {
        return Ok(false);
    }
    let (release, version) = match &receipt.release {
        Some(r) => (r.name.as_str(), &r.version),
        None => (receipt.stack.as_str(), &receipt.version),
    };
    let Some(customer) = fdb::customer_forecast(conn, release, version, &receipt.customer)? else {
        return Ok(false);
    };
    let Some(stack) = customer.stack(&receipt.stack) else {
        return Ok(false);
    };
    if !customer.outcome.is_known() || !stack.outcome.is_known() || &stack.changes_digest == actual
    {
        return Ok(false);
    }
    let differences = plan::differences(&stack.planned(), &receipt.changes);
    let drifted = receipt
        .drifted
        .iter()
        .filter(|address| differences.iter().any(|d| &d.address == *address))
        .cloned()
        .collect();
    fdb::insert_miss(
        conn,
        &ForecastMiss {
            customer: receipt.customer.clone(),
            release: release.to_string(),
            version: version.clone(),
            stack: receipt.stack.clone(),
            receipt_id: receipt.id.clone(),
            differences,
            drifted,
            at: now.to_string(),
        },
    )
}

/// Why `customer` fails the gate of a rollout of `release@version` on a forecast
/// miss nobody acknowledged: `forecast missed: globex: update `aws_vpc.main`, …`.
pub fn gate_reason<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &Version,
    customer: &str,
) -> Result<Option<String>, C::Error> {
    Ok(fdb::open_miss(conn, release, version, customer)?.map(|miss| {
        if miss.differences.is_empty() {
            // The digests differ past the changes a receipt lists.
            format!(
                "forecast missed: {}: the real plan of stack `{}` (receipt `{}`) differs from its forecast beyond the changes the receipt lists",
                miss.customer, miss.stack, miss.receipt_id
            )
        } else {
            format!("forecast missed: {}", miss.describe())
        }
    }))
}

/// Acknowledges the misses of `release@version` (a person resumed its rollout):
/// they no longer fail the gate; a new miss does again.
pub fn acknowledge<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &Version,
) -> Result<(), C::Error> {
    fdb::acknowledge(conn, release, version).map(|_| ())
}

/// Words for an assignment the runner must hold for a person, whatever its approval
/// policy: `customer`'s forecast of `release@version` replaces or destroys resources.
pub fn hold<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &Version,
    customer: &str,
) -> Result<Option<String>, C::Error> {
    let Some(forecast) = fdb::customer_forecast(conn, release, version, customer)? else {
        return Ok(None);
    };
    if !forecast.outcome.is_destructive() {
        return Ok(None);
    }
    Ok(Some(format!(
        "the vendor's forecast {}: held for a person whatever `[sync] approve` says",
        destructive_words(&forecast)
    )))
}

/// `replaces `cluster: aws_eks_node_group.system`; destroys `network: aws_nat_gateway.a``.
fn destructive_words(forecast: &stackpack_schema::forecast::CustomerForecast) -> String {
    let mut parts = Vec::new();
    for (action, verb) in [(Action::Replace, "replaces"), (Action::Destroy, "destroys")] {
        let addresses: Vec<String> = forecast
            .stacks
            .iter()
            .flat_map(|s| {
                s.changes
                    .iter()
                    .filter(move |c| c.action == action)
                    .map(move |c| format!("`{}: {}`", s.stack, c.address))
            })
            .collect();
        if addresses.is_empty() {
            continue;
        }
        let shown = addresses.iter().take(3).cloned().collect::<Vec<_>>();
        let more = addresses.len() - shown.len();
        let mut line = format!("{verb} {}", shown.join(", "));
        if more > 0 {
            line.push_str(&format!(" and {more} more"));
        }
        parts.push(line);
    }
    if parts.is_empty() {
        // The outcome says destructive though no change is listed.
        return format!("says `{}`", forecast.outcome.words());
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests;
