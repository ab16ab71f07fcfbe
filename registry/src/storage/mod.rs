//! Where blob bytes live, behind one trait ([`BlobStore`]) with two backends:
//!
//! - [`fs::FsStore`], the default: files in the data folder, as they always were.
//!
//!   ```text
//!   <data>/blobs/sha256/<first two hex>/<hex>   whole, verified blobs
//!   <data>/uploads/<id>                         upload sessions in progress
//!   <data>/registry.db                          SQLite (WAL): every bit of metadata
//!   ```
//!
//! - [`s3::S3Store`] (`--blobs s3://bucket/prefix`): objects in any S3 API, so that
//!   several replicas sharing one database serve the same blobs.
//!
//!   ```text
//!   <prefix>/blobs/sha256/<hex>            whole, verified blobs
//!   <prefix>/uploads/<id>/<start>          the pieces of a session, each recorded
//!                                          in the database once written
//!   ```
//!
//! Either way a blob becomes visible only whole and verified: its bytes are checked
//! against the claimed digest while they are *staged* (a synced file under
//! `uploads/`; a multipart upload not yet completed), and [`Staged::promote`] (a
//! rename; completing the multipart upload) runs inside the database transaction
//! that records the blob. `gc` deletes bytes only while it holds the write lock and
//! finds no row, so it never removes a blob being committed.

pub mod fs;
pub mod moving;
pub mod s3;
pub mod unopened;

use std::io;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::Digest;

pub use crate::db::uploads::Segment;

/// Bytes of a blob as they are read.
pub type ByteStream = BoxStream<'static, io::Result<Bytes>>;

/// Which kind of store holds the blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Filesystem,
    S3,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Filesystem => "filesystem",
            Backend::S3 => "s3",
        }
    }
}

/// Where the blobs live, as the configuration says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum BlobLocation {
    /// `blobs/` and `uploads/` in the data folder.
    #[default]
    DataFolder,
    S3(S3Location),
}

/// A bucket, a key prefix inside it, and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Location {
    pub bucket: String,
    /// Empty, or ends with `/`.
    pub prefix: String,
    /// Another S3 API's URL (MinIO, Ceph, an emulator); `None` for AWS itself.
    pub endpoint: Option<String>,
    pub region: String,
}

impl std::fmt::Display for S3Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.prefix)
    }
}

impl BlobLocation {
    /// What the database records of it: `data-folder`, or `s3://bucket/prefix`
    /// (how the bucket is reached, endpoint and region, may differ per replica).
    pub fn identity(&self) -> String {
        match self {
            BlobLocation::DataFolder => "data-folder".to_string(),
            BlobLocation::S3(s3) => s3.to_string(),
        }
    }

    /// `s3://bucket` or `s3://bucket/some/prefix`; `endpoint` and `region` from
    /// their own flags (the region otherwise from `AWS_REGION`, `AWS_DEFAULT_REGION`,
    /// the AWS profile's `region`, or `us-east-1`).
    pub fn parse(
        text: &str,
        endpoint: Option<&str>,
        region: Option<&str>,
    ) -> Result<BlobLocation, String> {
        let Some(rest) = text.strip_prefix("s3://") else {
            return Err(format!(
                "`{text}` is not a blob store: give `s3://bucket/prefix` (blobs stay in the data folder without `--blobs`)"
            ));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let valid = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !valid {
            return Err(format!(
                "`{bucket}` is not a bucket name: 3 to 63 lower-case letters, digits, `-` and `.`"
            ));
        }
        let prefix = prefix.trim_matches('/');
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Ok(BlobLocation::S3(S3Location {
            bucket: bucket.to_string(),
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            endpoint: endpoint.map(str::to_string),
            region: region
                .map(str::to_string)
                .or_else(|| env("AWS_REGION"))
                .or_else(|| env("AWS_DEFAULT_REGION"))
                .or_else(profile_region)
                .unwrap_or_else(|| "us-east-1".into()),
        }))
    }
}

/// The region of the AWS profile in use, if it names one (an unreadable profile is
/// reported where its credentials are read, not here).
fn profile_region() -> Option<String> {
    stackpack_aws::profile::load().ok().flatten()?.region
}

/// Why a blob store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot prepare the blob folder: {0}")]
    Io(#[from] io::Error),
    #[error("no S3 credentials for `{location}`: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` are not both set, and no AWS profile has keys (`AWS_PROFILE`, `~/.aws/credentials`)")]
    NoCredentials { location: String },
    #[error("no S3 credentials for `{location}`: {source}")]
    Profile {
        location: String,
        #[source]
        source: stackpack_aws::profile::ProfileError,
    },
    #[error("the blob store `{location}` cannot be used: {source}")]
    S3 {
        location: String,
        #[source]
        source: stackpack_aws::s3::S3Error,
    },
}

/// Opens the blob store the configuration names, checking that it answers.
pub fn open(
    location: &BlobLocation,
    data: &std::path::Path,
    metrics: Arc<crate::metrics::Metrics>,
) -> Result<Arc<dyn BlobStore>, OpenError> {
    Ok(match location {
        BlobLocation::DataFolder => Arc::new(fs::FsStore::open(data)?),
        BlobLocation::S3(s3) => Arc::new(s3::S3Store::open(s3, metrics)?),
    })
}

/// Why staged bytes cannot become a blob.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("the uploaded content has digest `{actual}`")]
    Mismatch { actual: Digest },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Verified bytes, not yet visible: [`Staged::promote`] makes them the blob, inside
/// the transaction that records it; dropping them unpromoted throws them away.
pub trait Staged: Send {
    fn size(&self) -> u64;
    /// Blocking: runs inside a database write.
    fn promote(self: Box<Self>) -> io::Result<()>;
}

/// What a finished [`UploadWriter`] stored.
pub enum Written {
    /// The rest of a session's bytes: the last segment, if one was stored.
    Segment(Option<Segment>),
    /// A whole blob, written straight into its place ([`BlobStore::blob_writer`]),
    /// visible once promoted, if the bytes' digest is the one claimed.
    Blob(Box<dyn Staged>),
}

/// Where one request's body goes.
pub trait UploadWriter: Send {
    /// Takes the next bytes; returns the segment stored by the way, if one was,
    /// which the caller records (see [`BlobStore::records_segments`]).
    fn write(&mut self, chunk: Bytes) -> BoxFuture<'_, io::Result<Option<Segment>>>;
    /// Stores what is left.
    fn finish(self: Box<Self>) -> BoxFuture<'static, io::Result<Written>>;
}

/// A store of blobs and of the bytes of upload sessions. The `async` methods serve
/// requests; the blocking ones are gc's, run off the async workers.
pub trait BlobStore: Send + Sync {
    fn backend(&self) -> Backend;
    /// Where, for messages: a folder, or `s3://bucket/prefix`.
    fn location(&self) -> String;
    /// Whether the store answers (`/healthz`).
    fn check(&self) -> BoxFuture<'_, Result<(), String>>;
    /// Bytes free for blobs, when that is bounded (a disk).
    fn free_bytes(&self) -> Option<io::Result<u64>>;
    /// `length` bytes of a blob from byte `first`, or `None` when it is not stored.
    fn read<'a>(
        &'a self,
        digest: &'a Digest,
        first: u64,
        length: u64,
    ) -> BoxFuture<'a, io::Result<Option<ByteStream>>>;

    /// Whether a session's bytes are kept as segments the database records (any
    /// replica then reads the session's size there), or in one local file.
    fn records_segments(&self) -> bool;
    /// Prepares a new session's bytes.
    fn upload_start<'a>(&'a self, id: &'a str) -> BoxFuture<'a, io::Result<()>>;
    /// How many bytes session `id` holds; `recorded` is its recorded segments' sum.
    fn upload_size<'a>(&'a self, id: &'a str, recorded: u64) -> BoxFuture<'a, io::Result<u64>>;
    /// A writer appending to session `id`, which holds `size` bytes.
    fn upload_writer<'a>(
        &'a self,
        id: &'a str,
        size: u64,
    ) -> BoxFuture<'a, io::Result<Box<dyn UploadWriter>>>;
    /// A writer of a whole blob claimed to be `expected`, sent in one request, when
    /// the store writes such a blob straight into its place rather than into a
    /// session and copying it at the end (object storage: the copy would be a
    /// second trip of every byte); `None` where sessions cost no copy (files).
    fn blob_writer<'a>(
        &'a self,
        expected: &'a Digest,
    ) -> Option<BoxFuture<'a, io::Result<Box<dyn UploadWriter>>>>;
    /// Checks session `id`'s bytes (its `segments`, for a store that records them)
    /// against `expected` and stages them as that blob. `hasher`: the running hash
    /// of the bytes, when this process saw them all arrive.
    fn stage<'a>(
        &'a self,
        id: &'a str,
        segments: Vec<Segment>,
        expected: &'a Digest,
        hasher: Option<Sha256Hasher>,
    ) -> BoxFuture<'a, Result<Box<dyn Staged>, StageError>>;

    /// Blocking: removes session `id`'s bytes; returns how many were freed.
    fn remove_upload(&self, id: &str) -> io::Result<u64>;
    /// Blocking: every session that has bytes stored, with their last write.
    fn list_uploads(&self) -> io::Result<Vec<(String, SystemTime)>>;
    /// Blocking: removes a blob's bytes; returns how many were freed, `None` when
    /// it was not stored.
    fn delete_blob(&self, digest: &Digest) -> io::Result<Option<u64>>;
    /// Blocking: every stored blob (`sha256:<hex>`) with its last write.
    fn list_blobs(&self) -> io::Result<Vec<(String, SystemTime)>>;
}

/// A whole blob of at most `cap` bytes, for reading a config or a statement;
/// `None` when it is not stored or larger.
pub async fn read_small(
    store: &dyn BlobStore,
    digest: &Digest,
    size: u64,
    cap: u64,
) -> io::Result<Option<Vec<u8>>> {
    use futures_util::StreamExt;
    if size > cap {
        return Ok(None);
    }
    let Some(mut stream) = store.read(digest, 0, size).await? else {
        return Ok(None);
    };
    let mut bytes = Vec::with_capacity(size as usize);
    while let Some(chunk) = stream.next().await {
        bytes.extend_from_slice(&chunk?);
        if bytes.len() as u64 > cap {
            return Ok(None);
        }
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_locations_name_a_bucket_and_a_prefix_ending_in_a_slash() {
        let parsed = BlobLocation::parse("s3://acme-registry/prod/blobs/", None, Some("eu-west-1"));
        assert_eq!(
            parsed,
            Ok(BlobLocation::S3(S3Location {
                bucket: "acme-registry".into(),
                prefix: "prod/blobs/".into(),
                endpoint: None,
                region: "eu-west-1".into(),
            }))
        );
        let BlobLocation::S3(bare) = BlobLocation::parse(
            "s3://acme-registry",
            Some("http://127.0.0.1:9000"),
            Some("r"),
        )
        .unwrap() else {
            panic!("an S3 location");
        };
        assert_eq!(bare.prefix, "");
        assert_eq!(bare.to_string(), "s3://acme-registry/");
        assert!(BlobLocation::parse("/srv/blobs", None, None)
            .unwrap_err()
            .contains("`/srv/blobs` is not a blob store"));
        assert!(BlobLocation::parse("s3://Bad_Bucket/x", None, None)
            .unwrap_err()
            .contains("`Bad_Bucket` is not a bucket name"));
    }
}
