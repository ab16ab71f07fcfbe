//! `GET /api/v1/adoption`: how many customers ran each version of each stack over
//! time, replayed from the receipts that changed what they run.

use std::collections::{BTreeMap, HashMap};

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use semver::Version;

use crate::api::{Adoption, AdoptionPoint};
use crate::auth::Action;
use crate::controllers::context;
use crate::controllers::ledger::reply;
use crate::db;
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
    fn start(self, time: &str) -> String {
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

/// What customers run of one stack at a point of the replay.
#[derive(Default)]
struct Running {
    /// Customer → version.
    customers: HashMap<String, String>,
    /// Version → how many customers run it.
    counts: BTreeMap<String, u64>,
}

/// Each stack's adoption (or only `stack`'s), by stack name.
pub fn adoption(state: &AppState, stack: Option<&str>, bucket: Bucket) -> Result<Vec<Adoption>> {
    let changes = state.db.support(|c| db::ledger::changes(c, stack))?;
    // Per stack, what each customer runs and how many run each version, kept as the
    // changes are replayed: a bucket's point copies the counts, not the customers.
    let mut running: BTreeMap<String, Running> = BTreeMap::new();
    let mut points: BTreeMap<String, Vec<AdoptionPoint>> = BTreeMap::new();
    let mut pending: Option<String> = None;
    let snapshot = |running: &BTreeMap<String, Running>,
                    points: &mut BTreeMap<String, Vec<AdoptionPoint>>,
                    at: &str| {
        for (stack, now) in running {
            // A stack nobody ran yet (only destroyed, say) has no point to show.
            if now.counts.is_empty() && !points.contains_key(stack) {
                continue;
            }
            let list = points.entry(stack.clone()).or_default();
            if list.last().is_some_and(|p| p.customers == now.counts) {
                continue;
            }
            list.push(AdoptionPoint {
                at: at.to_string(),
                total: now.customers.len() as u64,
                customers: now.counts.clone(),
            });
        }
    };
    for change in changes {
        let at = bucket.start(&change.finished_at);
        if pending.as_ref().is_some_and(|p| *p != at) {
            snapshot(
                &running,
                &mut points,
                pending.as_deref().unwrap_or_default(),
            );
        }
        pending = Some(at);
        let now = running.entry(change.stack).or_default();
        let before = if change.destroy {
            now.customers.remove(&change.customer)
        } else {
            *now.counts.entry(change.version.clone()).or_default() += 1;
            now.customers.insert(change.customer, change.version)
        };
        if let Some(before) = before {
            if let Some(count) = now.counts.get_mut(&before) {
                *count -= 1;
                if *count == 0 {
                    now.counts.remove(&before);
                }
            }
        }
    }
    if let Some(at) = &pending {
        snapshot(&running, &mut points, at);
    }
    Ok(points
        .into_iter()
        .map(|(stack, points)| {
            let mut versions: Vec<String> = points
                .iter()
                .flat_map(|p| p.customers.keys().cloned())
                .collect();
            versions.sort_by(|a, b| match (Version::parse(a), Version::parse(b)) {
                (Ok(a), Ok(b)) => a.cmp_precedence(&b),
                _ => a.cmp(b),
            });
            versions.dedup();
            Adoption {
                stack,
                bucket: bucket.as_str().to_string(),
                versions,
                points,
            }
        })
        .collect())
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
pub async fn handle(State(state): State<SharedState>, headers: HeaderMap, uri: Uri) -> Response {
    reply((|| {
        let ctx = context(&state, &headers, &uri)?;
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
        adoption(&state, ctx.query("stack"), bucket)
    })())
}
