//! A small S3 client: the few bucket calls the runner makes to check (and, when
//! asked, create) the bucket that keeps a customer's engine state, and to read a
//! state lock's own record.
//!
//! Why not the AWS SDK: it would bring a second HTTP stack and hundreds of crates
//! for eight calls. These requests are signed with AWS Signature Version 4 by AWS's
//! own signer (`aws-sigv4`, without the SDK) and sent over the workspace's one HTTP
//! client (`reqwest`), path-style against an emulator's endpoint, virtual-hosted
//! against AWS itself; the answers are read into typed structs ([`crate::xml`]).
//! Credentials come from the usual environment variables; the secret is never
//! printed, not even by `Debug`.

use std::fmt;
use std::time::Duration;

use crate::http::percent_encode;
use crate::xml;

/// Credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and
/// `AWS_SESSION_TOKEN`, or from the profile `AWS_PROFILE` names ([`AwsCredentials::load`]).
#[derive(Clone)]
pub struct AwsCredentials {
    pub access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AwsCredentials({}, secret withheld)",
            self.key_id_shown()
        )
    }
}

impl AwsCredentials {
    /// The credentials the environment holds, if both halves are set.
    pub fn from_env() -> Option<AwsCredentials> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Some(AwsCredentials {
            access_key_id: var("AWS_ACCESS_KEY_ID")?,
            secret_access_key: var("AWS_SECRET_ACCESS_KEY")?,
            session_token: var("AWS_SESSION_TOKEN"),
        })
    }

    /// The credentials the AWS CLI and the engine's AWS provider would use: the
    /// environment's key pair, else the static keys of the profile `AWS_PROFILE`
    /// names (or `default`) in `~/.aws/credentials` and `~/.aws/config`. `Ok(None)`
    /// when there are none; an error when a profile is named but gives no keys.
    pub fn load() -> Result<Option<AwsCredentials>, crate::profile::ProfileError> {
        if let Some(credentials) = AwsCredentials::from_env() {
            return Ok(Some(credentials));
        }
        let Some(profile) = crate::profile::load()? else {
            return Ok(None);
        };
        Ok(profile.access_key_id.zip(profile.secret_access_key).map(
            |(access_key_id, secret_access_key)| AwsCredentials {
                access_key_id,
                secret_access_key,
                session_token: profile.session_token,
            },
        ))
    }

    /// The access key id as messages show it: its first four and last four
    /// characters, enough to tell which key, never the secret.
    pub fn key_id_shown(&self) -> String {
        let id = &self.access_key_id;
        if id.len() <= 8 || !id.is_ascii() {
            return "…".into();
        }
        format!("{}…{}", &id[..4], &id[id.len() - 4..])
    }
}

/// What a bucket call can end with, besides success.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    #[error("bucket `{bucket}` does not exist")]
    NoSuchBucket { bucket: String },
    #[error("bucket `{bucket}` is in region `{actual}`, not `{expected}`")]
    WrongRegion {
        bucket: String,
        expected: String,
        actual: String,
    },
    #[error("the credentials (access key `{key_id}`) were refused for bucket `{bucket}`: {code}")]
    Denied {
        bucket: String,
        key_id: String,
        code: String,
    },
    #[error("cannot reach S3 at `{url}`: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("S3 answered {operation} on bucket `{bucket}` with HTTP {status} {code}")]
    Failed {
        operation: &'static str,
        bucket: String,
        status: u16,
        code: String,
    },
}

/// A bucket's settings that keep state safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketSettings {
    pub versioning: bool,
    pub encryption: bool,
    pub public_access_blocked: bool,
}

/// One S3 endpoint, region and set of credentials.
pub struct S3Client {
    endpoint: Option<String>,
    region: String,
    credentials: AwsCredentials,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl S3Client {
    /// `endpoint`: an emulator's URL (path-style); `None` for AWS itself.
    pub fn new(
        endpoint: Option<&str>,
        region: &str,
        credentials: AwsCredentials,
    ) -> Result<S3Client, S3Error> {
        let (http, runtime) =
            crate::http::http_parts(Duration::from_secs(10), Duration::from_secs(60)).map_err(
                |detail| S3Error::Unreachable {
                    url: endpoint.unwrap_or("AWS S3").to_string(),
                    detail,
                },
            )?;
        Ok(S3Client {
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
            region: region.to_string(),
            credentials,
            http,
            runtime,
        })
    }

    /// Sends one signed request. `query` is a sub-resource (`versioning`) or empty.
    fn send(
        &self,
        method: reqwest::Method,
        bucket: &str,
        key: &str,
        query: &str,
        body: &str,
    ) -> Result<Answer, S3Error> {
        let site = Site {
            endpoint: self.endpoint.as_deref(),
            region: &self.region,
            credentials: &self.credentials,
        };
        let (request, origin) = site.request(
            &self.http,
            method,
            bucket,
            key,
            query,
            body.as_bytes().to_vec(),
        )?;
        self.runtime.block_on(async {
            let answer = request.send().await.map_err(|e| S3Error::Unreachable {
                url: origin,
                detail: crate::http::error_chain(&e),
            })?;
            let status = answer.status().as_u16();
            let headers = answer.headers().clone();
            let body = crate::http::answer_text(answer).await;
            Ok(Answer {
                status,
                headers,
                body,
            })
        })
    }

    /// The error an unsuccessful answer means.
    fn error(&self, operation: &'static str, bucket: &str, answer: &Answer) -> S3Error {
        answer_error(
            &self.region,
            &self.credentials,
            operation,
            bucket,
            (answer.status, &answer.headers, &answer.body),
        )
    }

    /// True when the bucket exists (and these credentials may see it) in this
    /// client's region. AWS answers a HEAD in the wrong region with a redirect; an
    /// endpoint that answers it anyway (an emulator, one regional endpoint for all)
    /// still says the bucket's region, and a bucket elsewhere is refused the same,
    /// since the engine, signing for this region, would fail on it in AWS.
    pub fn bucket_exists(&self, bucket: &str) -> Result<bool, S3Error> {
        let answer = self.send(reqwest::Method::HEAD, bucket, "", "", "")?;
        let actual = answer
            .headers
            .get("x-amz-bucket-region")
            .and_then(|v| v.to_str().ok())
            .filter(|actual| !actual.is_empty() && *actual != self.region);
        match self.error("HeadBucket", bucket, &answer) {
            _ if answer.status == 200 => match actual {
                Some(actual) => Err(S3Error::WrongRegion {
                    bucket: bucket.into(),
                    expected: self.region.clone(),
                    actual: actual.to_string(),
                }),
                None => Ok(true),
            },
            S3Error::NoSuchBucket { .. } => Ok(false),
            error => Err(error),
        }
    }

    /// Versioning, default encryption and the public access block, as set.
    pub fn bucket_settings(&self, bucket: &str) -> Result<BucketSettings, S3Error> {
        let versioning = self.get_config(bucket, "versioning", "GetBucketVersioning")?;
        let encryption = self.get_config(bucket, "encryption", "GetBucketEncryption")?;
        let block = self.get_config(bucket, "publicAccessBlock", "GetPublicAccessBlock")?;
        Ok(BucketSettings {
            versioning: versioning
                .as_deref()
                .and_then(xml::read::<xml::Versioning>)
                .is_some_and(|doc| doc.status.as_deref() == Some("Enabled")),
            encryption: encryption
                .as_deref()
                .and_then(xml::read::<xml::Encryption>)
                .is_some_and(|doc| doc.has_default_algorithm()),
            public_access_blocked: block
                .as_deref()
                .and_then(xml::read::<xml::PublicAccessBlock>)
                .is_some_and(|doc| doc.blocks_all()),
        })
    }

    /// A bucket sub-resource's document, or `None` when it is not configured.
    fn get_config(
        &self,
        bucket: &str,
        query: &str,
        operation: &'static str,
    ) -> Result<Option<String>, S3Error> {
        let answer = self.send(reqwest::Method::GET, bucket, "", query, "")?;
        if answer.status == 200 {
            return Ok(Some(answer.body));
        }
        let code = xml::error_code(&answer.body);
        if answer.status == 404 && code != "NoSuchBucket" {
            // `ServerSideEncryptionConfigurationNotFoundError`,
            // `NoSuchPublicAccessBlockConfiguration`: not set.
            return Ok(None);
        }
        Err(self.error(operation, bucket, &answer))
    }

    fn put(
        &self,
        bucket: &str,
        query: &str,
        body: &str,
        operation: &'static str,
    ) -> Result<(), S3Error> {
        let answer = self.send(reqwest::Method::PUT, bucket, "", query, body)?;
        if (200..300).contains(&answer.status) {
            return Ok(());
        }
        Err(self.error(operation, bucket, &answer))
    }

    /// Creates the bucket in this client's region.
    pub fn create_bucket(&self, bucket: &str) -> Result<(), S3Error> {
        let body = if self.region == "us-east-1" {
            String::new()
        } else {
            format!(
                "<CreateBucketConfiguration xmlns=\"{XMLNS}\"><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
                self.region
            )
        };
        self.put(bucket, "", &body, "CreateBucket")
    }

    pub fn enable_versioning(&self, bucket: &str) -> Result<(), S3Error> {
        let body = format!(
            "<VersioningConfiguration xmlns=\"{XMLNS}\"><Status>Enabled</Status></VersioningConfiguration>"
        );
        self.put(bucket, "versioning", &body, "PutBucketVersioning")
    }

    /// Default encryption with S3-managed keys (`AES256`); a customer who wants
    /// their own KMS key sets it on the bucket, which the runner then accepts.
    pub fn enable_encryption(&self, bucket: &str) -> Result<(), S3Error> {
        let body = format!(
            "<ServerSideEncryptionConfiguration xmlns=\"{XMLNS}\"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>"
        );
        self.put(bucket, "encryption", &body, "PutBucketEncryption")
    }

    pub fn block_public_access(&self, bucket: &str) -> Result<(), S3Error> {
        let body = format!(
            "<PublicAccessBlockConfiguration xmlns=\"{XMLNS}\"><BlockPublicAcls>true</BlockPublicAcls><IgnorePublicAcls>true</IgnorePublicAcls><BlockPublicPolicy>true</BlockPublicPolicy><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>"
        );
        self.put(bucket, "publicAccessBlock", &body, "PutPublicAccessBlock")
    }

    /// An object's text, or `None` when there is no such key.
    pub fn get_object(&self, bucket: &str, key: &str) -> Result<Option<String>, S3Error> {
        let answer = self.send(reqwest::Method::GET, bucket, key, "", "")?;
        match answer.status {
            200 => Ok(Some(answer.body)),
            404 if xml::error_code(&answer.body) != "NoSuchBucket" => Ok(None),
            _ => Err(self.error("GetObject", bucket, &answer)),
        }
    }
}

impl S3Client {
    /// Writes `text` as the object `key` (a new version where versioning is on).
    pub fn put_object(&self, bucket: &str, key: &str, text: &str) -> Result<(), S3Error> {
        let answer = self.send(reqwest::Method::PUT, bucket, key, "", text)?;
        if (200..300).contains(&answer.status) {
            return Ok(());
        }
        Err(self.error("PutObject", bucket, &answer))
    }

    /// The keys under `prefix` (the first 1,000: state objects of one customer's
    /// stacks, never near that).
    pub fn list_keys(&self, bucket: &str, prefix: &str) -> Result<Vec<String>, S3Error> {
        let query = format!("list-type=2&prefix={}", percent_encode(prefix));
        let answer = self.send(reqwest::Method::GET, bucket, "", &query, "")?;
        if answer.status != 200 {
            return Err(self.error("ListObjectsV2", bucket, &answer));
        }
        let listing = xml::read::<xml::Listing>(&answer.body).unwrap_or_default();
        Ok(listing.contents.into_iter().filter_map(|c| c.key).collect())
    }
}

/// One object a listing names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    /// When it was last written (S3's `LastModified`); `None` when unreadable.
    pub last_modified: Option<time::OffsetDateTime>,
}

/// Object calls on one bucket, async on the caller's runtime: for a store of many
/// large objects (the registry's blobs), read and written in pieces. GETs stream
/// (the caller reads the answer's chunks); writes are whole bodies the caller keeps
/// bounded (a multipart upload's parts). Requests are signed like [`S3Client`]'s.
pub struct S3Objects {
    endpoint: Option<String>,
    region: String,
    credentials: AwsCredentials,
    bucket: String,
    http: reqwest::Client,
}

impl S3Objects {
    /// `endpoint`: an emulator's or another S3 API's URL (path-style); `None` for
    /// AWS itself. A request that sends or receives nothing for `read_timeout` fails.
    pub fn new(
        endpoint: Option<&str>,
        region: &str,
        credentials: AwsCredentials,
        bucket: &str,
        read_timeout: Duration,
    ) -> Result<S3Objects, S3Error> {
        crate::http::tls();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(read_timeout)
            .build()
            .map_err(|e| S3Error::Unreachable {
                url: endpoint.unwrap_or("AWS S3").to_string(),
                detail: crate::http::error_chain(&e),
            })?;
        Ok(S3Objects {
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
            region: region.to_string(),
            credentials,
            bucket: bucket.to_string(),
            http,
        })
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    pub fn region(&self) -> &str {
        &self.region
    }

    /// Sends one signed request. `query` is canonical already: parameters sorted
    /// by name, values percent-encoded (a bare sub-resource such as `uploads` is
    /// signed as `uploads=`). `headers` travel unsigned (`range`).
    async fn send(
        &self,
        method: reqwest::Method,
        key: &str,
        query: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
    ) -> Result<reqwest::Response, S3Error> {
        let site = Site {
            endpoint: self.endpoint.as_deref(),
            region: &self.region,
            credentials: &self.credentials,
        };
        let (mut request, origin) =
            site.request(&self.http, method, &self.bucket, key, query, body)?;
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send().await.map_err(|e| S3Error::Unreachable {
            url: origin,
            detail: crate::http::error_chain(&e),
        })
    }

    /// The error an unsuccessful answer means (its body read for S3's code).
    async fn refusal(&self, operation: &'static str, answer: reqwest::Response) -> S3Error {
        let status = answer.status().as_u16();
        let headers = answer.headers().clone();
        let body = crate::http::answer_text(answer).await;
        answer_error(
            &self.region,
            &self.credentials,
            operation,
            &self.bucket,
            (status, &headers, &body),
        )
    }

    /// Succeeds when the bucket exists and these credentials may list it: HEAD on
    /// a bucket tells too little (no code in its answer), so this lists one key.
    pub async fn check_bucket(&self, prefix: &str) -> Result<(), S3Error> {
        let query = format!("list-type=2&max-keys=1&prefix={}", percent_encode(prefix));
        let answer = self
            .send(reqwest::Method::GET, "", &query, &[], Vec::new())
            .await?;
        if answer.status().is_success() {
            return Ok(());
        }
        Err(self.refusal("ListObjectsV2", answer).await)
    }

    /// The object's answer, to be read chunk by chunk (`Response::chunk`), or
    /// `None` when there is no such key. `range`: first and last byte, inclusive.
    pub async fn get(
        &self,
        key: &str,
        range: Option<(u64, u64)>,
    ) -> Result<Option<reqwest::Response>, S3Error> {
        let headers: Vec<(&'static str, String)> = range
            .map(|(first, last)| ("range", format!("bytes={first}-{last}")))
            .into_iter()
            .collect();
        let answer = self
            .send(reqwest::Method::GET, key, "", &headers, Vec::new())
            .await?;
        match answer.status().as_u16() {
            200 | 206 => Ok(Some(answer)),
            // `NoSuchKey`; a missing bucket is an error, not a missing object.
            404 => match self.refusal("GetObject", answer).await {
                S3Error::Failed { .. } => Ok(None),
                other => Err(other),
            },
            _ => Err(self.refusal("GetObject", answer).await),
        }
    }

    /// The object's size, or `None` when there is no such key.
    pub async fn head(&self, key: &str) -> Result<Option<u64>, S3Error> {
        let answer = self
            .send(reqwest::Method::HEAD, key, "", &[], Vec::new())
            .await?;
        match answer.status().as_u16() {
            200 => Ok(answer
                .headers()
                .get(reqwest::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse().ok())),
            404 => Ok(None),
            _ => Err(self.refusal("HeadObject", answer).await),
        }
    }

    /// Writes `body` as the whole object `key`.
    pub async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), S3Error> {
        let answer = self.send(reqwest::Method::PUT, key, "", &[], body).await?;
        if answer.status().is_success() {
            return Ok(());
        }
        Err(self.refusal("PutObject", answer).await)
    }

    /// Deletes `key`; a key already gone is no error.
    pub async fn delete(&self, key: &str) -> Result<(), S3Error> {
        let answer = self
            .send(reqwest::Method::DELETE, key, "", &[], Vec::new())
            .await?;
        if answer.status().is_success() || answer.status().as_u16() == 404 {
            return Ok(());
        }
        Err(self.refusal("DeleteObject", answer).await)
    }

    /// Starts a multipart upload of `key`; returns its upload id. Nothing is
    /// visible at `key` until [`S3Objects::complete_multipart`].
    pub async fn create_multipart(&self, key: &str) -> Result<String, S3Error> {
        let answer = self
            .send(reqwest::Method::POST, key, "uploads", &[], Vec::new())
            .await?;
        if !answer.status().is_success() {
            return Err(self.refusal("CreateMultipartUpload", answer).await);
        }
        let body = crate::http::answer_text(answer).await;
        xml::read::<xml::MultipartUpload>(&body)
            .and_then(|upload| upload.upload_id)
            .ok_or_else(|| S3Error::Failed {
                operation: "CreateMultipartUpload",
                bucket: self.bucket.clone(),
                status: 200,
                code: "no UploadId in the answer".into(),
            })
    }

    /// Uploads part `number` (from 1; every part but the last at least 5 MiB);
    /// returns its ETag, which completing names.
    pub async fn upload_part(
        &self,
        key: &str,
        upload_id: &str,
        number: u32,
        body: Vec<u8>,
    ) -> Result<String, S3Error> {
        let query = format!("partNumber={number}&uploadId={}", percent_encode(upload_id));
        let answer = self
            .send(reqwest::Method::PUT, key, &query, &[], body)
            .await?;
        if !answer.status().is_success() {
            return Err(self.refusal("UploadPart", answer).await);
        }
        Ok(answer
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string())
    }

    /// Joins the parts (ETags in part order) into the object `key`, which appears
    /// whole at once.
    pub async fn complete_multipart(
        &self,
        key: &str,
        upload_id: &str,
        etags: &[String],
    ) -> Result<(), S3Error> {
        let body = xml::complete_multipart(XMLNS, etags);
        let query = format!("uploadId={}", percent_encode(upload_id));
        let answer = self
            .send(reqwest::Method::POST, key, &query, &[], body.into_bytes())
            .await?;
        let status = answer.status().as_u16();
        if status != 200 {
            return Err(self.refusal("CompleteMultipartUpload", answer).await);
        }
        // S3 may answer 200 and still fail, with an `<Error>` document.
        let text = crate::http::answer_text(answer).await;
        if xml::root_name(&text).as_deref() == Some("Error") {
            return Err(S3Error::Failed {
                operation: "CompleteMultipartUpload",
                bucket: self.bucket.clone(),
                status,
                code: xml::error_code(&text),
            });
        }
        Ok(())
    }

    /// Drops a multipart upload and the parts it holds.
    pub async fn abort_multipart(&self, key: &str, upload_id: &str) -> Result<(), S3Error> {
        let query = format!("uploadId={}", percent_encode(upload_id));
        let answer = self
            .send(reqwest::Method::DELETE, key, &query, &[], Vec::new())
            .await?;
        if answer.status().is_success() || answer.status().as_u16() == 404 {
            return Ok(());
        }
        Err(self.refusal("AbortMultipartUpload", answer).await)
    }

    /// Every object under `prefix`, page after page.
    pub async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>, S3Error> {
        let mut objects = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let query = match &token {
                Some(t) => format!(
                    "continuation-token={}&list-type=2&prefix={}",
                    percent_encode(t),
                    percent_encode(prefix)
                ),
                None => format!("list-type=2&prefix={}", percent_encode(prefix)),
            };
            let answer = self
                .send(reqwest::Method::GET, "", &query, &[], Vec::new())
                .await?;
            if !answer.status().is_success() {
                return Err(self.refusal("ListObjectsV2", answer).await);
            }
            let body = crate::http::answer_text(answer).await;
            let listing = xml::read::<xml::Listing>(&body).unwrap_or_default();
            objects.extend(listing.contents.into_iter().filter_map(|item| {
                Some(ObjectInfo {
                    key: item.key?,
                    size: item.size?.parse().ok()?,
                    last_modified: item.last_modified.and_then(|t| {
                        time::OffsetDateTime::parse(
                            &t,
                            &time::format_description::well_known::Rfc3339,
                        )
                        .ok()
                    }),
                })
            }));
            token = (listing.is_truncated.as_deref() == Some("true"))
                .then_some(listing.next_continuation_token)
                .flatten();
            if token.is_none() {
                return Ok(objects);
            }
        }
    }
}

/// Where requests go and how they are signed.
struct Site<'a> {
    endpoint: Option<&'a str>,
    region: &'a str,
    credentials: &'a AwsCredentials,
}

impl Site<'_> {
    /// A signed request for `bucket`'s `key` (`query` canonical already), and the
    /// origin it goes to, for messages.
    fn request(
        &self,
        http: &reqwest::Client,
        method: reqwest::Method,
        bucket: &str,
        key: &str,
        query: &str,
        body: Vec<u8>,
    ) -> Result<(reqwest::RequestBuilder, String), S3Error> {
        let (scheme, host, path) = address(self.endpoint, self.region, bucket, key);
        let url = if query.is_empty() {
            format!("{scheme}://{host}{path}")
        } else {
            format!("{scheme}://{host}{path}?{query}")
        };
        let origin = format!("{scheme}://{host}");
        let signed = sign_v4(&SigningInput {
            service: "s3",
            extra_headers: &[],
            method: method.as_str(),
            url: &url,
            body: &body,
            region: self.region,
            credentials: self.credentials,
            now: std::time::SystemTime::now(),
        })
        .map_err(|detail| S3Error::Unreachable {
            url: origin.clone(),
            detail,
        })?;
        let mut request = http.request(method, &url).body(body);
        for (name, value) in signed {
            request = request.header(name, value);
        }
        Ok((request, origin))
    }
}

/// Scheme, host and path of `bucket`'s `key` (empty: the bucket itself): path-style
/// against an endpoint, virtual-hosted against AWS.
fn address(
    endpoint: Option<&str>,
    region: &str,
    bucket: &str,
    key: &str,
) -> (String, String, String) {
    let key_path: String = key
        .split('/')
        .map(percent_encode)
        .collect::<Vec<_>>()
        .join("/");
    match endpoint {
        Some(endpoint) => {
            let (scheme, host) = endpoint.split_once("://").unwrap_or(("https", endpoint));
            (
                scheme.to_string(),
                host.to_string(),
                format!("/{bucket}/{key_path}"),
            )
        }
        None => (
            "https".into(),
            format!("{bucket}.s3.{region}.amazonaws.com"),
            format!("/{key_path}"),
        ),
    }
}

/// The error an unsuccessful answer (status, headers, body) means.
fn answer_error(
    region: &str,
    credentials: &AwsCredentials,
    operation: &'static str,
    bucket: &str,
    (status, headers, body): (u16, &reqwest::header::HeaderMap, &str),
) -> S3Error {
    let code = xml::error_code(body);
    let actual = headers
        .get("x-amz-bucket-region")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match (status, code.as_str(), actual) {
        (_, "NoSuchBucket", _) | (404, "", _) => S3Error::NoSuchBucket {
            bucket: bucket.into(),
        },
        (301 | 400, _, Some(actual)) if actual != region => S3Error::WrongRegion {
            bucket: bucket.into(),
            expected: region.to_string(),
            actual,
        },
        (403, _, _)
        | (
            _,
            "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "ExpiredToken" | "InvalidToken",
            _,
        ) => S3Error::Denied {
            bucket: bucket.into(),
            key_id: credentials.key_id_shown(),
            code: if code.is_empty() {
                "AccessDenied".into()
            } else {
                code
            },
        },
        (status, _, _) => S3Error::Failed {
            operation,
            bucket: bucket.into(),
            status,
            code,
        },
    }
}

const XMLNS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

pub(crate) struct SigningInput<'a> {
    pub service: &'a str,
    /// Headers signed beside `host` and the `x-amz-*` ones (`content-type`,
    /// `x-amz-target`), lower-case names.
    pub extra_headers: &'a [(&'static str, String)],
    pub method: &'a str,
    /// The whole URL, path and query percent-encoded already.
    pub url: &'a str,
    pub body: &'a [u8],
    pub region: &'a str,
    pub credentials: &'a AwsCredentials,
    pub now: std::time::SystemTime,
}

/// The headers of an AWS Signature Version 4 request (any service: `s3`, `ec2`,
/// `servicequotas`, `kms`), signed by `aws-sigv4`; the extra headers are signed and
/// returned too. The path is signed as given (encoded once, not normalised, as S3
/// wants; the other services' path is `/`), with the payload's SHA-256 in
/// `x-amz-content-sha256`.
pub(crate) fn sign_v4(input: &SigningInput) -> Result<Vec<(&'static str, String)>, String> {
    use aws_sigv4::http_request::{
        sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
        SigningSettings, UriPathNormalizationMode,
    };
    let credentials = input.credentials;
    let identity = aws_credential_types::Credentials::new(
        credentials.access_key_id.clone(),
        credentials.secret_access_key.clone(),
        credentials.session_token.clone(),
        None,
        "stackpack",
    )
    .into();
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(input.region)
        .name(input.service)
        .time(input.now)
        .settings(settings)
        .build()
        .map_err(|e| format!("cannot sign the request: {e}"))?
        .into();
    let request = SignableRequest::new(
        input.method,
        input.url,
        input.extra_headers.iter().map(|(n, v)| (*n, v.as_str())),
        SignableBody::Bytes(input.body),
    )
    .map_err(|e| format!("cannot sign the request: {e}"))?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| format!("cannot sign the request: {e}"))?
        .into_parts();
    let (headers, _params) = instructions.into_parts();
    let mut signed: Vec<(&'static str, String)> = input.extra_headers.to_vec();
    signed.extend(
        headers
            .into_iter()
            .map(|header| (header.name(), header.value().to_string())),
    );
    Ok(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_signed_as_aws_documents_it() {
        let credentials = AwsCredentials {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        };
        let headers = sign_v4(&SigningInput {
            service: "s3",
            extra_headers: &[],
            method: "GET",
            url: "https://examplebucket.s3.amazonaws.com/?lifecycle",
            body: b"",
            region: "us-east-1",
            credentials: &credentials,
            now: time::macros::datetime!(2013-05-24 00:00:00 UTC).into(),
        })
        .unwrap();
        let authorization = &headers
            .iter()
            .find(|(n, _)| *n == "authorization")
            .unwrap()
            .1;
        // From AWS's "GET Bucket Lifecycle" example of Signature Version 4.
        assert!(
            authorization.ends_with(
                "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"
            ),
            "{authorization}"
        );
        assert!(!format!("{credentials:?}").contains("wJalr"));
    }
}
