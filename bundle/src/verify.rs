//! Verifying a bundle held in an image layout, end to end.
//!
//! Order matters: the signature is checked first (cheap, and an untrusted bundle
//! should cost nothing more), then the config, then the layers are streamed through
//! a hasher and the archive walker at once, so a 1 GB layer is read once, in constant
//! memory: one thread reads and hashes the compressed bytes while another inflates
//! and walks the archive. Every file in the archive must match the signed config's
//! list (path, size, executable bit), and the config must match the reference asked
//! for, so nothing unsigned can slip in. Each byte is hashed once: the signed layer
//! digest already authenticates every file's content, so file digests are not
//! recomputed here; unpacking ([`crate::archive::unpack`]) checks them as it writes.
//!
//! Large, already-compressed files may travel as layers of their own
//! ([`media_type::FILE_LAYER`], config format [`FILE_LAYERS_FORMAT`]): such a layer
//! holds exactly the file's bytes, so its digest, checked here like any layer's, is
//! the signed file digest. The signed list, the manifest's file layers and the stack
//! layer's entries must agree: each file is in exactly one of them.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::mpsc;

use semver::Version;
use stackpack_schema::bundle::{BundleConfig, FILE_LAYERS_FORMAT, NEWEST_FORMAT};
use stackpack_schema::digest::{Digest, Sha256Hasher};
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageManifest};
use stackpack_schema::signature::{PublicKey, SignatureEnvelope, SignatureError, SignaturePayload};

use crate::archive::{self, ArchiveError, Limits, ListedFile};
use crate::layout::{ImageLayout, LayoutError, MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE};

/// Largest signature layer read.
const MAX_SIGNATURE_SIZE: u64 = 1024 * 1024;

/// Whose signatures count.
#[derive(Clone, Debug)]
pub enum Trust {
    /// At least one valid signature by one of these keys is required.
    Keys(Vec<PublicKey>),
    /// Signatures are checked for integrity and reported, but no key is trusted.
    /// Only for showing a bundle (`stackpack inspect` without `--trust`); anything
    /// that runs a bundle uses [`Trust::Keys`].
    ReportOnly,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("bundle `{stack}@{version}` is not in `{layout}`")]
    NotFound {
        stack: String,
        version: Version,
        layout: String,
    },
    #[error("the {what} of the bundle does not match its digest: expected `{expected}`, the content hashes to `{actual}`")]
    DigestMismatch {
        what: String,
        expected: Digest,
        actual: Digest,
    },
    #[error("the {what} of the bundle is {actual} bytes, but its descriptor says {expected}")]
    SizeMismatch {
        what: String,
        expected: u64,
        actual: u64,
    },
    #[error("the {what} of the bundle is missing: blob `{digest}` is not in the layout")]
    MissingBlob { what: String, digest: Digest },
    #[error("not a Stackpack bundle: {0}")]
    NotABundle(String),
    #[error("the bundle's config format is `{format}`, newer than the newest this program reads (`{newest}`): upgrade stackpack-runner (or stackpack) to a release that reads it")]
    NewerFormat { format: u32, newest: u32 },
    #[error("the bundle's signed config says `{found}`, but `{expected}` was asked for")]
    WrongBundle { expected: String, found: String },
    #[error("no trusted signature matches bundle `{reference}`")]
    Unsigned { reference: String },
    #[error("bundle `{reference}` is signed by key {keys}, which is not trusted")]
    Untrusted { reference: String, keys: String },
    #[error("the signature of bundle `{reference}` is invalid: {reason}")]
    BadSignature { reference: String, reason: String },
    #[error("the bundle's archive does not match its signed file list: {0}")]
    FileMismatch(String),
    #[error("the bundle's archive is unsafe or corrupt: {0}")]
    Archive(#[from] ArchiveError),
    #[error(transparent)]
    Layout(LayoutError),
}

/// One signature found for a bundle, and what checking it found.
#[derive(Clone, Debug)]
pub struct SignatureCheck {
    pub manifest_digest: Digest,
    pub key_id: Option<String>,
    pub payload: Option<SignaturePayload>,
    /// `Ok(trusted)` when the signature is valid; the error otherwise.
    pub outcome: Result<bool, String>,
}

/// What verification established.
#[derive(Clone, Debug)]
pub struct VerifiedBundle {
    pub manifest_descriptor: Descriptor,
    pub manifest: ImageManifest,
    pub config: BundleConfig,
    pub signatures: Vec<SignatureCheck>,
    /// The trusted key that signed it (`None` only with [`Trust::ReportOnly`]).
    pub signer: Option<PublicKey>,
    pub stack_layer: Descriptor,
}

impl VerifiedBundle {
    /// The provider package for `source` and `version` on `platform`, if the bundle
    /// carries one (its layer was verified with the rest).
    pub fn provider(
        &self,
        source: &str,
        version: &str,
        platform: &str,
    ) -> Option<&stackpack_schema::bundle::ProviderPackage> {
        self.config
            .providers
            .iter()
            .find(|p| p.source == source && p.version == version && p.platform == platform)
    }
}

/// Finds `stack@version` in the layout and verifies it.
pub fn verify_bundle(
    layout: &ImageLayout,
    stack: &str,
    version: &Version,
    trust: &Trust,
    limits: &Limits,
) -> Result<VerifiedBundle, VerifyError> {
    let descriptor = find(layout, stack, version)?;
    verify_manifest(layout, &descriptor, stack, version, trust, limits)
}

/// The manifest of `stack@version` in the layout.
fn find(layout: &ImageLayout, stack: &str, version: &Version) -> Result<Descriptor, VerifyError> {
    layout
        .find_bundle(stack, version)
        .map_err(VerifyError::Layout)?
        .ok_or_else(|| VerifyError::NotFound {
            stack: stack.to_string(),
            version: version.clone(),
            layout: layout.root().display().to_string(),
        })
}

/// Whether the blobs of a layout still need hashing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrived {
    /// Blobs of unknown origin (a user's tar or folder, the store): every byte is
    /// hashed against its digest.
    Unchecked,
    /// Blobs this process itself just downloaded into a private staging layout, each
    /// hashed against its digest as it was written (`remote` renames a blob into the
    /// layout only then): hashing them again would read every byte twice. Their
    /// sizes, the signature and the config are checked; the stack layer's files are
    /// checked where it is unpacked.
    HashedOnArrival,
}

/// [`verify_bundle`] for a staging layout this process downloaded itself, whose
/// blobs were hashed on arrival ([`Arrived::HashedOnArrival`]).
pub fn verify_downloaded_bundle(
    layout: &ImageLayout,
    stack: &str,
    version: &Version,
    trust: &Trust,
    limits: &Limits,
) -> Result<VerifiedBundle, VerifyError> {
    let descriptor = find(layout, stack, version)?;
    verify(
        layout,
        &descriptor,
        stack,
        version,
        trust,
        limits,
        Arrived::HashedOnArrival,
    )
}

/// Verifies the bundle whose manifest `descriptor` points at.
pub fn verify_manifest(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    stack: &str,
    version: &Version,
    trust: &Trust,
    limits: &Limits,
) -> Result<VerifiedBundle, VerifyError> {
    verify(
        layout,
        descriptor,
        stack,
        version,
        trust,
        limits,
        Arrived::Unchecked,
    )
}

fn verify(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    stack: &str,
    version: &Version,
    trust: &Trust,
    limits: &Limits,
    arrived: Arrived,
) -> Result<VerifiedBundle, VerifyError> {
    let reference = format!("{stack}@{version}");
    let manifest = read_manifest(layout, descriptor)?;

    // 1. Signatures: before anything else is read.
    let (signatures, signer) = check_signatures(
        layout,
        &descriptor.digest,
        &format!("stacks/{stack}"),
        version,
        trust,
    )?;
    if let Trust::Keys(_) = trust {
        if signer.is_none() {
            return Err(signature_failure(&reference, &signatures));
        }
    }

    // 2. Config.
    let config = read_config(layout, &manifest, stack, version)?;
    check_entrypoint(&config)?;
    check_file_list(&config, limits)?;

    // 3. Layers, streamed.
    let stack_layer = verify_layers(layout, &manifest, &config, limits, arrived)?;
    check_provider_layers(&config, &manifest)?;
    check_file_layers(&config, &manifest)?;

    Ok(VerifiedBundle {
        manifest_descriptor: descriptor.clone(),
        manifest,
        config,
        signatures,
        signer,
        stack_layer,
    })
}

/// The manifest `descriptor` points at, checked against its digest; refused when it
/// is not a bundle's.
fn read_manifest(
    layout: &ImageLayout,
    descriptor: &Descriptor,
) -> Result<ImageManifest, VerifyError> {
    let manifest_bytes = read_checked(layout, descriptor, "manifest", MAX_MANIFEST_SIZE)?;
    let manifest: ImageManifest = serde_json::from_slice(&manifest_bytes)
        .map_err(|e| VerifyError::NotABundle(format!("the manifest is not valid JSON: {e}")))?;
    if manifest.artifact_type.as_deref() != Some(media_type::BUNDLE_ARTIFACT) {
        return Err(VerifyError::NotABundle(format!(
            "the manifest's artifactType is `{}`, not `{}`",
            manifest.artifact_type.as_deref().unwrap_or("(none)"),
            media_type::BUNDLE_ARTIFACT
        )));
    }
    Ok(manifest)
}

/// The bundle config, checked against its digest: refused when it is of a newer
/// format than this program reads, or is not the config of `stack@version`.
fn read_config(
    layout: &ImageLayout,
    manifest: &ImageManifest,
    stack: &str,
    version: &Version,
) -> Result<BundleConfig, VerifyError> {
    if manifest.config.media_type != media_type::BUNDLE_CONFIG {
        return Err(VerifyError::NotABundle(format!(
            "the config's media type is `{}`, not `{}`",
            manifest.config.media_type,
            media_type::BUNDLE_CONFIG
        )));
    }
    let config_bytes = read_checked(layout, &manifest.config, "config", MAX_CONFIG_SIZE)?;
    // The format first: a newer config may not parse as this one, and "upgrade" is
    // the useful answer then, not a parse error.
    #[derive(serde::Deserialize)]
    struct FormatOnly {
        format: u32,
    }
    let format = serde_json::from_slice::<FormatOnly>(&config_bytes)
        .map_err(|e| VerifyError::NotABundle(format!("the config is not valid: {e}")))?
        .format;
    if format > NEWEST_FORMAT {
        return Err(VerifyError::NewerFormat {
            format,
            newest: NEWEST_FORMAT,
        });
    }
    let config: BundleConfig = serde_json::from_slice(&config_bytes)
        .map_err(|e| VerifyError::NotABundle(format!("the config is not valid: {e}")))?;
    if config.stack != stack || &config.version != version {
        return Err(VerifyError::WrongBundle {
            expected: format!("{stack}@{version}"),
            found: format!("{}@{}", config.stack, config.version),
        });
    }
    Ok(config)
}

/// Every layer of the manifest, streamed (or, for blobs hashed on arrival, their
/// sizes checked); returns the one stack layer.
fn verify_layers(
    layout: &ImageLayout,
    manifest: &ImageManifest,
    config: &BundleConfig,
    limits: &Limits,
    arrived: Arrived,
) -> Result<Descriptor, VerifyError> {
    let mut stack_layer = None;
    for layer in &manifest.layers {
        if layer.media_type == media_type::STACK_LAYER {
            if stack_layer.is_some() {
                return Err(VerifyError::NotABundle("it has two stack layers".into()));
            }
            match arrived {
                Arrived::Unchecked => {
                    let files = verify_stack_layer(layout, layer, limits)?;
                    compare_files(config, &files)?;
                }
                // The signed manifest names the layer's digest, which the bytes
                // matched as they arrived: its content is the vendor's. Its files are
                // checked against the signed list, and its entries against the
                // archive limits, where it is unpacked (before every plan or apply)
                // and by `verify`, rather than in a second pass here.
                Arrived::HashedOnArrival => check_size(layout, layer, "stack layer")?,
            }
            stack_layer = Some(layer.clone());
        } else {
            let what = if layer.media_type == media_type::FILE_LAYER {
                let title = layer.annotation(annotation::TITLE).unwrap_or("(untitled)");
                format!("file layer `{title}`")
            } else {
                format!("layer `{}`", layer.media_type)
            };
            match arrived {
                Arrived::Unchecked => verify_blob_stream(layout, layer, &what)?,
                Arrived::HashedOnArrival => check_size(layout, layer, &what)?,
            }
        }
    }
    stack_layer.ok_or_else(|| VerifyError::NotABundle("it has no stack layer".into()))
}

pub(crate) fn signature_failure(reference: &str, signatures: &[SignatureCheck]) -> VerifyError {
    if signatures.is_empty() {
        return VerifyError::Unsigned {
            reference: reference.to_string(),
        };
    }
    let untrusted: Vec<String> = signatures
        .iter()
        .filter(|check| check.outcome == Ok(false))
        .filter_map(|check| check.key_id.as_ref().map(|id| format!("`{id}`")))
        .collect();
    if !untrusted.is_empty() {
        return VerifyError::Untrusted {
            reference: reference.to_string(),
            keys: untrusted.join(", "),
        };
    }
    let reason = signatures
        .iter()
        .filter_map(|check| check.outcome.as_ref().err().cloned())
        .collect::<Vec<_>>()
        .join("; ");
    VerifyError::BadSignature {
        reference: reference.to_string(),
        reason,
    }
}

/// Checks every signature of `subject` in the layout: each must sign this manifest,
/// this version, and a repository ending in `repository_tail` (`stacks/<stack>` or
/// `releases/<name>`: the namespace may differ when bundles are mirrored).
pub(crate) fn check_signatures(
    layout: &ImageLayout,
    subject: &Digest,
    repository_tail: &str,
    version: &Version,
    trust: &Trust,
) -> Result<(Vec<SignatureCheck>, Option<PublicKey>), VerifyError> {
    let candidates = layout
        .signatures_for(subject)
        .map_err(VerifyError::Layout)?;
    Ok(check_signature_manifests(
        layout,
        &candidates,
        subject,
        repository_tail,
        version,
        trust,
    ))
}

/// The trusted key among `candidates` (signature manifests already in `layout`)
/// that signs bundle `stack@version` at `subject`: what a pull checks before it
/// moves a bundle's layers, so an untrusted bundle costs its manifest and
/// signatures only. `Ok(None)` with [`Trust::ReportOnly`].
pub fn trusted_signer(
    layout: &ImageLayout,
    candidates: &[Descriptor],
    subject: &Digest,
    stack: &str,
    version: &Version,
    trust: &Trust,
) -> Result<Option<PublicKey>, VerifyError> {
    let (checks, signer) = check_signature_manifests(
        layout,
        candidates,
        subject,
        &format!("stacks/{stack}"),
        version,
        trust,
    );
    match (trust, signer) {
        (Trust::Keys(_), None) => Err(signature_failure(&format!("{stack}@{version}"), &checks)),
        (_, signer) => Ok(signer),
    }
}

/// Checks each of `candidates` as a signature of `subject` (see
/// [`check_signatures`]): wherever the caller found them (a layout's entries, a
/// release index's).
pub(crate) fn check_signature_manifests(
    layout: &ImageLayout,
    candidates: &[Descriptor],
    subject: &Digest,
    repository_tail: &str,
    version: &Version,
    trust: &Trust,
) -> (Vec<SignatureCheck>, Option<PublicKey>) {
    let mut checks = Vec::new();
    let mut signer = None;
    for descriptor in candidates {
        let mut check = SignatureCheck {
            manifest_digest: descriptor.digest.clone(),
            key_id: None,
            payload: None,
            outcome: Err(String::new()),
        };
        check.outcome = (|| -> Result<bool, String> {
            let envelope = read_signature(layout, descriptor, subject)?;
            check.key_id = Some(envelope.payload.key_id.clone());
            check.payload = Some(envelope.payload.clone());
            let payload = &envelope.payload;
            if &payload.manifest_digest != subject {
                return Err(format!(
                    "it signs manifest `{}`, not this one",
                    payload.manifest_digest
                ));
            }
            if payload.version != version.to_string() {
                return Err(format!(
                    "it signs version `{}`, not `{version}`",
                    payload.version
                ));
            }
            check_signed_at(&payload.signed_at)?;
            let repository_ok = payload.repository == repository_tail
                || payload.repository.ends_with(&format!("/{repository_tail}"));
            if !repository_ok {
                return Err(format!(
                    "it signs repository `{}`, not `{repository_tail}`",
                    payload.repository
                ));
            }
            match trust {
                Trust::ReportOnly => envelope
                    .verify_integrity()
                    .map(|_| false)
                    .map_err(|e| e.to_string()),
                Trust::Keys(keys) => match envelope.verify(keys) {
                    Ok(key) => {
                        signer.get_or_insert(key);
                        Ok(true)
                    }
                    Err(SignatureError::Untrusted(_)) => Ok(false),
                    Err(e) => Err(e.to_string()),
                },
            }
        })();
        checks.push(check);
    }
    (checks, signer)
}

/// How far a signature's time may be ahead of this machine's clock (clocks drift).
const CLOCK_SKEW: time::Duration = time::Duration::minutes(10);

/// A signature's `signedAt` must be a real RFC 3339 time, not in the future: a
/// payload with a made-up time is not one our packager wrote.
fn check_signed_at(signed_at: &str) -> Result<(), String> {
    let at = time::OffsetDateTime::parse(signed_at, &time::format_description::well_known::Rfc3339)
        .map_err(|_| format!("its `signedAt` `{signed_at}` is not an RFC 3339 time"))?;
    if at > time::OffsetDateTime::now_utc() + CLOCK_SKEW {
        return Err(format!(
            "its `signedAt` `{signed_at}` is in the future (this machine's clock says {})",
            time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        ));
    }
    Ok(())
}

/// The entrypoint is where the engine runs: a plain relative path inside the archive.
fn check_entrypoint(config: &BundleConfig) -> Result<(), VerifyError> {
    let entrypoint = std::path::Path::new(&config.entrypoint);
    let plain = !config.entrypoint.is_empty()
        && entrypoint
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain {
        return Err(VerifyError::NotABundle(format!(
            "its entrypoint `{}` is not a plain relative path inside the bundle",
            config.entrypoint
        )));
    }
    Ok(())
}

fn read_signature(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    subject: &Digest,
) -> Result<SignatureEnvelope, String> {
    let bytes = read_checked(layout, descriptor, "signature manifest", MAX_MANIFEST_SIZE)
        .map_err(|e| e.to_string())?;
    let manifest: ImageManifest = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the signature manifest is not valid JSON: {e}"))?;
    if manifest.artifact_type.as_deref() != Some(media_type::SIGNATURE_ARTIFACT) {
        return Err("the signature manifest has the wrong artifactType".into());
    }
    if manifest.subject.as_ref().map(|s| &s.digest) != Some(subject) {
        return Err("the signature manifest's subject is another manifest".into());
    }
    let layer = manifest
        .layers
        .iter()
        .find(|layer| layer.media_type == media_type::SIGNATURE_LAYER)
        .ok_or("the signature manifest has no signature layer")?;
    let bytes =
        read_checked(layout, layer, "signature", MAX_SIGNATURE_SIZE).map_err(|e| e.to_string())?;
    SignatureEnvelope::from_bytes(&bytes).map_err(|e| e.to_string())
}

/// Reads a small blob, checking its digest and size against `descriptor`.
fn read_checked(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    what: &str,
    limit: u64,
) -> Result<Vec<u8>, VerifyError> {
    let bytes = layout
        .read_blob(&descriptor.digest, limit)
        .map_err(|e| match e {
            LayoutError::DigestMismatch { expected, actual } => VerifyError::DigestMismatch {
                what: what.to_string(),
                expected,
                actual,
            },
            LayoutError::MissingBlob { digest, .. } => VerifyError::MissingBlob {
                what: what.to_string(),
                digest,
            },
            LayoutError::TooLarge { actual, .. } => VerifyError::SizeMismatch {
                what: what.to_string(),
                expected: descriptor.size,
                actual,
            },
            other => VerifyError::Layout(other),
        })?;
    if bytes.len() as u64 != descriptor.size {
        return Err(VerifyError::SizeMismatch {
            what: what.to_string(),
            expected: descriptor.size,
            actual: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

fn open_layer(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    what: &str,
) -> Result<std::fs::File, VerifyError> {
    layout.open_blob(&descriptor.digest).map_err(|e| match e {
        LayoutError::MissingBlob { digest, .. } => VerifyError::MissingBlob {
            what: what.to_string(),
            digest,
        },
        other => VerifyError::Layout(other),
    })
}

fn check_digest(
    what: &str,
    descriptor: &Descriptor,
    hasher: Sha256Hasher,
) -> Result<(), VerifyError> {
    let size = hasher.len();
    let actual = hasher.finish();
    if actual != descriptor.digest {
        return Err(VerifyError::DigestMismatch {
            what: what.to_string(),
            expected: descriptor.digest.clone(),
            actual,
        });
    }
    if size != descriptor.size {
        return Err(VerifyError::SizeMismatch {
            what: what.to_string(),
            expected: descriptor.size,
            actual: size,
        });
    }
    Ok(())
}

/// The blob is there and has the size its descriptor says (its bytes were hashed
/// when they arrived).
fn check_size(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    what: &str,
) -> Result<(), VerifyError> {
    let file = open_layer(layout, descriptor, what)?;
    let size = file
        .metadata()
        .map_err(|e| {
            VerifyError::Layout(LayoutError::Io {
                context: "cannot read",
                path: layout.blob_path(&descriptor.digest),
                source: e,
            })
        })?
        .len();
    if size != descriptor.size {
        return Err(VerifyError::SizeMismatch {
            what: what.to_string(),
            expected: descriptor.size,
            actual: size,
        });
    }
    Ok(())
}

fn verify_blob_stream(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    what: &str,
) -> Result<(), VerifyError> {
    let mut file = open_layer(layout, descriptor, what)?;
    // Large reads straight into one buffer: provider packages and file layers are
    // the biggest blobs of a bundle, and here they are only hashed.
    let mut hasher = Sha256Hasher::new();
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let read = read_full(&mut file, &mut buffer).map_err(|e| {
            VerifyError::Layout(LayoutError::Io {
                context: "cannot read",
                path: layout.blob_path(&descriptor.digest),
                source: e,
            })
        })?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    check_digest(what, descriptor, hasher)
}

/// Size of the chunks the hashing thread hands to the inflating one.
const CHUNK: usize = 1 << 20;

/// Streams the stack layer once: a second thread reads and hashes the compressed
/// bytes while this one inflates and walks the archive, so the two costs overlap
/// instead of adding up. A digest mismatch is reported in preference to an archive
/// error, since a tampered layer usually also breaks the archive.
fn verify_stack_layer(
    layout: &ImageLayout,
    descriptor: &Descriptor,
    limits: &Limits,
) -> Result<Vec<ListedFile>, VerifyError> {
    let what = "stack layer";
    let mut file = open_layer(layout, descriptor, what)?;
    let path = layout.blob_path(&descriptor.digest);
    let (chunks, received) = mpsc::sync_channel::<io::Result<Vec<u8>>>(4);
    let (give_back, returned) = mpsc::sync_channel::<Vec<u8>>(8);
    std::thread::scope(|scope| {
        let hashing = scope.spawn(move || -> io::Result<Sha256Hasher> {
            let mut hasher = Sha256Hasher::new();
            let mut reader_gone = false;
            loop {
                let mut buffer = returned.try_recv().unwrap_or_default();
                buffer.resize(CHUNK, 0);
                let read = match read_full(&mut file, &mut buffer) {
                    Ok(read) => read,
                    Err(e) => {
                        let _ = chunks.send(Err(io::Error::new(e.kind(), e.to_string())));
                        return Err(e);
                    }
                };
                if read == 0 {
                    return Ok(hasher);
                }
                buffer.truncate(read);
                hasher.update(&buffer);
                // Once the walker stops (done, or refused), the rest is still hashed so
                // that the digest, not the archive error, is what a tampered blob shows.
                if !reader_gone && chunks.send(Ok(buffer)).is_err() {
                    reader_gone = true;
                }
            }
        });
        let reader = ChunkReader {
            chunks: received,
            give_back,
            current: Vec::new(),
            position: 0,
        };
        let listed = archive::list(reader, Some(descriptor.size), limits);
        let hasher = hashing
            .join()
            .map_err(|_| io::Error::other("the hashing thread stopped"))
            .and_then(|r| r)
            .map_err(|source| {
                VerifyError::Layout(LayoutError::Io {
                    context: "cannot read",
                    path: path.clone(),
                    source,
                })
            })?;
        check_digest(what, descriptor, hasher)?;
        Ok(listed?)
    })
}

/// Reads until `buffer` is full or the file ends.
fn read_full(file: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The inflating side of [`verify_stack_layer`]: reads the chunks the hashing thread
/// sends, and hands each spent buffer back to be filled again.
struct ChunkReader {
    chunks: mpsc::Receiver<io::Result<Vec<u8>>>,
    give_back: mpsc::SyncSender<Vec<u8>>,
    current: Vec<u8>,
    position: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.position == self.current.len() {
            match self.chunks.recv() {
                Ok(chunk) => {
                    let spent = std::mem::replace(&mut self.current, chunk?);
                    let _ = self.give_back.try_send(spent);
                    self.position = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.position);
        buf[..n].copy_from_slice(&self.current[self.position..self.position + n]);
        self.position += n;
        Ok(n)
    }
}

/// Every provider package the signed config lists is a layer of the manifest, and
/// every provider layer is listed: the two cannot be mixed and matched.
fn check_provider_layers(
    config: &BundleConfig,
    manifest: &ImageManifest,
) -> Result<(), VerifyError> {
    let layers: Vec<&Descriptor> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == media_type::PROVIDER_PACKAGE)
        .collect();
    for package in &config.providers {
        if !layers
            .iter()
            .any(|l| l.digest == package.digest && l.size == package.size)
        {
            return Err(VerifyError::NotABundle(format!(
                "its config lists provider `{}` {} for `{}`, and no layer carries it",
                package.source, package.version, package.platform
            )));
        }
    }
    for layer in layers {
        if !config.providers.iter().any(|p| p.digest == layer.digest) {
            return Err(VerifyError::NotABundle(format!(
                "it carries a provider layer `{}` that its config does not list",
                layer.digest
            )));
        }
    }
    Ok(())
}

/// Compares what the archive holds with the signed list. Contents are authenticated by
/// the signed layer digest; each file's own digest is checked when it is unpacked.
fn compare_files(config: &BundleConfig, files: &[ListedFile]) -> Result<(), VerifyError> {
    let signed: BTreeMap<&str, _> = config
        .files
        .iter()
        .filter(|f| !f.layer)
        .map(|f| (f.path.as_str(), f))
        .collect();
    for file in files {
        let Some(entry) = signed.get(file.path.as_str()) else {
            if config.file(&file.path).is_some_and(|f| f.layer) {
                return Err(VerifyError::FileMismatch(format!(
                    "`{}` is in the archive, but the signed file list says it travels as a layer of its own",
                    file.path
                )));
            }
            return Err(VerifyError::FileMismatch(format!(
                "`{}` is in the archive but not in the signed file list",
                file.path
            )));
        };
        if entry.size != file.size {
            return Err(VerifyError::FileMismatch(format!(
                "`{}` differs from its signed size",
                file.path
            )));
        }
        if entry.executable != file.executable {
            return Err(VerifyError::FileMismatch(format!(
                "`{}` has a different executable bit than signed",
                file.path
            )));
        }
    }
    if files.len() != signed.len() {
        let present: std::collections::HashSet<&str> =
            files.iter().map(|f| f.path.as_str()).collect();
        let missing = signed
            .keys()
            .find(|path| !present.contains(*path))
            .copied()
            .unwrap_or("?");
        return Err(VerifyError::FileMismatch(format!(
            "`{missing}` is in the signed file list but not in the archive"
        )));
    }
    Ok(())
}

/// The signed file list itself must be one a packager writes: sorted, without
/// repeats, paths an archive could hold, no file where another's folder must be, and
/// file layers only in a format that has them. Paths of files in the stack layer are
/// also checked entry by entry as the archive is walked; those of file layers are
/// checked only here (and again when they are placed).
fn check_file_list(config: &BundleConfig, limits: &Limits) -> Result<(), VerifyError> {
    for pair in config.files.windows(2) {
        if pair[0].path >= pair[1].path {
            return Err(VerifyError::NotABundle(format!(
                "its signed file list is not sorted, or lists `{}` twice",
                pair[1].path
            )));
        }
    }
    let paths: std::collections::HashSet<&str> =
        config.files.iter().map(|f| f.path.as_str()).collect();
    for file in &config.files {
        if file.layer && config.format < FILE_LAYERS_FORMAT {
            return Err(VerifyError::NotABundle(format!(
                "its config (format `{}`) says `{}` travels as a layer of its own, which only format `{FILE_LAYERS_FORMAT}` allows",
                config.format, file.path
            )));
        }
        let checked = archive::check_path(file.path.as_bytes(), limits).map_err(|e| match e {
            ArchiveError::UnsafePath { reason, .. } => VerifyError::NotABundle(format!(
                "its signed file list names `{}`, which is refused: {reason}",
                file.path
            )),
            other => other.into(),
        })?;
        if checked != file.path {
            return Err(VerifyError::NotABundle(format!(
                "its signed file list names `{}`, which is not a plain relative path",
                file.path
            )));
        }
        let mut folder = file.path.as_str();
        while let Some((parent, _)) = folder.rsplit_once('/') {
            if paths.contains(parent) {
                return Err(VerifyError::NotABundle(format!(
                    "its signed file list has a file `{parent}` where `{}` needs a folder",
                    file.path
                )));
            }
            folder = parent;
        }
    }
    Ok(())
}

/// Every file the signed config says travels as a layer is a file layer of the
/// manifest with the file's digest and size, and every file layer of the manifest is
/// such a file (named by its title): nothing unsigned rides along, and nothing
/// signed is left behind.
fn check_file_layers(config: &BundleConfig, manifest: &ImageManifest) -> Result<(), VerifyError> {
    let layers: Vec<&Descriptor> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == media_type::FILE_LAYER)
        .collect();
    for file in config.file_layers() {
        if !layers
            .iter()
            .any(|l| l.digest == file.digest && l.size == file.size)
        {
            return Err(VerifyError::NotABundle(format!(
                "its signed file list says `{}` travels as a layer of its own (`{}`), and no layer carries it",
                file.path,
                file.digest.short()
            )));
        }
    }
    for layer in layers {
        let title = layer.annotation(annotation::TITLE);
        let listed = config.file_layers().any(|f| {
            f.digest == layer.digest && f.size == layer.size && title == Some(f.path.as_str())
        });
        if !listed {
            return Err(VerifyError::NotABundle(format!(
                "it carries a file layer `{}` titled `{}` that its signed file list does not name",
                layer.digest.short(),
                title.unwrap_or("(none)")
            )));
        }
    }
    Ok(())
}
