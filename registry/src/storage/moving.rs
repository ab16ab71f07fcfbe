//! Moving every blob of a registry from one store to another (the data folder into
//! a bucket, say), for `stackpack-registry migrate --move-blobs-to`.
//!
//! Each blob the database records is streamed from the old store into the new one
//! through the new store's own upload path, so it is hashed on the way and becomes
//! visible there only when whole and matching its digest; a blob whose bytes do not
//! match is named and the move stops before anything is switched. Only when every
//! blob is in the new store is the new location recorded: until then the registry
//! still reads the old one, and a move stopped half way can be run again.

use crate::db::locks::Lock;
use crate::db::sql::Sql;
use futures_util::StreamExt;
use stackpack_schema::Digest;

use super::{BlobStore, StageError, Written};
use crate::db;

/// What a move did.
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MoveReport {
    pub from: String,
    pub to: String,
    pub blobs: u64,
    pub bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("blob `{digest}` is recorded but not in `{from}`")]
    Missing { digest: String, from: String },
    #[error("blob `{digest}` in `{from}` does not hold its bytes: {source}")]
    Corrupt {
        digest: String,
        from: String,
        #[source]
        source: StageError,
    },
    #[error("copying blob `{digest}` failed: {source}")]
    Io {
        digest: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the registry's database: {0}")]
    Db(String),
}

/// Copies every recorded blob from `from` into `to`, then records `to_identity` as
/// where the blobs live. `progress` is told of each blob copied.
pub async fn move_blobs(
    database: &db::Db,
    from: &dyn BlobStore,
    to: &dyn BlobStore,
    to_identity: &str,
    progress: impl FnMut(u64, u64),
) -> Result<MoveReport, MoveError> {
    let report = copy_blobs(database, from, to, progress).await?;
    let identity = to_identity.to_string();
    database
        .write_keyed(&[Lock::Setting(db::settings::BLOBS)], |tx| {
            Ok(db::settings::set(tx, db::settings::BLOBS, &identity)?)
        })
        .map_err(|e| MoveError::Db(e.message))?;
    Ok(report)
}

/// Copies every blob `database` records from `from` into `to` and records
/// nothing: `migrate --to` records the new store in the other database, and the
/// registry it copies from keeps reading the old one.
pub async fn copy_blobs(
    database: &db::Db,
    from: &dyn BlobStore,
    to: &dyn BlobStore,
    mut progress: impl FnMut(u64, u64),
) -> Result<MoveReport, MoveError> {
    let blobs: Vec<(String, i64)> = database
        .read_any(|c| {
            c.query("SELECT digest, size FROM blobs ORDER BY digest", &[])?
                .iter()
                .map(|r| Ok((r.get("digest")?, r.get("size")?)))
                .collect()
        })
        .map_err(|e| MoveError::Db(e.message))?;
    let mut report = MoveReport {
        from: from.location(),
        to: to.location(),
        ..Default::default()
    };
    let total = blobs.len() as u64;
    for (text, size) in blobs {
        let Ok(digest) = text.parse::<Digest>() else {
            continue;
        };
        let size = u64::try_from(size).unwrap_or(0);
        copy_blob(from, to, &digest, size).await?;
        report.blobs += 1;
        report.bytes += size;
        progress(report.blobs, total);
    }
    Ok(report)
}

/// One blob, streamed from `from` into `to` and checked against its digest there.
async fn copy_blob(
    from: &dyn BlobStore,
    to: &dyn BlobStore,
    digest: &Digest,
    size: u64,
) -> Result<(), MoveError> {
    let io = |source| MoveError::Io {
        digest: digest.to_string(),
        source,
    };
    let Some(mut bytes) = from.read(digest, 0, size).await.map_err(io)? else {
        return Err(MoveError::Missing {
            digest: digest.to_string(),
            from: from.location(),
        });
    };
    let session = format!("move-{}", digest.hex());
    let mut writer = match to.blob_writer(digest) {
        Some(writer) => writer.await.map_err(io)?,
        None => {
            to.upload_start(&session).await.map_err(io)?;
            to.upload_writer(&session, 0).await.map_err(io)?
        }
    };
    let mut segments = Vec::new();
    // A store writing the blob straight into its place (a bucket) checks nothing
    // itself: the bytes are hashed here, as the upload route hashes a push.
    let mut hasher = stackpack_schema::digest::Sha256Hasher::new();
    while let Some(chunk) = bytes.next().await {
        let chunk = chunk.map_err(io)?;
        hasher.update(&chunk);
        if let Some(segment) = writer.write(chunk).await.map_err(io)? {
            segments.push(segment);
        }
    }
    let staged = match writer.finish().await.map_err(io)? {
        Written::Blob(staged) => {
            let actual = hasher.finish();
            if &actual != digest {
                // Dropped unpromoted: the bucket's multipart upload is aborted.
                return Err(MoveError::Corrupt {
                    digest: digest.to_string(),
                    from: from.location(),
                    source: StageError::Mismatch { actual },
                });
            }
            staged
        }
        Written::Segment(last) => {
            segments.extend(last);
            let staged = to.stage(&session, segments, digest, None).await;
            staged.map_err(|source| MoveError::Corrupt {
                digest: digest.to_string(),
                from: from.location(),
                source,
            })?
        }
    };
    if staged.size() != size {
        return Err(MoveError::Io {
            digest: digest.to_string(),
            source: std::io::Error::other(format!(
                "{} bytes copied, {size} recorded",
                staged.size()
            )),
        });
    }
    // Promoting is blocking (a rename, or completing an S3 upload).
    tokio::task::spawn_blocking(move || staged.promote())
        .await
        .map_err(|e| io(std::io::Error::other(e)))?
        .map_err(io)
}
