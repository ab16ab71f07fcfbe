//! Asking a registry over its HTTP API (`--url`), from anywhere. The token goes in
//! the `Authorization` header only; it is never printed.

use stackpack_registry::controllers::ledger::fleet::Flow;

use crate::commands::Refused;

/// The message of the registry's error body (`{"errors":[{"message"}]}`), if any.
fn error_message(body: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value["errors"][0]["message"].as_str().map(str::to_string)
}

/// The innermost cause (`Connection refused`, a certificate problem), which says
/// more than reqwest's outer "error sending request".
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

async fn get(url: &str, token: Option<&str>) -> anyhow::Result<(u16, Vec<u8>)> {
    let (status, body, _) = get_with_next(url, token).await?;
    Ok((status, body))
}

/// The target of a `Link: <…>; rel="next"` header, if the answer has one.
fn next_link(headers: &reqwest::header::HeaderMap) -> Option<String> {
    let value = headers.get("link")?.to_str().ok()?;
    value.split(',').find_map(|link| {
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

async fn get_with_next(
    url: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, Vec<u8>, Option<String>)> {
    // reqwest is built without a TLS provider of its own (see the workspace manifest);
    // an error means one is installed already, and that one stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()?;
    let mut request = client.get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.map_err(|e| {
        Refused(
            format!("cannot reach the registry at `{url}`: {}", root_cause(&e)),
            "check `--url` (scheme, host and port) and that the registry is serving".into(),
        )
    })?;
    let status = response.status().as_u16();
    let next = next_link(response.headers());
    Ok((status, response.bytes().await?.to_vec(), next))
}

/// Every page of a list answer, from `GET {base}{path}` on through each page's
/// `Link` to the next, handed to `each` in order (which may stop early).
pub fn each_page<T: serde::de::DeserializeOwned>(
    base: &str,
    token: Option<&str>,
    path: &str,
    what: &str,
    mut each: impl FnMut(Vec<T>) -> anyhow::Result<Flow>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut path = path.to_string();
    loop {
        let url = format!("{}{path}", base.trim_end_matches('/'));
        let (status, body, next) = runtime.block_on(get_with_next(&url, token))?;
        let rows: Vec<T> = answer(base, what, status, &body)?;
        if each(rows)? == Flow::Stop {
            return Ok(());
        }
        match next {
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
) -> anyhow::Result<T> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (status, body) = runtime.block_on(get(&url, token))?;
    answer(base, what, status, &body)
}

/// The JSON of type `T` in an answer, or what the registry refused.
fn answer<T: serde::de::DeserializeOwned>(
    base: &str,
    what: &str,
    status: u16,
    body: &[u8],
) -> anyhow::Result<T> {
    match status {
        200 => serde_json::from_slice(body).map_err(|e| {
            Refused(
                format!("the answer from `{base}` is not {what}: {e}"),
                "check that `--url` names a stackpack-registry".into(),
            )
            .into()
        }),
        401 => Err(Refused(
            error_message(body).unwrap_or_else(|| "the registry wants a token".into()),
            "pass a support token with `--token` or `STACKPACK_REGISTRY_TOKEN`".into(),
        )
        .into()),
        _ => Err(Refused(
            format!(
                "the registry at `{base}` answered {status}: {}",
                error_message(body).unwrap_or_else(|| "no error message".into())
            ),
            "a `support` token reads the whole fleet; a customer token only its own customer"
                .into(),
        )
        .into()),
    }
}
