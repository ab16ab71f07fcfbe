//! Asking a registry over its HTTP API (`--url`), from anywhere, through the bundle
//! crate's one HTTP client: plain `http://` only to a loopback address (a support
//! token never crosses a network in clear), answers read within a limit. The token
//! goes in the `Authorization` header only; it is never printed.

use stackpack_bundle::remote::http::{self, HttpError};
use stackpack_registry::controllers::ledger::fleet::Flow;

use crate::commands::{Error, Result};

/// The largest answer one request reads: a page of the fleet matrix (2000 rows) is
/// a few megabytes; anything this large is not a ledger page.
const ANSWER_LIMIT: u64 = 64 * 1024 * 1024;

/// The location line of an error about the registry at `url`.
fn registry_at(url: &str) -> String {
    format!("registry `{url}`")
}

/// The message of the registry's error body (`{"errors":[{"message"}]}`), if any.
fn error_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value["errors"][0]["message"].as_str().map(str::to_string)
}

/// `GET url`, or why no answer came. A `--url` the rule refuses (plain HTTP to
/// another machine, no scheme) is a usage error, exit 2: nothing was sent.
fn get(url: &str, token: Option<&str>) -> Result<http::Answer> {
    http::get(url, token, ANSWER_LIMIT).map_err(|error| {
        let (wrong_url, hint) = match &error {
            HttpError::PlainHttpNotLoopback(_) => (
                true,
                "use the registry's `https://` address; plain `http://` (what `--insecure` allows elsewhere) is only for a registry on this machine",
            ),
            HttpError::BadUrl(_) => (
                true,
                "give `--url` as `https://registry.example`, or `http://127.0.0.1:5000` on this machine",
            ),
            HttpError::TooLarge { .. } => (false, "check that `--url` names a stackpack-registry"),
            _ => (
                false,
                "check `--url` (scheme, host and port) and that the registry is serving",
            ),
        };
        let refusal = match error {
            _ if wrong_url => Error::usage_by(error),
            HttpError::TooLarge { .. } => Error::refused_by(error),
            _ => Error::refused(format!("cannot reach the registry: {error}")).caused_by(error),
        };
        refusal.at(registry_at(url)).hint(hint)
    })
}

/// Every page of a list answer, from `GET {base}{path}` on through each page's
/// `Link` to the next, handed to `each` in order (which may stop early).
pub fn each_page<T: serde::de::DeserializeOwned>(
    base: &str,
    token: Option<&str>,
    path: &str,
    what: &str,
    mut each: impl FnMut(Vec<T>) -> Result<Flow>,
) -> Result<()> {
    let mut path = path.to_string();
    loop {
        let url = format!("{}{path}", base.trim_end_matches('/'));
        let answer = get(&url, token)?;
        let rows: Vec<T> = read(&url, what, &answer)?;
        if each(rows)? == Flow::Stop {
            return Ok(());
        }
        match answer.next {
            // The link is the path and query on the same registry.
            Some(next) if next.starts_with('/') => path = next,
            _ => return Ok(()),
        }
    }
}

/// `GET {base}{path}`, answered with JSON of type `T` (`what` names it in errors).
pub fn get_json<T: serde::de::DeserializeOwned>(
    base: &str,
    token: Option<&str>,
    path: &str,
    what: &str,
) -> Result<T> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let answer = get(&url, token)?;
    read(&url, what, &answer)
}

/// The JSON of type `T` in an answer, or what the registry refused.
fn read<T: serde::de::DeserializeOwned>(url: &str, what: &str, answer: &http::Answer) -> Result<T> {
    let refusal = || error_message(&answer.body).unwrap_or_else(|| "no error message".into());
    match answer.status {
        200 => serde_json::from_str(&answer.body).map_err(|e| {
            Error::refused(format!("the answer is not {what}: {e}"))
                .caused_by(e)
                .at(registry_at(url))
                .hint("check that `--url` names a stackpack-registry")
        }),
        401 => Err(Error::refused(
            error_message(&answer.body).unwrap_or_else(|| "the registry wants a token".into()),
        )
        .at(registry_at(url))
        .hint("pass a support token with `--token` or `STACKPACK_REGISTRY_TOKEN`")),
        // The registry does not have a name the command gave (its words list the
        // names it has): the command's mistake, exit 2, as from `--data`.
        404 if error_message(&answer.body).is_some() => {
            Err(Error::usage(refusal()).at(registry_at(url)))
        }
        status => Err(
            Error::refused(format!("the registry answered {status}: {}", refusal()))
                .at(registry_at(url))
                .hint(
                    "a `support` token reads the whole fleet; a customer token only its own customer",
                ),
        ),
    }
}
