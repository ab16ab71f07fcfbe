//! Forecasts' tables: the packager's forecast of each release version, each
//! customer's part of it by key, and the real plans that missed it. Plain functions;
//! what they mean is [`crate::forecast`].
//!
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL
//! (PG6: the three tables; `customers.approve` came with PG4, `fleet_cells` and
//! `release_indexes`, which targets read, with PG4 and PG5).

use stackpack_schema::forecast::{CustomerForecast, ForecastMiss, ReleaseForecast};
use stackpack_schema::rollout::Approve;

use super::sql::{from_rows, Decode, FromRow, Row, Sql};

pub const CUSTOMER_FORECAST_SQL: &str = "SELECT document FROM forecast_customers
         WHERE release = $1 AND version = $2 AND customer = $3";
pub const OPEN_MISS_SQL: &str = "SELECT customer, release, version, stack, receipt_id,
             differences, drifted, at
         FROM forecast_misses
         WHERE release = $1 AND version = $2 AND customer = $3 AND acknowledged = 0
         ORDER BY id LIMIT 1";

/// The queries a receipt's gate and the assignment poll run, for the query-plan test.
pub const HOT_QUERIES: &[(&str, &str)] = &[
    ("customer_forecast", CUSTOMER_FORECAST_SQL),
    ("open_miss", OPEN_MISS_SQL),
];

const MISS_COLUMNS: &str =
    "customer, release, version, stack, receipt_id, differences, drifted, at";

/// A JSON document stored as text: a document that does not read is a `Decode`
/// error naming its column, on either backend.
fn json_column<T: serde::de::DeserializeOwned>(r: &Row, name: &str) -> Result<T, Decode> {
    r.parsed_with(name, |text| {
        serde_json::from_str(text).map_err(|e| e.to_string())
    })
}

impl FromRow for ForecastMiss {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(ForecastMiss {
            customer: r.get("customer")?,
            release: r.get("release")?,
            version: r.parsed("version")?,
            stack: r.get("stack")?,
            receipt_id: r.get("receipt_id")?,
            differences: json_column(r, "differences")?,
            drifted: json_column(r, "drifted")?,
            at: r.get("at")?,
        })
    }
}

/// Stores `forecast`, replacing an earlier forecast of the same version (and its
/// per-customer rows; the misses already recorded stay).
pub fn put<C: Sql + ?Sized>(
    conn: &C,
    forecast: &ReleaseForecast,
    now: &str,
) -> Result<(), C::Error> {
    let release = forecast.release.as_str();
    let version = forecast.version.to_string();
    let digest = forecast.digest.to_string();
    let document = serde_json::to_string(forecast).expect("a forecast serialises");
    conn.execute(
        "INSERT INTO forecasts
             (release, version, kind, digest, channel, created_at, received_at, document)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (release, version) DO UPDATE SET kind = excluded.kind,
             digest = excluded.digest, channel = excluded.channel,
             created_at = excluded.created_at, received_at = excluded.received_at,
             document = excluded.document",
        &[
            release.into(),
            version.as_str().into(),
            forecast.kind.as_str().into(),
            digest.as_str().into(),
            forecast.channel.as_deref().into(),
            forecast.created_at.as_str().into(),
            now.into(),
            document.as_str().into(),
        ],
    )?;
    conn.execute(
        "DELETE FROM forecast_customers WHERE release = $1 AND version = $2",
        &[release.into(), version.as_str().into()],
    )?;
    for customer in &forecast.customers {
        let document = serde_json::to_string(customer).expect("a forecast serialises");
        // A customer named twice keeps its last part, as `INSERT OR REPLACE` did
        // (`forecast::store` refuses such a forecast before it gets here).
        conn.execute(
            "INSERT INTO forecast_customers (release, version, customer, outcome, document)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (release, version, customer) DO UPDATE SET
                 outcome = excluded.outcome, document = excluded.document",
            &[
                release.into(),
                version.as_str().into(),
                customer.customer.as_str().into(),
                customer.outcome.as_str().into(),
                document.as_str().into(),
            ],
        )?;
    }
    Ok(())
}

/// The stored forecast of `release@version`.
pub fn forecast<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &semver::Version,
) -> Result<Option<ReleaseForecast>, C::Error> {
    let row = conn.query_opt(
        "SELECT document FROM forecasts WHERE release = $1 AND version = $2",
        &[release.into(), version.to_string().as_str().into()],
    )?;
    Ok(row.map(|r| json_column(&r, "document")).transpose()?)
}

/// One customer's part of the forecast of `release@version`, by key.
pub fn customer_forecast<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &semver::Version,
    customer: &str,
) -> Result<Option<CustomerForecast>, C::Error> {
    let row = conn.query_opt(
        CUSTOMER_FORECAST_SQL,
        &[
            release.into(),
            version.to_string().as_str().into(),
            customer.into(),
        ],
    )?;
    Ok(row.map(|r| json_column(&r, "document")).transpose()?)
}

/// Records a miss; false when this receipt's miss on this stack was recorded before.
pub fn insert_miss<C: Sql + ?Sized>(conn: &C, miss: &ForecastMiss) -> Result<bool, C::Error> {
    let version = miss.version.to_string();
    let differences = serde_json::to_string(&miss.differences).expect("differences serialise");
    let drifted = serde_json::to_string(&miss.drifted).expect("addresses serialise");
    let inserted = conn.execute(
        "INSERT INTO forecast_misses (release, version, customer, stack,
             receipt_id, differences, drifted, explained_by_drift, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (receipt_id, stack) DO NOTHING",
        &[
            miss.release.as_str().into(),
            version.as_str().into(),
            miss.customer.as_str().into(),
            miss.stack.as_str().into(),
            miss.receipt_id.as_str().into(),
            differences.as_str().into(),
            drifted.as_str().into(),
            miss.explained_by_drift().into(),
            miss.at.as_str().into(),
        ],
    )?;
    Ok(inserted > 0)
}

/// The first miss of `customer` on `release@version` nobody acknowledged yet.
pub fn open_miss<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &semver::Version,
    customer: &str,
) -> Result<Option<ForecastMiss>, C::Error> {
    let row = conn.query_opt(
        OPEN_MISS_SQL,
        &[
            release.into(),
            version.to_string().as_str().into(),
            customer.into(),
        ],
    )?;
    Ok(row.as_ref().map(ForecastMiss::from_row).transpose()?)
}

/// Every miss of `release@version`, oldest first.
pub fn misses<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &semver::Version,
) -> Result<Vec<ForecastMiss>, C::Error> {
    let rows = conn.query(
        &format!(
            "SELECT {MISS_COLUMNS} FROM forecast_misses
             WHERE release = $1 AND version = $2 ORDER BY id"
        ),
        &[release.into(), version.to_string().as_str().into()],
    )?;
    Ok(from_rows(&rows)?)
}

/// A customer's misses, newest first (at most `limit`).
pub fn customer_misses<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    limit: usize,
) -> Result<Vec<ForecastMiss>, C::Error> {
    let rows = conn.query(
        &format!(
            "SELECT {MISS_COLUMNS} FROM forecast_misses
             WHERE customer = $1 ORDER BY id DESC LIMIT $2"
        ),
        &[
            customer.into(),
            i64::try_from(limit).unwrap_or(i64::MAX).into(),
        ],
    )?;
    Ok(from_rows(&rows)?)
}

/// Acknowledges every miss of `release@version`: they fail no gate any more.
/// Returns how many were open.
pub fn acknowledge<C: Sql + ?Sized>(
    conn: &C,
    release: &str,
    version: &semver::Version,
) -> Result<u64, C::Error> {
    conn.execute(
        "UPDATE forecast_misses SET acknowledged = 1
         WHERE release = $1 AND version = $2 AND acknowledged = 0",
        &[release.into(), version.to_string().as_str().into()],
    )
}

/// Stores the approval policy a runner's sync reported.
pub fn set_approve<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
    approve: Approve,
) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE customers SET approve = $2 WHERE id = $1",
        &[customer.into(), approve.as_str().into()],
    )?;
    Ok(())
}

/// A customer as a forecast target starts from it: id, channel, wave, approval policy.
pub type TargetRow = (String, Option<String>, Option<String>, Option<Approve>);

/// The customers of `channel` (every customer the ledger knows without one), by id
/// (bytes: `customers.id` is `"C"` on PostgreSQL).
pub fn target_customers<C: Sql + ?Sized>(
    conn: &C,
    channel: Option<&str>,
) -> Result<Vec<TargetRow>, C::Error> {
    // `CAST`: a bare `$1 IS NULL` gives PostgreSQL no type for the parameter.
    let filter = if channel.is_some() {
        "WHERE channel = $1"
    } else {
        "WHERE CAST($1 AS TEXT) IS NULL"
    };
    let rows = conn.query(
        &format!("SELECT id, channel, wave, approve FROM customers {filter} ORDER BY id"),
        &[channel.into()],
    )?;
    let target = |r: &Row| {
        Ok::<_, Decode>((
            r.get("id")?,
            r.get("channel")?,
            r.get("wave")?,
            r.parsed_opt("approve")?,
        ))
    };
    Ok(rows.iter().map(target).collect::<Result<_, _>>()?)
}

/// What a customer runs of each stack now: the version and bundle digest of the last
/// change that succeeded (a destroyed stack runs nothing), by stack name (bytes).
pub fn running_stacks<C: Sql + ?Sized>(
    conn: &C,
    customer: &str,
) -> Result<Vec<(String, semver::Version, String)>, C::Error> {
    let rows = conn.query(
        "SELECT stack, version, digest FROM fleet_cells
         WHERE customer = $1 AND version IS NOT NULL AND digest IS NOT NULL ORDER BY stack",
        &[customer.into()],
    )?;
    let stack =
        |r: &Row| Ok::<_, Decode>((r.get("stack")?, r.parsed("version")?, r.get("digest")?));
    Ok(rows.iter().map(stack).collect::<Result<_, _>>()?)
}

/// True when the registry holds a release (an index) named `name`.
pub fn is_release<C: Sql + ?Sized>(conn: &C, name: &str) -> Result<bool, C::Error> {
    let row = conn.query_one(
        "SELECT EXISTS (SELECT 1 FROM release_indexes WHERE name = $1) AS found",
        &[name.into()],
    )?;
    Ok(row.get("found")?)
}
