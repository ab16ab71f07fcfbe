//! Where a `module` block takes its code from, judged the way the engine reads a
//! `source`: only a relative path (`./…`, `../…`) is read from the disk as it is;
//! anything else (an absolute path, `git::`, a URL, `github.com/…`, a registry
//! address, `oci://`) makes `init` fetch code that no signature covers.
//!
//! The packager and the runner both walk a configuration with [`outside_calls`]: from
//! one folder, through every local module it calls, transitively, and list every call
//! whose code would not come from the tree being walked (a repository, or an unpacked
//! bundle).

use std::collections::BTreeSet;
use std::path::{Component, Path};

use crate::{read_files, InterfaceError};

/// The files the engines read in a folder: Terraform's, and OpenTofu's own (which
/// Terraform ignores but OpenTofu prefers).
pub const ENGINE_FILE_SUFFIXES: [&str; 4] = [".tf", ".tf.json", ".tofu", ".tofu.json"];

/// Why a `source` is not a relative path: what it names, in words for an error.
pub fn not_local(source: &str) -> Option<&'static str> {
    let lower = source.to_ascii_lowercase();
    if source.contains('\\') {
        // `.\x` is local on Windows and a folder named `.\x` elsewhere: refuse both.
        return Some("a path written with `\\`");
    }
    if source.starts_with("./") || source.starts_with("../") {
        return None;
    }
    let forced = lower
        .split_once("::")
        .map(|(getter, _)| getter)
        .filter(|g| g.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'));
    let scheme = lower.split_once("://").map(|(scheme, _)| scheme);
    let what = match forced.or(scheme) {
        Some("git" | "ssh" | "git+ssh") => "a git repository",
        Some("hg") => "a Mercurial repository",
        Some("s3") => "an S3 bucket",
        Some("gcs") => "a Google Cloud Storage bucket",
        Some("http" | "https") => "a download",
        Some("oci") => "an OCI registry",
        Some("file") => "an absolute path",
        Some(_) => "a remote address",
        None if source.starts_with('/') || source.starts_with('~') => "an absolute path",
        None if source.as_bytes().get(1) == Some(&b':') => "an absolute path",
        None if lower.starts_with("github.com/")
            || lower.starts_with("bitbucket.org/")
            || lower.starts_with("git@") =>
        {
            "a git repository"
        }
        None if matches!(source.split('/').count(), 3 | 4) => "a registry address",
        None => "not a relative path",
    };
    Some(what)
}

/// Joins a relative `source` to the folder `dir` it was written in (both relative to
/// the tree's root, with `/`), lexically. `None` when the result leaves the tree or is
/// its root.
pub fn resolve(dir: &str, source: &str) -> Option<String> {
    let mut parts: Vec<String> = dir
        .split('/')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect();
    for component in Path::new(source).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

/// A module call whose code would not come from the tree walked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("module `{name}` takes its code from {}, {why}", written(.address))]
pub struct OutsideCall {
    /// The module block's name.
    pub name: String,
    /// The `source` as written; `None` when it is missing or not a plain string.
    /// (Not named `source`: that would make it the error's cause.)
    pub address: Option<String>,
    /// What the source names, in words (`a git repository`).
    pub why: String,
    /// `folder/file:line`, relative to the tree's root: the line that spells the
    /// source out when it can be found, else the block's first line.
    pub location: String,
}

fn written(address: &Option<String>) -> String {
    match address {
        Some(s) => format!("`{s}`"),
        None => "no literal `source`".to_string(),
    }
}

/// Every module call reachable from the folder `entry` (relative to `root`, with `/`)
/// whose code would not come from inside `root`: a source that is not a relative path,
/// or one that leaves `root` or names no folder in it. Local modules are followed
/// transitively. A file that cannot be parsed is an error: what it calls is unknown.
pub fn outside_calls(root: &Path, entry: &str) -> Result<Vec<OutsideCall>, InterfaceError> {
    let mut outside = Vec::new();
    let mut seen = BTreeSet::from([entry.to_string()]);
    let mut queue = vec![entry.to_string()];
    while let Some(dir) = queue.pop() {
        let files = engine_files(&root.join(&dir))?;
        let (module, mut errors) = read_files(Path::new(&dir), &files, true);
        if let Some(error) = errors.pop() {
            return Err(error);
        }
        for call in &module.module_calls {
            let text = files
                .iter()
                .find(|(name, _)| *name == call.location.file)
                .map(|(_, text)| text.as_str())
                .unwrap_or_default();
            let line = call
                .source
                .as_deref()
                .and_then(|s| text.find(&format!("\"{s}\"")))
                .map(|at| text[..at].matches('\n').count() + 1)
                .unwrap_or(call.location.line);
            let why = match call.source.as_deref() {
                None => Some("so what it runs cannot be known".to_string()),
                Some(source) => match not_local(source) {
                    Some(what) => Some(format!("{what}, which is not in the bundle")),
                    None => match resolve(&dir, source) {
                        None => Some("a path that leaves the bundle".to_string()),
                        Some(path) if !root.join(&path).is_dir() => {
                            Some(format!("`{path}`, which is not a folder in the bundle"))
                        }
                        Some(path) => {
                            if seen.insert(path.clone()) {
                                queue.push(path);
                            }
                            None
                        }
                    },
                },
            };
            if let Some(why) = why {
                outside.push(OutsideCall {
                    name: call.name.clone(),
                    address: call.source.clone(),
                    why,
                    location: format!("{dir}/{}:{line}", call.location.file),
                });
            }
        }
    }
    outside.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(outside)
}

/// The names and texts of the engine's files directly in `dir`, in name order.
fn engine_files(dir: &Path) -> Result<Vec<(String, String)>, InterfaceError> {
    let io = |source| InterfaceError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_file() && ENGINE_FILE_SUFFIXES.iter().any(|s| name.ends_with(s)) {
            names.push(name);
        }
    }
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
            std::fs::read_to_string(&path)
                .map(|text| (name, text))
                .map_err(|source| InterfaceError::Io { path, source })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_paths_are_local() {
        for local in ["./m", "../../modules/network", "./a/../b"] {
            assert_eq!(not_local(local), None, "{local}");
        }
        let cases = [
            ("/abs/path", "an absolute path"),
            ("~/m", "an absolute path"),
            ("C:/m", "an absolute path"),
            ("git::file:///tmp/repo", "a git repository"),
            ("git::https://example.com/m.git?ref=v1", "a git repository"),
            ("git@github.com:acme/m.git", "a git repository"),
            ("hg::http://example.com/m", "a Mercurial repository"),
            ("s3::https://s3.amazonaws.com/b/m.zip", "an S3 bucket"),
            (
                "gcs::https://www.googleapis.com/storage/v1/b/m",
                "a Google Cloud Storage bucket",
            ),
            ("https://example.com/m.zip", "a download"),
            ("github.com/acme/m", "a git repository"),
            ("bitbucket.org/acme/m", "a git repository"),
            ("hashicorp/consul/aws", "a registry address"),
            ("app.terraform.io/acme/m/aws", "a registry address"),
            (
                "oci://example.com/acme/modules/m?tag=1.0.0",
                "an OCI registry",
            ),
            ("file:///tmp/m", "an absolute path"),
            (".\\m", "a path written with `\\`"),
            ("m", "not a relative path"),
            (".", "not a relative path"),
        ];
        for (source, what) in cases {
            assert_eq!(not_local(source), Some(what), "{source}");
        }
    }

    #[test]
    fn sources_resolve_lexically_and_never_leave_the_tree() {
        assert_eq!(
            resolve("stacks/data-plane", "../../modules/network").as_deref(),
            Some("modules/network")
        );
        assert_eq!(
            resolve("stacks/a", "./sub/../inner").as_deref(),
            Some("stacks/a/inner")
        );
        assert_eq!(resolve("stacks/a", "../../../outside"), None);
        assert_eq!(resolve("stacks/a", "../.."), None);
    }

    #[test]
    fn calls_are_followed_through_local_modules_and_every_outside_one_is_named() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "stacks/a/main.tf",
            "module \"net\" {\n  source = \"../../modules/net\"\n}\n",
        );
        write(
            "stacks/a/extra.tofu.json",
            r#"{"module": {"r": {"source": "hashicorp/consul/aws"}}}"#,
        );
        write(
            "modules/net/main.tf",
            "module \"up\" {\n\n  source = \"../../../elsewhere\"\n}\nmodule \"self\" { source = \"./\" }\n",
        );
        let found = outside_calls(root.path(), "stacks/a").unwrap();
        let found: Vec<(&str, &str)> = found
            .iter()
            .map(|c| (c.name.as_str(), c.location.as_str()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("up", "modules/net/main.tf:3"),
                ("r", "stacks/a/extra.tofu.json:1"),
            ]
        );
    }
}
