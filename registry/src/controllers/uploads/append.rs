//! `PATCH /v2/<name>/blobs/uploads/<id>`: appends a chunk. With `Content-Range`
//! the chunk must start where the upload ends (`416` otherwise).

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::uploads::{
    append_body, check_session, ensure_room_for_body, progress_headers, upload_size,
};
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};

fn parse_content_range(value: &str) -> Option<(u64, u64)> {
    let value = value.trim();
    let value = value.strip_prefix("bytes ").unwrap_or(value);
    let value = value.split('/').next()?;
    let (first, last) = value.split_once('-')?;
    let (first, last) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    (first <= last).then_some((first, last))
}

pub async fn handle(ctx: Ctx, name: &str, id: &str, body: &mut Option<Body>) -> Result<Response> {
    ctx.authorize(Action::Push(name))?;
    check_session(&ctx, name, id)?;
    ensure_room_for_body(&ctx)?;
    let lock = ctx.state.upload_lock(id);
    let mut progress = lock.lock().await;
    let size = upload_size(&ctx.state, id).await?;
    if let Some(value) = ctx.header(header::CONTENT_RANGE) {
        let out_of_order = || {
            Error::new(
                Code::RangeInvalid,
                format!(
                    "`Content-Range: {value}` does not continue the upload, which has {size} bytes"
                ),
            )
            .with_header(header::LOCATION, &format!("/v2/{name}/blobs/uploads/{id}"))
            .with_header(header::RANGE, &format!("0-{}", size.saturating_sub(1)))
        };
        let Some((first, last)) = parse_content_range(value) else {
            return Err(out_of_order());
        };
        if first != size {
            return Err(out_of_order());
        }
        if let Some(length) = ctx
            .header(header::CONTENT_LENGTH)
            .and_then(|v| v.parse::<u64>().ok())
        {
            if length != last - first + 1 {
                return Err(out_of_order());
            }
        }
    }
    let body = body.take().unwrap_or_default();
    let appended = append_body(&ctx.state, id, true, body, &mut progress, None).await?;
    let size = appended.size;
    ctx.state.db.write_keyed(&[Lock::Upload(id)], |tx| {
        Ok(db::uploads::touch(tx, id, db::now_unix())?)
    })?;
    Ok(empty(
        StatusCode::ACCEPTED,
        &progress_headers(name, id, size),
    ))
}
