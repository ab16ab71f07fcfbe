//! Blobs as objects in any S3 API (`--blobs s3://bucket/prefix`), so that several
//! replicas sharing one database serve the same blobs and go on with each other's
//! upload sessions.
//!
//! - A session's bytes are stored in segments of up to [`SEGMENT`] bytes, each a
//!   whole object (`uploads/<id>/<start>`) recorded in the database once written:
//!   whichever replica takes the next request reads the session's size there. A
//!   request cut off keeps the segments it completed; the client asks how far the
//!   session got and goes on.
//! - Finishing reads the segments in order, hashing them, into a multipart upload
//!   of `blobs/sha256/<hex>` (parts of [`SEGMENT`] bytes, at least S3's 5 MiB), or
//!   one object's bytes in memory when the blob is smaller. Nothing is at that key
//!   until the multipart upload completes (the promotion, inside the database
//!   transaction that records the blob), and a digest that does not match aborts
//!   it. The running hash need not survive between replicas: finishing reads the
//!   bytes anyway.
//! - Memory stays bounded: one segment or part per request in flight.
//!
//! The store runs its requests on a small runtime of its own, so that gc's blocking
//! calls and the promotion inside a database write can wait on them wherever they
//! run.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use stackpack_aws::s3::{AwsCredentials, S3Error, S3Objects};
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::Digest;

use super::{
    Backend, BlobStore, ByteStream, OpenError, S3Location, Segment, StageError, Staged,
    UploadWriter, Written,
};
use crate::metrics::Metrics;

/// Bytes per stored segment and per multipart part: above S3's 5 MiB floor for
/// parts, small enough to hold one per request in flight.
pub const SEGMENT: usize = 8 * 1024 * 1024;

/// A request that sends or receives nothing for this long fails.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

struct Shared {
    client: S3Objects,
    prefix: String,
    metrics: Arc<Metrics>,
}

impl Shared {
    fn blob_key(&self, digest: &Digest) -> String {
        format!("{}blobs/sha256/{}", self.prefix, digest.hex())
    }

    fn upload_prefix(&self, id: &str) -> String {
        format!("{}uploads/{id}/", self.prefix)
    }

    fn segment_key(&self, id: &str, start: u64) -> String {
        format!("{}{start:020}", self.upload_prefix(id))
    }

    /// Runs one S3 call, timing it for `/metrics`.
    async fn timed<T>(
        &self,
        operation: &'static str,
        call: impl std::future::Future<Output = Result<T, S3Error>>,
    ) -> io::Result<T> {
        let started = Instant::now();
        let result = call.await;
        self.metrics
            .observe_storage(Backend::S3.as_str(), operation, started.elapsed());
        result.map_err(io::Error::other)
    }
}

pub struct S3Store {
    shared: Arc<Shared>,
    location: String,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl Drop for S3Store {
    fn drop(&mut self) {
        // Dropped on an async worker at shutdown, a runtime may not block.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl S3Store {
    /// Opens the store and checks at once that the bucket exists and these
    /// credentials may list it, so a wrong name or key stops the start, not the
    /// first push.
    pub fn open(location: &S3Location, metrics: Arc<Metrics>) -> Result<S3Store, OpenError> {
        let shown = location.to_string();
        let credentials = AwsCredentials::load()
            .map_err(|source| OpenError::Profile {
                location: shown.clone(),
                source,
            })?
            .ok_or_else(|| OpenError::NoCredentials {
                location: shown.clone(),
            })?;
        let failed = |source| OpenError::S3 {
            location: shown.clone(),
            source,
        };
        let client = S3Objects::new(
            location.endpoint.as_deref(),
            &location.region,
            credentials,
            &location.bucket,
            READ_TIMEOUT,
        )
        .map_err(failed)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("s3-blobs")
            .enable_all()
            .build()?;
        let store = S3Store {
            shared: Arc::new(Shared {
                client,
                prefix: location.prefix.clone(),
                metrics,
            }),
            location: shown.clone(),
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        };
        let shared = store.shared.clone();
        let check = store
            .handle
            .spawn(async move { shared.client.check_bucket(&shared.prefix).await });
        wait(&store.handle, check)
            .map_err(|e| OpenError::Io(io::Error::other(e)))?
            .map_err(failed)?;
        Ok(store)
    }

    /// Runs `call` on the store's runtime from an async caller.
    async fn run<T: Send + 'static>(
        &self,
        call: impl std::future::Future<Output = io::Result<T>> + Send + 'static,
    ) -> io::Result<T> {
        self.handle.spawn(call).await.map_err(io::Error::other)?
    }

    fn block_io<T: Send + 'static>(
        &self,
        call: impl std::future::Future<Output = io::Result<T>> + Send + 'static,
    ) -> io::Result<T> {
        let task = self.handle.spawn(call);
        wait(&self.handle, task).map_err(io::Error::other)?
    }
}

/// Waits for a task of the store's runtime from a thread allowed to block (gc's, or
/// a database write's, which runs in `block_in_place`).
fn wait<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    task: tokio::task::JoinHandle<T>,
) -> Result<T, tokio::task::JoinError> {
    let (send, receive) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = send.send(task.await);
    });
    receive
        .recv()
        .unwrap_or_else(|_| panic!("the S3 store's runtime stopped"))
}

/// Streams an object's answer through a channel, so that the connection is read on
/// the store's runtime whoever reads the stream.
fn pump(mut answer: reqwest::Response, handle: &tokio::runtime::Handle) -> ByteStream {
    let (send, receive) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(4);
    handle.spawn(async move {
        loop {
            let next = match answer.chunk().await {
                Ok(Some(chunk)) => Ok(chunk),
                Ok(None) => return,
                Err(e) => Err(io::Error::other(e)),
            };
            let failed = next.is_err();
            if send.send(next).await.is_err() || failed {
                return;
            }
        }
    });
    futures_util::stream::unfold(receive, |mut receive| async move {
        receive.recv().await.map(|item| (item, receive))
    })
    .boxed()
}

/// Writes a session's bytes as segments.
struct SegmentWriter {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    id: String,
    start: u64,
    buffer: Vec<u8>,
}

impl SegmentWriter {
    async fn flush(&mut self) -> io::Result<Option<Segment>> {
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let body = std::mem::replace(&mut self.buffer, Vec::with_capacity(SEGMENT));
        let segment = Segment {
            start: self.start,
            size: body.len() as u64,
        };
        let shared = self.shared.clone();
        let key = shared.segment_key(&self.id, segment.start);
        self.handle
            .spawn(async move { shared.timed("put", shared.client.put(&key, body)).await })
            .await
            .map_err(io::Error::other)??;
        self.start += segment.size;
        Ok(Some(segment))
    }
}

impl UploadWriter for SegmentWriter {
    fn write(&mut self, chunk: Bytes) -> BoxFuture<'_, io::Result<Option<Segment>>> {
        async move {
            self.buffer.extend_from_slice(&chunk);
            if self.buffer.len() >= SEGMENT {
                return self.flush().await;
            }
            Ok(None)
        }
        .boxed()
    }

    fn finish(mut self: Box<Self>) -> BoxFuture<'static, io::Result<Written>> {
        async move { Ok(Written::Segment(self.flush().await?)) }.boxed()
    }
}

/// Verified bytes waiting to become `key`.
enum Pending {
    /// A small blob's bytes, written whole on promotion.
    Whole(Vec<u8>),
    /// A multipart upload whose parts are all there, completed on promotion.
    Parts {
        upload_id: String,
        etags: Vec<String>,
    },
    Done,
}

struct StagedObject {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    key: String,
    size: u64,
    pending: Pending,
}

impl Staged for StagedObject {
    fn size(&self) -> u64 {
        self.size
    }

    fn promote(mut self: Box<Self>) -> io::Result<()> {
        let pending = std::mem::replace(&mut self.pending, Pending::Done);
        let shared = self.shared.clone();
        let key = self.key.clone();
        let task = self.handle.spawn(async move {
            match pending {
                Pending::Whole(body) => shared.timed("put", shared.client.put(&key, body)).await,
                Pending::Parts { upload_id, etags } => {
                    let complete = shared.client.complete_multipart(&key, &upload_id, &etags);
                    shared.timed("complete_multipart", complete).await
                }
                Pending::Done => Ok(()),
            }
        });
        wait(&self.handle, task).map_err(io::Error::other)?
    }
}

impl Drop for StagedObject {
    fn drop(&mut self) {
        if let Pending::Parts { upload_id, .. } =
            std::mem::replace(&mut self.pending, Pending::Done)
        {
            let shared = self.shared.clone();
            let key = self.key.clone();
            self.handle.spawn(async move {
                let _ = shared.client.abort_multipart(&key, &upload_id).await;
            });
        }
    }
}

/// Writes a blob's bytes into parts of a multipart upload of its key, created with
/// the first full part; a blob smaller than one part stays in memory and is written
/// whole on promotion. Dropped before it finishes, it aborts the upload.
struct PartWriter {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    key: String,
    upload_id: Option<String>,
    etags: Vec<String>,
    buffer: Vec<u8>,
    size: u64,
}

impl PartWriter {
    fn new(shared: Arc<Shared>, handle: tokio::runtime::Handle, key: String) -> PartWriter {
        PartWriter {
            shared,
            handle,
            key,
            upload_id: None,
            etags: Vec::new(),
            buffer: Vec::new(),
            size: 0,
        }
    }

    async fn push(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.size += chunk.len() as u64;
        self.buffer.extend_from_slice(chunk);
        if self.buffer.len() >= SEGMENT {
            self.upload_part().await?;
        }
        Ok(())
    }

    /// Sends the buffer as the next part, on the store's runtime.
    async fn upload_part(&mut self) -> io::Result<()> {
        let shared = self.shared.clone();
        let key = self.key.clone();
        let upload_id = self.upload_id.clone();
        let body = std::mem::take(&mut self.buffer);
        let number = self.etags.len() as u32 + 1;
        let (upload_id, etag) = self
            .handle
            .spawn(async move {
                let upload_id = match upload_id {
                    Some(id) => id,
                    None => {
                        let create = shared.client.create_multipart(&key);
                        shared.timed("create_multipart", create).await?
                    }
                };
                let upload = shared.client.upload_part(&key, &upload_id, number, body);
                let etag = shared.timed("upload_part", upload).await?;
                Ok::<_, io::Error>((upload_id, etag))
            })
            .await
            .map_err(io::Error::other)??;
        self.upload_id = Some(upload_id);
        self.etags.push(etag);
        Ok(())
    }

    /// Sends what is left; the blob is then ready to be promoted.
    async fn staged(mut self) -> io::Result<StagedObject> {
        if self.upload_id.is_some() && !self.buffer.is_empty() {
            self.upload_part().await?;
        }
        let pending = match self.upload_id.take() {
            Some(upload_id) => Pending::Parts {
                upload_id,
                etags: std::mem::take(&mut self.etags),
            },
            None => Pending::Whole(std::mem::take(&mut self.buffer)),
        };
        Ok(StagedObject {
            shared: self.shared.clone(),
            handle: self.handle.clone(),
            key: self.key.clone(),
            size: self.size,
            pending,
        })
    }
}

impl Drop for PartWriter {
    fn drop(&mut self) {
        if let Some(upload_id) = self.upload_id.take() {
            let shared = self.shared.clone();
            let key = self.key.clone();
            self.handle.spawn(async move {
                let _ = shared.client.abort_multipart(&key, &upload_id).await;
            });
        }
    }
}

impl UploadWriter for PartWriter {
    fn write(&mut self, chunk: Bytes) -> BoxFuture<'_, io::Result<Option<Segment>>> {
        async move {
            self.push(&chunk).await?;
            Ok(None)
        }
        .boxed()
    }

    fn finish(self: Box<Self>) -> BoxFuture<'static, io::Result<Written>> {
        async move { Ok(Written::Blob(Box::new((*self).staged().await?))) }.boxed()
    }
}

/// Reads the segments in order, hashing them, into parts of the blob's key: the
/// work of [`S3Store::stage`], on the store's runtime.
async fn assemble(
    mut writer: PartWriter,
    id: String,
    segments: Vec<Segment>,
) -> io::Result<(Sha256Hasher, StagedObject)> {
    let shared = writer.shared.clone();
    let mut hasher = Sha256Hasher::new();
    let mut next = 0u64;
    for segment in &segments {
        if segment.start != next {
            return Err(io::Error::other(format!(
                "upload `{id}` has no bytes recorded from {next} to {}",
                segment.start
            )));
        }
        next += segment.size;
        let segment_key = shared.segment_key(&id, segment.start);
        let Some(mut answer) = shared
            .timed("get", shared.client.get(&segment_key, None))
            .await?
        else {
            return Err(io::Error::other(format!(
                "upload `{id}` lost its segment `{segment_key}`"
            )));
        };
        while let Some(chunk) = answer.chunk().await.map_err(io::Error::other)? {
            hasher.update(&chunk);
            writer.push(&chunk).await?;
        }
    }
    Ok((hasher, writer.staged().await?))
}

impl BlobStore for S3Store {
    fn backend(&self) -> Backend {
        Backend::S3
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn check(&self) -> BoxFuture<'_, Result<(), String>> {
        async move {
            let shared = self.shared.clone();
            self.run(async move {
                let check = shared.client.check_bucket(&shared.prefix);
                shared.timed("check", check).await
            })
            .await
            .map_err(|e| format!("`{}`: {e}", self.location))
        }
        .boxed()
    }

    fn free_bytes(&self) -> Option<io::Result<u64>> {
        None
    }

    fn read<'a>(
        &'a self,
        digest: &'a Digest,
        first: u64,
        length: u64,
    ) -> BoxFuture<'a, io::Result<Option<ByteStream>>> {
        async move {
            let shared = self.shared.clone();
            let key = shared.blob_key(digest);
            let range = (length > 0).then(|| (first, first + length - 1));
            let answer = self
                .run(async move { shared.timed("get", shared.client.get(&key, range)).await })
                .await?;
            Ok(answer.map(|answer| {
                if length == 0 {
                    futures_util::stream::empty().boxed()
                } else {
                    pump(answer, &self.handle)
                }
            }))
        }
        .boxed()
    }

    fn records_segments(&self) -> bool {
        true
    }

    fn upload_start<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, io::Result<()>> {
        async { Ok(()) }.boxed()
    }

    fn upload_size<'a>(&'a self, _id: &'a str, recorded: u64) -> BoxFuture<'a, io::Result<u64>> {
        async move { Ok(recorded) }.boxed()
    }

    fn upload_writer<'a>(
        &'a self,
        id: &'a str,
        size: u64,
    ) -> BoxFuture<'a, io::Result<Box<dyn UploadWriter>>> {
        async move {
            Ok(Box::new(SegmentWriter {
                shared: self.shared.clone(),
                handle: self.handle.clone(),
                id: id.to_string(),
                start: size,
                buffer: Vec::new(),
            }) as Box<dyn UploadWriter>)
        }
        .boxed()
    }

    fn blob_writer<'a>(
        &'a self,
        expected: &'a Digest,
    ) -> Option<BoxFuture<'a, io::Result<Box<dyn UploadWriter>>>> {
        let key = self.shared.blob_key(expected);
        let writer = PartWriter::new(self.shared.clone(), self.handle.clone(), key);
        Some(async move { Ok(Box::new(writer) as Box<dyn UploadWriter>) }.boxed())
    }

    fn stage<'a>(
        &'a self,
        id: &'a str,
        segments: Vec<Segment>,
        expected: &'a Digest,
        _hasher: Option<Sha256Hasher>,
    ) -> BoxFuture<'a, Result<Box<dyn Staged>, StageError>> {
        async move {
            let key = self.shared.blob_key(expected);
            let writer = PartWriter::new(self.shared.clone(), self.handle.clone(), key);
            // A drop of what this returns aborts the multipart upload.
            let (hasher, staged) = self.run(assemble(writer, id.to_string(), segments)).await?;
            let actual = hasher.finish();
            if &actual != expected {
                return Err(StageError::Mismatch { actual });
            }
            Ok(Box::new(staged) as Box<dyn Staged>)
        }
        .boxed()
    }

    fn remove_upload(&self, id: &str) -> io::Result<u64> {
        let shared = self.shared.clone();
        let prefix = shared.upload_prefix(id);
        self.block_io(async move {
            let objects = shared.timed("list", shared.client.list(&prefix)).await?;
            let mut freed = 0;
            for object in objects {
                shared
                    .timed("delete", shared.client.delete(&object.key))
                    .await?;
                freed += object.size;
            }
            Ok(freed)
        })
    }

    fn list_uploads(&self) -> io::Result<Vec<(String, SystemTime)>> {
        let shared = self.shared.clone();
        let prefix = format!("{}uploads/", shared.prefix);
        let objects = self.block_io(async move {
            let objects = shared.timed("list", shared.client.list(&prefix)).await?;
            Ok((objects, prefix))
        })?;
        let (objects, prefix) = objects;
        let mut sessions: std::collections::BTreeMap<String, SystemTime> = Default::default();
        for object in objects {
            let Some((id, _)) = object.key[prefix.len()..].split_once('/') else {
                continue;
            };
            let modified = object
                .last_modified
                .map_or(SystemTime::UNIX_EPOCH, SystemTime::from);
            let newest = sessions.entry(id.to_string()).or_insert(modified);
            *newest = (*newest).max(modified);
        }
        Ok(sessions.into_iter().collect())
    }

    fn delete_blob(&self, digest: &Digest) -> io::Result<Option<u64>> {
        let shared = self.shared.clone();
        let key = shared.blob_key(digest);
        self.block_io(async move {
            let Some(size) = shared.timed("head", shared.client.head(&key)).await? else {
                return Ok(None);
            };
            shared.timed("delete", shared.client.delete(&key)).await?;
            Ok(Some(size))
        })
    }

    fn list_blobs(&self) -> io::Result<Vec<(String, SystemTime)>> {
        let shared = self.shared.clone();
        let prefix = format!("{}blobs/sha256/", shared.prefix);
        let (objects, prefix) = self.block_io(async move {
            let objects = shared.timed("list", shared.client.list(&prefix)).await?;
            Ok((objects, prefix))
        })?;
        Ok(objects
            .into_iter()
            .map(|object| {
                let modified = object
                    .last_modified
                    .map_or(SystemTime::UNIX_EPOCH, SystemTime::from);
                (format!("sha256:{}", &object.key[prefix.len()..]), modified)
            })
            .collect())
    }
}
