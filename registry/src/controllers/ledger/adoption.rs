//! `GET /api/v1/adoption`: how many customers ran each version of each stack over
//! time, summed from the per-day deltas `adoption_deltas` keeps as receipts arrive.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::Json;
use semver::Version;

use crate::api::{Adoption, AdoptionPoint};
use crate::auth::Action;
use crate::controllers::Ctx;
use crate::db;
use crate::db::sql::Sql;
use crate::error::{Code, Error, Result};
use crate::state::{AppState, SharedState};

/// How points are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bucket {
    Day,
    Week,
}

impl Bucket {
    pub fn parse(text: &str) -> Option<Bucket> {
        match text {
            "day" => Some(Bucket::Day),
            "week" => Some(Bucket::Week),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Day => "day",
            Bucket::Week => "week",
        }
    }

    /// The first day of the bucket a UTC RFC 3339 time falls in.
    pub fn start(self, time: &str) -> String {
        let day = time.get(..10).unwrap_or(time);
        if self == Bucket::Day {
            return day.to_string();
        }
        let format = time::macros::format_description!("[year]-[month]-[day]");
        match time::Date::parse(day, &format) {
            Ok(date) => {
                let back = date.weekday().number_days_from_monday();
                (date - time::Duration::days(i64::from(back)))
                    .format(&format)
                    .unwrap_or_else(|_| day.to_string())
            }
            Err(_) => day.to_string(),
        }
    }
}

/// Each stack's adoption (or only `stack`'s), by stack name.
pub fn adoption(state: &AppState, stack: Option<&str>, bucket: Bucket) -> Result<Vec<Adoption>> {
    state.db.support_any(|c| answer(c, stack, bucket))
}

/// Each stack's adoption (or only `stack`'s), summed from the days' deltas kept as
/// receipts arrive: a point per bucket in which the counts changed.
pub fn answer<C: Sql + ?Sized>(
    conn: &C,
    stack: Option<&str>,
    bucket: Bucket,
) -> Result<Vec<Adoption>, C::Error> {
    let mut answer = Vec::new();
    let mut current: Option<(String, BTreeMap<String, i64>, Vec<AdoptionPoint>)> = None;
    let mut pending: Option<String> = None;
    for delta in db::ledger::adoption_deltas(conn, stack)? {
        let at = bucket.start(&delta.day);
        let same_stack = current.as_ref().is_some_and(|(s, ..)| *s == delta.stack);
        if let Some((_, counts, points)) = current.as_mut() {
            if !same_stack || pending.as_ref().is_some_and(|p| *p != at) {
                snapshot(counts, points, pending.take().unwrap_or_default());
            }
        }
        if !same_stack {
            if let Some((stack, _, points)) = current.take() {
                answer.extend(finish(stack, bucket, points));
            }
            current = Some((delta.stack.clone(), BTreeMap::new(), Vec::new()));
        }
        pending = Some(at);
        if let Some((_, counts, _)) = current.as_mut() {
            let count = counts.entry(delta.version).or_default();
            *count += delta.delta;
            if *count == 0 {
                counts.retain(|_, count| *count != 0);
            }
        }
    }
    if let Some((stack, counts, mut points)) = current {
        snapshot(&counts, &mut points, pending.unwrap_or_default());
        answer.extend(finish(stack, bucket, points));
    }
    Ok(answer)
}

/// Adds the point at `at` unless the counts are as at the last point (or nobody
/// ran the stack yet, a stack only destroyed, say).
fn snapshot(counts: &BTreeMap<String, i64>, points: &mut Vec<AdoptionPoint>, at: String) {
    let customers: BTreeMap<String, u64> = counts
        .iter()
        .filter(|(_, count)| **count > 0)
        .map(|(version, count)| (version.clone(), *count as u64))
        .collect();
    if customers.is_empty() && points.is_empty() {
        return;
    }
    if points.last().is_some_and(|p| p.customers == customers) {
        return;
    }
    points.push(AdoptionPoint {
        at,
        total: customers.values().sum(),
        customers,
    });
}

/// One stack's answer, with its versions by precedence; none for a stack without
/// a point.
fn finish(stack: String, bucket: Bucket, points: Vec<AdoptionPoint>) -> Option<Adoption> {
    if points.is_empty() {
        return None;
    }
    // The keys were written from receipts' versions, which are semver.
    let mut versions: Vec<Version> = points
        .iter()
        .flat_map(|p| p.customers.keys())
        .filter_map(|text| Version::parse(text).ok())
        .collect();
    versions.sort_by(|a, b| a.cmp_precedence(b).then_with(|| a.cmp(b)));
    versions.dedup();
    Some(Adoption {
        stack,
        bucket: bucket.as_str().to_string(),
        versions,
        points,
    })
}

#[utoipa::path(get, path = "/api/v1/adoption",
    params(
        ("stack" = Option<String>, Query, description = "Only this stack"),
        ("bucket" = Option<String>, Query, description = "`day` (default) or `week`"),
    ),
    responses(
        (status = 200, description = "How many customers ran each version over time, per stack", body = Vec<Adoption>),
        (status = 400, description = "`bucket` is neither `day` nor `week`"),
    ),
    security(("bearer" = [])), tag = "support")]
pub async fn handle(State(state): State<SharedState>, ctx: Ctx) -> Result<Json<Vec<Adoption>>> {
    ctx.authorize(Action::LedgerRead)?;
    let bucket = match ctx.query("bucket") {
        None => Bucket::Day,
        Some(text) => Bucket::parse(text).ok_or_else(|| {
            Error::new(
                Code::BadRequest,
                format!("`bucket` is `day` or `week`, not `{text}`"),
            )
        })?,
    };
    adoption(&state, ctx.query("stack"), bucket).map(Json)
}
