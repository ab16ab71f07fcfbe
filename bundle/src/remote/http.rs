//! A plain HTTP request over the same reqwest/rustls stack that the OCI transport
//! uses, for the few calls that are not OCI distribution (the runner's `report` of
//! receipts to the ledger, the registry's `--url` questions to a ledger). One HTTP
//! stack in the workspace, one TLS configuration, one rule: a token goes in clear
//! only to a loopback address.

use std::time::Duration;

/// The answer to a request: its status and its body as text.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    /// The target of a `Link: <…>; rel="next"` header: where a paged list goes on.
    pub next: Option<String>,
}

/// Why a request got no answer at all.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot start the HTTP client: {0}")]
    Runtime(std::io::Error),
    #[error("refusing to send a token in clear to `{0}`: plain HTTP is allowed only to a loopback address")]
    PlainHttpNotLoopback(String),
    #[error("`{0}` is not an http:// or https:// address")]
    BadUrl(String),
    #[error("the answer from `{url}` is larger than the limit of {limit} bytes: stopped reading")]
    TooLarge { url: String, limit: u64 },
    #[error("{0}")]
    Transport(String),
}

pub use super::percent_encode;

/// POSTs `body` as JSON to `url` with a bearer `token`, and returns whatever the
/// server answered. Plain `http://` is allowed only to loopback hosts, so a customer
/// token never crosses a network in clear.
pub fn post_json(url: &str, token: &str, body: Vec<u8>) -> Result<Answer, HttpError> {
    send_json(reqwest::Method::POST, url, token, body)
}

/// PUTs `body` as JSON to `url` with a bearer `token` (the packager sends a release's
/// forecast to the registry); the same rules as [`post_json`].
pub fn put_json(url: &str, token: &str, body: Vec<u8>) -> Result<Answer, HttpError> {
    send_json(reqwest::Method::PUT, url, token, body)
}

fn send_json(
    method: reqwest::Method,
    url: &str,
    token: &str,
    body: Vec<u8>,
) -> Result<Answer, HttpError> {
    check_url(url)?;
    send(
        Duration::from_secs(10),
        Duration::from_secs(60),
        MAX_ANSWER,
        |client| {
            client
                .request(method, url)
                .bearer_auth(token)
                .header("Content-Type", "application/json")
                .body(body)
        },
    )
}

/// POSTs a form (`application/x-www-form-urlencoded`) with extra `headers` and no
/// token, for a cloud API's query-style call (the outcome witness asks an emulated
/// account's STS for credentials). Plain `http://` is allowed: nothing secret is sent.
pub fn post_form(
    url: &str,
    headers: &[(&str, &str)],
    body: String,
    timeout: Duration,
) -> Result<Answer, HttpError> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(HttpError::BadUrl(url.to_string()));
    }
    send(timeout, timeout, MAX_ANSWER, |client| {
        let mut request = client
            .post(url)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    })
}

/// GETs `url`, with a bearer `token` if given, and reads at most `limit` bytes of
/// the answer. The same rule as [`post_json`]: plain `http://` only to loopback
/// hosts, refused before any connection is made.
pub fn get(url: &str, token: Option<&str>, limit: u64) -> Result<Answer, HttpError> {
    check_url(url)?;
    send(
        Duration::from_secs(10),
        Duration::from_secs(60),
        limit,
        |client| {
            let request = client.get(url);
            match token {
                Some(token) => request.bearer_auth(token),
                None => request,
            }
        },
    )
}

/// The most of a POST's answer read: the ledger's and a cloud API's answers are a
/// few hundred bytes; a server that sends without end is cut off here.
const MAX_ANSWER: u64 = 1 << 20;

/// Sends the request `build` makes on a client of its own, on a runtime of its own,
/// and reads at most `limit` bytes of the answer: a longer one is refused.
fn send(
    connect_timeout: Duration,
    timeout: Duration,
    limit: u64,
    build: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
) -> Result<Answer, HttpError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(HttpError::Runtime)?;
    runtime.block_on(async {
        super::tls();
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .timeout(timeout)
            .build()
            .map_err(|e| HttpError::Transport(describe(&e)))?;
        let mut response = build(&client)
            .send()
            .await
            .map_err(|e| HttpError::Transport(describe(&e)))?;
        let status = response.status().as_u16();
        let next = next_link(response.headers());
        let bytes = super::capped::body_within(&mut response, limit)
            .await
            .map_err(|e| HttpError::Transport(describe(&e)))?
            .ok_or_else(|| HttpError::TooLarge {
                url: response.url().to_string(),
                limit,
            })?;
        let body = String::from_utf8_lossy(&bytes).into_owned();
        Ok(Answer { status, body, next })
    })
}

/// The target of a `Link: <…>; rel="next"` header, if the answer has one.
fn next_link(headers: &reqwest::header::HeaderMap) -> Option<String> {
    headers
        .get_all(reqwest::header::LINK)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .find_map(|link| {
            let (target, params) = link.trim().split_once(';')?;
            params.contains("rel=\"next\"").then(|| {
                target
                    .trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
        })
}

fn check_url(url: &str) -> Result<(), HttpError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| HttpError::BadUrl(url.to_string()))?;
    let authority = rest.split('/').next().unwrap_or_default();
    match scheme {
        "https" => Ok(()),
        "http" if super::is_loopback(authority) => Ok(()),
        "http" => Err(HttpError::PlainHttpNotLoopback(url.to_string())),
        _ => Err(HttpError::BadUrl(url.to_string())),
    }
}

/// reqwest's own message stops at "error sending request"; the cause chain says why.
fn describe(error: &reqwest::Error) -> String {
    super::error_chain(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_never_goes_in_clear_to_a_remote_host() {
        assert!(matches!(
            check_url("http://registry.example.com/api/v1/receipts"),
            Err(HttpError::PlainHttpNotLoopback(_))
        ));
        assert!(check_url("http://127.0.0.1:5000/api/v1/receipts").is_ok());
        assert!(check_url("http://[::1]:5000/x").is_ok());
        assert!(check_url("http://localhost/x").is_ok());
        assert!(check_url("https://registry.example.com/x").is_ok());
        assert!(matches!(
            check_url("registry.example.com/x"),
            Err(HttpError::BadUrl(_))
        ));
    }

    #[test]
    fn a_paged_answer_says_where_the_next_page_is() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            reqwest::header::LINK,
            "</api/v1/fleet?limit=2&after=a%2Fb>; rel=\"next\""
                .parse()
                .unwrap(),
        );
        assert_eq!(
            next_link(&headers).as_deref(),
            Some("/api/v1/fleet?limit=2&after=a%2Fb")
        );
        assert_eq!(next_link(&reqwest::header::HeaderMap::new()), None);
    }
}
