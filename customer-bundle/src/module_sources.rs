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
//! engine cannot be told to fetch nothing: this refusal is the defence. A second one
//! reads what `init` installed, as the engine recorded it, before anything plans:
//! should a call ever slip past the reading above, its code is fetched but never run.

use std::path::Path;

use stackpack_interface::module_source::not_local;

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

/// The engine's record of the modules `init` installed, in the stack's folder.
const MODULES_MANIFEST: &str = ".terraform/modules/modules.json";

/// Refuses to go on when `init` in `dir` installed a module from anywhere but a
/// relative path (the root module, `Key` `""`, is the stack itself).
pub fn refuse_installed_from_outside(dir: &Path) -> Result<()> {
    let path = dir.join(MODULES_MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        // No module calls: nothing was installed.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::refused(format!(
                "cannot read `{MODULES_MANIFEST}` after `init`: {e}"
            ))
            .at(path.display()))
        }
    };
    match fetched_module(&text) {
        None => Ok(()),
        Some((key, source)) => Err(Error::refused(format!(
            "`init` installed module `{key}` from `{source}`, which is not in the bundle; nothing was planned"
        ))
        .at(path.display())
        .hint("report this bundle to its vendor: its module code must travel in it")),
    }
}

/// The first module (key and source) in a `modules.json` that did not come from a
/// relative path; a manifest that cannot be read counts as one.
fn fetched_module(text: &str) -> Option<(String, String)> {
    let unreadable = || Some(("?".to_string(), "an unreadable modules.json".to_string()));
    let Ok(manifest) = serde_json::from_str::<serde_json::Value>(text) else {
        return unreadable();
    };
    let Some(modules) = manifest["Modules"].as_array() else {
        return unreadable();
    };
    modules.iter().find_map(|module| {
        let key = module["Key"].as_str().unwrap_or("?");
        let source = module["Source"].as_str().unwrap_or("");
        let dir = module["Dir"].as_str().unwrap_or("");
        let root = key.is_empty() && dir == ".";
        let fetched = not_local(source).is_some() || dir.starts_with(".terraform");
        (!root && fetched).then(|| (key.to_string(), source.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_modules_installed_from_relative_paths_pass() {
        let local = r#"{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"m","Source":"../../modules/m","Dir":"../../modules/m"}]}"#;
        assert_eq!(fetched_module(local), None);
        let git = r#"{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"o","Source":"git::file:///tmp/r","Dir":".terraform/modules/o"}]}"#;
        assert_eq!(
            fetched_module(git),
            Some(("o".into(), "git::file:///tmp/r".into()))
        );
        let registry = r#"{"Modules":[{"Key":"c","Source":"registry.terraform.io/hashicorp/consul/aws","Version":"0.1.0","Dir":".terraform/modules/c"}]}"#;
        assert!(fetched_module(registry).is_some());
        assert!(fetched_module("not json").is_some());
    }
}
