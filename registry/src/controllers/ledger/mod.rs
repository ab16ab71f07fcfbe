//! The ledger API under `/api/v1/`: releases, customers, deployments (receipts) and
//! support's questions. Documented by [`openapi::ApiDoc`], served at
//! `/api/v1/openapi.json`.

pub mod adoption;
pub mod customers;
pub mod deployments;
pub mod fleet;
pub mod known;
pub mod openapi;
pub mod receipts;
pub mod release_fleet;
pub mod release_versions;
/// Stack versions (bundles), named before releases of a whole environment.
pub mod releases;
pub mod stacks;
pub mod support;

use std::collections::HashMap;

use axum::http::{HeaderValue, Uri};
use axum::response::{IntoResponse, Response};

use crate::api::{Customer, Running};
use crate::db;
use crate::error::{Code, Error, Result};
use crate::state::AppState;

/// Rows in a list answer when the request does not say (`limit`).
pub const DEFAULT_LIMIT: usize = 500;
/// The most rows one answer holds; more are a `Link` away.
pub const MAX_LIMIT: usize = 2000;

/// Which page of a list a request asks for: `limit` rows after the cursor `after`.
#[derive(Clone, Debug)]
pub struct Paging {
    pub after: Option<String>,
    pub limit: usize,
}

impl Paging {
    /// From `limit` and `after` in a query string.
    pub fn from_query(query: &HashMap<String, String>) -> Result<Paging> {
        let limit = match query.get("limit").map(String::as_str) {
            None | Some("") => DEFAULT_LIMIT,
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                Ok(n) if n > MAX_LIMIT => {
                    return Err(Error::new(
                        Code::BadRequest,
                        format!(
                            "`limit` is at most {MAX_LIMIT}, not `{n}`; follow the `Link` header's next page for more rows"
                        ),
                    ))
                }
                _ => {
                    return Err(Error::new(
                        Code::BadRequest,
                        format!("`limit` takes a number of rows from 1 to {MAX_LIMIT}, not `{text}`"),
                    ))
                }
            },
        };
        Ok(Paging {
            after: query.get("after").filter(|a| !a.is_empty()).cloned(),
            limit,
        })
    }

    /// `after` as a fleet cursor: `customer/stack`, the stack empty for a customer
    /// that never reported.
    pub fn cell(&self) -> Result<Option<(String, String)>> {
        match &self.after {
            None => Ok(None),
            Some(after) => match after.split_once('/') {
                Some((customer, stack)) if !customer.is_empty() && !stack.contains('/') => {
                    Ok(Some((customer.to_string(), stack.to_string())))
                }
                _ => Err(Error::new(
                    Code::BadRequest,
                    format!(
                        "`after` takes the last row of the previous page as `customer/stack`, not `{after}`; use the `Link` header's next page"
                    ),
                )),
            },
        }
    }
}

/// A fleet cursor as `after` takes it.
pub fn cell_cursor(customer: &str, stack: Option<&str>) -> String {
    format!("{customer}/{}", stack.unwrap_or_default())
}

/// A list answer: the rows as a JSON array and, when a page may follow, its address
/// in `Link: <…>; rel="next"` (the request's query with `after` set to `next`).
pub fn paged<T: serde::Serialize>(uri: &Uri, (rows, next): (Vec<T>, Option<String>)) -> Response {
    let mut response = axum::Json(rows).into_response();
    if let Some(next) = next {
        if let Ok(value) =
            HeaderValue::from_str(&format!("<{}>; rel=\"next\"", next_page(uri, &next)))
        {
            response.headers_mut().insert("Link", value);
        }
    }
    response
}

/// The address of the page after cursor `next`: the same path and query, with
/// `after` replaced.
pub fn next_page(uri: &Uri, next: &str) -> String {
    let mut pairs: Vec<String> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with("after="))
        .map(str::to_string)
        .collect();
    pairs.push(format!("after={}", encode(next)));
    format!("{}?{}", uri.path(), pairs.join("&"))
}

/// Percent-encodes a query value.
pub use stackpack_bundle::remote::http::percent_encode as encode;

/// Takes a page of rows fetched with one row more than `limit`: the extra row says
/// another page follows, whose cursor `cursor` makes from the page's last row.
pub fn split_page<T>(
    mut rows: Vec<T>,
    limit: usize,
    cursor: impl Fn(&T) -> String,
) -> (Vec<T>, Option<String>) {
    if rows.len() > limit {
        rows.truncate(limit);
        let next = rows.last().map(cursor);
        (rows, next)
    } else {
        (rows, None)
    }
}

/// The time before which a customer's last receipt makes it silent, for an age in
/// seconds: UTC nanoseconds.
pub fn silent_before_ns(age_secs: u64) -> i64 {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let cutoff = now - i128::from(age_secs) * 1_000_000_000;
    i64::try_from(cutoff).unwrap_or(i64::MIN)
}

/// One page of what customers run (everyone's, or one customer's), with behind /
/// prerelease / drifted worked out.
pub fn running_page(
    state: &AppState,
    list: db::fleet::RunningList,
    customer: Option<&str>,
    paging: &Paging,
) -> Result<(Vec<Running>, Option<String>)> {
    let after = paging.cell()?;
    let after = after.as_ref().map(|(c, s)| (c.as_str(), s.as_str()));
    let rows = state
        .db
        .support_any(|c| db::fleet::running_page(c, list, customer, after, paging.limit + 1))?;
    Ok(split_page(rows, paging.limit, |r| {
        cell_cursor(&r.customer, Some(&r.stack))
    }))
}

/// Everything one customer runs.
pub fn running(state: &AppState, customer: &str) -> Result<Vec<Running>> {
    let paging = Paging {
        after: None,
        limit: MAX_LIMIT,
    };
    let mut all = Vec::new();
    let mut page = paging;
    loop {
        let (rows, next) = running_page(
            state,
            db::fleet::RunningList::Everything,
            Some(customer),
            &page,
        )?;
        all.extend(rows);
        match next {
            Some(next) => page.after = Some(next),
            None => return Ok(all),
        }
    }
}

/// Marks each customer stale when its last receipt is older than `age_secs` (or it
/// never reported).
pub fn mark_stale(customers: &mut [Customer], age_secs: u64) {
    let cutoff = silent_before_ns(age_secs);
    for customer in customers {
        let seen_ns = customer
            .last_seen
            .as_ref()
            .map(|t| t.at().unix_timestamp_nanos());
        customer.stale = Some(seen_ns.is_none_or(|ns| ns < i128::from(cutoff)));
    }
}

/// The `staleAfter` query parameter (`7d` when absent), in seconds.
pub fn stale_after(query: Option<&str>) -> Result<u64> {
    let text = query.unwrap_or("7d");
    crate::age::parse_secs(text).ok_or_else(|| {
        crate::error::Error::new(
            crate::error::Code::BadRequest,
            format!(
                "{}; try `staleAfter=7d`",
                crate::age::invalid("staleAfter", text)
            ),
        )
    })
}
