//! The stack layer: a deterministic `tar+gzip` of a stack and its vendored modules.
//!
//! Entries are sorted by path; every entry is a regular file with owner 0:0, empty
//! owner names, modification time 0, and mode 0644 (0755 when git records the file
//! as executable); folders are implied. The gzip stream is made of independent
//! fixed-size blocks compressed in parallel ([`stackpack_bundle::gzip`]), with no
//! name, time 0 and OS "unknown" in its header. So the same files give the same bytes
//! on any machine, with any number of cores, in any checkout folder, under any umask
//! or clock. Files are streamed: memory stays flat however large they are.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use stackpack_bundle::archive::HashingReader;
use stackpack_bundle::gzip::ParallelGzip;
use stackpack_schema::bundle::FileEntry;
use stackpack_schema::digest::Sha256Hasher;

use crate::discover::Stack;
use crate::error::{Error, Result};
use crate::git::Git;

/// A file to pack: where it is in the archive and where to read it.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: String,
    pub source: PathBuf,
    pub executable: bool,
}

/// True for files that never belong in a bundle: engine caches and state.
pub fn is_excluded(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.split('/').any(|part| part == ".terraform")
        || name.ends_with(".tfstate")
        || name.ends_with(".tfstate.backup")
        || name == ".terraform.tfstate.lock.info"
        || name == "crash.log"
}

/// The tracked files of a stack and its modules, sorted by path. Symbolic links that
/// stay inside the repository are packed as the file they point at; others are errors.
pub fn collect_files(git: &Git, stack: &Stack) -> Result<Vec<SourceFile>> {
    let root = git.root();
    let canonical_root = root
        .canonicalize()
        .map_err(|e| Error::refused(format!("cannot read `{}`: {e}", root.display())))?;
    let mut files = Vec::new();
    for dir in stack.packed_paths() {
        for tracked in git.tracked_files(dir)? {
            if is_excluded(&tracked.path) {
                continue;
            }
            let mut source = root.join(&tracked.path);
            let mut executable = tracked.executable;
            if tracked.symlink {
                let target = source
                    .canonicalize()
                    .ok()
                    .filter(|t| t.starts_with(&canonical_root) && t.is_file());
                let Some(target) = target else {
                    return Err(Error::usage(format!(
                        "`{}` is a symbolic link to a file outside the repository, or to a folder",
                        tracked.path
                    ))
                    .at(&tracked.path)
                    .hint("bundles hold plain files: copy the file into the repository instead of linking to it"));
                };
                executable = is_executable(&target);
                source = target;
            }
            if !source.is_file() {
                // Tracked but deleted in the work tree: the dirty check reports it.
                continue;
            }
            files.push(SourceFile {
                path: tracked.path,
                source,
                executable,
            });
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    Ok(files)
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .map(|m| m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

fn read_error(file: &SourceFile) -> impl FnOnce(io::Error) -> Error + '_ {
    move |e| Error::refused(format!("cannot read `{}`: {e}", file.path)).at(&file.path)
}

/// Hashes files without packing them (for planning: has the content changed?).
pub fn hash_files(files: &[SourceFile]) -> Result<Vec<FileEntry>> {
    files
        .iter()
        .map(|file| {
            let mut reader = File::open(&file.source).map_err(read_error(file))?;
            let mut hasher = Sha256Hasher::new();
            io::copy(&mut reader, &mut hasher).map_err(read_error(file))?;
            let size = hasher.len();
            Ok(FileEntry {
                path: file.path.clone(),
                digest: hasher.finish(),
                size,
                executable: file.executable,
            })
        })
        .collect()
}

/// Writes the stack layer to `out`, compressing on `threads` threads (the bytes do
/// not depend on how many); returns every file's entry. A file that changes while it
/// is packed is an error, never a silently inconsistent bundle.
pub fn write_layer<W: Write>(
    files: &[SourceFile],
    out: W,
    threads: usize,
) -> Result<(Vec<FileEntry>, W)> {
    let gzip = ParallelGzip::new(out, threads);
    let mut builder = tar::Builder::new(gzip);
    let mut entries = Vec::with_capacity(files.len());
    for file in files {
        let handle = File::open(&file.source).map_err(read_error(file))?;
        let size = handle.metadata().map_err(read_error(file))?.len();
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(size);
        header.set_mode(if file.executable { 0o755 } else { 0o644 });
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let mut reader =
            HashingReader::new(io::BufReader::with_capacity(1 << 20, handle).take(size));
        builder
            .append_data(&mut header, &file.path, &mut reader)
            .map_err(|e| {
                Error::refused(format!("cannot pack `{}`: {e}", file.path)).at(&file.path)
            })?;
        if reader.hasher.len() != size {
            return Err(Error::refused(format!(
                "`{}` changed while it was being packed",
                file.path
            ))
            .at(&file.path)
            .hint("run the build again when nothing else writes to the repository"));
        }
        entries.push(FileEntry {
            path: file.path.clone(),
            digest: reader.hasher.finish(),
            size,
            executable: file.executable,
        });
    }
    let gzip = builder
        .into_inner()
        .map_err(|e| Error::refused(format!("cannot write the stack layer: {e}")))?;
    let out = gzip
        .finish()
        .map_err(|e| Error::refused(format!("cannot write the stack layer: {e}")))?;
    Ok((entries, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_caches_and_state_are_never_packed() {
        for path in [
            "stacks/a/.terraform/providers/x",
            "stacks/a/terraform.tfstate",
            "stacks/a/prod.tfstate.backup",
        ] {
            assert!(is_excluded(path), "{path}");
        }
        for path in [
            "stacks/a/main.tf",
            "stacks/a/.terraform.lock.hcl",
            "stacks/a/stack.toml",
        ] {
            assert!(!is_excluded(path), "{path}");
        }
    }

    #[test]
    fn the_same_files_pack_to_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.tf"), "variable \"x\" {}\n").unwrap();
        std::fs::write(dir.path().join("b.bin"), vec![7u8; 100_000]).unwrap();
        let files = vec![
            SourceFile {
                path: "stacks/s/a.tf".into(),
                source: dir.path().join("a.tf"),
                executable: false,
            },
            SourceFile {
                path: "stacks/s/b.bin".into(),
                source: dir.path().join("b.bin"),
                executable: true,
            },
        ];
        let (entries, first) = write_layer(&files, Vec::new(), 1).unwrap();
        for threads in [1, 2, 16] {
            let (_, again) = write_layer(&files, Vec::new(), threads).unwrap();
            assert!(again == first, "{threads} threads give other bytes");
        }
        assert_eq!(entries, hash_files(&files).unwrap());
        let scanned =
            stackpack_bundle::archive::scan(&first[..], None, &Default::default()).unwrap();
        assert_eq!(scanned.len(), 2);
        assert!(scanned[1].executable);
    }
}
