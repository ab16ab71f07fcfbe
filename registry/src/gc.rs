//! Garbage collection: expired upload sessions, stray upload files, and blobs that no
//! manifest references.
//!
//! Two rules keep it safe beside a running server (`gc` is often another process):
//!
//! - **Rows go first, files after.** Each batch of rows is deleted in its own
//!   committed transaction, and only then are the files unlinked. A crash in between
//!   leaves files without rows, which are garbage the next run sweeps; never a row
//!   without its file, which would be corruption.
//! - **A file is unlinked only while gc holds the write lock and the database says
//!   it is not recorded.** The server renames a blob into place inside the write
//!   transaction that records it, so no commit can slip between gc's check and its
//!   unlink, even when the file's age (a rename keeps the upload's old mtime) says it
//!   is stale. The same digest pushed again after its rows were deleted keeps its file.
//!
//! Work goes in batches of [`BATCH`] rows, so a reader or a push never waits long
//! behind a large collection.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::db::{self, Db};
use crate::error::Error;
use crate::storage::Storage;

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

fn older_than(path: &Path, cutoff: SystemTime) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|modified| modified < cutoff)
}

fn remove(path: &Path, report: &mut GcReport) -> bool {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    match std::fs::remove_file(path) {
        Ok(()) => {
            report.bytes_freed += size;
            true
        }
        Err(_) => false,
    }
}

/// Collects everything: expired uploads, stray files, and unreferenced blobs older
/// than `grace`.
pub fn run(
    db: &Db,
    storage: &Storage,
    upload_lifetime: Duration,
    grace: Duration,
) -> Result<GcReport, Error> {
    let mut report = GcReport::default();
    sweep_uploads(db, storage, upload_lifetime, &mut report)?;
    delete_unreferenced_blobs(db, storage, grace, &mut report)?;
    sweep_blob_files(db, storage, grace, &mut report)?;
    Ok(report)
}

/// Deletes expired upload sessions and upload files no session owns. `serve` runs
/// this in the background; `gc` runs it first.
pub fn sweep_uploads(
    db: &Db,
    storage: &Storage,
    lifetime: Duration,
    report: &mut GcReport,
) -> Result<(), Error> {
    let before = db::now_unix() - lifetime.as_secs() as i64;
    loop {
        let ids = db.write(|tx| {
            let ids = db::uploads::expired(tx, before, BATCH)?;
            for id in &ids {
                db::uploads::delete(tx, id)?;
            }
            Ok(ids)
        })?;
        for id in &ids {
            remove(&storage.upload_path(id), report);
        }
        report.expired_uploads += ids.len() as u64;
        if ids.len() < BATCH {
            break;
        }
    }
    // A session's file is written before its row, and every write to it makes it
    // young again, so an old file without a row belongs to no live session.
    let cutoff = SystemTime::now() - lifetime;
    let live = db.scan(db::uploads::all_ids)?;
    let stray: Vec<(String, PathBuf)> = std::fs::read_dir(storage.uploads_dir())?
        .flatten()
        .map(|entry| {
            (
                entry.file_name().to_string_lossy().to_string(),
                entry.path(),
            )
        })
        .filter(|(id, path)| !live.contains(id) && older_than(path, cutoff))
        .collect();
    for batch in stray.chunks(BATCH) {
        db.write(|tx| {
            for (id, path) in batch {
                if db::uploads::get(tx, id)?.is_none() && remove(path, report) {
                    report.stray_upload_files += 1;
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Deletes the rows of unreferenced blobs older than `grace`, batch by batch, each
/// batch committed before its files are unlinked.
fn delete_unreferenced_blobs(
    db: &Db,
    storage: &Storage,
    grace: Duration,
    report: &mut GcReport,
) -> Result<(), Error> {
    let before = db::now_unix() - grace.as_secs() as i64;
    loop {
        let digests = db.write(|tx| {
            let digests = db::blobs::unreferenced(tx, before, BATCH)?;
            db::blobs::delete_rows(tx, &digests)?;
            Ok(digests)
        })?;
        let files: Vec<(String, PathBuf)> = digests
            .iter()
            .filter_map(|d| Some((d.clone(), blob_file(storage, d)?)))
            .collect();
        unlink_unrecorded(db, &files, report)?;
        report.blobs_deleted += digests.len() as u64;
        if digests.len() < BATCH {
            return Ok(());
        }
    }
}

fn blob_file(storage: &Storage, digest: &str) -> Option<PathBuf> {
    digest
        .parse::<stackpack_schema::Digest>()
        .ok()
        .map(|d| storage.blob_path(&d))
}

/// Unlinks each file whose digest has no row, holding the write lock so that no
/// commit records one meanwhile. Returns how many were removed.
fn unlink_unrecorded(
    db: &Db,
    files: &[(String, PathBuf)],
    report: &mut GcReport,
) -> Result<u64, Error> {
    db.write(|tx| {
        let mut removed = 0;
        for (digest, path) in files {
            if db::blobs::size(tx, digest)?.is_none() && remove(path, report) {
                removed += 1;
            }
        }
        Ok(removed)
    })
}

/// Removes blob files that have no row (left by a crash between a rename and its
/// commit, or between gc's commit and its unlink) and are older than `grace`.
fn sweep_blob_files(
    db: &Db,
    storage: &Storage,
    grace: Duration,
    report: &mut GcReport,
) -> Result<(), Error> {
    let cutoff = SystemTime::now() - grace;
    // A first, lock-free pass by a snapshot; each candidate is checked again under
    // the write lock before it goes.
    let known = db.scan(db::blobs::all)?;
    let mut stray = Vec::new();
    for prefix in std::fs::read_dir(storage.blobs_dir())?.flatten() {
        let Ok(files) = std::fs::read_dir(prefix.path()) else {
            continue;
        };
        for file in files.flatten() {
            let digest = format!("sha256:{}", file.file_name().to_string_lossy());
            if !known.contains(&digest) && older_than(&file.path(), cutoff) {
                stray.push((digest, file.path()));
            }
        }
    }
    for batch in stray.chunks(BATCH) {
        let removed = unlink_unrecorded(db, batch, report)?;
        report.stray_blob_files += removed;
    }
    Ok(())
}
