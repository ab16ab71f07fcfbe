//! Reading an OCI image layout from a tar file (plain or gzip), as `stackpack export`
//! writes it: streamed entry by entry into a staging layout on disk, never held
//! whole in memory, each blob checked against its name on the way. The runner's
//! `import` and the packager's `inspect` read a tar the same way.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path};

use stackpack_schema::digest::Digest;

use crate::archive::{archive_error, ArchiveError, Budget, Limits};
use crate::error::{io, Error, Result};
use crate::layout::{self, ImageLayout, LayoutError};

/// Largest `index.json` or `oci-layout` read from a layout tar.
const MAX_SMALL_FILE: u64 = 4 * 1024 * 1024;

/// Limits on the outer tar of an imported layout. Its blobs are compressed layers
/// and small JSON documents, so past the first 16 MiB it unpacks to little more than
/// its own size: more than 20 times is refused as a decompression bomb.
pub fn layout_tar_limits() -> Limits {
    Limits {
        max_entries: 100_000,
        max_file_bytes: 4 << 30,
        max_total_bytes: 64 << 30,
        max_ratio: 20,
        ratio_grace_bytes: 16 << 20,
        ..Limits::default()
    }
}

const TRANSFER_HINT: &str = "the file was damaged or cut short on its way here: copy it again and compare its size and `sha256sum` with your vendor's, or ask your vendor for it again";

/// An imported tar refused because of what it is (not a layout), with the file named.
fn not_a_layout(file: &Path, message: impl std::fmt::Display) -> Error {
    Error::refused(format!(
        "`{}` is not an image layout tar: {message}",
        file.display()
    ))
    .hint("a layout tar holds what `stackpack build --out DIR` or `stackpack export` wrote: `tar -cf FILE.tar -C DIR .`")
}

/// An imported tar refused while reading it: cut short, over a limit, or unsafe.
fn tar_error(file: &Path, error: ArchiveError) -> Error {
    match error {
        ArchiveError::Corrupt(reason) => Error::refused(format!(
            "`{}` is truncated or corrupt: {reason}",
            file.display()
        ))
        .hint(TRANSFER_HINT),
        limit @ (ArchiveError::TooManyEntries { .. }
        | ArchiveError::FileTooLarge { .. }
        | ArchiveError::TooLarge { .. }
        | ArchiveError::Bomb { .. }) => Error::refused(format!(
            "`{}` is refused before unpacking it: {limit}",
            file.display()
        ))
        .hint("this is not a layout your vendor exported: ask them for the file again"),
        other => not_a_layout(file, other),
    }
}

/// Unpacks a tar (plain or gzip) holding an image layout into `staging`, accepting
/// only `oci-layout`, `index.json` and `blobs/sha256/<hex>` (each blob checked
/// against its name), skipping other plain files, and refusing links, devices and
/// paths that are absolute or hold `..`. Entry count, sizes and the ratio to the
/// file's size are limited by [`layout_tar_limits`], checked on each header before
/// its bytes are inflated, and on the inflated stream as a whole.
pub fn unpack_layout_tar(file: &Path, staging: &Path) -> Result<ImageLayout> {
    let mut opened = File::open(file)
        .map_err(|e| Error::usage(format!("cannot read `{}`: {e}", file.display())))?;
    let size = opened.metadata().map_err(|e| io("read", file, e))?.len();
    let mut magic = [0u8; 2];
    let gzip = opened
        .read(&mut magic)
        .map(|n| n == 2 && magic == [0x1f, 0x8b])
        .unwrap_or(false);
    let opened = File::open(file).map_err(|e| io("read", file, e))?;
    let reader: Box<dyn Read> = if gzip {
        Box::new(flate2::read::GzDecoder::new(io::BufReader::new(opened)))
    } else {
        Box::new(io::BufReader::new(opened))
    };
    let mut budget = TarBudget {
        budget: Budget::new(&layout_tar_limits(), Some(size)),
        plain_size: (!gzip).then_some(size),
        declared: 0,
    };
    let staged = ImageLayout::create(staging)?;
    let mut archive = tar::Archive::new(budget.budget.cap(reader));
    let mut saw = (false, false);
    let entries = archive
        .entries()
        .map_err(|e| tar_error(file, archive_error(e)))?;
    for entry in entries {
        let entry = entry.map_err(|e| tar_error(file, archive_error(e)))?;
        budget.budget.entry().map_err(|e| tar_error(file, e))?;
        match unpack_layout_entry(file, &staged, entry, &mut budget)? {
            Some("oci-layout") => saw.0 = true,
            Some("index.json") => saw.1 = true,
            _ => {}
        }
    }
    match saw {
        (false, _) => Err(not_a_layout(file, "it has no `oci-layout` file")),
        (_, false) => Err(not_a_layout(file, "it has no `index.json` file")
            .hint(format!("if it came whole from your vendor, ask them to export it again; else {TRANSFER_HINT}"))),
        _ => Ok(staged),
    }
}

/// The limits of an imported tar. A plain tar holds every byte its headers declare,
/// so one that declares more than its own size was cut short: that is reported as
/// truncated, not as a bomb.
struct TarBudget {
    budget: Budget,
    /// The file's size, when it is a plain tar.
    plain_size: Option<u64>,
    declared: u64,
}

impl TarBudget {
    fn file(&mut self, file: &Path, name: &str, size: u64) -> Result<()> {
        self.declared = self.declared.saturating_add(size);
        if let Some(holds) = self.plain_size.filter(|holds| self.declared > *holds) {
            return Err(tar_error(
                file,
                ArchiveError::Corrupt(format!(
                    "entry `{name}` ends past the end of the file: its headers declare {} bytes, the file holds {holds}",
                    self.declared
                )),
            ));
        }
        self.budget.file(name, size).map_err(|e| tar_error(file, e))
    }
}

/// One entry of an imported tar: written when it is the marker, the index or a
/// blob; returns which of the first two it was.
fn unpack_layout_entry<R: Read>(
    file: &Path,
    staged: &ImageLayout,
    mut entry: tar::Entry<R>,
    budget: &mut TarBudget,
) -> Result<Option<&'static str>> {
    let raw = entry.path_bytes().into_owned();
    let name =
        String::from_utf8(raw).map_err(|_| not_a_layout(file, "an entry's name is not UTF-8"))?;
    let trimmed = name
        .trim_start_matches("./")
        .trim_end_matches('/')
        .to_string();
    if Path::new(&trimmed)
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(not_a_layout(
            file,
            format!("entry `{name}` is not a plain relative path"),
        ));
    }
    let kind = entry.header().entry_type();
    if kind.is_dir() || kind == tar::EntryType::XGlobalHeader || kind == tar::EntryType::XHeader {
        // Folders are made as needed; nothing but blobs is ever written.
        return Ok(None);
    }
    if !matches!(kind, tar::EntryType::Regular | tar::EntryType::Continuous) {
        return Err(tar_error(file, crate::archive::not_a_file(name, kind)));
    }
    let size = entry
        .header()
        .size()
        .map_err(|e| tar_error(file, ArchiveError::Corrupt(e.to_string())))?;
    budget.file(file, &name, size)?;
    match trimmed.as_str() {
        "oci-layout" | "index.json" => {
            let bytes = read_small(file, &name, &mut entry, size)?;
            if trimmed == "index.json" {
                serde_json::from_slice::<stackpack_schema::oci::ImageIndex>(&bytes).map_err(
                    |e| not_a_layout(file, format!("`index.json` is not an image index: {e}")),
                )?;
                layout::write_atomically(&staged.root().join("index.json"), &bytes)?;
                return Ok(Some("index.json"));
            }
            layout::write_atomically(&staged.root().join("oci-layout"), &bytes)?;
            Ok(Some("oci-layout"))
        }
        other => {
            // Anything else a layout may carry (lock files, other tools' notes) is
            // skipped, never written.
            let Some(hex) = other.strip_prefix("blobs/sha256/") else {
                return Ok(None);
            };
            let digest = format!("sha256:{hex}").parse::<Digest>().map_err(|_| {
                not_a_layout(file, format!("`{name}` is not named by a sha256 digest"))
            })?;
            unpack_blob(file, staged, &name, &mut entry, size, &digest)?;
            Ok(None)
        }
    }
}

/// Reads `oci-layout` or `index.json` whole, at most [`MAX_SMALL_FILE`] bytes.
fn read_small(file: &Path, name: &str, entry: &mut impl Read, size: u64) -> Result<Vec<u8>> {
    if size > MAX_SMALL_FILE {
        return Err(not_a_layout(file, format!("`{name}` is too large")));
    }
    let mut bytes = Vec::new();
    entry
        .take(size)
        .read_to_end(&mut bytes)
        .map_err(|e| tar_error(file, archive_error(e)))?;
    ends_early(file, name, bytes.len() as u64, size)?;
    Ok(bytes)
}

/// Streams one blob into the staging layout, checking it against its name.
fn unpack_blob(
    file: &Path,
    staged: &ImageLayout,
    name: &str,
    entry: &mut impl Read,
    size: u64,
    digest: &Digest,
) -> Result<()> {
    let mut writer = staged.blob_writer()?;
    let copied = io::copy(&mut entry.take(size), &mut writer).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => {
            tar_error(file, archive_error(e))
        }
        _ => io("write a blob in", staged.root(), e),
    })?;
    ends_early(file, name, copied, size)?;
    writer.commit_expecting(digest).map_err(|e| match e {
        // A bit flipped on a disk or a USB stick, or an edit: either way not the
        // file the vendor wrote.
        LayoutError::DigestMismatch { .. } => Error::refused(format!(
            "`{}` was altered or corrupted: blob `{name}` does not match its digest",
            file.display()
        ))
        .hint("get a fresh copy from the vendor, and compare its `sha256sum` with theirs"),
        other => other.into(),
    })?;
    Ok(())
}

fn ends_early(file: &Path, name: &str, read: u64, size: u64) -> Result<()> {
    if read < size {
        return Err(tar_error(
            file,
            ArchiveError::Corrupt(format!("entry `{name}` ends early: {read} of {size} bytes")),
        ));
    }
    Ok(())
}
