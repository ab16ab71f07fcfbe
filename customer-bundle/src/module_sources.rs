//! Module code only from the bundle: before any engine runs, every `module` call the
//! unpacked configuration makes (from the stack's folder, through each local module it
//! calls) must be a relative path to a folder of the unpacked bundle.
//!
//! The packager refuses anything else, so a bundle that has one was forged or built by
//! something else. Without this check an absolute `source` would read code from the
//! customer's disk, and `git::`, a URL or a registry address would make `init`
//! download code no signature covers.
//!
//! `init -get=false` would stop every download, but it stops local modules too (the
//! engine then refuses every call as "Module not installed", Terraform 1.15), so the
//! engine cannot be told to fetch nothing: this refusal is the defence.

use std::path::Path;

use stackpack_bundle::verify::VerifiedBundle;
use stackpack_interface::module_source::outside_calls;

use super::error::{Error, Result};

/// Refuses the bundle unpacked in `root` when a module call reachable from its
/// entrypoint would take code from outside `root`, or when a file there cannot be
/// read (what it calls is then unknown).
pub fn refuse_outside_modules(root: &Path, bundle: &VerifiedBundle) -> Result<()> {
    let config = &bundle.config;
    let name = format!("{}@{}", config.stack, config.version);
    let hint = "nothing ran; the bundle's vendor must vendor the module into the bundle (`stackpack build` refuses such a source)";
    let outside = outside_calls(root, &config.entrypoint).map_err(|e| {
        Error::refused_by(e)
            .at(format!("bundle `{name}`"))
            .hint(hint)
    })?;
    match outside.into_iter().next() {
        None => Ok(()),
        // The file and line lead the message: an apply that fails keeps its work
        // folder and names it as the error's location instead.
        Some(call) => Err(Error::refused(format!("`{}`: {call}", call.location))
            .caused_by(call)
            .at(format!("bundle `{name}`"))
            .hint(hint)),
    }
}
