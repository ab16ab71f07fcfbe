//! `GET`/`HEAD /v2/<name>/manifests/<reference>`.

use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::error::{Code, Error, Result};
use crate::names::Reference;

pub async fn handle(ctx: Ctx, name: &str, reference: &str, head: bool) -> Result<Response> {
    ctx.authorize(Action::Pull(name))?;
    let parsed = Reference::parse(reference)?;
    let manifest = ctx.state.db.read(|c| match &parsed {
        Reference::Tag(tag) => db::manifests::get_by_tag(c, name, tag),
        Reference::Digest(digest) => db::manifests::get_by_digest(c, name, &digest.to_string()),
    })?;
    let Some(manifest) = manifest else {
        return Err(Error::new(
            Code::ManifestUnknown,
            format!("manifest `{reference}` is not in repository `{name}`"),
        )
        .with_detail(serde_json::json!({ "reference": reference })));
    };
    let headers = [
        ("Content-Type", manifest.media_type.clone()),
        ("Content-Length", manifest.content.len().to_string()),
        ("Docker-Content-Digest", manifest.digest.clone()),
        ("ETag", format!("\"{}\"", manifest.digest)),
    ];
    let mut response = empty(StatusCode::OK, &headers);
    if !head {
        *response.body_mut() = manifest.content.into();
    }
    Ok(response)
}
