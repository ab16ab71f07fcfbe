//! A consistent copy of the database, taken while replicas read and write it.
//!
//! `VACUUM INTO` copies one read transaction's snapshot (WAL readers see one
//! point in time, and writers go on beside it), compacted, into a new file. The
//! copy is written beside its target under a hidden name, checked, synced and then
//! renamed: a backup killed halfway leaves no file under the name asked for.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

/// What a finished backup holds.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupSummary {
    pub file: PathBuf,
    pub bytes: u64,
    pub schema_version: u32,
    /// Rows of the tables a person recognises, as found in the copy.
    pub counts: Vec<TableCount>,
}

#[derive(Debug, serde::Serialize)]
pub struct TableCount {
    pub table: &'static str,
    pub rows: u64,
}

/// Why a backup was not written.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("`{0}` already exists")]
    Exists(PathBuf),
    #[error("the copy did not check out: {0}")]
    Unsound(String),
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot write `{}`: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The tables counted in a summary, in the order shown.
const COUNTED: &[&str] = &[
    "manifests",
    "tags",
    "receipts",
    "customers",
    "tokens",
    "rollouts",
];

/// Copies the database at `path` into `target`, which must not exist. Written
/// `0600` whatever the umask: it holds token hashes and customers' keys.
pub fn backup(path: &Path, target: &Path) -> Result<BackupSummary, BackupError> {
    if target.exists() {
        return Err(BackupError::Exists(target.to_path_buf()));
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "registry.db".into());
    let partial = target.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let written = write_checked(path, &partial, target);
    let summary = written.and_then(|summary| {
        // No overwrite of a file that appeared meanwhile: link, then drop the partial.
        std::fs::hard_link(&partial, target).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => BackupError::Exists(target.to_path_buf()),
            _ => BackupError::Io(e),
        })?;
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::File::open(parent)?.sync_all()?;
        }
        Ok(summary)
    });
    let _ = std::fs::remove_file(&partial);
    summary
}

/// Writes and checks the copy at `partial`; the summary names `target`, where it
/// will be linked once it is sound.
fn write_checked(path: &Path, partial: &Path, target: &Path) -> Result<BackupSummary, BackupError> {
    use std::os::unix::fs::OpenOptionsExt;
    // VACUUM INTO writes into an empty file as it finds it, so its mode is ours.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(partial)
        .map_err(|source| BackupError::Write {
            path: partial.to_path_buf(),
            source,
        })?;
    let source = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    source.busy_timeout(std::time::Duration::from_secs(10))?;
    source.execute("VACUUM INTO ?1", [partial.to_string_lossy()])?;
    drop(source);
    let copy = Connection::open_with_flags(partial, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let integrity: String =
        copy.query_row("PRAGMA integrity_check", [], |r| r.get("integrity_check"))?;
    if integrity != "ok" {
        return Err(BackupError::Unsound(integrity));
    }
    let schema_version: u32 =
        copy.query_row("PRAGMA user_version", [], |r| r.get("user_version"))?;
    let mut counts = Vec::new();
    for table in COUNTED {
        let present: bool = copy.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)
             AS found",
            [table],
            |r| r.get("found"),
        )?;
        if present {
            let count: u64 =
                copy.query_row(&format!("SELECT COUNT(*) AS n FROM {table}"), [], |r| {
                    r.get("n")
                })?;
            counts.push(TableCount { table, rows: count });
        }
    }
    drop(copy);
    let file = std::fs::File::open(partial)?;
    file.sync_all()?;
    Ok(BackupSummary {
        file: target.to_path_buf(),
        bytes: file.metadata()?.len(),
        schema_version,
        counts,
    })
}
