//! Blobs as files in the data folder: the default, and the layout every registry
//! made before object storage had.
//!
//! A blob is written under `uploads/`, hashed as it arrives, synced, checked against
//! the digest the client claims, and only then renamed into `blobs/`. A rename is
//! atomic, so a reader sees a whole blob or none.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use axum::body::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::Digest;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::{Backend, BlobStore, ByteStream, Segment, StageError, Staged, UploadWriter, Written};

pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    pub fn open(root: &Path) -> io::Result<FsStore> {
        std::fs::create_dir_all(root.join("blobs/sha256"))?;
        std::fs::create_dir_all(root.join("uploads"))?;
        Ok(FsStore {
            root: root.to_path_buf(),
        })
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.hex();
        self.root.join("blobs/sha256").join(&hex[..2]).join(hex)
    }

    pub fn upload_path(&self, id: &str) -> PathBuf {
        self.root.join("uploads").join(id)
    }
}

async fn file_size(path: &Path) -> io::Result<u64> {
    match tokio::fs::metadata(path).await {
        Ok(m) => Ok(m.len()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// Hashes a file from the start (when an upload's running hash was lost).
async fn hash_file(path: &Path) -> io::Result<Sha256Hasher> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(path)?;
        let mut hasher = Sha256Hasher::new();
        io::copy(&mut file, &mut hasher)?;
        Ok(hasher)
    })
    .await
    .map_err(io::Error::other)?
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn remove(path: &Path) -> io::Result<Option<u64>> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    match std::fs::remove_file(path) {
        Ok(()) => Ok(Some(size)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

struct FileWriter {
    writer: tokio::io::BufWriter<tokio::fs::File>,
}

impl UploadWriter for FileWriter {
    fn write(&mut self, chunk: Bytes) -> BoxFuture<'_, io::Result<Option<Segment>>> {
        async move {
            self.writer.write_all(&chunk).await?;
            Ok(None)
        }
        .boxed()
    }

    fn finish(mut self: Box<Self>) -> BoxFuture<'static, io::Result<Written>> {
        async move {
            self.writer.flush().await?;
            Ok(Written::Segment(None))
        }
        .boxed()
    }
}

/// A synced upload file, renamed into place on promotion.
struct StagedFile {
    upload: PathBuf,
    target: PathBuf,
    size: u64,
}

impl Staged for StagedFile {
    fn size(&self) -> u64 {
        self.size
    }

    /// Renames the upload into place (replacing an existing copy, which has the same
    /// bytes) and makes the rename durable.
    fn promote(self: Box<Self>) -> io::Result<()> {
        let parent = self.target.parent().expect("blob paths have a parent");
        std::fs::create_dir_all(parent)?;
        std::fs::rename(&self.upload, &self.target)?;
        if let Ok(dir) = std::fs::File::open(parent) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

impl BlobStore for FsStore {
    fn backend(&self) -> Backend {
        Backend::Filesystem
    }

    fn location(&self) -> String {
        self.root.join("blobs").display().to_string()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        async move {
            tokio::fs::metadata(self.root.join("blobs/sha256"))
                .await
                .map(|_| ())
                .map_err(|e| format!("`{}`: {e}", self.location()))
        }
        .boxed()
    }

    fn free_bytes(&self) -> Option<io::Result<u64>> {
        Some(fs2::available_space(&self.root))
    }

    fn read<'a>(
        &'a self,
        digest: &'a Digest,
        first: u64,
        length: u64,
    ) -> BoxFuture<'a, io::Result<Option<ByteStream>>> {
        async move {
            let mut file = match tokio::fs::File::open(self.blob_path(digest)).await {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            if first > 0 {
                file.seek(io::SeekFrom::Start(first)).await?;
            }
            let stream = tokio_util::io::ReaderStream::with_capacity(file.take(length), 256 * 1024);
            Ok(Some(stream.boxed()))
        }
        .boxed()
    }

    fn records_segments(&self) -> bool {
        false
    }

    fn upload_start<'a>(&'a self, id: &'a str) -> BoxFuture<'a, io::Result<()>> {
        tokio::fs::write(self.upload_path(id), b"").boxed()
    }

    fn upload_size<'a>(&'a self, id: &'a str, _recorded: u64) -> BoxFuture<'a, io::Result<u64>> {
        async move { file_size(&self.upload_path(id)).await }.boxed()
    }

    fn upload_writer<'a>(
        &'a self,
        id: &'a str,
        _size: u64,
    ) -> BoxFuture<'a, io::Result<Box<dyn UploadWriter>>> {
        async move {
            let file = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.upload_path(id))
                .await?;
            let writer = tokio::io::BufWriter::with_capacity(1024 * 1024, file);
            Ok(Box::new(FileWriter { writer }) as Box<dyn UploadWriter>)
        }
        .boxed()
    }

    fn blob_writer<'a>(
        &'a self,
        _expected: &'a Digest,
    ) -> Option<BoxFuture<'a, io::Result<Box<dyn UploadWriter>>>> {
        None
    }

    fn stage<'a>(
        &'a self,
        id: &'a str,
        _segments: Vec<Segment>,
        expected: &'a Digest,
        hasher: Option<Sha256Hasher>,
    ) -> BoxFuture<'a, Result<Box<dyn Staged>, StageError>> {
        async move {
            let path = self.upload_path(id);
            let size = file_size(&path).await?;
            let exists = tokio::fs::try_exists(&path).await?;
            let hasher = match hasher {
                Some(h) if h.len() == size => h,
                _ if exists => hash_file(&path).await?,
                _ => Sha256Hasher::new(),
            };
            let actual = hasher.finish();
            if &actual != expected {
                return Err(StageError::Mismatch { actual });
            }
            if !exists {
                tokio::fs::write(&path, b"").await?;
            }
            // The bytes are on disk before anything points at them.
            tokio::fs::OpenOptions::new()
                .read(true)
                .open(&path)
                .await?
                .sync_all()
                .await?;
            Ok(Box::new(StagedFile {
                upload: path,
                target: self.blob_path(expected),
                size,
            }) as Box<dyn Staged>)
        }
        .boxed()
    }

    fn remove_upload(&self, id: &str) -> io::Result<u64> {
        Ok(remove(&self.upload_path(id))?.unwrap_or(0))
    }

    fn list_uploads(&self) -> io::Result<Vec<(String, SystemTime)>> {
        Ok(std::fs::read_dir(self.root.join("uploads"))?
            .flatten()
            .filter_map(|entry| {
                let modified = modified(&entry.path())?;
                Some((entry.file_name().to_string_lossy().to_string(), modified))
            })
            .collect())
    }

    fn delete_blob(&self, digest: &Digest) -> io::Result<Option<u64>> {
        remove(&self.blob_path(digest))
    }

    fn list_blobs(&self) -> io::Result<Vec<(String, SystemTime)>> {
        let mut blobs = Vec::new();
        for prefix in std::fs::read_dir(self.root.join("blobs/sha256"))?.flatten() {
            let Ok(files) = std::fs::read_dir(prefix.path()) else {
                continue;
            };
            for file in files.flatten() {
                if let Some(modified) = modified(&file.path()) {
                    let digest = format!("sha256:{}", file.file_name().to_string_lossy());
                    blobs.push((digest, modified));
                }
            }
        }
        Ok(blobs)
    }
}
