//! `DELETE /v2/<name>/blobs/uploads/<id>`: drops the session and its bytes.

use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::uploads::{check_session, remove_upload};
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::locks::Lock;
use crate::error::Result;

pub async fn handle(ctx: Ctx, name: &str, id: &str) -> Result<Response> {
    ctx.authorize(Action::Push(name))?;
    check_session(&ctx, name, id)?;
    let lock = ctx.state.upload_lock(id);
    let _progress = lock.lock().await;
    ctx.state
        .db
        .write_keyed(&[Lock::Upload(id)], |tx| Ok(db::uploads::delete(tx, id)?))?;
    remove_upload(&ctx.state, id).await;
    ctx.state.forget_upload(id);
    Ok(empty(
        StatusCode::NO_CONTENT,
        &[("Content-Length", "0".into())],
    ))
}
