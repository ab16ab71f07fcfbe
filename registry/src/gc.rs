//! Garbage collection: expired upload sessions, stray upload files, and blobs that no
//! manifest references.
//!
//! Two rules keep it safe beside a running server (`gc` is often another process):
//!
//! - **Rows go first, files after.** Each batch of rows is deleted in its own
//!   committed transaction, and only then are the files unlinked. A crash in between
//!   leaves files without rows, which are garbage the next run sweeps; never a row
//!   without its file, which would be corruption.
//! - **A file is unlinked only while gc holds its digest and the database says it
//!   is not recorded.** The server renames a blob into place inside the write
//!   transaction that records it, holding that digest ([`Lock::Blob`]), so no commit
//!   can slip between gc's check and its unlink, even when the file's age (a rename
//!   keeps the upload's old mtime) says it is stale. The same digest pushed again
//!   after its rows were deleted keeps its file. A manifest push holds the digests
//!   it names (shared, beside other pushes naming them), so gc never deletes a
//!   blob's rows between the push's check that the blob is there and its commit.
//!
//! gc holds only what it deletes, never the whole registry: pushes, pulls and
//! receipts go on beside it.
//!
//! Work goes in batches of [`BATCH`] rows, so a reader or a push never waits long
//! behind a large collection.

use std::time::{Duration, SystemTime};

use serde::Serialize;
use stackpack_schema::Digest;

use crate::db::locks::Lock;
use crate::db::{self, Db};
use crate::error::Error;
use crate::storage::BlobStore;

/// Rows per transaction.
pub const BATCH: usize = 256;

#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GcReport {
    pub expired_uploads: u64,
    pub stray_upload_files: u64,
    pub blobs_deleted: u64,
    pub stray_blob_files: u64,
    pub bytes_freed: u64,
}

/// Collects everything: expired uploads, stray files, and unreferenced blobs older
/// than `grace`.
pub fn run(
    db: &Db,
    store: &dyn BlobStore,
    upload_lifetime: Duration,
    grace: Duration,
) -> Result<GcReport, Error> {
    let mut report = GcReport::default();
    sweep_uploads(db, store, upload_lifetime, &mut report)?;
    delete_unreferenced_blobs(db, store, grace, &mut report)?;
    sweep_blob_files(db, store, grace, &mut report)?;
    Ok(report)
}

/// Deletes expired upload sessions and upload bytes no session owns. `serve` runs
/// this in the background; `gc` runs it first.
pub fn sweep_uploads(
    db: &Db,
    store: &dyn BlobStore,
    lifetime: Duration,
    report: &mut GcReport,
) -> Result<(), Error> {
    let before = db::now_unix() - lifetime.as_secs() as i64;
    loop {
        // Listed by a snapshot, then each held (`Lock::Upload`, as an append holds
        // it) and deleted only if still expired.
        let listed = db.read_any(|c| db::uploads::expired(c, before, BATCH))?;
        let locks: Vec<Lock> = listed.iter().map(|id| Lock::Upload(id)).collect();
        let ids = db.write_keyed(&locks, |tx| {
            let mut ids = Vec::with_capacity(listed.len());
            for id in &listed {
                if db::uploads::delete_if_expired(tx, id, before)? {
                    ids.push(id.clone());
                }
            }
            Ok(ids)
        })?;
        for id in &ids {
            report.bytes_freed += store.remove_upload(id).unwrap_or(0);
        }
        report.expired_uploads += ids.len() as u64;
        if listed.len() < BATCH || ids.is_empty() {
            break;
        }
    }
    // A session's bytes are written before its row, and every write to them makes
    // them young again, so old bytes without a row belong to no live session.
    let cutoff = SystemTime::now() - lifetime;
    let live = db.scan_any(|c| db::uploads::all_ids(c))?;
    let stray: Vec<String> = store
        .list_uploads()?
        .into_iter()
        .filter(|(id, modified)| !live.contains(id) && *modified < cutoff)
        .map(|(id, _)| id)
        .collect();
    for batch in stray.chunks(BATCH) {
        let locks: Vec<Lock> = batch.iter().map(|id| Lock::Upload(id)).collect();
        db.write_keyed(&locks, |tx| {
            for id in batch {
                if db::uploads::get(tx, id)?.is_none() {
                    if let Ok(freed) = store.remove_upload(id) {
                        report.bytes_freed += freed;
                        report.stray_upload_files += 1;
                    }
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Deletes the rows of unreferenced blobs older than `grace`, batch by batch, each
/// batch committed before its bytes are deleted.
fn delete_unreferenced_blobs(
    db: &Db,
    store: &dyn BlobStore,
    grace: Duration,
    report: &mut GcReport,
) -> Result<(), Error> {
    let before = db::now_unix() - grace.as_secs() as i64;
    loop {
        // Listed by a snapshot, then each held (`Lock::Blob`: a push naming it
        // holds it shared, an upload or mount putting it in place exclusively)
        // and its rows deleted only if still nothing references it.
        let listed = db.read_any(|c| db::blobs::unreferenced(c, before, BATCH))?;
        let locks: Vec<Lock> = listed.iter().map(|d| Lock::Blob(d)).collect();
        let digests = db.write_keyed(&locks, |tx| {
            let digests = db::blobs::still_unreferenced(tx, &listed, before)?;
            db::blobs::delete_rows(tx, &digests)?;
            Ok(digests)
        })?;
        delete_unrecorded(db, store, &digests, report)?;
        report.blobs_deleted += digests.len() as u64;
        if listed.len() < BATCH || digests.is_empty() {
            return Ok(());
        }
    }
}

/// Deletes the bytes of each blob that has no row, holding each (`Lock::Blob`) so
/// that no commit records one meanwhile. Returns how many were removed.
fn delete_unrecorded(
    db: &Db,
    store: &dyn BlobStore,
    digests: &[String],
    report: &mut GcReport,
) -> Result<u64, Error> {
    let locks: Vec<Lock> = digests.iter().map(|d| Lock::Blob(d)).collect();
    db.write_keyed(&locks, |tx| {
        let mut removed = 0;
        for key in digests {
            let Ok(digest) = key.parse::<Digest>() else {
                continue;
            };
            if db::blobs::size(tx, key)?.is_some() {
                continue;
            }
            if let Ok(Some(freed)) = store.delete_blob(&digest) {
                report.bytes_freed += freed;
                removed += 1;
            }
        }
        Ok(removed)
    })
}

/// Removes stored blobs that have no row (left by a crash between a promotion and
/// its commit, or between gc's commit and its delete) and are older than `grace`.
fn sweep_blob_files(
    db: &Db,
    store: &dyn BlobStore,
    grace: Duration,
    report: &mut GcReport,
) -> Result<(), Error> {
    let cutoff = SystemTime::now() - grace;
    // A first, lock-free pass by a snapshot; each candidate is checked again,
    // held, before it goes.
    let known = db.scan_any(|c| db::blobs::all(c))?;
    let stray: Vec<String> = store
        .list_blobs()?
        .into_iter()
        .filter(|(digest, modified)| !known.contains(digest) && *modified < cutoff)
        .map(|(digest, _)| digest)
        .collect();
    for batch in stray.chunks(BATCH) {
        let removed = delete_unrecorded(db, store, batch, report)?;
        report.stray_blob_files += removed;
    }
    Ok(())
}
