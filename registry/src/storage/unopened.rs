//! The blob store of a command that touches no blobs (`token create`, `customer
//! add`, the ledger views): it opens nothing, creates no folder and asks no bucket,
//! so such a command runs from any machine that reaches the registry's
//! PostgreSQL, without its data folder or S3 credentials. Every call is refused,
//! naming the command's mistake, rather than reaching a store nobody configured.

use std::io;
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::Digest;

use super::{Backend, BlobStore, ByteStream, Segment, StageError, Staged, UploadWriter};

/// No blob store: see the module's documentation.
pub struct Unopened;

fn refused() -> io::Error {
    io::Error::other(
        "this command opened no blob store: it reads and writes only the registry's rows",
    )
}

impl BlobStore for Unopened {
    /// Not a blob store's kind; no `/healthz` or metric ever reads it, since no
    /// server runs on this store.
    fn backend(&self) -> Backend {
        Backend::Filesystem
    }

    fn location(&self) -> String {
        "none (this command touches no blobs)".to_string()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Err(refused().to_string()) })
    }

    fn free_bytes(&self) -> Option<io::Result<u64>> {
        Some(Err(refused()))
    }

    fn read<'a>(
        &'a self,
        _: &'a Digest,
        _: u64,
        _: u64,
    ) -> BoxFuture<'a, io::Result<Option<ByteStream>>> {
        Box::pin(async { Err(refused()) })
    }

    fn records_segments(&self) -> bool {
        false
    }

    fn upload_start<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(async { Err(refused()) })
    }

    fn upload_size<'a>(&'a self, _: &'a str, _: u64) -> BoxFuture<'a, io::Result<u64>> {
        Box::pin(async { Err(refused()) })
    }

    fn upload_writer<'a>(
        &'a self,
        _: &'a str,
        _: u64,
    ) -> BoxFuture<'a, io::Result<Box<dyn UploadWriter>>> {
        Box::pin(async { Err(refused()) })
    }

    fn blob_writer<'a>(
        &'a self,
        _: &'a Digest,
    ) -> Option<BoxFuture<'a, io::Result<Box<dyn UploadWriter>>>> {
        Some(Box::pin(async { Err(refused()) }))
    }

    fn stage<'a>(
        &'a self,
        _: &'a str,
        _: Vec<Segment>,
        _: &'a Digest,
        _: Option<Sha256Hasher>,
    ) -> BoxFuture<'a, Result<Box<dyn Staged>, StageError>> {
        Box::pin(async { Err(StageError::Io(refused())) })
    }

    fn remove_upload(&self, _: &str) -> io::Result<u64> {
        Err(refused())
    }

    fn list_uploads(&self) -> io::Result<Vec<(String, SystemTime)>> {
        Err(refused())
    }

    fn delete_blob(&self, _: &Digest) -> io::Result<Option<u64>> {
        Err(refused())
    }

    fn list_blobs(&self) -> io::Result<Vec<(String, SystemTime)>> {
        Err(refused())
    }
}
