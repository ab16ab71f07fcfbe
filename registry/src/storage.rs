//! Content-addressed blob files.
//!
//! ```text
//! <data>/blobs/sha256/<first two hex>/<hex>   whole, verified blobs
//! <data>/uploads/<id>                         upload sessions in progress
//! <data>/registry.db                          SQLite (WAL): every bit of metadata
//! ```
//!
//! A blob is written under `uploads/`, hashed as it arrives, synced, checked against
//! the digest the client claims, and only then renamed into `blobs/`. A rename is
//! atomic, so a reader sees a whole blob or none; and a blob becomes visible to
//! clients only when its database row commits, after the rename.

use std::path::{Path, PathBuf};

use stackpack_schema::Digest;

pub struct Storage {
    root: PathBuf,
}

impl Storage {
    pub fn open(root: &Path) -> std::io::Result<Storage> {
        std::fs::create_dir_all(root.join("blobs/sha256"))?;
        std::fs::create_dir_all(root.join("uploads"))?;
        Ok(Storage {
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.hex();
        self.root.join("blobs/sha256").join(&hex[..2]).join(hex)
    }

    pub fn upload_path(&self, id: &str) -> PathBuf {
        self.root.join("uploads").join(id)
    }

    pub fn uploads_dir(&self) -> PathBuf {
        self.root.join("uploads")
    }

    pub fn blobs_dir(&self) -> PathBuf {
        self.root.join("blobs/sha256")
    }

    /// Bytes free for us on the data folder's disk.
    pub fn free_bytes(&self) -> std::io::Result<u64> {
        fs2::available_space(&self.root)
    }

    /// Syncs the upload file so its bytes are on disk before anything points at it.
    pub async fn sync(upload: &Path) -> std::io::Result<()> {
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .open(upload)
            .await?;
        file.sync_all().await
    }

    /// Renames a synced upload file into place as `digest` (replacing an existing
    /// copy, which has the same bytes) and makes the rename durable. Called inside
    /// the write transaction that records the blob: `gc` unlinks only while it holds
    /// the write lock and finds no row, so it never removes a file being committed.
    pub fn promote(&self, upload: &Path, digest: &Digest) -> std::io::Result<()> {
        let target = self.blob_path(digest);
        let parent = target.parent().expect("blob paths have a parent");
        std::fs::create_dir_all(parent)?;
        std::fs::rename(upload, &target)?;
        if let Ok(dir) = std::fs::File::open(parent) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Hashes a file from the start (used when an upload's running hash was lost).
    pub async fn hash_file(path: &Path) -> std::io::Result<stackpack_schema::digest::Sha256Hasher> {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let mut file = std::fs::File::open(path)?;
            let mut hasher = stackpack_schema::digest::Sha256Hasher::new();
            std::io::copy(&mut file, &mut hasher)?;
            Ok(hasher)
        })
        .await
        .map_err(std::io::Error::other)?
    }
}
