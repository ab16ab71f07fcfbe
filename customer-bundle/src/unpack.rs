//! A verified bundle out of the store into a work folder, checked again on the way:
//! the store's blobs are read a second time here, and a blob changed between
//! verification and unpacking must not reach the engine.

use std::collections::BTreeMap;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use stackpack_bundle::archive::{self, ArchiveError, ArchiveFile, HashingReader, Limits};
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_schema::bundle::FileEntry;

use super::error::{Error, Result};
use super::home::Home;

/// Where [`unpack_verified`] puts the bundle's files in a work folder.
pub fn bundle_root(work: &Path) -> PathBuf {
    work.join("bundle")
}

/// Unpacks the verified stack layer into `work/bundle`, hashing the compressed bytes
/// on the way and checking every file against the signed list again, then copies the
/// files that travel as layers of their own beside them, hashing each as it is
/// copied, so that a blob changed between verification and unpacking is caught.
/// Nothing half-unpacked stays on refusal. Returns the entrypoint.
pub fn unpack_verified(home: &Home, bundle: &VerifiedBundle, work: &Path) -> Result<PathBuf> {
    let store = home.store()?;
    let destination = bundle_root(work);
    let mut files = unpack_stack_layer(&store, bundle, &destination)?;
    // Files that travel as layers of their own are copied into place and hashed as
    // they are copied: their layer digest, verified before, is their file digest, and
    // this catches a blob changed since.
    for entry in bundle.config.file_layers() {
        files.push(place_file_layer(&store, entry, &destination)?);
    }
    let signed: BTreeMap<&str, _> = bundle
        .config
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    if files.len() != signed.len()
        || files.iter().any(|f| {
            signed
                .get(f.path.as_str())
                .is_none_or(|s| s.digest != f.digest || s.size != f.size)
        })
    {
        return Err(changed(
            &destination,
            "the unpacked files do not match the signed file list".into(),
        ));
    }
    // A `VerifiedBundle`'s entrypoint is a plain relative path: verification
    // refuses any other (`stackpack_bundle::verify`).
    let entrypoint = &bundle.config.entrypoint;
    let dir = destination.join(entrypoint);
    if !dir.is_dir() {
        return Err(changed(
            &destination,
            format!("the bundle's entrypoint `{entrypoint}` is not a folder in it"),
        ));
    }
    Ok(dir)
}

/// Unpacks the stack layer into `destination`, hashing its compressed bytes as they
/// are read: the files it held, or a refusal when the layer is not the one verified.
fn unpack_stack_layer(
    store: &ImageLayout,
    bundle: &VerifiedBundle,
    destination: &Path,
) -> Result<Vec<ArchiveFile>> {
    let layer = &bundle.stack_layer;
    let file = store.open_blob(&layer.digest)?;
    let mut hashing = HashingReader::new(BufReader::with_capacity(1 << 20, file));
    let unpacked = archive::unpack(
        &mut hashing,
        Some(layer.size),
        destination,
        &Limits::default(),
    );
    // The rest of the layer is read too: its digest covers every byte.
    let _ = io::copy(&mut hashing, &mut io::sink());
    let size = hashing.hasher.len();
    let digest = hashing.hasher.finish();
    if digest != layer.digest || size != layer.size {
        return Err(changed(
            destination,
            format!("the stack layer changed after it was verified: it now hashes to `{digest}`"),
        ));
    }
    unpacked.map_err(|e| {
        refused(destination, e, |other| {
            format!("the bundle's archive is refused: {other}")
        })
    })
}

/// Copies one file that travels as a layer of its own into `destination`, hashing
/// it as it is copied.
fn place_file_layer(
    store: &ImageLayout,
    entry: &FileEntry,
    destination: &Path,
) -> Result<ArchiveFile> {
    let blob = match store.open_blob(&entry.digest) {
        Ok(blob) => blob,
        Err(e) => {
            let _ = std::fs::remove_dir_all(destination);
            return Err(e.into());
        }
    };
    let placed = archive::place_file(
        BufReader::with_capacity(1 << 20, blob),
        destination,
        &entry.path,
        entry.size,
        entry.executable,
        &Limits::default(),
    )
    .map_err(|e| {
        refused(destination, e, |other| {
            format!("the bundle's file `{}` is refused: {other}", entry.path)
        })
    })?;
    if placed.digest != entry.digest {
        return Err(changed(
            destination,
            format!(
                "the layer of `{}` changed after it was verified: it now hashes to `{}`",
                entry.path, placed.digest
            ),
        ));
    }
    Ok(placed)
}

/// The store changed after verification: what was unpacked is removed, and the
/// error says so.
fn changed(destination: &Path, message: String) -> Error {
    let _ = std::fs::remove_dir_all(destination);
    Error::refused(message)
        .hint("the store was changed after verification; import the bundle again")
}

/// An archive error while unpacking into `destination`: the work folder could not
/// take the files (a full disk), or the archive itself is refused, as `refusal`
/// words it. Either way what was unpacked is removed.
fn refused(
    destination: &Path,
    error: ArchiveError,
    refusal: impl FnOnce(ArchiveError) -> String,
) -> Error {
    match error {
        ArchiveError::Write { path, source } => {
            let _ = std::fs::remove_dir_all(destination);
            Error::refused(format!(
                "cannot unpack the bundle into the work folder: `{}`: {source}",
                path.display()
            ))
            .hint(
                "free space in the work folder, or set `work` in `runner.toml` to a roomier place",
            )
        }
        other => changed(destination, refusal(other)),
    }
}
