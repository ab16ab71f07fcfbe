//! `POST /v2/<name>/blobs/uploads/`: mount from another repository
//! (`?mount=<digest>&from=<repo>`), upload whole (`?digest=<digest>` with the body),
//! or open a session for `PATCH`/`PUT`.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::uploads::{
    commit, digest_param, ensure_room, ensure_room_for_body, new_id, open_session, owner,
    progress_headers, remove_upload,
};
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::locks::Lock;
use crate::error::Result;
use crate::names::{parse_digest, validate_repository};
use crate::state::UploadProgress;

fn created(name: &str, digest: &str) -> Response {
    empty(
        StatusCode::CREATED,
        &[
            ("Location", format!("/v2/{name}/blobs/{digest}")),
            ("Docker-Content-Digest", digest.to_string()),
            ("Content-Length", "0".to_string()),
        ],
    )
}

pub async fn handle(ctx: Ctx, name: &str, body: &mut Option<Body>) -> Result<Response> {
    ctx.authorize(Action::Push(name))?;
    if let (Some(mount), Some(from)) = (ctx.query("mount"), ctx.query("from")) {
        let digest = parse_digest(mount)?.to_string();
        // Mount only what the caller could pull from the source; otherwise fall back
        // to an ordinary upload, as the spec allows.
        let from_ok =
            validate_repository(from).is_ok() && ctx.authorize(Action::Pull(from)).is_ok();
        if from_ok {
            let mounted = ctx.state.db.write_keyed(&[Lock::Blob(&digest)], |tx| {
                if db::blobs::size_in_repo(tx, from, &digest)?.is_some() {
                    db::blobs::link(tx, name, &digest)?;
                    Ok(true)
                } else {
                    Ok(false)
                }
            })?;
            if mounted {
                return Ok(created(name, &digest));
            }
        }
    } else if let Some(digest) = digest_param(&ctx)? {
        ensure_room_for_body(&ctx)?;
        let id = new_id();
        let mut progress = UploadProgress::default();
        let result = async {
            let body = body.take().unwrap_or_default();
            let whole = Some(&digest);
            let appended =
                super::append_body(&ctx.state, &id, false, body, &mut progress, whole).await?;
            commit(
                &ctx.state,
                name,
                &id,
                &digest,
                &mut progress,
                None,
                appended,
            )
            .await
        }
        .await;
        if result.is_err() {
            remove_upload(&ctx.state, &id).await;
        }
        result?;
        return Ok(created(name, &digest.to_string()));
    }
    ensure_room(&ctx.state, 0)?;
    let id = new_id();
    ctx.state.blobs.upload_start(&id).await?;
    if let Err(e) = open_session(&ctx, name, &owner(&ctx), &id) {
        remove_upload(&ctx.state, &id).await;
        return Err(e);
    }
    Ok(empty(StatusCode::ACCEPTED, &progress_headers(name, &id, 0)))
}
