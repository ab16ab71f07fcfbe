//! Finding stacks and the local modules each one uses.
//!
//! A stack uses a module when one of its `.tf` (or `.tf.json`) files has a `module`
//! block whose `source` is a local path (`./…` or `../…`). Modules can use modules,
//! so the set is followed transitively. A source outside the repository, a missing
//! folder, and a cycle are errors that name the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stackpack_interface::module_source::{self, outside_calls};
use stackpack_interface::{extract_files_lenient, InterfaceError};
use stackpack_schema::reference::validate_name;

use crate::config::{RepoConfig, StackConfig};
use crate::error::{Error, Result};

/// A local module a stack uses.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LocalModule {
    /// The folder's name (`network` for `modules/network`).
    pub name: String,
    /// Path relative to the repository root, with `/`.
    pub path: String,
}

/// A deployable stack.
#[derive(Clone, Debug)]
pub struct Stack {
    pub name: String,
    /// Path relative to the repository root (`stacks/data-plane`).
    pub path: String,
    pub config: StackConfig,
    /// Every local module used, directly or through other modules, sorted by path.
    pub modules: Vec<LocalModule>,
}

impl Stack {
    /// The stack's folder and its modules' folders: everything packed.
    pub fn packed_paths(&self) -> Vec<&str> {
        std::iter::once(self.path.as_str())
            .chain(self.modules.iter().map(|m| m.path.as_str()))
            .collect()
    }
}

/// Expands `stacks/*`-style patterns (a `*` stands for one whole path component)
/// into folders, relative to `root`, sorted.
pub fn expand_globs(root: &Path, patterns: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for pattern in patterns {
        let mut current = vec![String::new()];
        for part in pattern.trim_matches('/').split('/') {
            let mut next = Vec::new();
            for base in &current {
                if part == "*" {
                    let Ok(entries) = std::fs::read_dir(root.join(base)) else {
                        continue;
                    };
                    for entry in entries.flatten() {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        if entry.path().is_dir() && !name.starts_with('.') {
                            next.push(join(base, &name));
                        }
                    }
                } else if root.join(base).join(part).is_dir() {
                    next.push(join(base, part));
                }
            }
            current = next;
        }
        found.extend(current.into_iter().filter(|p| !p.is_empty()));
    }
    found.sort();
    found.dedup();
    found
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}/{name}")
    }
}

/// Finds every stack in the repository.
pub fn discover_stacks(root: &Path, config: &RepoConfig) -> Result<Vec<Stack>> {
    let mut stacks = Vec::new();
    for path in expand_globs(root, &config.stacks) {
        let manifest = root.join(&path).join("stack.toml");
        let display = format!("{path}/stack.toml");
        if !manifest.is_file() {
            if has_terraform_files(&root.join(&path)) {
                return Err(Error::usage(format!(
                    "stack folder `{path}` has no `stack.toml`"
                ))
                .at(&path)
                .hint(format!(
                    "create `{display}` (it may hold just `description = \"…\"`), or move the folder out of the stack globs in `stackpack.toml`"
                )));
            }
            continue;
        }
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        validate_name(&name).map_err(|e| {
            Error::usage_by(e)
                .at(&path)
                .hint("rename the stack folder: its name becomes a registry repository name")
        })?;
        let config = StackConfig::load(&manifest, &display)?;
        let modules = local_modules(root, &path)?;
        refuse_outside_modules(root, &path)?;
        stacks.push(Stack {
            name,
            path,
            config,
            modules,
        });
    }
    let mut seen = BTreeMap::new();
    for stack in &stacks {
        if let Some(other) = seen.insert(stack.name.clone(), stack.path.clone()) {
            return Err(Error::usage(format!(
                "two stacks are named `{}`: `{other}` and `{}`",
                stack.name, stack.path
            ))
            .hint("stack names must be unique; rename one of the folders"));
        }
    }
    Ok(stacks)
}

fn has_terraform_files(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.ends_with(".tf") || name.ends_with(".tf.json")
            })
        })
        .unwrap_or(false)
}

/// A `module` block's local source, with where it was written.
#[derive(Clone, Debug)]
pub struct LocalCall {
    pub source: String,
    /// `file:line`, relative to the repository root.
    pub location: String,
}

/// Local module calls in one folder's `.tf` and `.tf.json` files, read by the same
/// reader that judges interfaces, so both agree on what a folder calls. A file that
/// cannot be read is skipped here: discovery runs for every stack, and one broken
/// module must not stop the stacks that do not use it. The check of each stack that
/// does (and its build) refuses it, naming the file and line.
pub fn local_module_calls(root: &Path, dir: &str) -> Result<Vec<LocalCall>> {
    let files = terraform_files(root, dir)?;
    let (module, _unread) = extract_files_lenient(Path::new(dir), &files);
    let calls = module
        .module_calls
        .iter()
        .filter(|call| call.is_local())
        .filter_map(|call| {
            let source = call.source.clone()?;
            let file = &call.location.file;
            let text = &files.iter().find(|(name, _)| name == file)?.1;
            Some(LocalCall {
                location: format!("{dir}/{file}:{}", source_line(text, &source)),
                source,
            })
        })
        .collect();
    Ok(calls)
}

/// The error for a folder whose files the interface reader refused.
pub(crate) fn unparsable(error: InterfaceError) -> Error {
    match error {
        InterfaceError::Parse {
            path,
            line,
            column,
            message,
        } => {
            let file = path.to_string_lossy().replace('\\', "/");
            let problem = if file.ends_with(".json") {
                "is not valid Terraform JSON"
            } else {
                "cannot be parsed"
            };
            // The engine accepts a key given twice (it reads both), so its own
            // validation would not point there.
            let hint = if message.contains("appears twice in one object") {
                "merge the two values into one object under that key; the engine reads both, so the configuration keeps its meaning"
            } else {
                "fix the syntax there; `tofu validate` or `terraform validate` in that folder points at the same place"
            };
            Error::usage(format!("`{file}` {problem}: {message}"))
                .at(format!("{file}:{line}:{column}"))
                .hint(hint)
        }
        // The files were read before parsing; nothing reads the disk again.
        InterfaceError::Io { path, source } => {
            Error::usage(format!("cannot read `{}`: {source}", path.display()))
        }
    }
}

/// The line that spells `source` out, which a reader fixing a bad path wants more
/// than the line its block starts on.
fn source_line(text: &str, source: &str) -> usize {
    text.find(&format!("\"{source}\""))
        .map(|at| text[..at].matches('\n').count() + 1)
        .unwrap_or(1)
}

/// The names and texts of one folder's `.tf` and `.tf.json` files, sorted by name.
fn terraform_files(root: &Path, dir: &str) -> Result<Vec<(String, String)>> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
        .map_err(|e| Error::usage(format!("cannot read folder `{dir}`: {e}")).at(dir))?
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tf") || n.ends_with(".tf.json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let display = format!("{dir}/{name}");
            let text = std::fs::read_to_string(root.join(&display))
                .map_err(|e| Error::usage(format!("cannot read `{display}`: {e}")).at(&display))?;
            Ok((name, text))
        })
        .collect()
}

/// Joins a relative source to the folder it was written in, lexically. `None` when
/// the result leaves the repository.
pub fn resolve_source(dir: &str, source: &str) -> Option<String> {
    module_source::resolve(dir, source)
}

/// Refuses a stack whose configuration (its folder and the local modules it uses)
/// calls a module whose code the bundle would not carry: the runner's `init` would
/// fetch it, unsigned, or read it from the customer's disk. A file that cannot be
/// parsed is left to the stack's check and build, which refuse it with its line
/// (discovery runs for every stack, and one broken file must not stop the others).
pub fn refuse_outside_modules(root: &Path, path: &str) -> Result<()> {
    let outside = match outside_calls(root, path) {
        Ok(outside) => outside,
        Err(InterfaceError::Parse { .. }) => return Ok(()),
        Err(e) => return Err(unparsable(e)),
    };
    let Some(call) = outside.into_iter().next() else {
        return Ok(());
    };
    let location = call.location.clone();
    let name = call.name.clone();
    Err(Error::refused_by(call).at(location).hint(format!(
        "a bundle carries only the stack and the local modules it calls: vendor the module into `modules/{name}` and call it by a relative path (`../../modules/{name}` from a stack)"
    )))
}

/// Every local module `dir` uses, transitively.
pub fn local_modules(root: &Path, dir: &str) -> Result<Vec<LocalModule>> {
    let mut found = BTreeMap::new();
    let mut trail = vec![dir.to_string()];
    visit(root, dir, &mut trail, &mut found)?;
    let mut modules: Vec<LocalModule> = found.into_values().collect();
    modules.sort();
    Ok(modules)
}

fn visit(
    root: &Path,
    dir: &str,
    trail: &mut Vec<String>,
    found: &mut BTreeMap<String, LocalModule>,
) -> Result<()> {
    for call in local_module_calls(root, dir)? {
        let Some(path) = resolve_source(dir, &call.source) else {
            return Err(Error::usage(format!(
                "module source `{}` points outside the repository",
                call.source
            ))
            .at(&call.location)
            .hint("bundles vendor local modules, so they must live in the repository: move the module under `modules/`"));
        };
        if !root.join(&path).is_dir() {
            return Err(Error::usage(format!(
                "module source `{}` points to `{path}`, which does not exist",
                call.source
            ))
            .at(&call.location)
            .hint("fix the `source` path, or commit the module folder"));
        }
        if let Some(start) = trail.iter().position(|p| p == &path) {
            let mut cycle: Vec<String> = trail[start..].iter().map(|p| format!("`{p}`")).collect();
            cycle.push(format!("`{path}`"));
            return Err(
                Error::usage(format!("modules form a cycle: {}", cycle.join(" → ")))
                    .at(&call.location)
                    .hint(
                        "a module cannot use itself, directly or through others: break the cycle",
                    ),
            );
        }
        if found.contains_key(&path) {
            continue;
        }
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        found.insert(
            path.clone(),
            LocalModule {
                name,
                path: path.clone(),
            },
        );
        trail.push(path.clone());
        visit(root, &path, trail, found)?;
        trail.pop();
    }
    Ok(())
}

/// Converts a path to the repository-relative `/` form.
pub fn relative(root: &Path, path: &Path) -> Option<String> {
    let relative: PathBuf = path.strip_prefix(root).ok()?.to_path_buf();
    Some(relative.to_string_lossy().replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_resolve_lexically_and_never_leave_the_repository() {
        assert_eq!(
            resolve_source("stacks/data-plane", "../../modules/network").as_deref(),
            Some("modules/network")
        );
        assert_eq!(
            resolve_source("stacks/a", "./sub/../inner").as_deref(),
            Some("stacks/a/inner")
        );
        assert_eq!(resolve_source("stacks/a", "../../../outside"), None);
        assert_eq!(resolve_source("stacks/a", "../.."), None);
    }

    #[test]
    fn local_module_calls_are_read_from_hcl_and_json() {
        let dir = tempfile::tempdir().unwrap();
        let stack = dir.path().join("stacks/a");
        std::fs::create_dir_all(&stack).unwrap();
        std::fs::write(
            stack.join("main.tf"),
            "module \"net\" {\n  source = \"../../modules/network\"\n}\nmodule \"reg\" { source = \"terraform-aws-modules/vpc/aws\" }\nresource \"x\" \"y\" {}\n",
        )
        .unwrap();
        std::fs::write(
            stack.join("more.tf.json"),
            r#"{"module": {"m": {"source": "../m"}, "b": [{"source": "./n"}]}}"#,
        )
        .unwrap();
        let calls = local_module_calls(dir.path(), "stacks/a").unwrap();
        let mut found: Vec<(String, String)> =
            calls.into_iter().map(|c| (c.source, c.location)).collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("../../modules/network".into(), "stacks/a/main.tf:2".into()),
                ("../m".into(), "stacks/a/more.tf.json:1".into()),
                ("./n".into(), "stacks/a/more.tf.json:1".into()),
            ]
        );
    }

    #[test]
    fn a_file_that_does_not_parse_does_not_hide_the_calls_of_the_others() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("m")).unwrap();
        std::fs::write(
            dir.path().join("m/broken.tf"),
            "module \"x\" {\n  source = \n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("m/main.tf"),
            "module \"n\" {\n  source = \"./n\"\n}\n",
        )
        .unwrap();
        let calls = local_module_calls(dir.path(), "m").unwrap();
        let sources: Vec<&str> = calls.iter().map(|c| c.source.as_str()).collect();
        assert_eq!(sources, vec!["./n"]);
    }

    #[test]
    fn an_unparsable_file_names_its_line() {
        let error = unparsable(InterfaceError::Parse {
            path: "m/main.tf".into(),
            line: 2,
            column: 11,
            message: "expected expression".into(),
        });
        assert_eq!(error.location.as_deref(), Some("m/main.tf:2:11"));
        assert!(
            error.message.contains("`m/main.tf` cannot be parsed"),
            "{}",
            error.message
        );
    }
}
