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
    let result: Result<()> = async {
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                Error::new(
                    Code::BlobUploadInvalid,
                    format!("the upload was cut off: {e}"),
                )
            })?;
            size += chunk.len() as u64;
            if size > limit {
                return Err(Error::too_large("the blob", limit));
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
