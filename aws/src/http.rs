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

/// The most of an AWS answer's body read: its XML and JSON answers are pages of a
/// few hundred KiB at most; an endless or hostile one stops here, and what was
/// read does not parse, so the call fails as an unreadable answer.
pub const ANSWER_LIMIT: usize = 8 * 1024 * 1024;

/// An answer's body as text, read up to [`ANSWER_LIMIT`] (empty when the
/// connection fails midway, as `text()` was taken before).
pub(crate) async fn answer_text(mut answer: reqwest::Response) -> String {
    let mut body = Vec::new();
    loop {
        match answer.chunk().await {
            Ok(Some(chunk)) => {
                let room = ANSWER_LIMIT - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= ANSWER_LIMIT {
                    break;
                }
            }
            Ok(None) => break,
            Err(_) => return String::new(),
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

#[cfg(test)]
mod tests {
    use super::{answer_text, ANSWER_LIMIT};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Regression: an AWS endpoint that never stops answering (a hostile one, or a
    /// proxy gone wrong) is read up to the limit, not into all memory.
    #[test]
    fn an_endless_answer_is_read_up_to_the_limit() {
        super::tls();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            tokio::spawn(async move {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/xml\r\n\r\n";
                socket.write_all(head.as_bytes()).await.unwrap();
                let block = vec![b'x'; 64 * 1024];
                while socket.write_all(&block).await.is_ok() {}
            });
            let answer = reqwest::get(format!("http://{address}/")).await.unwrap();
            let text = answer_text(answer).await;
            assert_eq!(text.len(), ANSWER_LIMIT);
        });
    }
}
