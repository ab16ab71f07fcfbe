//! Talking to OCI registries: a blocking facade over `oci-client`.
//!
//! `oci-client` does the protocol (bearer-token challenges, chunked and monolithic
//! uploads, ranged downloads, the referrers API with the tag-schema fallback on
//! reads). This module adds what it leaves out: streaming blobs from and into an
//! image layout with digest checks, resumable downloads whose partial files never
//! count as present, tag lists followed across pages, the referrers tag-schema
//! fallback on *writes* (registries such as CNCF Distribution 2.8 have no referrers
//! API), and errors that name the registry and say what to do.
//!
//! The programs that use it are synchronous, so each [`Remote`] owns a small tokio
//! runtime and blocks on it.

mod blobs;
mod capped;
pub mod credentials;
pub mod http;
pub mod progress;

use futures_util::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type;
use stackpack_schema::oci::{Descriptor, ImageIndex};

use crate::layout::{ImageLayout, LayoutError};
pub use blobs::{BlobsPushed, MONOLITHIC_LIMIT, PARALLEL_BLOBS, UPLOAD_CHUNK};
pub use progress::{Progress, TransferObserver};

// TLS set-up, an error's chain and URL encoding are the ones every HTTP client of
// the workspace shares, kept with the lowest crate that has a client.
pub use credentials::Credentials;
pub(crate) use stackpack_aws::http::error_chain;
pub use stackpack_aws::http::{percent_encode, tls};

/// Manifests accepted when reading.
const MANIFEST_TYPES: &[&str] = &[
    media_type::OCI_MANIFEST,
    media_type::OCI_INDEX,
    media_type::DOCKER_MANIFEST,
    media_type::DOCKER_MANIFEST_LIST,
];

/// Page size asked for when listing tags.
const TAG_PAGE: usize = 1000;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Signing what was to be pushed failed (a KMS that did not answer or refused).
    #[error(transparent)]
    Sign(#[from] stackpack_schema::signature::SignError),
    #[error("`{0}` is not a registry address: expected `HOST[:PORT]/NAMESPACE`")]
    BadAddress(String),
    #[error("`--insecure` (plain HTTP) is only allowed for loopback registries, not `{0}`")]
    InsecureNotLoopback(String),
    #[error("cannot reach registry `{host}`: {detail}")]
    Unreachable { host: String, detail: String },
    #[error("registry `{host}` refused {credentials} for `{repository}`: {detail}")]
    Unauthorized {
        host: String,
        repository: String,
        credentials: &'static str,
        detail: String,
    },
    #[error("registry `{host}` denied the request for `{repository}`: {detail}")]
    Denied {
        host: String,
        repository: String,
        detail: String,
    },
    #[error("registry `{host}` failed: {detail}")]
    Server { host: String, detail: String },
    /// The registry understood the request and refused it (a 4xx other than 401, 403
    /// and 429), in its own words: a promotion its rollout cannot accept, say.
    #[error("registry `{host}` refused the request for `{repository}` (HTTP {status}): {detail}")]
    Rejected {
        host: String,
        repository: String,
        status: u16,
        detail: String,
    },
    #[error("`{host}` speaks plain HTTP, and HTTPS was asked for")]
    PlainHttp { host: String },
    #[error("`{host}` is not an OCI registry: `GET /v2/` answered {detail}")]
    NotARegistry { host: String, detail: String },
    #[error("`{what}` from registry `{host}` does not match its digest: expected `{expected}`, got `{actual}`")]
    DigestMismatch {
        host: String,
        what: String,
        expected: Digest,
        actual: Digest,
    },
    #[error("registry `{host}` sent an invalid {what}: {detail}")]
    Invalid {
        host: String,
        what: String,
        detail: String,
    },
    #[error("registry `{host}` sent a {what} larger than the limit of {limit}: stopped reading")]
    TooLarge {
        host: String,
        what: String,
        limit: String,
    },
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("cannot start the network runtime: {0}")]
    Runtime(std::io::Error),
}

impl RemoteError {
    /// A hint for people.
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            RemoteError::BadAddress(_) => "write the registry as `registry.example.com/acme` or `127.0.0.1:5000/acme`",
            RemoteError::InsecureNotLoopback(_) => "use HTTPS for remote registries; `--insecure` exists for local test registries only",
            RemoteError::Unreachable { .. } => "check the address and that the registry is running; then run the same command again (it resumes)",
            RemoteError::Unauthorized { credentials, .. } if *credentials == "a bearer token" => "the token given was refused: check that `STACKPACK_REGISTRY_TOKEN` holds a current token of this registry with the right role",
            RemoteError::Unauthorized { credentials, .. } if *credentials == "a username and password" => "the username and password were refused: check `STACKPACK_REGISTRY_USERNAME`/`STACKPACK_REGISTRY_PASSWORD` or your `docker login`",
            RemoteError::Unauthorized { .. } => "set `STACKPACK_REGISTRY_USERNAME`/`STACKPACK_REGISTRY_PASSWORD` or `STACKPACK_REGISTRY_TOKEN`, or log in with `docker login`",
            RemoteError::Denied { detail, .. } if detail.contains("may read but not push") => "publish with a token that may push (a `publisher` token), or ask the registry's administrator for push rights",
            RemoteError::Denied { .. } => "ask the registry's administrator for push or pull rights on that repository",
            RemoteError::Server { .. } => "the registry failed; run the same command again: nothing is duplicated",
            RemoteError::DigestMismatch { .. } => "the registry or the network altered the content; do not use it",
            RemoteError::TooLarge { .. } => "no bundle needs this much: the registry is broken or hostile; check the address with your vendor",
            RemoteError::PlainHttp { .. } => "add `--insecure` for a registry on this machine (loopback only); a remote registry must speak HTTPS",
            RemoteError::Sign(_) => "check the signing key (`--key`, `[signing] key`) and the AWS credentials, then run the same command again: nothing was signed with that answer",
            RemoteError::NotARegistry { .. } => "check the host and port: they should point at the registry's API (`/v2/`), not a web page or another service",
            _ => return None,
        })
    }
}

/// `HOST[:PORT]/NAMESPACE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryAddress {
    pub host: String,
    pub namespace: String,
}

impl std::str::FromStr for RegistryAddress {
    type Err = RemoteError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_start_matches("oci://")
            .trim_end_matches('/');
        let (host, namespace) = trimmed
            .split_once('/')
            .ok_or_else(|| RemoteError::BadAddress(s.to_string()))?;
        let valid_namespace = namespace
            .split('/')
            .all(|part| stackpack_schema::reference::validate_name(part).is_ok());
        if host.is_empty() || !valid_namespace {
            return Err(RemoteError::BadAddress(s.to_string()));
        }
        Ok(RegistryAddress {
            host: host.to_string(),
            namespace: namespace.to_string(),
        })
    }
}

impl std::fmt::Display for RegistryAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.host, self.namespace)
    }
}

impl RegistryAddress {
    pub fn stack_repository(&self, stack: &str) -> String {
        format!("{}/stacks/{stack}", self.namespace)
    }

    pub fn module_repository(&self, module: &str) -> String {
        format!("{}/modules/{module}", self.namespace)
    }
}

/// The messages of the distribution spec's error document (`{"errors":[{"message"}]}`)
/// when `body` is one, else the body itself, cut short: a refusal shows the
/// registry's own words, not its JSON.
fn error_messages(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        message: String,
    }
    match serde_json::from_str::<Envelope>(body) {
        Ok(envelope) if envelope.errors.iter().any(|e| !e.message.is_empty()) => envelope
            .errors
            .iter()
            .filter(|e| !e.message.is_empty())
            .map(|e| e.message.as_str())
            .collect::<Vec<_>>()
            .join("; "),
        _ => body.trim().chars().take(500).collect(),
    }
}

/// What rustls says when the peer answers a TLS hello in plain HTTP.
fn looks_like_plain_http(chain: &str) -> bool {
    chain.contains("InvalidContentType")
        || chain.contains("corrupt message")
        || chain.contains("invalid HTTP version")
        || chain.contains("wrong version number")
}

/// True for `localhost`, `127.x.x.x` and `[::1]`, with or without a port.
pub fn is_loopback(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name == "localhost"
        || name == "::1"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// What a caller needs from a repository: asked for up front, so a refusal comes
/// before any work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Pull,
    Push,
}

/// One registry host.
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    client: oci_client::Client,
    auth: RegistryAuth,
    credentials: Credentials,
    host: String,
    insecure: bool,
    /// Blobs this session saw in a repository of this host, so that the next
    /// repository that needs one mounts it instead of uploading it again (two stacks
    /// sharing a provider package send it once).
    seen: std::sync::Mutex<std::collections::HashMap<Digest, String>>,
    /// Our own requests (uploads, probes), pooled so that they reuse connections.
    http: reqwest::Client,
    /// The pull token of each repository our own capped reads used, so that each
    /// read does not negotiate one again (`None`: the registry wants none).
    pull_tokens: std::sync::Mutex<std::collections::HashMap<String, Option<String>>>,
    /// Blobs up to this size are uploaded in one request.
    monolithic_limit: u64,
    /// The size of each `PATCH` of a larger blob.
    upload_chunk: u64,
}

impl Remote {
    /// Connects (lazily) to `host` with the credentials found for it.
    pub fn new(host: &str, insecure: bool) -> Result<Self, RemoteError> {
        Self::with_credentials(host, insecure, credentials::resolve(host))
    }

    pub fn with_credentials(
        host: &str,
        insecure: bool,
        credentials: Credentials,
    ) -> Result<Self, RemoteError> {
        if insecure && !is_loopback(host) {
            return Err(RemoteError::InsecureNotLoopback(host.to_string()));
        }
        // Two workers: the connections of parallel blob transfers are driven there,
        // while the calling thread hashes and writes what they bring.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(RemoteError::Runtime)?;
        let config = ClientConfig {
            protocol: if insecure {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            use_monolithic_push: true,
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(120)),
            ..Default::default()
        };
        let auth = match &credentials {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => {
                RegistryAuth::Basic(username.clone(), password.clone())
            }
            Credentials::Bearer(token) => RegistryAuth::Bearer(token.clone()),
        };
        tls();
        let client = oci_client::Client::new(config);
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .read_timeout(std::time::Duration::from_secs(120))
            .build()
            .map_err(|e| RemoteError::Unreachable {
                host: host.to_string(),
                detail: error_chain(&e),
            })?;
        // `oci-client` registers credentials only inside some calls (tag lists,
        // manifests); register them now so that every call, `blob_exists` included,
        // presents them.
        runtime.block_on(client.store_auth_if_needed(host, &auth));
        Ok(Remote {
            runtime,
            client,
            auth,
            credentials,
            host: host.to_string(),
            insecure,
            seen: Default::default(),
            http,
            pull_tokens: Default::default(),
            monolithic_limit: MONOLITHIC_LIMIT,
            upload_chunk: UPLOAD_CHUNK,
        })
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    fn reference(&self, repository: &str, tag: &str) -> Reference {
        Reference::with_tag(self.host.clone(), repository.to_string(), tag.to_string())
    }

    fn digest_reference(&self, repository: &str, digest: &Digest) -> Reference {
        Reference::with_digest(
            self.host.clone(),
            repository.to_string(),
            digest.to_string(),
        )
    }

    fn map_error(&self, repository: &str, error: OciDistributionError) -> RemoteError {
        let host = self.host.clone();
        match error {
            OciDistributionError::RequestError(e) if e.status().is_some() => {
                match e.status().expect("checked").as_u16() {
                    401 => self.unauthorized(repository, "401 Unauthorized".into()),
                    403 => self.denied(repository, "403 Forbidden".into()),
                    status => RemoteError::Server {
                        host,
                        detail: format!("HTTP {status}"),
                    },
                }
            }
            OciDistributionError::RequestError(e) => {
                let mut detail = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(inner) = source {
                    detail = format!("{detail}: {inner}");
                    source = inner.source();
                }
                RemoteError::Unreachable { host, detail }
            }
            OciDistributionError::UnauthorizedError { .. } => {
                self.unauthorized(repository, "401 Unauthorized".into())
            }
            OciDistributionError::AuthenticationFailure(detail) => {
                self.unauthorized(repository, detail)
            }
            OciDistributionError::RegistryError { envelope, .. } => {
                self.registry_error(repository, &envelope)
            }
            OciDistributionError::ServerError {
                code: 401, message, ..
            } => self.unauthorized(repository, message),
            OciDistributionError::ServerError {
                code: 403, message, ..
            } => self.denied(
                repository,
                format!("403 Forbidden {message}").trim().to_string(),
            ),
            OciDistributionError::ServerError { code, message, .. }
                if (400..500).contains(&code) && code != 429 =>
            {
                RemoteError::Rejected {
                    host,
                    repository: repository.to_string(),
                    status: code,
                    detail: error_messages(&message),
                }
            }
            OciDistributionError::ServerError { code, message, .. } => RemoteError::Server {
                host,
                detail: format!("HTTP {code} {message}").trim().to_string(),
            },
            other => RemoteError::Server {
                host,
                detail: other.to_string(),
            },
        }
    }

    /// The registry's own error document: unauthorised or denied when one of its
    /// codes says so, else a server error listing them all.
    fn registry_error(
        &self,
        repository: &str,
        envelope: &oci_client::errors::OciEnvelope,
    ) -> RemoteError {
        use oci_client::errors::OciErrorCode;
        let detail = envelope
            .errors
            .iter()
            .map(|e| format!("{:?}: {}", e.code, e.message))
            .collect::<Vec<_>>()
            .join("; ");
        let has = |code: fn(&OciErrorCode) -> bool| envelope.errors.iter().any(|e| code(&e.code));
        if has(|c| matches!(c, OciErrorCode::Unauthorized)) {
            self.unauthorized(repository, detail)
        } else if has(|c| matches!(c, OciErrorCode::Denied)) {
            self.denied(repository, detail)
        } else {
            RemoteError::Server {
                host: self.host.clone(),
                detail,
            }
        }
    }

    fn unauthorized(&self, repository: &str, detail: String) -> RemoteError {
        RemoteError::Unauthorized {
            host: self.host.clone(),
            repository: repository.to_string(),
            credentials: self.credentials.describe(),
            detail,
        }
    }

    fn denied(&self, repository: &str, detail: String) -> RemoteError {
        RemoteError::Denied {
            host: self.host.clone(),
            repository: repository.to_string(),
            detail,
        }
    }

    /// Authenticates for `operation` on `repository` up front, so that wrong
    /// credentials fail with a clear error before any work.
    pub fn authenticate(&self, repository: &str, access: Access) -> Result<(), RemoteError> {
        let push = access == Access::Push;
        let reference = self.reference(repository, "latest");
        let operation = if push {
            RegistryOperation::Push
        } else {
            RegistryOperation::Pull
        };
        let token = self
            .runtime
            .block_on(self.client.auth(&reference, &self.auth, operation))
            .map_err(|e| self.map_error(repository, e))?;
        if push {
            self.check_push_rights(repository, token.as_deref())?;
        }
        Ok(())
    }

    /// A token may be accepted for reading and still not allow pushing: open an
    /// upload session and cancel it at once, so a refusal comes before any build.
    fn check_push_rights(&self, repository: &str, token: Option<&str>) -> Result<(), RemoteError> {
        let base = self.base_url();
        let url = format!("{base}/v2/{repository}/blobs/uploads/");
        let answer = self.runtime.block_on(async {
            let http = reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .timeout(std::time::Duration::from_secs(30))
                .redirect(reqwest::redirect::Policy::none())
                .build()?;
            let with_auth = |request| self.authorized(request, token);
            let response = with_auth(http.post(&url)).send().await?;
            let status = response.status().as_u16();
            if let Some(location) = response
                .headers()
                .get("location")
                .and_then(|l| l.to_str().ok())
            {
                let location = if location.starts_with('/') {
                    format!("{base}{location}")
                } else {
                    location.to_string()
                };
                // A session nobody finishes expires anyway; cancelling is courtesy.
                let _ = with_auth(http.delete(&location)).send().await;
            }
            Ok::<_, reqwest::Error>(status)
        });
        let status = answer.map_err(|e| RemoteError::Unreachable {
            host: self.host.clone(),
            detail: error_chain(&e),
        })?;
        match status {
            401 => Err(RemoteError::Unauthorized {
                host: self.host.clone(),
                repository: repository.to_string(),
                credentials: self.credentials.describe(),
                detail: "401 Unauthorized when opening an upload".into(),
            }),
            403 => Err(RemoteError::Denied {
                host: self.host.clone(),
                repository: repository.to_string(),
                detail: "403 Forbidden: these credentials may read but not push".into(),
            }),
            _ => Ok(()),
        }
    }

    /// Asks `GET /v2/` before any work: a port that is not an OCI registry, or a plain
    /// HTTP server asked for over HTTPS, is named now rather than after a build.
    pub fn probe(&self) -> Result<(), RemoteError> {
        let url = format!("{}/v2/", self.base_url());
        let answer = self.runtime.block_on(async {
            let http = reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .timeout(std::time::Duration::from_secs(30))
                .build()?;
            let response = http.get(&url).send().await?;
            let status = response.status().as_u16();
            let is_registry = response
                .headers()
                .contains_key("docker-distribution-api-version")
                || response.headers().contains_key("www-authenticate")
                || status == 200;
            Ok::<_, reqwest::Error>((status, is_registry))
        });
        match answer {
            Ok((200 | 401, true)) => Ok(()),
            Ok((status, _)) => Err(RemoteError::NotARegistry {
                host: self.host.clone(),
                detail: format!("HTTP {status}"),
            }),
            Err(error) => {
                let chain = error_chain(&error);
                if !self.is_http() && looks_like_plain_http(&chain) {
                    return Err(RemoteError::PlainHttp {
                        host: self.host.clone(),
                    });
                }
                Err(RemoteError::Unreachable {
                    host: self.host.clone(),
                    detail: chain,
                })
            }
        }
    }

    /// The repositories the registry lists in `/v2/_catalog` (its first page), asked
    /// with `repository`'s pull access; `None` when it does not allow it (a registry
    /// with token auth wants a catalog scope).
    pub fn catalog(&self, repository: &str) -> Result<Option<Vec<String>>, RemoteError> {
        self.runtime.block_on(self.catalog_page(repository))
    }

    /// Every tag of `repository`, following pages (`n`/`last`). A repository that does
    /// not exist yet has no tags.
    pub fn tags(&self, repository: &str) -> Result<Vec<String>, RemoteError> {
        let mut tags: Vec<String> = Vec::new();
        let mut last: Option<String> = None;
        loop {
            let page = self
                .runtime
                .block_on(self.tag_page(repository, last.as_deref()))?;
            let count = page.len();
            let next = page.last().cloned();
            tags.extend(page);
            // A short page is the last; a registry that ignores `n` returns everything.
            if count < TAG_PAGE || next.is_none() || next == last {
                break;
            }
            last = next;
        }
        tags.sort();
        tags.dedup();
        Ok(tags)
    }

    /// The digest a tag points at, if the tag exists.
    pub fn tag_digest(&self, repository: &str, tag: &str) -> Result<Option<Digest>, RemoteError> {
        match self.pull_manifest(repository, tag)? {
            Some((_, digest)) => Ok(Some(digest)),
            None => Ok(None),
        }
    }

    /// A manifest's bytes and digest, by tag or digest; `None` when absent. The bytes
    /// are checked against the digest.
    pub fn pull_manifest(
        &self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<(Vec<u8>, Digest)>, RemoteError> {
        let expected: Option<Digest> = reference.parse().ok();
        // Our own capped read: `oci-client` reads a manifest whole before its size
        // can be checked, and a hostile registry can stream one without end.
        let Some(bytes) = self
            .runtime
            .block_on(self.manifest_capped(repository, reference))?
        else {
            return Ok(None);
        };
        let actual = Digest::of(&bytes);
        if let Some(expected) = expected {
            if expected != actual {
                return Err(RemoteError::DigestMismatch {
                    host: self.host.clone(),
                    what: format!("{repository}@{expected}"),
                    expected,
                    actual,
                });
            }
        }
        Ok(Some((bytes, actual)))
    }

    /// Puts a manifest under a tag or its digest.
    pub fn push_manifest(
        &self,
        repository: &str,
        reference: &str,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<(), RemoteError> {
        let oci_reference = match reference.parse::<Digest>() {
            Ok(digest) => self.digest_reference(repository, &digest),
            Err(_) => self.reference(repository, reference),
        };
        let content_type = media_type.parse().map_err(|_| RemoteError::Invalid {
            host: self.host.clone(),
            what: "media type".into(),
            detail: media_type.to_string(),
        })?;
        self.runtime
            .block_on(
                self.client
                    .push_manifest_raw(&oci_reference, bytes.to_vec(), content_type),
            )
            .map(|_| ())
            .map_err(|e| self.map_error(repository, e))
    }

    pub fn blob_exists(&self, repository: &str, digest: &Digest) -> Result<bool, RemoteError> {
        self.runtime
            .block_on(self.blob_exists_async(repository, digest))
    }

    /// Uploads a blob from the layout, streamed, unless the registry has it already
    /// in `repository`, or can mount it there from another repository this session
    /// saw it in. Returns the bytes sent (0 when skipped or mounted). A manifest's
    /// blobs go together through [`Remote::push_blobs`].
    pub fn push_blob(
        &self,
        repository: &str,
        layout: &ImageLayout,
        descriptor: &Descriptor,
        progress: Option<Progress>,
    ) -> Result<u64, RemoteError> {
        self.push_blobs(
            repository,
            layout,
            std::slice::from_ref(descriptor),
            progress,
        )
        .map(|pushed| pushed.bytes_sent)
    }

    /// Uploads a small blob held in memory (a statement, an empty config), unless the
    /// registry has it already.
    pub fn push_blob_bytes(&self, repository: &str, bytes: &[u8]) -> Result<Digest, RemoteError> {
        let digest = Digest::of(bytes);
        if self.blob_exists(repository, &digest)? {
            return Ok(digest);
        }
        let reference = self.reference(repository, "latest");
        self.runtime
            .block_on(
                self.client
                    .push_blob(&reference, bytes.to_vec(), &digest.to_string()),
            )
            .map_err(|e| self.map_error(repository, e))?;
        Ok(digest)
    }

    fn saw(&self, digest: &Digest, repository: &str) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.entry(digest.clone())
                .or_insert_with(|| repository.to_string());
        }
    }

    /// Downloads a blob into the layout, streamed and digest-checked. An interrupted
    /// download leaves `.partial-<hex>` beside the blobs and the next call resumes it
    /// with a range request; the blob appears under its name only once whole and
    /// verified. Returns the bytes received. A manifest's blobs come together through
    /// [`Remote::pull_blobs`].
    pub fn pull_blob(
        &self,
        repository: &str,
        descriptor: &Descriptor,
        layout: &ImageLayout,
        progress: Option<Progress>,
    ) -> Result<u64, RemoteError> {
        self.pull_blobs(
            repository,
            std::slice::from_ref(descriptor),
            layout,
            progress,
        )
    }

    /// A small blob (a config) read whole, refused past `limit` bytes, digest-checked.
    pub fn pull_blob_bytes(
        &self,
        repository: &str,
        descriptor: &Descriptor,
        limit: u64,
    ) -> Result<Vec<u8>, RemoteError> {
        let invalid = |detail: String| RemoteError::Invalid {
            host: self.host.clone(),
            what: format!("blob `{}`", descriptor.digest),
            detail,
        };
        if descriptor.size > limit {
            return Err(invalid(format!(
                "{} bytes is over the limit of {limit}",
                descriptor.size
            )));
        }
        let reference = self.digest_reference(repository, &descriptor.digest);
        let digest_text = descriptor.digest.to_string();
        let bytes = self.runtime.block_on(async {
            let mut stream = self
                .client
                .pull_blob_stream(&reference, digest_text.as_str())
                .await
                .map_err(|e| self.map_error(repository, e))?
                .stream;
            let mut bytes = Vec::with_capacity(descriptor.size as usize);
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| RemoteError::Unreachable {
                    host: self.host.clone(),
                    detail: e.to_string(),
                })?;
                // `descriptor.size` is at most `limit` (checked above): a blob is cut
                // off at its declared size, never read past it.
                if (bytes.len() + chunk.len()) as u64 > descriptor.size {
                    return Err(invalid(format!(
                        "more bytes than its size of {}",
                        descriptor.size
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok::<_, RemoteError>(bytes)
        })?;
        let actual = Digest::of(&bytes);
        if actual != descriptor.digest {
            return Err(RemoteError::DigestMismatch {
                host: self.host.clone(),
                what: format!("{repository}@{}", descriptor.digest),
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Manifests that refer to `subject`, through the referrers API or its tag-schema
    /// fallback, optionally of one artifact type.
    pub fn referrers(
        &self,
        repository: &str,
        subject: &Digest,
        artifact_type: Option<&str>,
    ) -> Result<Vec<Descriptor>, RemoteError> {
        let manifests =
            self.runtime
                .block_on(self.referrers_capped(repository, subject, artifact_type))?;
        Ok(manifests
            .into_iter()
            .filter(|d| artifact_type.is_none() || d.artifact_type.as_deref() == artifact_type)
            .collect())
    }

    /// True when the registry answers the referrers API (`GET /v2/<name>/referrers/<digest>`).
    pub fn has_referrers_api(
        &self,
        repository: &str,
        subject: &Digest,
    ) -> Result<bool, RemoteError> {
        let url = format!("{}/v2/{repository}/referrers/{subject}", self.base_url());
        // `oci-client` hides whether its answer came from the API or the fallback, so
        // ask directly, with the token it already holds.
        let reference = self.digest_reference(repository, subject);
        let token = self
            .runtime
            .block_on(
                self.client
                    .auth(&reference, &self.auth, RegistryOperation::Pull),
            )
            .ok()
            .flatten();
        let status = self.runtime.block_on(async {
            let http = reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()?;
            let request = self.authorized(
                http.get(&url).header("Accept", media_type::OCI_INDEX),
                token.as_deref(),
            );
            request.send().await.map(|r| r.status().as_u16())
        });
        match status {
            Ok(200) => Ok(true),
            Ok(_) => Ok(false),
            Err(e) => Err(RemoteError::Unreachable {
                host: self.host.clone(),
                detail: e.to_string(),
            }),
        }
    }

    /// `http(s)://HOST[:PORT]`, in the scheme this remote was set up with.
    fn base_url(&self) -> String {
        let scheme = if self.is_http() { "http" } else { "https" };
        format!("{scheme}://{}", self.host)
    }

    /// The few requests we send beside `oci-client` (which hides what they answer)
    /// carry its registry token when it has one, else our own credentials.
    fn authorized(
        &self,
        request: reqwest::RequestBuilder,
        token: Option<&str>,
    ) -> reqwest::RequestBuilder {
        match (token, &self.credentials) {
            (Some(token), _) => request.bearer_auth(token),
            (None, Credentials::Basic { username, password }) => {
                request.basic_auth(username, Some(password))
            }
            (None, Credentials::Bearer(token)) => request.bearer_auth(token),
            (None, Credentials::Anonymous) => request,
        }
    }

    fn is_http(&self) -> bool {
        // `Remote::with_credentials` only allows plain HTTP for loopback hosts.
        self.insecure
    }

    /// Adds `referrer` to the referrers tag-schema index of `subject`
    /// (`<alg>-<hex>` tag), as the distribution spec asks clients to do on registries
    /// without the referrers API. Read, add, write: the same referrer is never listed twice.
    pub fn add_to_referrers_fallback(
        &self,
        repository: &str,
        subject: &Digest,
        referrer: &Descriptor,
    ) -> Result<(), RemoteError> {
        self.add_all_to_referrers_fallback(repository, subject, std::slice::from_ref(referrer))
    }

    /// [`Remote::add_to_referrers_fallback`] for several referrers of one subject:
    /// one read and one write of the fallback index, however many there are.
    pub fn add_all_to_referrers_fallback(
        &self,
        repository: &str,
        subject: &Digest,
        referrers: &[Descriptor],
    ) -> Result<(), RemoteError> {
        let tag = subject.referrers_tag();
        let mut index = match self.pull_manifest(repository, &tag)? {
            Some((bytes, _)) => serde_json::from_slice::<ImageIndex>(&bytes)
                .unwrap_or_else(|_| ImageIndex::new(vec![])),
            None => ImageIndex::new(vec![]),
        };
        let before = index.manifests.len();
        for referrer in referrers {
            if !index.manifests.iter().any(|d| d.digest == referrer.digest) {
                index.manifests.push(referrer.clone());
            }
        }
        if index.manifests.len() == before {
            return Ok(());
        }
        self.push_manifest(repository, &tag, &index.to_bytes(), media_type::OCI_INDEX)
    }
}

#[cfg(test)]
mod tests {
    use super::error_messages;

    #[test]
    fn a_refusal_shows_the_registry_s_words_not_its_json() {
        let body = r#"{"errors":[{"code":"CONFLICT","message":"channel `stable` has `1.2.0`, newer than `1.1.0`","detail":null}]}"#;
        assert_eq!(
            error_messages(body),
            "channel `stable` has `1.2.0`, newer than `1.1.0`"
        );
        assert_eq!(error_messages("  plain text\n"), "plain text");
    }
}
