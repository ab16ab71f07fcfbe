//! Promotion reads the forecast: before the vendor signs "R@V is approved for C",
//! the registry's forecast of R@V says what each customer's plan will do. A customer
//! whose runner applies destructive plans on its own (`[sync] approve = "auto"`, or
//! a runner that never said) and whose forecast replaces or destroys a resource the
//! bundle's own policies call stateful stops the promotion, naming the customer,
//! unless the vendor accepts it knowingly (`--accept-forecast`); the registry then
//! asks those runners to hold the plan for a person.

use semver::Version;
use stackpack_bundle::remote::http;
use stackpack_schema::forecast::{ForecastOutcome, ForecastTargets, ForecastView};
use stackpack_schema::rollout::Approve;

use crate::error::{Error, Result};

/// The largest forecast answer read: a few kilobytes a customer.
const MAX_FORECAST_ANSWER: u64 = 64 << 20;

/// The registry's JSON API beside its OCI API: `http://` only on loopback
/// (`--insecure`), else `https://`; the bearer token of `STACKPACK_REGISTRY_TOKEN`.
#[derive(Clone, Debug)]
pub struct LedgerApi {
    base: String,
    token: Option<String>,
}

impl LedgerApi {
    pub fn new(host: &str, insecure: bool) -> LedgerApi {
        let scheme = if insecure { "http" } else { "https" };
        LedgerApi {
            base: format!("{scheme}://{host}"),
            token: std::env::var("STACKPACK_REGISTRY_TOKEN")
                .ok()
                .filter(|t| !t.is_empty()),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// GETs `path` and reads its JSON; `None` on a 404 (a registry without the
    /// ledger, or nothing stored).
    pub fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>> {
        let url = format!("{}{path}", self.base);
        let answer = http::get(&url, self.token.as_deref(), MAX_FORECAST_ANSWER)
            .map_err(|e| unreachable(&url, e))?;
        match answer.status {
            404 => Ok(None),
            200..=299 => serde_json::from_str(&answer.body).map(Some).map_err(|e| {
                Error::refused(format!("`{url}` answered with JSON this build cannot read: {e}"))
                    .hint("the registry and `stackpack` may be of different versions: upgrade the older one")
            }),
            401 | 403 => Err(Error::refused(format!(
                "`{url}` refused the token ({})",
                answer.status
            ))
            .hint("set `STACKPACK_REGISTRY_TOKEN` to a token with the `publish` or `support` role")),
            status => Err(Error::refused(format!(
                "`{url}` answered {status}: {}",
                first_line(&answer.body)
            ))),
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

fn unreachable(url: &str, e: http::HttpError) -> Error {
    Error::refused(format!("cannot reach `{url}`: {e}"))
        .hint("check the registry's address and that it runs; pass `--insecure` for plain HTTP on loopback")
}

/// One customer the forecast stops (or would stop) the promotion for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unattended {
    pub customer: String,
    /// `None`: its runner never reported a policy (treated as `auto`).
    pub approve: Option<Approve>,
    /// `stack: address` of each stateful resource replaced or destroyed.
    pub stateful: Vec<String>,
}

/// What the forecast says about a promotion to one channel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForecastCheck {
    /// The registry's one-line summary; `None`: no forecast of this version is stored.
    pub summary: Option<String>,
    /// Customers whose runners would apply a stateful replacement on their own.
    pub unattended: Vec<Unattended>,
    /// Customers of the channel with no usable forecast (not forecast, skipped, or
    /// not in the forecast at all), with why.
    pub unknown: Vec<(String, String)>,
    /// Customers whose forecast is destructive but whose runners hold such plans.
    pub held: Vec<String>,
    /// The stored forecast is of another index than the one being promoted.
    pub stale: Option<String>,
}

/// Reads the forecast of `release@version` and the channel's customers from the
/// registry, and says who a promotion to `channel` would put at risk.
pub fn check(
    api: &LedgerApi,
    release: &str,
    version: &Version,
    digest: &stackpack_schema::digest::Digest,
    channel: &str,
) -> Result<ForecastCheck> {
    let Some(view) = api.get::<ForecastView>(&format!("/api/v1/forecasts/{release}/{version}"))?
    else {
        return Ok(ForecastCheck::default());
    };
    if &view.forecast.digest != digest {
        return Ok(ForecastCheck {
            stale: Some(format!(
                "the stored forecast of `{release}@{version}` is of index `{}`, not the `{}` being promoted",
                view.forecast.digest.short(),
                digest.short()
            )),
            ..ForecastCheck::default()
        });
    }
    let targets: ForecastTargets = api
        .get(&format!(
            "/api/v1/forecast-targets?release={release}&version={version}&channel={channel}"
        ))?
        .unwrap_or(ForecastTargets {
            release: release.to_string(),
            version: version.clone(),
            channel: Some(channel.to_string()),
            customers: Vec::new(),
        });
    Ok(judge(&view, &targets))
}

/// The pure half of [`check`]: the forecast against the channel's customers.
pub fn judge(view: &ForecastView, targets: &ForecastTargets) -> ForecastCheck {
    let mut check = ForecastCheck {
        summary: Some(view.summary.clone()),
        ..ForecastCheck::default()
    };
    for target in &targets.customers {
        let Some(forecast) = view.forecast.customer(&target.customer) else {
            check.unknown.push((
                target.customer.clone(),
                "not in the forecast (it joined the channel later, or the forecast was of another channel)".to_string(),
            ));
            continue;
        };
        match forecast.outcome {
            ForecastOutcome::NotForecast | ForecastOutcome::Skipped => check.unknown.push((
                target.customer.clone(),
                format!(
                    "{}{}",
                    forecast.outcome.words(),
                    forecast
                        .reason
                        .as_deref()
                        .map(|r| format!(": {}", first_line(r)))
                        .unwrap_or_default()
                ),
            )),
            outcome if outcome.is_destructive() => {
                let stateful = forecast.stateful();
                let unattended = target
                    .approve
                    .is_none_or(Approve::applies_destructive_plans);
                if unattended && !stateful.is_empty() {
                    check.unattended.push(Unattended {
                        customer: target.customer.clone(),
                        approve: target.approve,
                        stateful,
                    });
                } else {
                    check.held.push(target.customer.clone());
                }
            }
            _ => {}
        }
    }
    check
}

impl ForecastCheck {
    /// The refusal when customers would lose stateful resources unattended.
    pub fn refusal(&self, release: &str, version: &Version, channel: &str) -> Option<Error> {
        if self.unattended.is_empty() {
            return None;
        }
        let mut message = format!(
            "the forecast of `{release}@{version}` replaces or destroys stateful resources for {} customer(s) of channel `{channel}` whose runners would apply it on their own:",
            self.unattended.len()
        );
        for u in &self.unattended {
            message.push_str(&format!("\n  {}", u.describe()));
        }
        Some(Error::refused(message).hint(
            "change the release or those customers' inputs; or pass `--accept-forecast` to promote anyway: the registry then asks those runners to hold the plan for a person",
        ))
    }
}

impl Unattended {
    pub fn describe(&self) -> String {
        let policy = match self.approve {
            Some(approve) => format!("approve `{approve}`"),
            None => "its runner never reported its approval policy".to_string(),
        };
        let shown: Vec<String> = self
            .stateful
            .iter()
            .take(3)
            .map(|a| format!("`{a}`"))
            .collect();
        let more = self.stateful.len().saturating_sub(shown.len());
        format!(
            "`{}`: {}{} ({policy})",
            self.customer,
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackpack_schema::digest::Digest;
    use stackpack_schema::forecast::{
        CustomerForecast, ForecastTarget, ReleaseForecast, StackForecast, FORECAST_FORMAT,
    };
    use stackpack_schema::plan::{Action, ResourceChange};
    use stackpack_schema::rollout::ApprovedKind;

    fn customer(id: &str, outcome: ForecastOutcome, stateful: &[&str]) -> CustomerForecast {
        let changes: Vec<ResourceChange> = stateful
            .iter()
            .map(|a| ResourceChange {
                address: a.to_string(),
                kind: "aws_s3_bucket".into(),
                action: Action::Replace,
                attributes: vec!["bucket".into()],
            })
            .collect();
        CustomerForecast {
            customer: id.into(),
            wave: None,
            running: None,
            through: vec![],
            outcome,
            stacks: vec![StackForecast {
                stack: "storage".into(),
                from: None,
                from_digest: None,
                to: Version::new(2, 0, 0),
                to_digest: Digest::of(b"b"),
                outcome,
                changes,
                changes_digest: Digest::of(b"c"),
                stateful: stateful.iter().map(|s| s.to_string()).collect(),
            }],
            inputs_set: vec![],
            reason: (!outcome.is_known()).then(|| "no inputs file".to_string()),
            cached: false,
            seconds: 0.0,
        }
    }

    fn target(id: &str, approve: Option<Approve>) -> ForecastTarget {
        ForecastTarget {
            customer: id.into(),
            channel: Some("stable".into()),
            wave: None,
            approve,
            running: None,
            stacks: vec![],
            through: vec![],
        }
    }

    #[test]
    fn only_customers_whose_runners_apply_on_their_own_stop_a_stateful_replacement() {
        let forecast = ReleaseForecast {
            format: FORECAST_FORMAT,
            kind: ApprovedKind::Release,
            release: "platform".into(),
            version: Version::new(2, 0, 0),
            digest: Digest::of(b"index"),
            channel: Some("stable".into()),
            created_at: String::new(),
            account: String::new(),
            customers: vec![
                customer("auto", ForecastOutcome::Replace, &["aws_s3_bucket.models"]),
                customer(
                    "silent",
                    ForecastOutcome::Replace,
                    &["aws_s3_bucket.models"],
                ),
                customer(
                    "careful",
                    ForecastOutcome::Replace,
                    &["aws_s3_bucket.models"],
                ),
                customer("nothing", ForecastOutcome::NoChange, &[]),
                customer("lost", ForecastOutcome::Skipped, &[]),
            ],
        };
        let view = ForecastView {
            summary: forecast.summary(),
            forecast,
            misses: vec![],
        };
        let targets = ForecastTargets {
            release: "platform".into(),
            version: Version::new(2, 0, 0),
            channel: Some("stable".into()),
            customers: vec![
                target("auto", Some(Approve::Auto)),
                target("silent", None),
                target("careful", Some(Approve::AutoUnlessDestructive)),
                target("nothing", Some(Approve::Auto)),
                target("lost", Some(Approve::Auto)),
                target("new", Some(Approve::Auto)),
            ],
        };
        let check = judge(&view, &targets);
        let stopped: Vec<&str> = check
            .unattended
            .iter()
            .map(|u| u.customer.as_str())
            .collect();
        assert_eq!(stopped, ["auto", "silent"]);
        assert_eq!(check.held, ["careful"]);
        let unknown: Vec<&str> = check.unknown.iter().map(|u| u.0.as_str()).collect();
        assert_eq!(unknown, ["lost", "new"]);
        let refusal = check
            .refusal("platform", &Version::new(2, 0, 0), "stable")
            .unwrap();
        assert!(
            refusal
                .message
                .contains("`auto`: `storage: aws_s3_bucket.models` (approve `auto`)"),
            "{}",
            refusal.message
        );
    }
}
