//! What every AWS call shares: TLS, the HTTP client, URL encoding, error text.

use std::time::Duration;

/// Selects rustls's `ring` provider for this process, once, before any HTTP client is
/// built (reqwest is built without a provider of its own; see the workspace
/// manifest). A provider the program installed itself stays.
pub fn tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// An error and each of its causes, joined by `: `.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Percent-encodes a URL path segment or query value: RFC 3986's unreserved
/// characters stay, every other byte is `%XX` (Signature Version 4's rule, and the
/// OCI client's).
pub fn percent_encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, UNRESERVED_KEPT).to_string()
}

/// Every byte but RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`).
const UNRESERVED_KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The HTTP client and the one-thread runtime an AWS client blocks on.
pub(crate) fn http_parts(
    connect: Duration,
    timeout: Duration,
) -> Result<(reqwest::Client, tokio::runtime::Runtime), String> {
    tls();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let http = reqwest::Client::builder()
        .connect_timeout(connect)
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    Ok((http, runtime))
}
