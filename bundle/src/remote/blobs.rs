//! Moving many blobs at once: the pushes and pulls of whole manifests.
//!
//! A few blobs move at the same time over the client's pooled connections (one
//! large layer no longer waits behind another, and small blobs do not pay a round
//! trip each in turn). What must move is worked out first (the registry's `HEAD`s,
//! or the layout's blobs), so progress knows its total before the first byte.
//!
//! Uploads are our own requests (with the token `oci-client` negotiated): a blob up
//! to [`Remote::monolithic_limit`] goes as `POST` then one streamed `PUT`; a larger
//! one as streamed `PATCH` chunks of [`Remote::upload_chunk`], so no single request
//! grows without bound. Either way the file is streamed, never held in memory.

use futures_util::{stream, StreamExt, TryStreamExt};
use oci_client::RegistryOperation;
use stackpack_schema::digest::{Digest, Sha256Hasher};
use stackpack_schema::oci::Descriptor;
use std::collections::HashSet;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::{error_chain, Progress, Remote, RemoteError};
use crate::layout::{ImageLayout, LayoutError};

/// Blobs moved at the same time. More would not help on a loopback or LAN
/// registry (the disk and one core's hashing are the limit) and would open more
/// upload sessions than a registry expects from one client.
pub const PARALLEL_BLOBS: usize = 4;

/// `HEAD`s asked at the same time: they are tiny.
const PARALLEL_CHECKS: usize = 8;

/// Default size up to which a blob is uploaded in one request.
pub const MONOLITHIC_LIMIT: u64 = 256 << 20;

/// Default size of each `PATCH` of a larger blob.
pub const UPLOAD_CHUNK: u64 = 64 << 20;

/// Read size when streaming a file into a request.
const READ_BUFFER: usize = 1 << 20;

/// What pushing a manifest's blobs did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlobsPushed {
    /// Bytes of blob content sent.
    pub bytes_sent: u64,
    /// Blobs the registry already had, or mounted from another repository.
    pub blobs_skipped: usize,
    /// Blobs uploaded.
    pub blobs_sent: usize,
}

fn unique(blobs: &[Descriptor]) -> Vec<&Descriptor> {
    let mut seen = HashSet::new();
    blobs
        .iter()
        .filter(|blob| seen.insert(blob.digest.clone()))
        .collect()
}

impl Remote {
    /// Sets the upload sizes: blobs up to `monolithic_limit` bytes go in one
    /// request, larger ones in `PATCH` chunks of `chunk` bytes.
    pub fn with_upload_sizes(mut self, monolithic_limit: u64, chunk: u64) -> Self {
        self.monolithic_limit = monolithic_limit;
        self.upload_chunk = chunk.max(1);
        self
    }

    /// Uploads every blob of `blobs` that `repository` lacks, [`PARALLEL_BLOBS`] at a
    /// time; a blob this session saw in another repository of the host is mounted
    /// instead. `progress` hears the total of what is uploaded before the first
    /// byte. On an error, the uploads still running are abandoned (registries expire
    /// unfinished sessions) and nothing else is sent.
    pub fn push_blobs(
        &self,
        repository: &str,
        layout: &ImageLayout,
        blobs: &[Descriptor],
        progress: Option<Progress>,
    ) -> Result<BlobsPushed, RemoteError> {
        let blobs = unique(blobs);
        self.runtime.block_on(async {
            let checks: Vec<(&Descriptor, bool)> =
                stream::iter(blobs.iter().map(|blob| async move {
                    let present = self.blob_exists_async(repository, &blob.digest).await?;
                    Ok::<_, RemoteError>((*blob, present))
                }))
                .buffered(PARALLEL_CHECKS)
                .try_collect()
                .await?;
            let mut outcome = BlobsPushed::default();
            let mut to_send = Vec::new();
            for (blob, present) in checks {
                if present || self.mount_from_seen_async(repository, &blob.digest).await {
                    self.saw(&blob.digest, repository);
                    outcome.blobs_skipped += 1;
                } else {
                    to_send.push(blob);
                }
            }
            if let Some(progress) = &progress {
                progress.begin(to_send.iter().map(|b| b.size).sum(), to_send.len());
            }
            let token = if to_send.is_empty() {
                None
            } else {
                self.token(repository, RegistryOperation::Push).await?
            };
            let sent: u64 = stream::iter(to_send.iter().map(|blob| {
                self.upload_async(
                    repository,
                    layout,
                    blob,
                    token.as_deref(),
                    progress.as_ref(),
                )
            }))
            .buffer_unordered(PARALLEL_BLOBS)
            .try_fold(0u64, |sum, sent| async move { Ok(sum + sent) })
            .await?;
            for blob in &to_send {
                self.saw(&blob.digest, repository);
            }
            if let Some(progress) = &progress {
                progress.finish();
            }
            outcome.bytes_sent = sent;
            outcome.blobs_sent = to_send.len();
            Ok(outcome)
        })
    }

    /// Downloads every blob of `blobs` that `layout` lacks, [`PARALLEL_BLOBS`] at a
    /// time, each hashed as it arrives and visible only once whole and verified (see
    /// [`Remote::pull_blob`]). `progress` hears the total still to come (a resumed
    /// download counts only its rest) before the first byte. Returns the bytes
    /// received.
    pub fn pull_blobs(
        &self,
        repository: &str,
        blobs: &[Descriptor],
        layout: &ImageLayout,
        progress: Option<Progress>,
    ) -> Result<u64, RemoteError> {
        let wanted: Vec<&Descriptor> = unique(blobs)
            .into_iter()
            .filter(|blob| !layout.has_blob(&blob.digest))
            .collect();
        if let Some(progress) = &progress {
            let total = wanted
                .iter()
                .map(|blob| {
                    let have = std::fs::metadata(partial_path(layout, &blob.digest))
                        .map(|m| m.len())
                        .unwrap_or(0);
                    if have > blob.size {
                        blob.size
                    } else {
                        blob.size - have
                    }
                })
                .sum();
            progress.begin(total, wanted.len());
        }
        let received = self.runtime.block_on(async {
            if wanted.is_empty() {
                return Ok(0);
            }
            let token = self.token(repository, RegistryOperation::Pull).await?;
            stream::iter(wanted.iter().map(|blob| {
                self.pull_blob_async(
                    repository,
                    blob,
                    layout,
                    token.as_deref(),
                    progress.as_ref(),
                )
            }))
            .buffer_unordered(PARALLEL_BLOBS)
            .try_fold(0u64, |sum, received| async move { Ok(sum + received) })
            .await
        })?;
        if let Some(progress) = &progress {
            progress.finish();
        }
        Ok(received)
    }

    pub(super) async fn blob_exists_async(
        &self,
        repository: &str,
        digest: &Digest,
    ) -> Result<bool, RemoteError> {
        let reference = self.reference(repository, "latest");
        self.client
            .blob_exists(&reference, &digest.to_string())
            .await
            .map_err(|e| self.map_error(repository, e))
    }

    /// A cross-repository mount (`POST …/blobs/uploads/?mount=…&from=…`). A registry
    /// that declines (or does not know the source) is not an error: the caller then
    /// uploads, as the distribution spec says.
    pub(super) async fn mount_from_seen_async(&self, repository: &str, digest: &Digest) -> bool {
        let source = match self.seen.lock() {
            Ok(seen) => seen.get(digest).cloned(),
            Err(_) => None,
        };
        let Some(source) = source.filter(|s| s != repository) else {
            return false;
        };
        let target = self.reference(repository, "latest");
        let from = self.reference(&source, "latest");
        let mounted = self
            .client
            .mount_blob(&target, &from, &digest.to_string())
            .await;
        mounted.is_ok()
            && self
                .blob_exists_async(repository, digest)
                .await
                .unwrap_or(false)
    }

    /// The registry token `oci-client` negotiated for `operation` on `repository`
    /// (none for registries without token auth).
    pub(super) async fn token(
        &self,
        repository: &str,
        operation: RegistryOperation,
    ) -> Result<Option<String>, RemoteError> {
        let reference = self.reference(repository, "latest");
        self.client
            .auth(&reference, &self.auth, operation)
            .await
            .map_err(|e| self.map_error(repository, e))
    }

    /// One blob up: `POST` a session, then the file streamed in one `PUT`, or in
    /// `PATCH` chunks and a closing `PUT` past the monolithic limit.
    pub(super) async fn upload_async(
        &self,
        repository: &str,
        layout: &ImageLayout,
        descriptor: &Descriptor,
        token: Option<&str>,
        progress: Option<&Progress>,
    ) -> Result<u64, RemoteError> {
        let path = layout.blob_path(&descriptor.digest);
        let size = descriptor.size;
        let start = format!("{}/v2/{repository}/blobs/uploads/", self.base_url());
        let request = self
            .http
            .post(&start)
            .header(reqwest::header::CONTENT_LENGTH, 0);
        let answer = self.send(request, token).await?;
        let mut location = self.upload_location(repository, answer, 202).await?;
        let digest = descriptor.digest.to_string();
        let closing = if size > self.monolithic_limit {
            let mut offset = 0;
            while offset < size {
                let length = self.upload_chunk.min(size - offset);
                let body = file_body(&path, offset, length, progress).await?;
                let request = self
                    .http
                    .patch(location.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                    .header(reqwest::header::CONTENT_LENGTH, length)
                    .header(
                        reqwest::header::CONTENT_RANGE,
                        format!("{offset}-{}", offset + length - 1),
                    )
                    .body(body);
                let answer = self.send(request, token).await?;
                location = self.upload_location(repository, answer, 202).await?;
                offset += length;
            }
            location.query_pairs_mut().append_pair("digest", &digest);
            self.http
                .put(location)
                .header(reqwest::header::CONTENT_LENGTH, 0)
        } else {
            location.query_pairs_mut().append_pair("digest", &digest);
            let body = file_body(&path, 0, size, progress).await?;
            self.http
                .put(location)
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .header(reqwest::header::CONTENT_LENGTH, size)
                .body(body)
        };
        let answer = self.send(closing, token).await?;
        self.expect_status(repository, answer, 201).await?;
        Ok(size)
    }

    pub(super) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        token: Option<&str>,
    ) -> Result<reqwest::Response, RemoteError> {
        self.authorized(request, token)
            .send()
            .await
            .map_err(|e| RemoteError::Unreachable {
                host: self.host.clone(),
                detail: error_chain(&e),
            })
    }

    /// The answer's status must be `expected`; anything else is the registry's
    /// refusal, named with the message it gave.
    async fn expect_status(
        &self,
        repository: &str,
        answer: reqwest::Response,
        expected: u16,
    ) -> Result<reqwest::Response, RemoteError> {
        if answer.status().as_u16() == expected {
            return Ok(answer);
        }
        Err(self.refusal(repository, answer).await)
    }

    /// An answer the registry should not have given, as the error it means, with
    /// the message it gave.
    pub(super) async fn refusal(&self, repository: &str, answer: reqwest::Response) -> RemoteError {
        let status = answer.status().as_u16();
        let body = self.error_body(answer).await;
        self.refusal_of(repository, status, &body)
    }

    /// A refusal from its status and (capped) body.
    pub(super) fn refusal_of(&self, repository: &str, status: u16, body: &str) -> RemoteError {
        let message = registry_message(body);
        let detail = format!("HTTP {status} {message}").trim().to_string();
        let repository = repository.to_string();
        let host = self.host.clone();
        match status {
            401 => RemoteError::Unauthorized {
                host,
                repository,
                credentials: self.credentials.describe(),
                detail,
            },
            403 => RemoteError::Denied {
                host,
                repository,
                detail,
            },
            _ => RemoteError::Server { host, detail },
        }
    }

    /// Where an upload session continues, from an answer's `Location` (relative
    /// locations are resolved against the registry).
    async fn upload_location(
        &self,
        repository: &str,
        answer: reqwest::Response,
        expected: u16,
    ) -> Result<reqwest::Url, RemoteError> {
        let answer = self.expect_status(repository, answer, expected).await?;
        let invalid = |detail: String| RemoteError::Invalid {
            host: self.host.clone(),
            what: "upload session".into(),
            detail,
        };
        let location = answer
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .ok_or_else(|| invalid("no `Location` header".into()))?;
        let base = reqwest::Url::parse(&format!("{}/", self.base_url()))
            .map_err(|e| invalid(e.to_string()))?;
        base.join(location)
            .map_err(|e| invalid(format!("`{location}`: {e}")))
    }

    /// One blob down, resumed from `.partial-<hex>` when a previous download was
    /// cut short. Our own `GET` (with `oci-client`'s token), so that each byte is
    /// hashed once, here, as it is written.
    pub(super) async fn pull_blob_async(
        &self,
        repository: &str,
        descriptor: &Descriptor,
        layout: &ImageLayout,
        token: Option<&str>,
        progress: Option<&Progress>,
    ) -> Result<u64, RemoteError> {
        if layout.has_blob(&descriptor.digest) {
            return Ok(0);
        }
        let digest = &descriptor.digest;
        let partial = partial_path(layout, digest);
        let io_error = |source: std::io::Error| {
            RemoteError::Layout(LayoutError::Io {
                context: "cannot write",
                path: partial.clone(),
                source,
            })
        };
        std::fs::create_dir_all(partial.parent().expect("has a parent")).map_err(io_error)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&partial)
            .map_err(io_error)?;
        let mut offset = file.metadata().map_err(io_error)?.len();
        if offset >= descriptor.size {
            // Longer than the blob, or whole yet never renamed: start over.
            file.set_len(0).map_err(io_error)?;
            offset = 0;
        }
        // A resumed download hashes the part it already has first.
        let mut hasher = Sha256Hasher::new();
        if offset > 0 {
            let mut reader = std::io::Read::take(&mut file, offset);
            std::io::copy(&mut reader, &mut hasher).map_err(io_error)?;
        }
        let url = format!("{}/v2/{repository}/blobs/{digest}", self.base_url());
        let mut request = self.http.get(&url);
        if offset > 0 {
            request = request.header(reqwest::header::RANGE, format!("bytes={offset}-"));
        }
        let mut answer = self.send(request, token).await?;
        match answer.status().as_u16() {
            206 if offset > 0 => {}
            200 => {
                // The registry sent everything: start over.
                file.set_len(0).map_err(io_error)?;
                file.seek(SeekFrom::Start(0)).map_err(io_error)?;
                offset = 0;
                hasher = Sha256Hasher::new();
            }
            _ => return Err(self.refusal(repository, answer).await),
        }
        let mut received = 0u64;
        let mut writer = std::io::BufWriter::with_capacity(READ_BUFFER, &mut file);
        while let Some(chunk) = answer.chunk().await.map_err(|e| RemoteError::Unreachable {
            host: self.host.clone(),
            detail: error_chain(&e),
        })? {
            if offset + received + chunk.len() as u64 > descriptor.size {
                return Err(RemoteError::Invalid {
                    host: self.host.clone(),
                    what: format!("blob `{digest}`"),
                    detail: format!("more bytes than its size of {}", descriptor.size),
                });
            }
            hasher.update(&chunk);
            writer.write_all(&chunk).map_err(io_error)?;
            received += chunk.len() as u64;
            if let Some(progress) = progress {
                progress.advance(chunk.len() as u64);
            }
        }
        writer.flush().map_err(io_error)?;
        drop(writer);
        file.sync_all().map_err(io_error)?;
        let size = hasher.len();
        let actual = hasher.finish();
        if &actual != digest || size != descriptor.size {
            let _ = std::fs::remove_file(&partial);
            return Err(RemoteError::DigestMismatch {
                host: self.host.clone(),
                what: format!("{repository}@{digest}"),
                expected: digest.clone(),
                actual,
            });
        }
        std::fs::rename(&partial, layout.blob_path(digest)).map_err(io_error)?;
        Ok(received)
    }
}

/// Where a download in progress lives: never under the blob's own name.
pub(super) fn partial_path(layout: &ImageLayout, digest: &Digest) -> PathBuf {
    layout
        .root()
        .join("blobs")
        .join("sha256")
        .join(format!(".partial-{}", digest.hex()))
}

/// `length` bytes of the file at `path` from `offset`, as a streamed request body
/// that tells `progress` of every piece handed to the connection.
async fn file_body(
    path: &std::path::Path,
    offset: u64,
    length: u64,
    progress: Option<&Progress>,
) -> Result<reqwest::Body, RemoteError> {
    let io_error = |source: std::io::Error| {
        RemoteError::Layout(LayoutError::Io {
            context: "cannot read",
            path: path.to_path_buf(),
            source,
        })
    };
    let mut file = tokio::fs::File::open(path).await.map_err(io_error)?;
    if offset > 0 {
        file.seek(SeekFrom::Start(offset)).await.map_err(io_error)?;
    }
    let progress = progress.cloned();
    let reader = tokio_util::io::ReaderStream::with_capacity(file.take(length), READ_BUFFER).map(
        move |chunk| {
            if let (Ok(chunk), Some(progress)) = (&chunk, &progress) {
                progress.advance(chunk.len() as u64);
            }
            chunk
        },
    );
    Ok(reqwest::Body::wrap_stream(reader))
}

/// The messages of a registry's error envelope (`{"errors":[{"code","message"}]}`),
/// or the start of whatever else it said.
fn registry_message(body: &str) -> String {
    let parsed: Option<Vec<String>> = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value["errors"].as_array().map(|errors| {
                errors
                    .iter()
                    .map(|e| {
                        format!(
                            "{}: {}",
                            e["code"].as_str().unwrap_or("ERROR"),
                            e["message"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
        });
    match parsed {
        Some(messages) if !messages.is_empty() => messages.join("; "),
        _ => body
            .chars()
            .take(200)
            .collect::<String>()
            .trim()
            .to_string(),
    }
}
