//! A verified bundle out of the store into a work folder, checked again on the way:
//! the store's blobs are read a second time here, and a blob changed between
//! verification and unpacking must not reach the engine.

use std::collections::BTreeMap;
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};

use stackpack_bundle::archive::{self, HashingReader, Limits};
use stackpack_bundle::verify::VerifiedBundle;

use super::error::{Error, Result};
use super::home::Home;

/// Unpacks the verified stack layer into `work/bundle`, hashing the compressed bytes
/// on the way and checking every file against the signed list again, then copies the
/// files that travel as layers of their own beside them, hashing each as it is
/// copied, so that a blob changed between verification and unpacking is caught.
/// Nothing half-unpacked stays on refusal. Returns the entrypoint.
pub fn unpack_verified(home: &Home, bundle: &VerifiedBundle, work: &Path) -> Result<PathBuf> {
    let store = home.store()?;
    let layer = &bundle.stack_layer;
    let destination = work.join("bundle");
    let file = store.open_blob(&layer.digest)?;
    let mut hashing = HashingReader::new(BufReader::with_capacity(1 << 20, file));
    let unpacked = archive::unpack(
        &mut hashing,
        Some(layer.size),
        &destination,
        &Limits::default(),
    );
    let _ = io::copy(&mut hashing, &mut io::sink());
    let size = hashing.hasher.len();
    let digest = hashing.hasher.finish();
    let refuse = |message: String| {
        let _ = std::fs::remove_dir_all(&destination);
        Error::refused(message)
            .hint("the store was changed after verification; import the bundle again")
    };
    if digest != layer.digest || size != layer.size {
        return Err(refuse(format!(
            "the stack layer changed after it was verified: it now hashes to `{digest}`"
        )));
    }
    let files = unpacked.map_err(|e| match e {
        archive::ArchiveError::Write { path, source } => {
            let _ = std::fs::remove_dir_all(&destination);
            Error::refused(format!(
                "cannot unpack the bundle into the work folder: `{}`: {source}",
                path.display()
            ))
            .hint(
                "free space in the work folder, or set `work` in `runner.toml` to a roomier place",
            )
        }
        other => refuse(format!("the bundle's archive is refused: {other}")),
    })?;
    // Files that travel as layers of their own are copied into place and hashed as
    // they are copied: their layer digest, verified before, is their file digest, and
    // this catches a blob changed since.
    let mut files = files;
    for entry in bundle.config.file_layers() {
        let blob = match store.open_blob(&entry.digest) {
            Ok(blob) => blob,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&destination);
                return Err(e.into());
            }
        };
        let placed = archive::place_file(
            BufReader::with_capacity(1 << 20, blob),
            &destination,
            &entry.path,
            entry.size,
            entry.executable,
            &Limits::default(),
        )
        .map_err(|e| match e {
            archive::ArchiveError::Write { path, source } => {
                let _ = std::fs::remove_dir_all(&destination);
                Error::refused(format!(
                    "cannot unpack the bundle into the work folder: `{}`: {source}",
                    path.display()
                ))
                .hint("free space in the work folder, or set `work` in `runner.toml` to a roomier place")
            }
            other => refuse(format!("the bundle's file `{}` is refused: {other}", entry.path)),
        })?;
        if placed.digest != entry.digest {
            return Err(refuse(format!(
                "the layer of `{}` changed after it was verified: it now hashes to `{}`",
                entry.path, placed.digest
            )));
        }
        files.push(placed);
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
        return Err(refuse(
            "the unpacked files do not match the signed file list".into(),
        ));
    }
    // A `VerifiedBundle`'s entrypoint is a plain relative path: verification
    // refuses any other (`stackpack_bundle::verify`).
    let entrypoint = &bundle.config.entrypoint;
    let dir = destination.join(entrypoint);
    if !dir.is_dir() {
        return Err(refuse(format!(
            "the bundle's entrypoint `{entrypoint}` is not a folder in it"
        )));
    }
    Ok(dir)
}
