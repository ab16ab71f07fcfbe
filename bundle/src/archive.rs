//! Reading and unpacking stack layers (`tar+gzip`) safely.
//!
//! A bundle's archive is untrusted input until its signature and digests are checked,
//! and even a validly signed bundle may have been built from a hostile repository, so
//! every entry is checked before a byte is written:
//!
//! - only regular files and folders; symbolic links, hard links, devices and FIFOs are
//!   refused (the packager resolves in-repository links into plain files);
//! - paths are relative, made only of plain components (no `/` prefix, no `..`,
//!   no `.`), valid UTF-8, of bounded length and depth, and never repeated;
//! - entry count, each file's size, and the total size are capped, and the unpacked
//!   size may not exceed [`Limits::max_ratio`] times the compressed size, checked on
//!   the sizes the headers declare, before the bytes are inflated.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use stackpack_schema::digest::{Digest, Sha256Hasher};

/// Bounds on what an archive may hold.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_entries: u64,
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
    pub max_path_bytes: usize,
    pub max_depth: usize,
    /// Unpacked bytes allowed per compressed byte, once past [`Limits::ratio_grace_bytes`].
    pub max_ratio: u64,
    pub ratio_grace_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 100_000,
            max_file_bytes: 4 << 30,
            max_total_bytes: 8 << 30,
            max_path_bytes: 1024,
            max_depth: 64,
            max_ratio: 200,
            ratio_grace_bytes: 64 << 20,
        }
    }
}

/// One file found in an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveFile {
    pub path: String,
    pub size: u64,
    pub digest: Digest,
    pub executable: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("archive entry `{path}` is refused: {reason}")]
    UnsafePath { path: String, reason: &'static str },
    #[error("archive entry `{path}` is a {kind}; bundles hold only regular files and folders")]
    NotAFile { path: String, kind: &'static str },
    #[error("archive entry `{path}` appears twice")]
    Duplicate { path: String },
    #[error("the archive has more than {limit} entries")]
    TooManyEntries { limit: u64 },
    #[error(
        "archive entry `{path}` is {size} bytes, over the limit of {limit} bytes for one file"
    )]
    FileTooLarge { path: String, size: u64, limit: u64 },
    #[error("the archive unpacks to more than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("the archive would unpack to {unpacked} bytes from {compressed} compressed bytes, a ratio over {ratio}: refused as a decompression bomb")]
    Bomb {
        unpacked: u64,
        compressed: u64,
        ratio: u64,
    },
    #[error("the archive is corrupt: {0}")]
    Corrupt(String),
    #[error("cannot write `{path}`: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Reads every entry, hashing each file, writing nothing.
pub fn scan<R: Read>(
    compressed: R,
    compressed_size: Option<u64>,
    limits: &Limits,
) -> Result<Vec<ArchiveFile>, ArchiveError> {
    walk(
        compressed,
        compressed_size,
        limits,
        Hash::Files,
        |_, content| {
            io::copy(content, &mut io::sink())?;
            Ok(())
        },
    )
}

/// One file an archive holds, as its header declares it (content not hashed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedFile {
    pub path: String,
    pub size: u64,
    pub executable: bool,
}

/// Reads every entry with the same checks as [`scan`], but without hashing file
/// contents: for callers that authenticate the whole archive by its own digest, so
/// each byte is hashed once. [`unpack`] still checks each file's digest.
pub fn list<R: Read>(
    compressed: R,
    compressed_size: Option<u64>,
    limits: &Limits,
) -> Result<Vec<ListedFile>, ArchiveError> {
    let files = walk(
        compressed,
        compressed_size,
        limits,
        Hash::No,
        |_, content| {
            io::copy(content, &mut io::sink())?;
            Ok(())
        },
    )?;
    Ok(files
        .into_iter()
        .map(|f| ListedFile {
            path: f.path,
            size: f.size,
            executable: f.executable,
        })
        .collect())
}

/// Whether [`walk`] hashes each file's content.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hash {
    Files,
    No,
}

/// Unpacks into `destination`, which must not exist yet (it is created). On any
/// error, the partly written `destination` is removed, so nothing half-unpacked stays.
pub fn unpack<R: Read>(
    compressed: R,
    compressed_size: Option<u64>,
    destination: &Path,
    limits: &Limits,
) -> Result<Vec<ArchiveFile>, ArchiveError> {
    fs::create_dir(destination).map_err(|source| ArchiveError::Write {
        path: destination.to_path_buf(),
        source,
    })?;
    let result = walk(
        compressed,
        compressed_size,
        limits,
        Hash::Files,
        |file, content| {
            let target = destination.join(&file.path);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent)?;
            }
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(if file.executable { 0o755 } else { 0o644 });
                // Never follow a link at the last component, even though none can exist.
                options.custom_flags(libc::O_NOFOLLOW);
            }
            let mut out = io::BufWriter::new(options.open(&target)?);
            io::copy(content, &mut out)?;
            out.flush()?;
            Ok(())
        },
    );
    if result.is_err() {
        let _ = fs::remove_dir_all(destination);
    }
    result
}

/// Writes one file that travels as a layer of its own into `destination` (a folder
/// [`unpack`] made), hashing it as it is copied: the digest returned is what was
/// written, for the caller to compare with the signed one. The path is checked as an
/// archive entry's would be; the file must not exist yet and links are never
/// followed, so it cannot overwrite a file of the stack layer or escape the folder.
/// On error the file is removed; removing `destination` is the caller's, as with
/// [`unpack`].
pub fn place_file<R: Read>(
    content: R,
    destination: &Path,
    path: &str,
    size: u64,
    executable: bool,
    limits: &Limits,
) -> Result<ArchiveFile, ArchiveError> {
    let path = check_path(path.as_bytes(), limits)?;
    if size > limits.max_file_bytes {
        return Err(ArchiveError::FileTooLarge {
            path,
            size,
            limit: limits.max_file_bytes,
        });
    }
    let target = destination.join(&path);
    let write_error = |source| ArchiveError::Write {
        path: PathBuf::from(&path),
        source,
    };
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(write_error)?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let out = options.open(&target).map_err(write_error)?;
    let mut hashing = HashingReader::new(content.take(size));
    let mut writer = io::BufWriter::with_capacity(1 << 20, out);
    let copied = io::copy(&mut hashing, &mut writer).and_then(|read| {
        writer.flush()?;
        Ok(read)
    });
    let result = match copied {
        Ok(read) if read == size => Ok(ArchiveFile {
            path: path.clone(),
            size,
            digest: hashing.hasher.finish(),
            executable,
        }),
        Ok(read) => Err(ArchiveError::Corrupt(format!(
            "file `{path}` ends early: {read} of {size} bytes"
        ))),
        Err(source) => Err(write_error(source)),
    };
    if result.is_err() {
        let _ = fs::remove_file(&target);
    }
    result
}

/// Counts an archive's entries and the sizes their headers declare against
/// [`Limits`], so that a file over a limit is refused before its bytes are inflated.
/// [`scan`] and [`unpack`] use it for layers; the runner uses it for the outer tar
/// of an imported layout.
#[derive(Clone, Debug)]
pub struct Budget {
    limits: Limits,
    compressed_size: Option<u64>,
    entries: u64,
    total: u64,
}

impl Budget {
    /// A budget for an archive of `compressed_size` bytes on disk (`None` when
    /// unknown: the ratio is then not checked).
    pub fn new(limits: &Limits, compressed_size: Option<u64>) -> Self {
        Budget {
            limits: limits.clone(),
            compressed_size,
            entries: 0,
            total: 0,
        }
    }

    /// Counts one more entry, of any kind.
    pub fn entry(&mut self) -> Result<(), ArchiveError> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(ArchiveError::TooManyEntries {
                limit: self.limits.max_entries,
            });
        }
        Ok(())
    }

    /// Counts a file of `size` bytes (as its header declares) at `path`.
    pub fn file(&mut self, path: &str, size: u64) -> Result<(), ArchiveError> {
        if size > self.limits.max_file_bytes {
            return Err(ArchiveError::FileTooLarge {
                path: path.to_string(),
                size,
                limit: self.limits.max_file_bytes,
            });
        }
        self.total = self.total.saturating_add(size);
        self.check(self.total, 0)
    }

    /// Refuses `unpacked` bytes when over the total or the ratio, by more than `slack`.
    fn check(&self, unpacked: u64, slack: u64) -> Result<(), ArchiveError> {
        if unpacked > self.limits.max_total_bytes.saturating_add(slack) {
            return Err(ArchiveError::TooLarge {
                limit: self.limits.max_total_bytes,
            });
        }
        if let Some(compressed) = self.compressed_size {
            let allowed = self
                .limits
                .ratio_grace_bytes
                .max(compressed.saturating_mul(self.limits.max_ratio));
            if unpacked > allowed.saturating_add(slack) {
                return Err(ArchiveError::Bomb {
                    unpacked,
                    compressed,
                    ratio: self.limits.max_ratio,
                });
            }
        }
        Ok(())
    }

    /// Wraps the inflated stream of the archive so that reading stops with an error
    /// once it passes what the limits allow, headers included: bytes the declared
    /// sizes never show (long names, extension headers, skipped entries) cannot
    /// inflate without bound either. See [`archive_error`].
    pub fn cap<R: Read>(&self, inflated: R) -> Capped<R> {
        // Each entry may add a header and padding (1 KiB) beyond its declared size.
        let slack = self.limits.max_entries.saturating_mul(1024) + (1 << 20);
        Capped {
            inner: inflated,
            budget: self.clone(),
            read: 0,
            slack,
        }
    }
}

/// An inflated stream with a ceiling. See [`Budget::cap`].
pub struct Capped<R> {
    inner: R,
    budget: Budget,
    read: u64,
    slack: u64,
}

/// Carried inside the `io::Error` a [`Capped`] reader returns.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct OverCap(ArchiveError);

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.read += read as u64;
        if let Err(e) = self.budget.check(self.read, self.slack) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, OverCap(e)));
        }
        Ok(read)
    }
}

/// The limit a [`Capped`] reader hit, if that is what `error` is; else the archive is
/// corrupt (or truncated).
pub fn archive_error(error: io::Error) -> ArchiveError {
    if error.get_ref().is_some_and(|e| e.is::<OverCap>()) {
        let inner = error.into_inner().expect("checked above");
        return inner.downcast::<OverCap>().expect("checked above").0;
    }
    ArchiveError::Corrupt(error.to_string())
}

/// The core of [`scan`], [`list`] and [`unpack`]: checks each entry, then hands its
/// content to `sink` (through a hashing reader unless `hash` is [`Hash::No`], when
/// digests are left as the empty file's).
fn walk<R: Read>(
    compressed: R,
    compressed_size: Option<u64>,
    limits: &Limits,
    hash: Hash,
    mut sink: impl FnMut(&ArchiveFile, &mut dyn Read) -> io::Result<()>,
) -> Result<Vec<ArchiveFile>, ArchiveError> {
    let mut budget = Budget::new(limits, compressed_size);
    let decoder = budget.cap(flate2::read::GzDecoder::new(compressed));
    let mut archive = tar::Archive::new(decoder);
    let mut files = Vec::new();
    let mut seen = HashSet::new();
    let entries = archive.entries().map_err(archive_error)?;
    for entry in entries {
        let mut entry = entry.map_err(archive_error)?;
        budget.entry()?;
        let raw_path = entry.path_bytes().into_owned();
        let path = check_path(&raw_path, limits)?;
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {}
            tar::EntryType::Directory => {
                if !seen.insert(path.clone()) {
                    return Err(ArchiveError::Duplicate { path });
                }
                continue;
            }
            tar::EntryType::XGlobalHeader => continue,
            other => return Err(not_a_file(path, other)),
        }
        if !seen.insert(path.clone()) {
            return Err(ArchiveError::Duplicate { path });
        }
        let size = entry
            .header()
            .size()
            .map_err(|e| ArchiveError::Corrupt(e.to_string()))?;
        budget.file(&path, size)?;
        let mode = entry.header().mode().unwrap_or(0o644);
        let mut file = ArchiveFile {
            path,
            size,
            digest: Digest::of(b""),
            executable: mode & 0o111 != 0,
        };
        let mut counting = Counting {
            inner: (&mut entry).take(size),
            hasher: (hash == Hash::Files).then(Sha256Hasher::new),
            read: 0,
        };
        sink(&file, &mut counting).map_err(|source| match source.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => archive_error(source),
            _ => ArchiveError::Write {
                path: PathBuf::from(&file.path),
                source,
            },
        })?;
        if counting.read != size {
            return Err(ArchiveError::Corrupt(format!(
                "entry `{}` ends early: {} of {size} bytes",
                file.path, counting.read
            )));
        }
        if let Some(hasher) = counting.hasher {
            file.digest = hasher.finish();
        }
        files.push(file);
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The refusal of an entry that is not a regular file or a folder.
pub fn not_a_file(path: String, kind: tar::EntryType) -> ArchiveError {
    let kind = match kind {
        tar::EntryType::Symlink => "symbolic link",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char | tar::EntryType::Block => "device file",
        tar::EntryType::Fifo => "FIFO",
        _ => "special entry",
    };
    ArchiveError::NotAFile { path, kind }
}

/// Checks a path an archive entry or a signed file list gives, as [`unpack`] does:
/// relative, plain components only, bounded. Returns it without a trailing `/`.
pub fn check_path(raw: &[u8], limits: &Limits) -> Result<String, ArchiveError> {
    let lossy = || String::from_utf8_lossy(raw).into_owned();
    let unsafe_path = |reason| ArchiveError::UnsafePath {
        path: lossy(),
        reason,
    };
    let text = std::str::from_utf8(raw).map_err(|_| unsafe_path("its name is not UTF-8"))?;
    if text.is_empty() {
        return Err(unsafe_path("its name is empty"));
    }
    if raw.len() > limits.max_path_bytes {
        return Err(unsafe_path("its name is too long"));
    }
    if text.starts_with('/') || text.starts_with('\\') {
        return Err(unsafe_path("it is an absolute path"));
    }
    let trimmed = text.strip_suffix('/').unwrap_or(text);
    let mut depth = 0;
    for component in Path::new(trimmed).components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::ParentDir => return Err(unsafe_path("it contains `..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(unsafe_path("it is an absolute path"))
            }
            Component::CurDir => return Err(unsafe_path("it contains `.`")),
        }
    }
    if trimmed
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(unsafe_path("it has an empty, `.` or `..` component"));
    }
    if depth > limits.max_depth {
        return Err(unsafe_path("it is nested too deeply"));
    }
    Ok(trimmed.to_string())
}

/// Counts, and maybe hashes, an entry's content as the sink reads it.
struct Counting<R> {
    inner: R,
    hasher: Option<Sha256Hasher>,
    read: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(&buf[..read]);
        }
        self.read += read as u64;
        Ok(read)
    }
}

/// A reader that hashes what passes through it.
pub struct HashingReader<R> {
    pub inner: R,
    pub hasher: Sha256Hasher,
}

impl<R: Read> HashingReader<R> {
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Sha256Hasher::new(),
        }
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.hasher.update(&buf[..read]);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a tar.gz by hand, with headers the `tar` crate's safe API would refuse.
    fn archive(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        for (path, kind, content, link) in entries {
            let mut header = tar::Header::new_gnu();
            // Write the name bytes directly so that `..` and `/` survive.
            let name = &mut header.as_gnu_mut().unwrap().name;
            name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_entry_type(*kind);
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            if let Some(link) = link {
                header.set_link_name(link).unwrap();
            }
            header.set_cksum();
            builder.append(&header, *content).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap()
    }

    fn regular(path: &str) -> (&str, tar::EntryType, &'static [u8], Option<&'static str>) {
        (path, tar::EntryType::Regular, b"x", None)
    }

    #[test]
    fn a_plain_archive_unpacks_with_digests() {
        let bytes = archive(&[regular("stacks/a/main.tf"), regular("modules/b/x.tf")]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let files = unpack(
            &bytes[..],
            Some(bytes.len() as u64),
            &out,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].path, "modules/b/x.tf");
        assert_eq!(files[0].digest, Digest::of(b"x"));
        assert_eq!(fs::read(out.join("stacks/a/main.tf")).unwrap(), b"x");
    }

    #[test]
    fn hostile_entries_are_refused_and_nothing_is_left_behind() {
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("parent", archive(&[regular("../evil")])),
            ("nested parent", archive(&[regular("a/../../evil")])),
            ("absolute", archive(&[regular("/tmp/evil")])),
            ("dot", archive(&[regular("./a")])),
            (
                "symlink",
                archive(&[("link", tar::EntryType::Symlink, b"", Some("/etc"))]),
            ),
            (
                "hardlink",
                archive(&[("link", tar::EntryType::Link, b"", Some("../../etc/passwd"))]),
            ),
            (
                "device",
                archive(&[("dev", tar::EntryType::Char, b"", None)]),
            ),
            (
                "fifo",
                archive(&[("fifo", tar::EntryType::Fifo, b"", None)]),
            ),
            ("duplicate", archive(&[regular("a"), regular("a")])),
        ];
        for (name, bytes) in cases {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out");
            let result = unpack(&bytes[..], None, &out, &Limits::default());
            assert!(result.is_err(), "{name} was accepted");
            assert!(!out.exists(), "{name} left files behind");
            assert!(!dir.path().join("evil").exists());
        }
    }

    #[test]
    fn a_decompression_bomb_is_refused_before_it_is_inflated() {
        // 64 MiB of zeros compresses to about 64 KiB.
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::best(),
        ));
        let mut header = tar::Header::new_gnu();
        header.set_size(64 << 20);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, "zeros", io::repeat(0).take(64 << 20))
            .unwrap();
        let bytes = builder.into_inner().unwrap().finish().unwrap();
        let limits = Limits {
            ratio_grace_bytes: 1 << 20,
            ..Limits::default()
        };
        let err = scan(&bytes[..], Some(bytes.len() as u64), &limits).unwrap_err();
        assert!(matches!(err, ArchiveError::Bomb { .. }), "{err}");
        let limits = Limits {
            max_total_bytes: 1 << 20,
            ..Limits::default()
        };
        assert!(matches!(
            scan(&bytes[..], None, &limits).unwrap_err(),
            ArchiveError::FileTooLarge { .. } | ArchiveError::TooLarge { .. }
        ));
    }

    #[test]
    fn bytes_no_header_declares_as_a_file_cannot_inflate_past_the_limits() {
        // A GNU long-name entry of 16 MiB: the tar reader holds it in memory, and no
        // file size ever shows it.
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::best(),
        ));
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::GNULongName);
        header.set_size(16 << 20);
        header.set_cksum();
        builder
            .append(&header, io::repeat(b'a').take(16 << 20))
            .unwrap();
        let bytes = builder.into_inner().unwrap().finish().unwrap();
        let limits = Limits {
            max_entries: 10,
            ratio_grace_bytes: 1 << 20,
            ..Limits::default()
        };
        let err = scan(&bytes[..], Some(bytes.len() as u64), &limits).unwrap_err();
        assert!(matches!(err, ArchiveError::Bomb { .. }), "{err}");
    }

    #[test]
    fn too_many_entries_are_refused() {
        let names: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
        let entries: Vec<_> = names.iter().map(|n| regular(n)).collect();
        let bytes = archive(&entries);
        let limits = Limits {
            max_entries: 10,
            ..Limits::default()
        };
        assert!(matches!(
            scan(&bytes[..], None, &limits).unwrap_err(),
            ArchiveError::TooManyEntries { limit: 10 }
        ));
    }

    #[test]
    fn garbage_is_reported_as_corrupt_not_a_panic() {
        for bytes in [&b""[..], b"not gzip at all", &[0x1f, 0x8b, 8, 0, 0, 0][..]] {
            assert!(scan(bytes, None, &Limits::default()).is_err());
        }
    }
}
