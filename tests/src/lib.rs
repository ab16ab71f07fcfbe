//! Helpers shared by the end-to-end scenarios: where the repository and the built
//! binaries are.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
        .to_path_buf()
}
