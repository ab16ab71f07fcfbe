//! Forecasts' tables: the packager's forecast of each release version, each
//! customer's part of it by key, and the real plans that missed it. Plain functions;
//! what they mean is [`crate::forecast`].

use rusqlite::{params, Connection, OptionalExtension, Row};
use stackpack_schema::forecast::{CustomerForecast, ForecastMiss, ReleaseForecast};
use stackpack_schema::rollout::Approve;

use super::{parsed_opt, Text};

pub const CUSTOMER_FORECAST_SQL: &str = "SELECT document FROM forecast_customers
         WHERE release = ?1 AND version = ?2 AND customer = ?3";
pub const OPEN_MISS_SQL: &str = "SELECT customer, release, version, stack, receipt_id,
             differences, drifted, at
         FROM forecast_misses
         WHERE release = ?1 AND version = ?2 AND customer = ?3 AND acknowledged = 0
         ORDER BY id LIMIT 1";

/// The queries a receipt's gate and the assignment poll run, for the query-plan test.
pub const HOT_QUERIES: &[(&str, &str)] = &[
    ("customer_forecast", CUSTOMER_FORECAST_SQL),
    ("open_miss", OPEN_MISS_SQL),
];

const MISS_COLUMNS: &str =
    "customer, release, version, stack, receipt_id, differences, drifted, at";

fn json_column<T: serde::de::DeserializeOwned>(r: &Row<'_>, index: usize) -> rusqlite::Result<T> {
    let text: String = r.get(index)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn miss_row(r: &Row<'_>) -> rusqlite::Result<ForecastMiss> {
    Ok(ForecastMiss {
        customer: r.get(0)?,
        release: r.get(1)?,
        version: super::parsed(r, 2)?,
        stack: r.get(3)?,
        receipt_id: r.get(4)?,
        differences: json_column(r, 5)?,
        drifted: json_column(r, 6)?,
        at: r.get(7)?,
    })
}

/// Stores `forecast`, replacing an earlier forecast of the same version (and its
/// per-customer rows; the misses already recorded stay).
pub fn put(conn: &Connection, forecast: &ReleaseForecast, now: &str) -> rusqlite::Result<()> {
    let version = forecast.version.to_string();
    let document = serde_json::to_string(forecast).expect("a forecast serialises");
    conn.prepare_cached(
        "INSERT OR REPLACE INTO forecasts
             (release, version, kind, digest, channel, created_at, received_at, document)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        forecast.release,
        version,
        forecast.kind.as_str(),
        forecast.digest.to_string(),
        forecast.channel,
        forecast.created_at,
        now,
        document
    ])?;
    conn.prepare_cached("DELETE FROM forecast_customers WHERE release = ?1 AND version = ?2")?
        .execute(params![forecast.release, version])?;
    let mut insert = conn.prepare_cached(
        "INSERT OR REPLACE INTO forecast_customers (release, version, customer, outcome, document)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for customer in &forecast.customers {
        let document = serde_json::to_string(customer).expect("a forecast serialises");
        insert.execute(params![
            forecast.release,
            version,
            customer.customer,
            customer.outcome.as_str(),
            document
        ])?;
    }
    Ok(())
}

/// The stored forecast of `release@version`.
pub fn forecast(
    conn: &Connection,
    release: &str,
    version: &semver::Version,
) -> rusqlite::Result<Option<ReleaseForecast>> {
    conn.prepare_cached("SELECT document FROM forecasts WHERE release = ?1 AND version = ?2")?
        .query_row(params![release, Text(version)], |r| json_column(r, 0))
        .optional()
}

/// One customer's part of the forecast of `release@version`, by key.
pub fn customer_forecast(
    conn: &Connection,
    release: &str,
    version: &semver::Version,
    customer: &str,
) -> rusqlite::Result<Option<CustomerForecast>> {
    conn.prepare_cached(CUSTOMER_FORECAST_SQL)?
        .query_row(params![release, Text(version), customer], |r| {
            json_column(r, 0)
        })
        .optional()
}

/// Records a miss; false when this receipt's miss on this stack was recorded before.
pub fn insert_miss(conn: &Connection, miss: &ForecastMiss) -> rusqlite::Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT OR IGNORE INTO forecast_misses (release, version, customer, stack,
                 receipt_id, differences, drifted, explained_by_drift, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            miss.release,
            Text(&miss.version),
            miss.customer,
            miss.stack,
            miss.receipt_id,
            serde_json::to_string(&miss.differences).expect("differences serialise"),
            serde_json::to_string(&miss.drifted).expect("addresses serialise"),
            miss.explained_by_drift(),
            miss.at
        ])?
        > 0)
}

/// The first miss of `customer` on `release@version` nobody acknowledged yet.
pub fn open_miss(
    conn: &Connection,
    release: &str,
    version: &semver::Version,
    customer: &str,
) -> rusqlite::Result<Option<ForecastMiss>> {
    conn.prepare_cached(OPEN_MISS_SQL)?
        .query_row(params![release, Text(version), customer], miss_row)
        .optional()
}

/// Every miss of `release@version`, oldest first.
pub fn misses(
    conn: &Connection,
    release: &str,
    version: &semver::Version,
) -> rusqlite::Result<Vec<ForecastMiss>> {
    conn.prepare_cached(&format!(
        "SELECT {MISS_COLUMNS} FROM forecast_misses
         WHERE release = ?1 AND version = ?2 ORDER BY id"
    ))?
    .query_map(params![release, Text(version)], miss_row)?
    .collect()
}

/// A customer's misses, newest first (at most `limit`).
pub fn customer_misses(
    conn: &Connection,
    customer: &str,
    limit: usize,
) -> rusqlite::Result<Vec<ForecastMiss>> {
    conn.prepare_cached(&format!(
        "SELECT {MISS_COLUMNS} FROM forecast_misses
         WHERE customer = ?1 ORDER BY id DESC LIMIT ?2"
    ))?
    .query_map(
        params![customer, i64::try_from(limit).unwrap_or(i64::MAX)],
        miss_row,
    )?
    .collect()
}

/// Acknowledges every miss of `release@version`: they fail no gate any more.
pub fn acknowledge(
    conn: &Connection,
    release: &str,
    version: &semver::Version,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(
        "UPDATE forecast_misses SET acknowledged = 1
         WHERE release = ?1 AND version = ?2 AND acknowledged = 0",
    )?
    .execute(params![release, Text(version)])
}

/// Stores the approval policy a runner's sync reported.
pub fn set_approve(conn: &Connection, customer: &str, approve: Approve) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE customers SET approve = ?2 WHERE id = ?1")?
        .execute(params![customer, approve.as_str()])?;
    Ok(())
}

/// A customer as a forecast target starts from it: id, channel, wave, approval policy.
pub type TargetRow = (String, Option<String>, Option<String>, Option<Approve>);

/// The customers of `channel` (every customer the ledger knows without one), by id.
pub fn target_customers(
    conn: &Connection,
    channel: Option<&str>,
) -> rusqlite::Result<Vec<TargetRow>> {
    let filter = if channel.is_some() {
        "WHERE channel = ?1"
    } else {
        "WHERE ?1 IS NULL"
    };
    conn.prepare_cached(&format!(
        "SELECT id, channel, wave, approve FROM customers {filter} ORDER BY id"
    ))?
    .query_map(params![channel], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, parsed_opt(r, 3)?))
    })?
    .collect()
}

/// What a customer runs of each stack now: the version and bundle digest of the last
/// change that succeeded (a destroyed stack runs nothing), by stack name.
pub fn running_stacks(
    conn: &Connection,
    customer: &str,
) -> rusqlite::Result<Vec<(String, semver::Version, String)>> {
    conn.prepare_cached(
        "SELECT stack, version, digest FROM fleet_cells
         WHERE customer = ?1 AND version IS NOT NULL AND digest IS NOT NULL ORDER BY stack",
    )?
    .query_map(params![customer], |r| {
        Ok((r.get(0)?, super::parsed(r, 1)?, r.get(2)?))
    })?
    .collect()
}

/// True when the registry holds a release (an index) named `name`.
pub fn is_release(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM release_indexes WHERE name = ?1)")?
        .query_row(params![name], |r| r.get(0))
}
