//! `GET`/`HEAD /v2/<name>/blobs/<digest>`, with a single `Range` when asked.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::error::{Code, Error, Result};
use crate::names::parse_digest;

/// A parsed `Range: bytes=…` against a blob of `size` bytes: `(first, last)`.
pub fn parse_range(value: &str, size: u64) -> Option<(u64, u64)> {
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') || size == 0 {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    let (first, last) = match (first.trim(), last.trim()) {
        ("", suffix) => {
            let n: u64 = suffix.parse().ok()?;
            if n == 0 {
                return None;
            }
            (size.saturating_sub(n), size - 1)
        }
        (first, "") => (first.parse().ok()?, size - 1),
        (first, last) => (first.parse().ok()?, last.parse::<u64>().ok()?.min(size - 1)),
    };
    (first <= last && first < size).then_some((first, last))
}

pub async fn handle(ctx: Ctx, name: &str, digest: &str, head: bool) -> Result<Response> {
    ctx.authorize(Action::Pull(name))?;
    let digest = parse_digest(digest)?;
    let key = digest.to_string();
    let unknown = || {
        Error::new(
            Code::BlobUnknown,
            format!("blob `{key}` is not in repository `{name}`"),
        )
        .with_detail(serde_json::json!({ "digest": key }))
    };
    let Some(size) = ctx
        .state
        .db
        .read_any(|c| db::blobs::size_in_repo(c, name, &key))?
    else {
        return Err(unknown());
    };
    let range = match ctx.header(header::RANGE) {
        Some(value) => match parse_range(value, size) {
            Some(range) => Some(range),
            None => {
                return Err(Error::new(
                    Code::RangeInvalid,
                    format!("range `{value}` cannot be served from a blob of {size} bytes"),
                )
                .with_header(header::CONTENT_RANGE, &format!("bytes */{size}")))
            }
        },
        None => None,
    };
    let (status, first, length) = match range {
        Some((first, last)) => (StatusCode::PARTIAL_CONTENT, first, last - first + 1),
        None => (StatusCode::OK, 0, size),
    };
    let mut headers = vec![
        ("Content-Type", "application/octet-stream".to_string()),
        ("Content-Length", length.to_string()),
        ("Docker-Content-Digest", key.clone()),
        ("Accept-Ranges", "bytes".to_string()),
        ("ETag", format!("\"{key}\"")),
        ("Cache-Control", "max-age=31536000".to_string()),
    ];
    if let Some((first, last)) = range {
        headers.push(("Content-Range", format!("bytes {first}-{last}/{size}")));
    }
    if head {
        return Ok(empty(status, &headers));
    }
    let Some(stream) = ctx.state.blobs.read(&digest, first, length).await? else {
        return Err(unknown());
    };
    ctx.state.metrics.add_sent(length);
    let mut response = empty(status, &headers);
    *response.body_mut() = Body::from_stream(stream);
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-9", 100), Some((0, 9)));
        assert_eq!(parse_range("bytes=90-", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=-10", 100), Some((90, 99)));
        assert_eq!(parse_range("bytes=50-500", 100), Some((50, 99)));
        assert_eq!(parse_range("bytes=100-", 100), None);
        assert_eq!(parse_range("bytes=5-1", 100), None);
        assert_eq!(parse_range("bytes=0-1,3-4", 100), None);
        assert_eq!(parse_range("items=0-1", 100), None);
        assert_eq!(parse_range("bytes=x-1", 100), None);
    }
}
