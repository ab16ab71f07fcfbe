//! The stack layer: a deterministic `tar+gzip` of a stack and its vendored modules.
//!
//! Entries are sorted by path; every entry is a regular file with owner 0:0, empty
//! owner names, modification time 0, and mode 0644 (0755 when git records the file
//! as executable); folders are implied. The gzip stream is made of independent
//! fixed-size blocks compressed in parallel ([`stackpack_bundle::gzip`]), with no
//! name, time 0 and OS "unknown" in its header. So the same files give the same bytes
//! on any machine, with any number of cores, in any checkout folder, under any umask
//! or clock. Files are streamed: memory stays flat however large they are.
//!
//! A file of at least [`FILE_LAYER_MIN_SIZE`] bytes whose first block would be stored
//! rather than deflated ([`stackpack_bundle::gzip::incompressible`]: zips, images,
//! tarballs, random-looking binaries) is left out of the tar and written as a layer
//! of its own holding exactly its bytes, so the layer's digest is the file's digest
//! and the same file in two versions or two stacks is one blob. The decision depends
//! only on the file's bytes, so it is as reproducible as the tar. Each file is read
//! once: hashed as it is compressed, or as it is copied into its layer.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use stackpack_bundle::archive::HashingReader;
use stackpack_bundle::gzip::{self, ParallelGzip};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::bundle::{FileEntry, FILE_LAYER_MIN_SIZE};
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor};

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

/// True for a file the engine never reads, by its path inside the stack or module
/// folder: a name or folder that starts with `.` (Terraform and OpenTofu skip them),
/// except the dependency lock file, which `init` reads. Such files (`.env`, an
/// editor's settings, a secret kept beside the code) are left out of the bundle
/// unless the stack's `include` names them.
pub fn is_hidden(path_in_folder: &str) -> bool {
    path_in_folder != ".terraform.lock.hcl"
        && path_in_folder.split('/').any(|part| part.starts_with('.'))
}

/// True when `include` (paths relative to the stack folder) names the file at
/// `path_in_folder`, or a folder above it.
pub fn is_included(path_in_folder: &str, include: &[String]) -> bool {
    include.iter().any(|entry| {
        let entry = entry.trim_end_matches('/');
        path_in_folder == entry
            || path_in_folder
                .strip_prefix(entry)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// True when the file at `path_in_folder` of a stack folder (or a module's, where
/// `include` is empty) goes into the bundle as far as dotfiles go.
pub fn is_packed(path_in_folder: &str, include: &[String]) -> bool {
    !is_hidden(path_in_folder) || is_included(path_in_folder, include)
}

/// The tracked files of a stack and its modules, sorted by path; dotfiles only where
/// the stack's `include` names them. Symbolic links that
/// stay inside the repository are packed as the file they point at; others are errors.
pub fn collect_files(git: &Git, stack: &Stack) -> Result<Vec<SourceFile>> {
    let root = git.root();
    let canonical_root = root
        .canonicalize()
        .map_err(|e| Error::refused(format!("cannot read `{}`: {e}", root.display())))?;
    let mut files = Vec::new();
    for dir in stack.packed_paths() {
        // Only the stack's own folder takes `include`: a module's dotfiles stay out.
        let include: &[String] = if dir == stack.path {
            &stack.config.include
        } else {
            &[]
        };
        for tracked in git.tracked_files(dir)? {
            if is_excluded(&tracked.path) {
                continue;
            }
            let path_in_folder = tracked
                .path
                .strip_prefix(dir)
                .map(|rest| rest.trim_start_matches('/'))
                .unwrap_or(&tracked.path);
            if !is_packed(path_in_folder, include) {
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

/// Hashes files without packing them (for planning: has the content changed?), as
/// they would be in a module package: every file in the archive.
pub fn hash_files(files: &[SourceFile]) -> Result<Vec<FileEntry>> {
    files.iter().map(|file| hash_file(file, false)).collect()
}

/// Hashes a stack's files without packing them, marking those [`write_stack`] would
/// carry as layers of their own, so the plan's entries equal the build's.
pub fn hash_stack_files(files: &[SourceFile]) -> Result<Vec<FileEntry>> {
    files.iter().map(|file| hash_file(file, true)).collect()
}

fn hash_file(file: &SourceFile, file_layers: bool) -> Result<FileEntry> {
    let mut handle = File::open(&file.source).map_err(read_error(file))?;
    let size = handle.metadata().map_err(read_error(file))?.len();
    let mut hasher = Sha256Hasher::new();
    let first = if file_layers {
        first_block(&mut handle, size).map_err(read_error(file))?
    } else {
        Vec::new()
    };
    hasher.update(&first);
    io::copy(
        &mut io::BufReader::with_capacity(1 << 20, handle),
        &mut hasher,
    )
    .map_err(read_error(file))?;
    let layer = travels_as_layer(size, &first);
    let size = hasher.len();
    Ok(FileEntry {
        path: file.path.clone(),
        digest: hasher.finish(),
        size,
        executable: file.executable,
        layer,
    })
}

/// The first block of a file large enough to travel as a layer (else nothing read).
fn first_block(handle: &mut File, size: u64) -> io::Result<Vec<u8>> {
    if size < FILE_LAYER_MIN_SIZE {
        return Ok(Vec::new());
    }
    let mut block = Vec::with_capacity(gzip::BLOCK_SIZE);
    Read::by_ref(handle)
        .take(gzip::BLOCK_SIZE as u64)
        .read_to_end(&mut block)?;
    Ok(block)
}

/// True for a file that travels as a layer of its own: large, and its first block
/// would be stored by the stack layer's compressor rather than deflated.
fn travels_as_layer(size: u64, first_block: &[u8]) -> bool {
    size >= FILE_LAYER_MIN_SIZE && !first_block.is_empty() && gzip::incompressible(first_block)
}

/// What [`write_stack`] made.
pub struct PackedStack<W> {
    /// Every file of the stack, sorted by path, those in file layers marked.
    pub entries: Vec<FileEntry>,
    /// The file layers, already in the layout, in path order, one per distinct
    /// content (two files with the same bytes share a layer).
    pub file_layers: Vec<Descriptor>,
    /// The stack layer's writer, finished.
    pub out: W,
}

/// Writes the stack layer to `out`, compressing on `threads` threads (the bytes do
/// not depend on how many), and each file that travels as a layer of its own into
/// `layout`; returns every file's entry. A file that changes while it is packed is an
/// error, never a silently inconsistent bundle.
pub fn write_stack<W: Write>(
    files: &[SourceFile],
    out: W,
    threads: usize,
    layout: &ImageLayout,
) -> Result<PackedStack<W>> {
    let gzip = ParallelGzip::new(out, threads);
    let mut builder = tar::Builder::new(gzip);
    let mut entries = Vec::with_capacity(files.len());
    let mut file_layers: Vec<Descriptor> = Vec::new();
    for file in files {
        let mut handle = File::open(&file.source).map_err(read_error(file))?;
        let size = handle.metadata().map_err(read_error(file))?.len();
        let first = first_block(&mut handle, size).map_err(read_error(file))?;
        let layer = travels_as_layer(size, &first);
        let rest = handle.take(size - first.len() as u64);
        let digest = if layer {
            // The blob writer's digest is the file's: its bytes are the layer's, so
            // they are hashed once, as they are copied.
            let mut writer = layout.blob_writer()?;
            let copied =
                copy_large(io::Cursor::new(first).chain(rest), &mut writer).map_err(|e| {
                    Error::refused(format!("cannot write the layer of `{}`: {e}", file.path))
                        .at(&file.path)
                })?;
            if copied != size {
                return Err(changed_while_packed(file));
            }
            let (digest, written) = writer.commit()?;
            if !file_layers.iter().any(|l| l.digest == digest) {
                let mut descriptor =
                    Descriptor::new(media_type::FILE_LAYER, digest.clone(), written);
                let mut annotations = Annotations::new();
                annotations.insert(annotation::TITLE.into(), file.path.clone());
                descriptor.annotations = Some(annotations);
                file_layers.push(descriptor);
            }
            digest
        } else {
            let mut reader = HashingReader::new(
                io::Cursor::new(first).chain(io::BufReader::with_capacity(1 << 20, rest)),
            );
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(size);
            header.set_mode(if file.executable { 0o755 } else { 0o644 });
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(0);
            builder
                .append_data(&mut header, &file.path, &mut reader)
                .map_err(|e| {
                    Error::refused(format!("cannot pack `{}`: {e}", file.path)).at(&file.path)
                })?;
            if reader.hasher.len() != size {
                return Err(changed_while_packed(file));
            }
            reader.hasher.finish()
        };
        entries.push(FileEntry {
            path: file.path.clone(),
            digest,
            size,
            executable: file.executable,
            layer,
        });
    }
    let gzip = builder
        .into_inner()
        .map_err(|e| Error::refused(format!("cannot write the stack layer: {e}")))?;
    let out = gzip
        .finish()
        .map_err(|e| Error::refused(format!("cannot write the stack layer: {e}")))?;
    Ok(PackedStack {
        entries,
        file_layers,
        out,
    })
}

/// Copies in 1 MiB reads: file layers are the largest files of a stack.
fn copy_large(mut from: impl Read, to: &mut impl Write) -> io::Result<u64> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut copied = 0;
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => return Ok(copied),
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buffer[..read])?;
        copied += read as u64;
    }
}

fn changed_while_packed(file: &SourceFile) -> Error {
    Error::refused(format!("`{}` changed while it was being packed", file.path))
        .at(&file.path)
        .hint("run the build again when nothing else writes to the repository")
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
    fn dotfiles_stay_out_unless_included_and_the_lock_file_always_goes() {
        let none: Vec<String> = vec![];
        assert!(is_packed(".terraform.lock.hcl", &none));
        assert!(is_packed("main.tf", &none));
        assert!(is_packed("files/app.conf", &none));
        for hidden in [".env", ".secret.tf", ".hidden/creds.tfvars", "files/.npmrc"] {
            assert!(!is_packed(hidden, &none), "{hidden}");
        }
        let include = vec![".hidden/".to_string(), "files/.npmrc".to_string()];
        assert!(is_packed(".hidden/creds.tfvars", &include));
        assert!(is_packed("files/.npmrc", &include));
        assert!(!is_packed(".hiddenness/x", &include));
        assert!(!is_packed(".env", &include));
    }

    fn source(dir: &Path, name: &str, executable: bool) -> SourceFile {
        SourceFile {
            path: format!("stacks/s/{name}"),
            source: dir.join(name),
            executable,
        }
    }

    #[test]
    fn the_same_files_pack_to_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path().join("layout")).unwrap();
        std::fs::write(dir.path().join("a.tf"), "variable \"x\" {}\n").unwrap();
        std::fs::write(dir.path().join("b.bin"), vec![7u8; 100_000]).unwrap();
        let files = vec![
            source(dir.path(), "a.tf", false),
            source(dir.path(), "b.bin", true),
        ];
        let first = write_stack(&files, Vec::new(), 1, &layout).unwrap();
        for threads in [1, 2, 16] {
            let again = write_stack(&files, Vec::new(), threads, &layout).unwrap();
            assert!(again.out == first.out, "{threads} threads give other bytes");
        }
        assert_eq!(first.entries, hash_stack_files(&files).unwrap());
        assert!(first.file_layers.is_empty());
        let scanned =
            stackpack_bundle::archive::scan(&first.out[..], None, &Default::default()).unwrap();
        assert_eq!(scanned.len(), 2);
        assert!(scanned[1].executable);
    }

    #[test]
    fn large_incompressible_files_travel_as_layers_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(dir.path().join("layout")).unwrap();
        let mut random = vec![0u8; (3 << 20) + 17];
        getrandom(&mut random);
        std::fs::write(dir.path().join("lambda.zip"), &random).unwrap();
        std::fs::write(dir.path().join("same.zip"), &random).unwrap();
        // Large but compressible: stays in the tar.
        std::fs::write(dir.path().join("big.json"), "{\"k\": 1}\n".repeat(300_000)).unwrap();
        // Incompressible but small: stays in the tar.
        std::fs::write(dir.path().join("small.bin"), &random[..100_000]).unwrap();
        let files = vec![
            source(dir.path(), "big.json", false),
            source(dir.path(), "lambda.zip", false),
            source(dir.path(), "same.zip", false),
            source(dir.path(), "small.bin", false),
        ];
        let packed = write_stack(&files, Vec::new(), 2, &layout).unwrap();
        let layers: Vec<&str> = packed
            .entries
            .iter()
            .filter(|e| e.layer)
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(layers, ["stacks/s/lambda.zip", "stacks/s/same.zip"]);
        assert_eq!(packed.entries, hash_stack_files(&files).unwrap());
        // One layer for both copies, holding exactly the file: its digest is the file's.
        assert_eq!(packed.file_layers.len(), 1);
        let layer = &packed.file_layers[0];
        assert_eq!(layer.media_type, media_type::FILE_LAYER);
        assert_eq!(layer.digest, stackpack_schema::digest::Digest::of(&random));
        assert_eq!(
            layer.annotation(annotation::TITLE),
            Some("stacks/s/lambda.zip")
        );
        assert_eq!(
            std::fs::read(layout.blob_path(&layer.digest)).unwrap(),
            random
        );
        let in_tar: Vec<String> =
            stackpack_bundle::archive::scan(&packed.out[..], None, &Default::default())
                .unwrap()
                .into_iter()
                .map(|f| f.path)
                .collect();
        assert_eq!(in_tar, ["stacks/s/big.json", "stacks/s/small.bin"]);
    }

    fn getrandom(buffer: &mut [u8]) {
        use std::io::Read;
        File::open("/dev/urandom")
            .unwrap()
            .read_exact(buffer)
            .unwrap();
    }
}
