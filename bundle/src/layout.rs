//! OCI image layouts: the format bundles travel in offline, and the runner's store.
//!
//! ```text
//! oci-layout                    {"imageLayoutVersion":"1.0.0"}
//! index.json                    an image index: one entry per bundle, signature, module
//! blobs/sha256/<hex>            content-addressed blobs
//! ```
//!
//! Index entries carry annotations that make them findable without opening every
//! manifest: `org.opencontainers.image.ref.name` (`stacks/<stack>:<version>`, the
//! name other tools such as skopeo use), `dev.stackpack.kind`, `dev.stackpack.stack`
//! and `org.opencontainers.image.version`. Those are hints for finding; verification
//! never trusts them and re-checks everything against the signed content.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use semver::Version;
use stackpack_schema::digest::{Digest, Sha256Hasher};
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageIndex, ImageLayoutMarker};

/// Largest manifest or index read into memory (the distribution spec's own limit).
pub const MAX_MANIFEST_SIZE: u64 = 4 * 1024 * 1024;
/// Largest config blob read into memory.
pub const MAX_CONFIG_SIZE: u64 = 64 * 1024 * 1024;

/// Annotation on signature entries: the digest of the manifest they sign.
pub const SUBJECT_ANNOTATION: &str = "dev.stackpack.subject";

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// Signing what was to be written failed (a KMS that did not answer or refused).
    #[error(transparent)]
    Sign(#[from] stackpack_schema::signature::SignError),
    #[error("`{path}` is not an OCI image layout: it has no `oci-layout` file")]
    NotALayout { path: PathBuf },
    #[error("`{path}`: {message}")]
    Malformed { path: PathBuf, message: String },
    #[error("blob `{digest}` is missing from `{layout}`")]
    MissingBlob { digest: Digest, layout: PathBuf },
    #[error("blob `{digest}` in `{layout}` is {actual} bytes, larger than the {limit} bytes allowed for it")]
    TooLarge {
        digest: Digest,
        layout: PathBuf,
        actual: u64,
        limit: u64,
    },
    #[error("blob `{expected}` does not match its digest: its content hashes to `{actual}`")]
    DigestMismatch { expected: Digest, actual: Digest },
    #[error("{context} `{path}`: {source}")]
    Io {
        context: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_error<'a>(
    context: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> LayoutError + 'a {
    move |source| LayoutError::Io {
        context,
        path: path.to_path_buf(),
        source,
    }
}

/// What an index entry is, read from its annotations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Bundle {
        stack: String,
        version: Version,
    },
    Signature {
        subject: Digest,
    },
    /// An attestation of `subject` (a Sigstore bundle or an SBOM): carried with it
    /// everywhere, checked by the runner's policy, never taken for a signature (so
    /// older runners, which know only signatures, pass over it).
    Attestation {
        subject: Digest,
    },
    Module {
        module: String,
        version: Version,
    },
    Other,
}

/// An OCI image layout on disk.
#[derive(Clone, Debug)]
pub struct ImageLayout {
    root: PathBuf,
}

impl ImageLayout {
    /// Opens an existing layout.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, LayoutError> {
        let root = root.into();
        if !root.join("oci-layout").is_file() {
            return Err(LayoutError::NotALayout { path: root });
        }
        Ok(ImageLayout { root })
    }

    /// Opens a layout, creating an empty one if the folder has none.
    pub fn create(root: impl Into<PathBuf>) -> Result<Self, LayoutError> {
        let root = root.into();
        let blobs = root.join("blobs").join("sha256");
        fs::create_dir_all(&blobs).map_err(io_error("cannot create", &blobs))?;
        let marker = root.join("oci-layout");
        if !marker.exists() {
            let bytes = serde_json::to_vec(&ImageLayoutMarker::default()).expect("serialises");
            write_atomically(&marker, &bytes)?;
        }
        let index = root.join("index.json");
        if !index.exists() {
            write_atomically(&index, &ImageIndex::new(vec![]).to_bytes())?;
        }
        Ok(ImageLayout { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs").join("sha256").join(digest.hex())
    }

    /// True when the whole blob is present. Partial downloads live under other names
    /// and never count.
    pub fn has_blob(&self, digest: &Digest) -> bool {
        self.blob_path(digest).is_file()
    }

    /// True when the blob is present and its content hashes to `digest`: a blob
    /// changed or cut short after it was stored is not intact.
    pub fn blob_is_intact(&self, digest: &Digest) -> Result<bool, LayoutError> {
        let mut file = match self.open_blob(digest) {
            Ok(file) => file,
            Err(LayoutError::MissingBlob { .. }) => return Ok(false),
            Err(other) => return Err(other),
        };
        let mut hasher = Sha256Hasher::new();
        io::copy(&mut file, &mut hasher)
            .map_err(io_error("cannot read", &self.blob_path(digest)))?;
        Ok(&hasher.finish() == digest)
    }

    pub fn open_blob(&self, digest: &Digest) -> Result<File, LayoutError> {
        let path = self.blob_path(digest);
        File::open(&path).map_err(|source| {
            if source.kind() == io::ErrorKind::NotFound {
                LayoutError::MissingBlob {
                    digest: digest.clone(),
                    layout: self.root.clone(),
                }
            } else {
                LayoutError::Io {
                    context: "cannot open",
                    path,
                    source,
                }
            }
        })
    }

    /// Reads a small blob whole, checking its digest. Refuses blobs over `limit`
    /// before reading them.
    pub fn read_blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, LayoutError> {
        let file = self.open_blob(digest)?;
        let path = self.blob_path(digest);
        let size = file
            .metadata()
            .map_err(io_error("cannot read", &path))?
            .len();
        if size > limit {
            return Err(LayoutError::TooLarge {
                digest: digest.clone(),
                layout: self.root.clone(),
                actual: size,
                limit,
            });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(io_error("cannot read", &path))?;
        let actual = Digest::of(&bytes);
        if &actual != digest {
            return Err(LayoutError::DigestMismatch {
                expected: digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Copies the blob `digest` from `other`, hashing it on the way: true when it is
    /// now here, checked. False, writing nothing, when `other` lacks it or its copy
    /// does not hash to `digest` (changed or cut short since it was stored).
    pub fn copy_blob_from(
        &self,
        other: &ImageLayout,
        digest: &Digest,
    ) -> Result<bool, LayoutError> {
        let mut source = match other.open_blob(digest) {
            Ok(file) => file,
            Err(LayoutError::MissingBlob { .. }) => return Ok(false),
            Err(error) => return Err(error),
        };
        let mut writer = self.blob_writer()?;
        io::copy(&mut source, &mut writer).map_err(io_error(
            "cannot copy a blob from",
            &other.blob_path(digest),
        ))?;
        match writer.commit_expecting(digest) {
            Ok(_) => Ok(true),
            Err(LayoutError::DigestMismatch { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Writes a blob from memory; returns its descriptor-ready digest and size.
    pub fn write_blob(&self, bytes: &[u8]) -> Result<(Digest, u64), LayoutError> {
        let mut writer = self.blob_writer()?;
        writer
            .write_all(bytes)
            .map_err(io_error("cannot write blob in", &self.root))?;
        writer.commit()
    }

    /// A streaming blob writer: hashes as it writes to a temporary file, then renames
    /// into place on [`BlobWriter::commit`]. Dropped without commit, it leaves nothing.
    pub fn blob_writer(&self) -> Result<BlobWriter, LayoutError> {
        let dir = self.root.join("blobs").join("sha256");
        fs::create_dir_all(&dir).map_err(io_error("cannot create", &dir))?;
        let file = tempfile::Builder::new()
            .prefix(".partial-")
            .tempfile_in(&dir)
            .map_err(io_error("cannot create a blob in", &dir))?;
        Ok(BlobWriter {
            layout: self.clone(),
            file: io::BufWriter::with_capacity(256 * 1024, file),
            hasher: Sha256Hasher::new(),
        })
    }

    /// Reads `index.json`.
    pub fn index(&self) -> Result<ImageIndex, LayoutError> {
        let path = self.root.join("index.json");
        let bytes = fs::read(&path).map_err(io_error("cannot read", &path))?;
        serde_json::from_slice(&bytes).map_err(|e| LayoutError::Malformed {
            path,
            message: format!("not an OCI image index: {e}"),
        })
    }

    /// Changes `index.json` under an exclusive lock, writing it atomically, so that
    /// concurrent writers never lose each other's entries.
    pub fn update_index(&self, change: impl FnOnce(&mut ImageIndex)) -> Result<(), LayoutError> {
        use fs2::FileExt;
        let lock_path = self.root.join(".stackpack.lock");
        let lock = File::create(&lock_path).map_err(io_error("cannot create", &lock_path))?;
        lock.lock_exclusive()
            .map_err(io_error("cannot lock", &lock_path))?;
        let mut index = self.index()?;
        change(&mut index);
        let result = write_atomically(&self.root.join("index.json"), &index.to_bytes());
        let _ = fs2::FileExt::unlock(&lock);
        result
    }

    /// Adds (or replaces, by `ref.name` or digest) a manifest entry.
    pub fn add_entry(&self, descriptor: Descriptor) -> Result<(), LayoutError> {
        let ref_name = descriptor
            .annotation(annotation::REF_NAME)
            .map(str::to_string);
        self.update_index(|index| {
            index.manifests.retain(|existing| {
                let same_name = ref_name.is_some()
                    && existing.annotation(annotation::REF_NAME) == ref_name.as_deref();
                !same_name && existing.digest != descriptor.digest
            });
            index.manifests.push(descriptor);
            index.manifests.sort_by(|a, b| {
                let key = |d: &Descriptor| {
                    (
                        d.annotation(annotation::REF_NAME).unwrap_or("").to_string(),
                        d.digest.clone(),
                    )
                };
                key(a).cmp(&key(b))
            });
        })
    }

    /// Every entry with what it is.
    pub fn entries(&self) -> Result<Vec<(EntryKind, Descriptor)>, LayoutError> {
        Ok(self
            .index()?
            .manifests
            .into_iter()
            .map(|descriptor| (entry_kind(&descriptor), descriptor))
            .collect())
    }

    /// The manifest descriptor of `stack@version`, if present.
    pub fn find_bundle(
        &self,
        stack: &str,
        version: &Version,
    ) -> Result<Option<Descriptor>, LayoutError> {
        Ok(self
            .entries()?
            .into_iter()
            .find_map(|(kind, descriptor)| match kind {
                EntryKind::Bundle {
                    stack: s,
                    version: v,
                } if s == stack && &v == version => Some(descriptor),
                _ => None,
            }))
    }

    /// Versions of `stack` held here.
    pub fn versions(&self, stack: &str) -> Result<Vec<Version>, LayoutError> {
        Ok(self
            .entries()?
            .into_iter()
            .filter_map(|(kind, _)| match kind {
                EntryKind::Bundle { stack: s, version } if s == stack => Some(version),
                _ => None,
            })
            .collect())
    }

    /// Attestation manifests (Sigstore bundles, SBOMs) whose index entry says they
    /// are about `subject`.
    pub fn attestations_for(&self, subject: &Digest) -> Result<Vec<Descriptor>, LayoutError> {
        Ok(self
            .entries()?
            .into_iter()
            .filter_map(|(kind, descriptor)| match kind {
                EntryKind::Attestation { subject: s } if &s == subject => Some(descriptor),
                _ => None,
            })
            .collect())
    }

    /// Every referrer of `subject` here: its signatures, then its attestations. What
    /// travels with it (push, pull, export, kits, the runner's store).
    pub fn referrers_for(&self, subject: &Digest) -> Result<Vec<Descriptor>, LayoutError> {
        let mut all = self.signatures_for(subject)?;
        all.extend(self.attestations_for(subject)?);
        Ok(all)
    }

    /// Signature manifests whose index entry says they sign `subject`.
    pub fn signatures_for(&self, subject: &Digest) -> Result<Vec<Descriptor>, LayoutError> {
        Ok(self
            .entries()?
            .into_iter()
            .filter_map(|(kind, descriptor)| match kind {
                EntryKind::Signature { subject: s } if &s == subject => Some(descriptor),
                _ => None,
            })
            .collect())
    }
}

/// The index-entry annotations of a bundle manifest.
pub fn bundle_entry_annotations(stack: &str, version: &Version) -> Annotations {
    let mut annotations = Annotations::new();
    annotations.insert(
        annotation::REF_NAME.into(),
        format!("stacks/{stack}:{version}"),
    );
    annotations.insert(annotation::KIND.into(), "bundle".into());
    annotations.insert(annotation::STACK.into(), stack.into());
    annotations.insert(annotation::VERSION.into(), version.to_string());
    annotations
}

/// The index-entry annotations of an attestation manifest.
pub fn attestation_entry_annotations(subject: &Digest) -> Annotations {
    let mut annotations = Annotations::new();
    annotations.insert(annotation::KIND.into(), "attestation".into());
    annotations.insert(SUBJECT_ANNOTATION.into(), subject.to_string());
    annotations
}

/// The index-entry annotations of a referrer manifest of `artifact_type`: an
/// attestation's, or else a signature's.
pub fn referrer_entry_annotations(artifact_type: Option<&str>, subject: &Digest) -> Annotations {
    match artifact_type {
        Some(t) if media_type::ATTESTATION_ARTIFACTS.contains(&t) => {
            attestation_entry_annotations(subject)
        }
        _ => signature_entry_annotations(subject),
    }
}

/// The index-entry annotations of a signature manifest.
pub fn signature_entry_annotations(subject: &Digest) -> Annotations {
    let mut annotations = Annotations::new();
    annotations.insert(annotation::KIND.into(), "signature".into());
    annotations.insert(SUBJECT_ANNOTATION.into(), subject.to_string());
    annotations
}

/// What an index entry is, by its annotations.
pub fn entry_kind(descriptor: &Descriptor) -> EntryKind {
    let version = || {
        descriptor
            .annotation(annotation::VERSION)
            .and_then(|v| Version::parse(v).ok())
    };
    match descriptor.annotation(annotation::KIND) {
        Some("bundle") => match (descriptor.annotation(annotation::STACK), version()) {
            (Some(stack), Some(version)) => EntryKind::Bundle {
                stack: stack.to_string(),
                version,
            },
            _ => EntryKind::Other,
        },
        Some("module") => match (descriptor.annotation(annotation::STACK), version()) {
            (Some(module), Some(version)) => EntryKind::Module {
                module: module.to_string(),
                version,
            },
            _ => EntryKind::Other,
        },
        Some("signature") => match descriptor
            .annotation(SUBJECT_ANNOTATION)
            .and_then(|s| s.parse().ok())
        {
            Some(subject) => EntryKind::Signature { subject },
            None => EntryKind::Other,
        },
        Some("attestation") => match descriptor
            .annotation(SUBJECT_ANNOTATION)
            .and_then(|s| s.parse().ok())
        {
            Some(subject) => EntryKind::Attestation { subject },
            None => EntryKind::Other,
        },
        _ if descriptor.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT) => {
            EntryKind::Other
        }
        _ => EntryKind::Other,
    }
}

/// Streams a blob into a layout. See [`ImageLayout::blob_writer`].
pub struct BlobWriter {
    layout: ImageLayout,
    file: io::BufWriter<tempfile::NamedTempFile>,
    hasher: Sha256Hasher,
}

impl BlobWriter {
    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.hasher.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hasher.is_empty()
    }

    /// Flushes, syncs and renames the blob into place under its digest (keeping a
    /// blob already there).
    pub fn commit(self) -> Result<(Digest, u64), LayoutError> {
        self.persist(false)
    }

    /// Like [`BlobWriter::commit_expecting`], but takes the place of a blob already
    /// stored under `expected` (one found not intact), atomically.
    pub fn replace_expecting(self, expected: &Digest) -> Result<u64, LayoutError> {
        self.check(expected)?;
        self.persist(true).map(|(_, size)| size)
    }

    fn check(&self, expected: &Digest) -> Result<(), LayoutError> {
        let actual = self.hasher.clone().finish();
        if &actual != expected {
            return Err(LayoutError::DigestMismatch {
                expected: expected.clone(),
                actual,
            });
        }
        Ok(())
    }

    fn persist(self, replace: bool) -> Result<(Digest, u64), LayoutError> {
        let size = self.hasher.len();
        let digest = self.hasher.finish();
        let root = self.layout.root.clone();
        let file = self.file.into_inner().map_err(|e| LayoutError::Io {
            context: "cannot write blob in",
            path: root.clone(),
            source: e.into_error(),
        })?;
        file.as_file()
            .sync_all()
            .map_err(io_error("cannot sync blob in", &root))?;
        let target = self.layout.blob_path(&digest);
        if replace || !target.exists() {
            file.persist(&target).map_err(|e| LayoutError::Io {
                context: "cannot store blob",
                path: target.clone(),
                source: e.error,
            })?;
        }
        Ok((digest, size))
    }

    /// Like [`BlobWriter::commit`], but refuses (and discards) content whose digest
    /// is not `expected`.
    pub fn commit_expecting(self, expected: &Digest) -> Result<u64, LayoutError> {
        self.check(expected)?;
        self.commit().map(|(_, size)| size)
    }
}

impl Write for BlobWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.file.write(buf)?;
        self.hasher.update(&buf[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Writes a small file by temporary name and rename, so readers see old or new,
/// never half.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), LayoutError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .map_err(io_error("cannot write in", dir))?;
    file.write_all(bytes)
        .and_then(|_| file.as_file().sync_all())
        .map_err(io_error("cannot write", path))?;
    file.persist(path).map_err(|e| LayoutError::Io {
        context: "cannot write",
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_blob_writer_leaves_no_blob_behind() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path()).unwrap();
        let mut writer = layout.blob_writer().unwrap();
        writer.write_all(b"half a blob").unwrap();
        drop(writer);
        let names: Vec<_> = fs::read_dir(dir.path().join("blobs/sha256"))
            .unwrap()
            .collect();
        assert!(names.is_empty(), "{names:?}");
        assert!(!layout.has_blob(&Digest::of(b"half a blob")));
    }

    #[test]
    fn commit_expecting_refuses_content_with_another_digest() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path()).unwrap();
        let mut writer = layout.blob_writer().unwrap();
        writer.write_all(b"actual").unwrap();
        let err = writer
            .commit_expecting(&Digest::of(b"expected"))
            .unwrap_err();
        assert!(matches!(err, LayoutError::DigestMismatch { .. }));
        assert!(!layout.has_blob(&Digest::of(b"actual")));
    }

    #[test]
    fn read_blob_notices_a_changed_byte() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path()).unwrap();
        let (digest, _) = layout.write_blob(b"{\"a\":1}").unwrap();
        fs::write(layout.blob_path(&digest), b"{\"a\":2}").unwrap();
        assert!(matches!(
            layout.read_blob(&digest, 1024),
            Err(LayoutError::DigestMismatch { .. })
        ));
    }

    #[test]
    fn a_blob_that_is_not_intact_is_found_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path()).unwrap();
        let (digest, _) = layout.write_blob(b"layer bytes").unwrap();
        assert!(layout.blob_is_intact(&digest).unwrap());
        fs::write(layout.blob_path(&digest), b"layer bytez").unwrap();
        assert!(!layout.blob_is_intact(&digest).unwrap());
        let mut writer = layout.blob_writer().unwrap();
        writer.write_all(b"layer bytes").unwrap();
        writer.replace_expecting(&digest).unwrap();
        assert!(layout.blob_is_intact(&digest).unwrap());
        assert!(!layout.blob_is_intact(&Digest::of(b"absent")).unwrap());
    }

    #[test]
    fn entries_replace_by_ref_name() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path()).unwrap();
        let version = Version::parse("1.0.0").unwrap();
        for content in [&b"one"[..], b"two"] {
            let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, Digest::of(content), 3);
            descriptor.annotations = Some(bundle_entry_annotations("net", &version));
            layout.add_entry(descriptor).unwrap();
        }
        let entries = layout.entries().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].1.digest, Digest::of(b"two"));
        assert_eq!(layout.versions("net").unwrap(), vec![version]);
    }
}
