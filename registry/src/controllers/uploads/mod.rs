//! Blob uploads: `POST` starts (or mounts, or uploads whole), `PATCH` appends,
//! `PUT` finishes with the digest, `GET` tells the progress, `DELETE` cancels.

pub mod append;
pub mod cancel;
pub mod finish;
pub mod start;
pub mod status;

use axum::body::Body;
use futures_util::StreamExt;
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::Digest;

use crate::controllers::Ctx;
use crate::db;
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};
use crate::state::{AppState, UploadProgress};
use crate::storage::{StageError, Staged, UploadWriter, Written};

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
    let upload = ctx.state.db.read_any(|c| db::uploads::get(c, id))?;
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
    // Keyed by the owner: its sessions are counted and one added by one request at
    // a time, whichever replica each reaches.
    ctx.state.db.write_keyed(&[Lock::Token(owner), Lock::Upload(id)], |tx| {
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
    let Some(free) = state.blobs.free_bytes() else {
        return Ok(());
    };
    let free = free?;
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

/// How many bytes session `id` holds, wherever its bytes are.
pub async fn upload_size(state: &AppState, id: &str) -> Result<u64> {
    let recorded = if state.blobs.records_segments() {
        state.db.read_any(|c| db::uploads::segments_size(c, id))?
    } else {
        0
    };
    Ok(state.blobs.upload_size(id, recorded).await?)
}

/// Records the segments a writer stores: in the session's rows, or in memory for
/// an upload without a session (a single-request `POST`).
struct Recorder<'a> {
    state: &'a AppState,
    id: &'a str,
    session: bool,
    unrecorded: &'a mut Vec<db::uploads::Segment>,
}

impl Recorder<'_> {
    fn record(&mut self, segment: Option<db::uploads::Segment>) -> Result<()> {
        let Some(segment) = segment else {
            return Ok(());
        };
        if !self.session {
            self.unrecorded.push(segment);
            return Ok(());
        }
        let id = self.id;
        let added = self.state.db.write_keyed(&[Lock::Upload(id)], |tx| {
            Ok(db::uploads::add_segment(tx, id, segment, db::now_unix())?)
        })?;
        if !added {
            return Err(Error::new(
                Code::BlobUploadInvalid,
                format!(
                    "upload `{id}` was changed by another request meanwhile; ask for its progress and go on from there"
                ),
            ));
        }
        Ok(())
    }
}

/// What a request's body became.
pub struct Appended {
    pub size: u64,
    /// The whole blob, when the body went straight into its place.
    pub blob: Option<Box<dyn Staged>>,
    /// Segments stored for an upload without a session, which records none.
    pub unrecorded: Vec<db::uploads::Segment>,
}

/// Appends the request body to upload `id`, keeping the running hash in `progress`
/// when it matches the bytes stored. Segments the store writes are recorded in the
/// session (`session`), or returned for an upload without one. With
/// `whole` (the digest of a blob sent whole, in the request that finishes it) and
/// nothing stored yet, a store that can writes the body straight into the blob.
pub async fn append_body(
    state: &AppState,
    id: &str,
    session: bool,
    body: Body,
    progress: &mut UploadProgress,
    whole: Option<&Digest>,
) -> Result<Appended> {
    let size = if session {
        upload_size(state, id).await?
    } else {
        0
    };
    let mut unrecorded = Vec::new();
    ensure_room(state, 0)?;
    if progress.hasher.as_ref().is_some_and(|h| h.len() != size) {
        progress.hasher = None;
    }
    if progress.hasher.is_none() && size == 0 {
        progress.hasher = Some(Sha256Hasher::new());
    }
    let straight = whole
        .filter(|_| size == 0)
        .and_then(|digest| state.blobs.blob_writer(digest));
    let mut writer = match straight {
        Some(writer) => writer.await?,
        None => state.blobs.upload_writer(id, size).await?,
    };
    let mut recorder = Recorder {
        state,
        id,
        session,
        unrecorded: &mut unrecorded,
    };
    let result = read_body(state, body, size, writer.as_mut(), progress, &mut recorder).await;
    // What the request brought is stored as far as it got, also when it failed: the
    // client may ask how far and go on.
    let finished = writer.finish().await;
    let stored = match (result, finished) {
        (Ok(size), Ok(Written::Segment(last))) => recorder.record(last).map(|()| (size, None)),
        (Ok(size), Ok(Written::Blob(blob))) => Ok((size, Some(blob))),
        (Err(e), Ok(Written::Segment(last))) => recorder.record(last).and(Err(e)),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e.into()),
    };
    match stored {
        Ok((size, blob)) => Ok(Appended {
            size,
            blob,
            unrecorded,
        }),
        Err(e) => {
            // What reached the store is unknown now; hash it again when finishing.
            progress.hasher = None;
            Err(e)
        }
    }
}

/// Reads `body` into `writer` within the limits (size, time, disk floor), hashing
/// it into `progress`. Returns the upload's size after it.
async fn read_body(
    state: &AppState,
    body: Body,
    mut size: u64,
    writer: &mut dyn UploadWriter,
    progress: &mut UploadProgress,
    recorder: &mut Recorder<'_>,
) -> Result<u64> {
    let mut stream = body.into_data_stream();
    let limit = state.config.max_blob_bytes;
    // One request may not outlive a session (a body trickled past the lifetime would
    // otherwise keep a session alive for ever), nor stall longer than the idle timeout.
    let deadline = tokio::time::Instant::now() + state.config.upload_lifetime;
    let idle = state.config.idle_timeout;
    let mut since_room_check = 0u64;
    loop {
        let wait_until = deadline.min(tokio::time::Instant::now() + idle);
        let Ok(next) = tokio::time::timeout_at(wait_until, stream.next()).await else {
            return Err(Error::new(
                Code::BlobUploadInvalid,
                "the upload was too slow: it stalled, or outlived its session; start again",
            ));
        };
        let Some(chunk) = next else {
            return Ok(size);
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
        if let Some(hasher) = progress.hasher.as_mut() {
            hasher.update(&chunk);
        }
        state.metrics.add_received(chunk.len() as u64);
        let segment = writer.write(chunk).await?;
        recorder.record(segment)?;
    }
}

/// Checks upload `id` against `expected`, makes it the blob and records it (in one
/// transaction with deleting the session, when there is one). `blob`: the bytes
/// already written straight into the blob's place. On a mismatch the upload's bytes
/// are removed and nothing becomes visible.
pub async fn commit(
    state: &AppState,
    name: &str,
    id: &str,
    expected: &Digest,
    progress: &mut UploadProgress,
    session: Option<&str>,
    appended: Appended,
) -> Result<u64> {
    let staged = match appended.blob {
        // Written straight into place, hashed on the way: nothing else was stored.
        Some(blob) => match progress.hasher.take().map(Sha256Hasher::finish) {
            Some(actual) if &actual == expected => Ok(blob),
            Some(actual) => Err(StageError::Mismatch { actual }),
            None => Err(StageError::Io(std::io::Error::other(
                "the blob's running hash was lost",
            ))),
        },
        None => {
            let segments = match session {
                Some(id) if state.blobs.records_segments() => {
                    state.db.read_any(|c| db::uploads::segments(c, id))?
                }
                _ => appended.unrecorded,
            };
            let hasher = progress.hasher.take();
            state.blobs.stage(id, segments, expected, hasher).await
        }
    };
    let staged = match staged {
        Ok(staged) => staged,
        Err(StageError::Mismatch { actual }) => {
            if let Some(id) = session {
                state
                    .db
                    .write_keyed(&[Lock::Upload(id)], |tx| Ok(db::uploads::delete(tx, id)?))?;
            }
            remove_upload(state, id).await;
            return Err(Error::new(
                Code::DigestInvalid,
                format!("the uploaded content has digest `{actual}`, not `{expected}`"),
            )
            .with_detail(serde_json::json!({ "expected": expected, "actual": actual })));
        }
        Err(StageError::Io(e)) => return Err(e.into()),
    };
    let size = staged.size();
    let key = expected.to_string();
    let mut locks = vec![Lock::Blob(&key)];
    locks.extend(session.map(Lock::Upload));
    // Keyed by the blob (and the session): pushes of other blobs go on beside it; gc
    // holds each blob it deletes, so it never unlinks these bytes as they land.
    // Should the database run the transaction again (a deadlock it broke off), the
    // bytes are already in place.
    let mut staged = Some(staged);
    state.db.write_keyed(&locks, |tx| {
        if let Some(staged) = staged.take() {
            staged.promote()?;
        }
        db::blobs::insert_and_link(tx, name, &key, size, db::now_unix())?;
        if let Some(id) = session {
            db::uploads::delete(tx, id)?;
        }
        Ok(())
    })?;
    if state.blobs.records_segments() {
        // The segments were copied into the blob; a file was renamed into it.
        remove_upload(state, id).await;
    }
    Ok(size)
}

/// Removes upload `id`'s bytes, off the async workers; a failure leaves them to gc.
pub async fn remove_upload(state: &AppState, id: &str) {
    let blobs = state.blobs.clone();
    let id = id.to_string();
    let _ = tokio::task::spawn_blocking(move || blobs.remove_upload(&id)).await;
}

/// The `digest` query parameter, required when finishing.
pub fn digest_param(ctx: &Ctx) -> Result<Option<Digest>> {
    ctx.query("digest")
        .map(crate::names::parse_digest)
        .transpose()
}
