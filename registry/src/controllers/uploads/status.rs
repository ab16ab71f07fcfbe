//! `GET /v2/<name>/blobs/uploads/<id>`: how much has arrived.

use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::uploads::{check_session, progress_headers, upload_size};
use crate::controllers::{empty, Ctx};
use crate::error::Result;

pub async fn handle(ctx: Ctx, name: &str, id: &str) -> Result<Response> {
    ctx.authorize(Action::Push(name))?;
    check_session(&ctx, name, id)?;
    let size = upload_size(&ctx.state, id).await?;
    Ok(empty(
        StatusCode::NO_CONTENT,
        &progress_headers(name, id, size),
    ))
}
