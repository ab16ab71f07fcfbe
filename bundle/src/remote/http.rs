//! A plain HTTP request over the same reqwest/rustls stack that the OCI transport
//! uses, for the few calls that are not OCI distribution (the runner's `report` of
//! receipts to the ledger). One HTTP stack in the workspace, one TLS configuration.

use std::time::Duration;

/// The answer to a request: its status and its body as text.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
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
    #[error("{0}")]
    Transport(String),
}

/// POSTs `body` as JSON to `url` with a bearer `token`, and returns whatever the
/// server answered. Plain `http://` is allowed only to loopback hosts, so a customer
/// token never crosses a network in clear.
pub fn post_json(url: &str, token: &str, body: Vec<u8>) -> Result<Answer, HttpError> {
    check_url(url)?;
    send(Duration::from_secs(10), Duration::from_secs(60), |client| {
        client
            .post(url)
            .bearer_auth(token)
            .header("Content-Type", "application/json")
            .body(body)
    })
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
    send(timeout, timeout, |client| {
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

/// Sends the request `build` makes on a client of its own, on a runtime of its own,
/// and reads the whole answer.
fn send(
    connect_timeout: Duration,
    timeout: Duration,
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
        let response = build(&client)
            .send()
            .await
            .map_err(|e| HttpError::Transport(describe(&e)))?;
        let status = response.status().as_u16();
        let body = read_capped(response).await?;
        Ok(Answer { status, body })
    })
}

/// The most of an answer read: the ledger's and a cloud API's answers are a few
/// hundred bytes; a server that sends without end is cut off here.
const MAX_ANSWER: usize = 1 << 20;

/// An answer's body as text, refused past [`MAX_ANSWER`] bytes.
async fn read_capped(mut response: reqwest::Response) -> Result<String, HttpError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| HttpError::Transport(describe(&e)))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(HttpError::Transport(format!(
                "the answer is larger than the limit of {} MiB: stopped reading",
                MAX_ANSWER >> 20
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
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
}
