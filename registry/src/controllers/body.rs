//! Body helpers: empty answers with headers, JSON bodies read within a limit, and
//! refused bodies drained so the client reads the answer, not a broken pipe.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;

use crate::error::{Code, Error, Result};

/// An empty response with a status and headers.
pub fn empty(status: axum::http::StatusCode, headers: &[(&str, String)]) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    for (name, value) in headers {
        if let Ok(value) = HeaderValue::from_str(value) {
            response.headers_mut().insert(
                header::HeaderName::from_bytes(name.as_bytes()).expect("static header names"),
                value,
            );
        }
    }
    response
}

/// Reads and drops what is left of a refused body (up to `cap` bytes), so that the
/// client, still sending, gets to read the error instead of a broken pipe.
pub async fn drain(body: Body, cap: u64) {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut seen = 0u64;
    let deadline = tokio::time::sleep(std::time::Duration::from_secs(10));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            chunk = stream.next() => match chunk {
                Some(Ok(chunk)) => {
                    seen += chunk.len() as u64;
                    if seen > cap {
                        return;
                    }
                }
                _ => return,
            },
            _ = &mut deadline => return,
        }
    }
}

/// Answers now and reads what is left of a refused body in the background (without
/// keeping it), so the client, still sending, reads the answer instead of a broken pipe.
pub fn discard(body: Body) {
    tokio::spawn(drain(body, DRAIN_CAP));
}

/// How much of a refused body is read before the connection is given up.
pub const DRAIN_CAP: u64 = 64 * 1024 * 1024;

/// The next chunk of a request body, or `None` at its end. A body that sends
/// nothing for `idle` is cut off (`code`), so a stalled client cannot hold its
/// connection for ever: while a request is in flight the connection itself is
/// never idle (see [`crate::conn`]).
pub async fn next_chunk(
    stream: &mut axum::body::BodyDataStream,
    idle: std::time::Duration,
    code: Code,
    what: &str,
) -> Result<Option<axum::body::Bytes>> {
    use futures_util::StreamExt;
    match tokio::time::timeout(idle, stream.next()).await {
        Err(_) => Err(Error::new(
            code,
            format!("{what} stalled: nothing arrived for {} s", idle.as_secs()),
        )),
        Ok(None) => Ok(None),
        Ok(Some(chunk)) => chunk
            .map(Some)
            .map_err(|e| Error::new(code, format!("{what} was cut off: {e}"))),
    }
}

/// Reads a JSON API body of at most `max_json_bytes`.
pub async fn read_limited(
    body: Body,
    config: &crate::config::Config,
    what: &str,
) -> Result<axum::body::Bytes> {
    read_limited_to(body, config, what, config.max_json_bytes).await
}

/// Reads a JSON body of at most `limit` bytes (a document larger by nature than
/// `max_json_bytes`, such as a fleet's forecast).
pub async fn read_limited_to(
    body: Body,
    config: &crate::config::Config,
    what: &str,
    limit: u64,
) -> Result<axum::body::Bytes> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) =
        next_chunk(&mut stream, config.idle_timeout, Code::BadRequest, what).await?
    {
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            let rest = Body::from_stream(stream);
            drain(rest, DRAIN_CAP).await;
            return Err(Error::too_large(what, limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.into())
}
