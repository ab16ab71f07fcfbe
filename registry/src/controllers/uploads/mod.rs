//! Blob uploads: `POST` starts (or mounts, or uploads whole), `PATCH` appends,
//! `PUT` finishes with the digest, `GET` tells the progress, `DELETE` cancels.

pub mod append;
pub mod cancel;
pub mod finish;
pub mod start;
pub mod status;

use std::path::Path;

use axum::body::Body;
use futures_util::StreamExt;
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::Digest;
use tokio::io::AsyncWriteExt;

use crate::controllers::Ctx;
use crate::db;
use crate::error::{Code, Error, Result};
use crate::state::{AppState, UploadProgress};

/// A fresh session id: 128 random bits in hex.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    hex::encode(bytes)
}

fn unknown(id: &str) -> Error {
    Error::new(
        Code::BlobUploadUnknown,
        format!("upload `{id}` is unknown or has expired"),
    )
}

/// Checks that `id` is a live session of repository `name`.
pub fn check_session(ctx: &Ctx, name: &str, id: &str) -> Result<()> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(unknown(id));
    }
    let upload = ctx.state.db.read(|c| db::uploads::get(c, id))?;
    let lifetime = ctx.state.config.upload_lifetime.as_secs() as i64;
    match upload {
        Some(u) if u.repo == name && u.updated >= db::now_unix() - lifetime => Ok(()),
        _ => Err(unknown(id)),
    }
}

/// Who owns a session: the token id, or `anonymous`.
pub fn owner(ctx: &Ctx) -> String {
    match &ctx.principal {
        crate::auth::Principal::Token { id, .. } => id.clone(),
        crate::auth::Principal::Anonymous => "anonymous".to_string(),
    }
}

/// Records a new session of `name` for `owner`, unless the owner already holds its
/// share of open sessions (so one token cannot open sessions without end). Counted
/// and recorded in one write transaction, so racing requests cannot overshoot.
pub fn open_session(ctx: &Ctx, name: &str, owner: &str, id: &str) -> Result<()> {
    let cap = ctx.state.config.max_sessions_per_token;
    let now = db::now_unix();
    let live_after = now - ctx.state.config.upload_lifetime.as_secs() as i64;
    ctx.state.db.write(|tx| {
        let open = db::uploads::open_by_owner(tx, owner, live_after)?;
        if open >= cap {
            return Err(Error::new(
                Code::TooManyRequests,
                format!(
                    "token `{owner}` already has {open} upload sessions open, the most allowed; finish or cancel one, or wait for them to expire"
                ),
            ));
        }
        Ok(db::uploads::create(tx, id, name, owner, now)?)
    })
}

/// Refuses a write whose `Content-Length` would cross the disk floor.
pub fn ensure_room_for_body(ctx: &Ctx) -> Result<()> {
    let declared = ctx
        .header(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    ensure_room(&ctx.state, declared)
}

/// Refuses a write of `incoming` more bytes when it would leave less than the
/// configured floor free on the data folder's disk: better a clear refusal now than
/// a full disk that also stops the database.
pub fn ensure_room(state: &AppState, incoming: u64) -> Result<()> {
    let floor = state.config.min_free_bytes;
    if floor == 0 {
        return Ok(());
    }
    let free = state.storage.free_bytes()?;
    if free < floor.saturating_add(incoming) {
        return Err(Error::new(
            Code::InsufficientStorage,
            format!(
                "the registry's disk has {free} bytes free and keeps at least {floor} free; this write is refused until space is freed (`stackpack-registry gc`)"
            ),
        ));
    }
    Ok(())
}

/// How often a streaming upload checks the disk floor again.
const ROOM_CHECK_EVERY: u64 = 64 * 1024 * 1024;

/// The headers every upload-progress answer carries.
pub fn progress_headers(name: &str, id: &str, size: u64) -> Vec<(&'static str, String)> {
    vec![
        ("Location", format!("/v2/{name}/blobs/uploads/{id}")),
        ("Range", format!("0-{}", size.saturating_sub(1))),
        ("Docker-Upload-UUID", id.to_string()),
        ("Content-Length", "0".to_string()),
    ]
}

pub async fn file_size(path: &Path) -> Result<u64> {
    match tokio::fs::metadata(path).await {
        Ok(m) => Ok(m.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// Appends the request body to the upload file at `path`, keeping the running hash
/// in `progress` when it matches the file. Returns the new size.
pub async fn append_body(
    state: &AppState,
    path: &Path,
    body: Body,
    progress: &mut UploadProgress,
) -> Result<u64> {
    let mut size = file_size(path).await?;
    ensure_room(state, 0)?;
    if progress.hasher.as_ref().is_some_and(|h| h.len() != size) {
        progress.hasher = None;
    }
    if progress.hasher.is_none() && size == 0 {
        progress.hasher = Some(Sha256Hasher::new());
    }
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    let mut writer = tokio::io::BufWriter::with_capacity(1024 * 1024, file);
    let mut stream = body.into_data_stream();
    let limit = state.config.max_blob_bytes;
    // One request may not outlive a session (a body trickled past the lifetime would
    // otherwise keep a session alive for ever), nor stall longer than the idle timeout.
    let deadline = tokio::time::Instant::now() + state.config.upload_lifetime;
    let idle = state.config.idle_timeout;
    let mut since_room_check = 0u64;
    let result: Result<()> = async {
        loop {
            let wait_until = deadline.min(tokio::time::Instant::now() + idle);
            let Ok(next) = tokio::time::timeout_at(wait_until, stream.next()).await else {
                return Err(Error::new(
                    Code::BlobUploadInvalid,
                    "the upload was too slow: it stalled, or outlived its session; start again",
                ));
            };
            let Some(chunk) = next else {
                break;
            };
            let chunk = chunk.map_err(|e| {
                Error::new(
                    Code::BlobUploadInvalid,
                    format!("the upload was cut off: {e}"),
                )
            })?;
            size += chunk.len() as u64;
            if size > limit {
                let rest = Body::from_stream(std::mem::replace(
                    &mut stream,
                    Body::empty().into_data_stream(),
                ));
                crate::controllers::drain(rest, crate::controllers::DRAIN_CAP).await;
                return Err(Error::too_large("the blob", limit));
            }
            since_room_check += chunk.len() as u64;
            if since_room_check >= ROOM_CHECK_EVERY {
                since_room_check = 0;
                ensure_room(state, ROOM_CHECK_EVERY)?;
            }
            writer.write_all(&chunk).await?;
            if let Some(hasher) = progress.hasher.as_mut() {
                hasher.update(&chunk);
            }
            state.metrics.add_received(chunk.len() as u64);
        }
        writer.flush().await?;
        Ok(())
    }
    .await;
    if let Err(e) = result {
        // What reached the file is unknown now; hash it again when finishing.
        let _ = writer.flush().await;
        progress.hasher = None;
        return Err(e);
    }
    Ok(size)
}

/// The digest of the upload file, from the running hash or by reading it again.
pub async fn digest_of(path: &Path, progress: &mut UploadProgress) -> Result<(Digest, u64)> {
    let size = file_size(path).await?;
    let hasher = match progress.hasher.take() {
        Some(h) if h.len() == size => h,
        _ => {
            if tokio::fs::try_exists(path).await? {
                crate::storage::Storage::hash_file(path).await?
            } else {
                Sha256Hasher::new()
            }
        }
    };
    Ok((hasher.finish(), size))
}

/// Checks the upload against `expected`, moves it into the blob store and records
/// it. On a mismatch the upload file is removed and nothing becomes visible.
pub async fn commit(
    state: &AppState,
    name: &str,
    path: &Path,
    expected: &Digest,
    progress: &mut UploadProgress,
    session: Option<&str>,
) -> Result<u64> {
    let (actual, size) = digest_of(path, progress).await?;
    if &actual != expected {
        let _ = tokio::fs::remove_file(path).await;
        if let Some(id) = session {
            state.db.write(|tx| Ok(db::uploads::delete(tx, id)?))?;
        }
        return Err(Error::new(
            Code::DigestInvalid,
            format!("the uploaded content has digest `{actual}`, not `{expected}`"),
        )
        .with_detail(serde_json::json!({ "expected": expected, "actual": actual })));
    }
    if size == 0 && !tokio::fs::try_exists(path).await? {
        tokio::fs::write(path, b"").await?;
    }
    crate::storage::Storage::sync(path).await?;
    let key = expected.to_string();
    state.db.write(|tx| {
        state.storage.promote(path, expected)?;
        db::blobs::insert_and_link(tx, name, &key, size, db::now_unix())?;
        if let Some(id) = session {
            db::uploads::delete(tx, id)?;
        }
        Ok(())
    })?;
    Ok(size)
}

/// The `digest` query parameter, required when finishing.
pub fn digest_param(ctx: &Ctx) -> Result<Option<Digest>> {
    ctx.query("digest")
        .map(crate::names::parse_digest)
        .transpose()
}
