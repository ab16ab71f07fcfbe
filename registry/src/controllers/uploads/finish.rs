//! `PUT /v2/<name>/blobs/uploads/<id>?digest=<digest>`: appends any last bytes,
//! checks the digest, and makes the blob visible.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::uploads::{
    append_body, check_session, commit, digest_param, ensure_room_for_body,
};
use crate::controllers::{empty, Ctx};
use crate::error::{Code, Error, Result};

pub async fn handle(ctx: Ctx, name: &str, id: &str, body: &mut Option<Body>) -> Result<Response> {
    ctx.authorize(Action::Push(name))?;
    check_session(&ctx, name, id)?;
    ensure_room_for_body(&ctx)?;
    let Some(digest) = digest_param(&ctx)? else {
        return Err(Error::new(
            Code::DigestInvalid,
            "finishing an upload needs `?digest=sha256:<hex>`",
        ));
    };
    let lock = ctx.state.upload_lock(id);
    let mut progress = lock.lock().await;
    // The session may have finished while this request waited for the lock.
    check_session(&ctx, name, id)?;
    let body = body.take().unwrap_or_default();
    let appended = append_body(&ctx.state, id, true, body, &mut progress, Some(&digest)).await?;
    let session = Some(id);
    let result = commit(
        &ctx.state,
        name,
        id,
        &digest,
        &mut progress,
        session,
        appended,
    )
    .await;
    drop(progress);
    ctx.state.forget_upload(id);
    result?;
    let digest = digest.to_string();
    Ok(empty(
        StatusCode::CREATED,
        &[
            ("Location", format!("/v2/{name}/blobs/{digest}")),
            ("Docker-Content-Digest", digest),
            ("Content-Length", "0".to_string()),
        ],
    ))
}
