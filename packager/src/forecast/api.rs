//! The registry's JSON API beside its OCI API, as forecasts use it: which customers a
//! rollout would reach (`GET /api/v1/forecast-targets`), the stored forecast
//! (`GET`/`PUT /api/v1/forecasts/{release}/{version}`). `forecast` and `promote`
//! both talk through this one client.

use semver::Version;
use stackpack_bundle::remote::http;
use stackpack_schema::forecast::{ForecastTargets, ForecastView, ReleaseForecast};

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

    /// The token, refused up front when a request needs one (before minutes of
    /// planning, not after).
    pub fn require_token(&self, why: &str) -> Result<&str> {
        self.token.as_deref().ok_or_else(|| {
            Error::usage(format!("{why} needs a registry token")).hint(
                "set `STACKPACK_REGISTRY_TOKEN` to a token that may publish, or pass `--no-send`",
            )
        })
    }

    /// `GET /api/v1/forecast-targets?release=R&version=V[&channel=C]`.
    pub fn targets(
        &self,
        release: &str,
        version: &Version,
        channel: Option<&str>,
    ) -> Result<ForecastTargets> {
        let mut path = format!("/api/v1/forecast-targets?release={release}&version={version}");
        if let Some(channel) = channel {
            path.push_str(&format!("&channel={channel}"));
        }
        self.get(&path)?.ok_or_else(|| {
            Error::refused(format!(
                "registry `{}` has no forecast targets for `{release}@{version}`",
                self.base
            ))
            .hint("the registry does not know this release, or is older than this `stackpack` and has no forecasts")
        })
    }

    /// `GET /api/v1/forecasts/{release}/{version}`; `None` when none is stored.
    pub fn view(&self, release: &str, version: &Version) -> Result<Option<ForecastView>> {
        self.get(&format!("/api/v1/forecasts/{release}/{version}"))
    }

    /// `PUT /api/v1/forecasts/{release}/{version}`: the registry keeps the forecast.
    pub fn send(&self, forecast: &ReleaseForecast) -> Result<()> {
        let token = self.require_token("sending the forecast")?;
        let url = format!(
            "{}/api/v1/forecasts/{}/{}",
            self.base, forecast.release, forecast.version
        );
        let body = serde_json::to_vec(forecast).expect("a forecast serialises");
        let answer = http::put_json(&url, token, body).map_err(|e| {
            Error::refused(format!("cannot send the forecast to `{url}`: {e}"))
                .hint("run again when the registry answers, or pass `--no-send` to only print it")
        })?;
        if !(200..300).contains(&answer.status) {
            return Err(Error::refused(format!(
                "registry `{}` refused the forecast of `{}@{}` (HTTP {}): {}",
                self.base,
                forecast.release,
                forecast.version,
                answer.status,
                first_line(&answer.body)
            ))
            .hint(
                "a forecast is sent with a token that may publish (`STACKPACK_REGISTRY_TOKEN`)",
            ));
        }
        Ok(())
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

pub(crate) fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

fn unreachable(url: &str, e: http::HttpError) -> Error {
    Error::refused(format!("cannot reach `{url}`: {e}"))
        .hint("check the registry's address and that it runs; pass `--insecure` for plain HTTP on loopback")
}
