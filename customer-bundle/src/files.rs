//! File helpers every part of the runner shares: folders made as needed, files only
//! their owner reads, and throwaway work folders. Each failure is the crate's error
//! naming the path and what was being done to it.

use std::io::Write;
use std::path::Path;

use super::error::{io, Result};

/// Makes `dir` and the folders above it, as needed.
pub fn create_folder(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))
}

/// Writes `text` to a file only its owner reads (0600), replacing what was there.
pub fn write_private(path: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    let mut file = private(&mut options)
        .open(path)
        .map_err(|e| io("create", path, e))?;
    file.write_all(text.as_bytes())
        .map_err(|e| io("write", path, e))
}

/// Creates a file only its owner reads (0600) holding `bytes`, synced to disk;
/// refuses to overwrite one that exists (a key is never replaced by accident).
pub fn create_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    let mut file = private(&mut options)
        .open(path)
        .map_err(|e| io("create", path, e))?;
    file.write_all(bytes)
        .and_then(|_| file.sync_all())
        .map_err(|e| io("write", path, e))
}

fn private(options: &mut std::fs::OpenOptions) -> &mut std::fs::OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// A fresh, empty folder inside `root` (made first when missing), named `prefix`
/// and a random tail, removed when the returned value is dropped.
pub fn work_folder(root: &Path, prefix: &str) -> Result<tempfile::TempDir> {
    create_folder(root)?;
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(root)
        .map_err(|e| io("create a work folder in", root, e))
}

/// The first file called `name` in a folder of `PATH`, as a shell would find it.
pub fn find_on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
