//! One module per subcommand; each is a thin wrapper over the library.

pub mod build;
pub mod check;
pub mod inspect;
pub mod keygen;
pub mod version;

use std::path::PathBuf;

use stackpack_customer_bundle::layout::ImageLayout;
use stackpack_packager::repository::Repository;

use crate::cli::PlanArgs;

/// The image layout a plan reads earlier builds from.
pub fn layout_path(repo: &Repository, args: &PlanArgs) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| repo.root.join(".stackpack").join("bundles"))
}

/// Opens the layout if it exists; builds create it.
pub fn existing_layout(path: &std::path::Path) -> Option<ImageLayout> {
    ImageLayout::open(path).ok()
}
