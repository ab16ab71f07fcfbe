//! Promotion reads the forecast: before the vendor signs "R@V is approved for C",
//! the registry's forecast of R@V says what each customer's plan will do. A customer
//! whose runner applies destructive plans on its own (`[sync] approve = "auto"`, or
//! a runner that never said) and whose forecast replaces or destroys a resource the
//! bundle's own policies call stateful stops the promotion, naming the customer,
//! unless the vendor accepts it knowingly (`--accept-forecast`); the registry then
//! asks those runners to hold the plan for a person.

use semver::Version;
use stackpack_schema::forecast::{ForecastOutcome, ForecastTargets, ForecastView};
use stackpack_schema::rollout::Approve;

use crate::error::{Error, Result};
use crate::forecast::api::{first_line, LedgerApi};

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
    let Some(view) = api.view(release, version)? else {
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
    let targets = api.targets(release, version, Some(channel))?;
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
