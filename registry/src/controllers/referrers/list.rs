//! `GET /v2/<name>/referrers/<digest>?artifactType=<type>`: an image index of the
//! manifests whose `subject` is `<digest>`. With a filter, the answer says so in
//! `OCI-Filters-Applied: artifactType`.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use stackpack_schema::media_type;
use stackpack_schema::oci::{Descriptor, ImageIndex};

use crate::auth::Action;
use crate::controllers::Ctx;
use crate::db;
use crate::error::Result;
use crate::names::parse_digest;

pub async fn handle(ctx: Ctx, name: &str, digest: &str) -> Result<Response> {
    ctx.authorize(Action::Pull(name))?;
    let subject = parse_digest(digest)?.to_string();
    let filter = ctx.query("artifactType").filter(|t| !t.is_empty());
    let rows = ctx
        .state
        .db
        .read_any(|c| db::manifests::referrers(c, name, &subject, filter))?;
    let manifests = rows
        .into_iter()
        .map(|row| {
            let mut descriptor = Descriptor::new(row.media_type, row.digest, row.size);
            descriptor.artifact_type = row.artifact_type;
            descriptor.annotations = row.annotations.and_then(|a| serde_json::from_str(&a).ok());
            descriptor
        })
        .collect();
    let body = ImageIndex::new(manifests).to_bytes();
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_type::OCI_INDEX),
    );
    if filter.is_some() {
        headers.insert(
            "OCI-Filters-Applied",
            HeaderValue::from_static("artifactType"),
        );
    }
    Ok(response)
}
