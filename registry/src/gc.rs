//! Garbage collection: expired upload sessions, stray upload files, and blobs that no
//! manifest references.
//!
//! A blob is deleted only when no manifest in any repository references it and it
//! is older than the grace period (so a blob pushed just before its manifest is
//! safe). Rows are deleted and files removed inside one write transaction; the
//! server records new blobs inside write transactions too, so the two never
//! interleave. Files on disk with no row (left by a crash between the rename and the
//! commit) are removed once older than the grace period.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use stackpack_schema::Digest;

use crate::db::{self, Db};
use crate::error::Error;
use crate::storage::Storage;

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

pub fn run(
    db: &Db,
    storage: &Storage,
    upload_lifetime: Duration,
    grace: Duration,
) -> Result<GcReport, Error> {
    let mut report = GcReport::default();
    let now = db::now_unix();
    let upload_cutoff = SystemTime::now() - upload_lifetime;
    let grace_cutoff = SystemTime::now() - grace;

    let expired = db.write(|tx| {
        Ok(db::uploads::delete_expired(
            tx,
            now - upload_lifetime.as_secs() as i64,
        )?)
    })?;
    for id in &expired {
        remove(&storage.upload_path(id), &mut report);
    }
    report.expired_uploads = expired.len() as u64;

    let live = db.read(db::uploads::all_ids)?;
    for entry in std::fs::read_dir(storage.uploads_dir())?.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !live.contains(&name)
            && older_than(&entry.path(), upload_cutoff)
            && remove(&entry.path(), &mut report)
        {
            report.stray_upload_files += 1;
        }
    }

    let before = now - grace.as_secs() as i64;
    report.blobs_deleted = db.write(|tx| {
        let digests = db::blobs::delete_unreferenced(tx, before)?;
        for digest in &digests {
            if let Ok(digest) = digest.parse::<Digest>() {
                remove(&storage.blob_path(&digest), &mut report);
            }
        }
        Ok(digests.len() as u64)
    })?;

    let known = db.read(db::blobs::all)?;
    for prefix in std::fs::read_dir(storage.blobs_dir())?.flatten() {
        let Ok(files) = std::fs::read_dir(prefix.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = format!("sha256:{}", file.file_name().to_string_lossy());
            if !known.contains(&name)
                && older_than(&file.path(), grace_cutoff)
                && remove(&file.path(), &mut report)
            {
                report.stray_blob_files += 1;
            }
        }
    }
    Ok(report)
}
