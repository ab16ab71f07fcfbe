//! `GET`/`HEAD /v2/<name>/manifests/<reference>`.
//!
//! `Accept` is honoured as Distribution does: a manifest whose media type the
//! request's `Accept` does not admit answers `404 MANIFEST_UNKNOWN` (we convert
//! nothing, so no other form exists). Unlike Distribution 2.8, a request without
//! `Accept`, or with `*/*` or `application/*`, admits every type, as HTTP says.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;

use axum::http::request::Parts;

use crate::auth::{self, Action};
use crate::controllers::context::{context_of, note_use};
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::manifests::{Named, StoredManifest};
use crate::error::{Code, Error, Result};
use crate::names::validate_repository;
use crate::names::Reference;
use crate::state::SharedState;

/// Whether the `Accept` headers admit `media_type`: each media range, parameters
/// aside, `q=0` meaning "not this one"; no range at all admits everything.
pub fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    let mut any = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let range = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            if range.is_empty() {
                continue;
            }
            any = true;
            let refused = parts.any(|p| {
                let p = p.trim().replace(' ', "");
                p == "q=0" || p.starts_with("q=0.") && p[4..].bytes().all(|b| b == b'0')
            });
            if refused {
                continue;
            }
            let matches = match range.split_once('/') {
                Some(("*", "*")) => true,
                Some((kind, "*")) => media_type
                    .split_once('/')
                    .is_some_and(|(k, _)| k.eq_ignore_ascii_case(kind)),
                _ => range.eq_ignore_ascii_case(media_type),
            };
            if matches {
                return true;
            }
        }
    }
    !any
}

pub async fn handle(ctx: Ctx, name: &str, reference: &str, head: bool) -> Result<Response> {
    ctx.authorize(Action::Pull(name))?;
    let parsed = Reference::parse(reference)?;
    let manifest = ctx.state.db.read_any(|c| match &parsed {
        Reference::Tag(tag) => db::manifests::get_by_tag(c, name, tag),
        Reference::Digest(digest) => db::manifests::get_by_digest(c, name, &digest.to_string()),
    })?;
    answer(&ctx, name, reference, manifest, head)
}

/// An authenticated pull's hot path: the token and the manifest read in one
/// statement ([`db::manifests::get_with_token`], on the runtime:
/// [`db::Db::query_opt_hot`]), then refused or answered exactly as
/// [`handle`] would (the manifest is dropped unread when the token may not pull).
/// `None` for anything else (no token, a name or reference that is not one): the
/// request goes the usual way, which says what is wrong in the usual order.
pub async fn prefetched(
    state: &SharedState,
    parts: &Parts,
    name: &str,
    reference: &str,
    head: bool,
) -> Result<Option<Response>> {
    let Some(token) = auth::presented_token(&parts.headers).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let (Ok(()), Ok(parsed)) = (validate_repository(name), Reference::parse(reference)) else {
        return Ok(None);
    };
    let hash = auth::hash_token(&token);
    let digest;
    let named = match &parsed {
        Reference::Tag(tag) => Named::Tag(tag),
        Reference::Digest(d) => {
            digest = d.to_string();
            Named::Digest(&digest)
        }
    };
    let (statement, params) = db::manifests::with_token_statement(&hash, name, named);
    let row = state.db.query_opt_hot(statement, &params).await?;
    let found = db::manifests::with_token_of(row).map_err(db::sql::SqlError::from)?;
    let (row, manifest) = match found {
        Some((row, manifest)) => (Some(row), manifest),
        None => (None, None),
    };
    let principal = auth::principal_of(row, &hash, |id| note_use(state, id));
    let ctx = context_of(state, &parts.headers, &parts.uri, principal)?;
    ctx.authorize(Action::Pull(name))?;
    answer(&ctx, name, reference, manifest, head).map(Some)
}

/// The answer to a pull the caller may make: the manifest, or `404` when there is
/// none or the request's `Accept` refuses its type.
fn answer(
    ctx: &Ctx,
    name: &str,
    reference: &str,
    manifest: Option<StoredManifest>,
    head: bool,
) -> Result<Response> {
    let Some(manifest) = manifest else {
        return Err(Error::new(
            Code::ManifestUnknown,
            format!("manifest `{reference}` is not in repository `{name}`"),
        )
        .with_detail(serde_json::json!({ "reference": reference })));
    };
    if !accepts(&ctx.headers, &manifest.media_type) {
        return Err(Error::new(
            Code::ManifestUnknown,
            format!(
                "manifest `{reference}` is a `{}`, which the request's `Accept` does not include",
                manifest.media_type
            ),
        )
        .with_detail(
            serde_json::json!({ "reference": reference, "mediaType": manifest.media_type }),
        ));
    }
    let headers = [
        ("Content-Type", manifest.media_type.clone()),
        ("Content-Length", manifest.content.len().to_string()),
        ("Docker-Content-Digest", manifest.digest.to_string()),
        ("ETag", format!("\"{}\"", manifest.digest)),
    ];
    let mut response = empty(StatusCode::OK, &headers);
    if !head {
        *response.body_mut() = manifest.content.into();
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::accepts;
    use axum::http::{header, HeaderMap, HeaderValue};

    const OCI: &str = "application/vnd.oci.image.manifest.v1+json";
    const DOCKER: &str = "application/vnd.docker.distribution.manifest.v2+json";

    fn with(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    #[test]
    fn accept_admits_only_the_types_it_names() {
        assert!(accepts(&with(&[]), OCI));
        assert!(accepts(&with(&[OCI]), OCI));
        assert!(!accepts(&with(&[DOCKER]), OCI));
        assert!(!accepts(&with(&[OCI]), DOCKER));
        assert!(accepts(&with(&[DOCKER, OCI]), OCI));
        assert!(accepts(&with(&[&format!("{DOCKER}, {OCI};q=0.5")]), OCI));
        assert!(!accepts(&with(&[&format!("{OCI};q=0")]), OCI));
        assert!(accepts(&with(&["*/*"]), OCI));
        assert!(accepts(&with(&["application/*"]), DOCKER));
        assert!(!accepts(&with(&["text/*"]), DOCKER));
    }
}
