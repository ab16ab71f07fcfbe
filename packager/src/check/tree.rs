//! A stack (or module) with every local module it uses, transitively: what a bundle
//! vendors, and so what its callers feel.
//!
//! This is [`crate::discover::local_modules`]'s walk, made to read releases: both
//! read module calls with the interface reader and resolve sources with
//! [`resolve_source`], but a tree reads from a folder or from any commit, and keeps
//! each folder's whole interface. It also tolerates what discovery refuses (a
//! missing folder, a source outside the repository): an old release may lack a
//! module, and discovery has already refused the current tree's mistakes before any
//! check runs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Snapshot;
use crate::discover::resolve_source;
use stackpack_interface::{
    extract_files_lenient, module_files, InterfaceError, ModuleCall, ModuleInterface,
};

/// Where a tree's files come from: a folder on disk, or a commit read from git.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Dir(&'a Path),
    Snapshot(&'a Snapshot),
}

/// Interfaces by repository-relative folder (`stacks/data-plane`, `modules/network`).
#[derive(Debug, Default)]
pub struct Tree {
    pub root_dir: String,
    pub modules: BTreeMap<String, Arc<ModuleInterface>>,
    /// Files a lenient read left out (only [`Tree::load_lenient`] leaves any),
    /// repository-relative.
    pub unread: Vec<Unread>,
}

/// A file the interface reader could not read, and where it stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unread {
    /// The file's path (repository-relative in a [`Tree`]).
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl Unread {
    fn from_error(error: &InterfaceError) -> Unread {
        let (path, line, column, message) = match error {
            InterfaceError::Parse {
                path,
                line,
                column,
                message,
            } => (path, *line, *column, message.clone()),
            InterfaceError::Io { path, source } => (path, 0, 0, source.to_string()),
        };
        Unread {
            file: path.to_string_lossy().replace('\\', "/"),
            line,
            column,
            message,
        }
    }

    /// The error a strict read reports for this file.
    pub fn to_error(&self) -> InterfaceError {
        InterfaceError::Parse {
            path: PathBuf::from(&self.file),
            line: self.line,
            column: self.column,
            message: self.message.clone(),
        }
    }
}

/// One folder read leniently: what its readable files declare, and the rest.
#[derive(Clone, Debug)]
struct Entry {
    module: Arc<ModuleInterface>,
    unread: Arc<Vec<Unread>>,
}

/// Interfaces already read, by folder: one check reads each folder once, however many
/// stacks use it.
#[derive(Debug, Default)]
pub struct Cache {
    map: HashMap<PathBuf, Entry>,
}

impl Cache {
    /// The interface of the module in `path`, read on first use. Files that cannot be
    /// read are left out: lints and customer checks run on the rest, and the check of
    /// each stack that uses the folder reports them (see [`Tree::load_lenient`]), so
    /// one broken module never stops the others from being checked.
    pub fn get(&mut self, path: &Path) -> Result<Arc<ModuleInterface>, InterfaceError> {
        Ok(self.entry(path)?.module)
    }

    fn entry(&mut self, path: &Path) -> Result<Entry, InterfaceError> {
        if let Some(e) = self.map.get(path) {
            return Ok(e.clone());
        }
        let files = module_files(path)?;
        Ok(self.insert(path.to_path_buf(), &files))
    }

    fn insert(&mut self, key: PathBuf, files: &[(String, String)]) -> Entry {
        let (module, errors) = extract_files_lenient(&key, files);
        let entry = Entry {
            module: Arc::new(module),
            unread: Arc::new(errors.iter().map(Unread::from_error).collect()),
        };
        self.map.insert(key, entry.clone());
        entry
    }

    /// The module in `dir` of `source`; `None` when the folder does not exist there.
    pub fn module(
        &mut self,
        source: Source,
        dir: &str,
    ) -> Result<Option<Arc<ModuleInterface>>, InterfaceError> {
        self.lenient(source, dir)?.map(strict).transpose()
    }

    /// [`Cache::module`], keeping what the readable files declare when some are not.
    fn lenient(&mut self, source: Source, dir: &str) -> Result<Option<Entry>, InterfaceError> {
        match source {
            Source::Dir(base) => {
                let path = base.join(dir);
                if path.is_dir() {
                    self.entry(&path).map(Some)
                } else {
                    Ok(None)
                }
            }
            Source::Snapshot(snapshot) => {
                let key = PathBuf::from(format!("{}:{dir}", snapshot.commit));
                if let Some(e) = self.map.get(&key) {
                    return Ok(Some(e.clone()));
                }
                let Some(files) = snapshot.module_files(dir) else {
                    return Ok(None);
                };
                Ok(Some(self.insert(key, &files)))
            }
        }
    }
}

fn strict(entry: Entry) -> Result<Arc<ModuleInterface>, InterfaceError> {
    match entry.unread.first() {
        Some(unread) => Err(unread.to_error()),
        None => Ok(entry.module),
    }
}

/// `a/b/../c` → `a/c`; `None` when it climbs out of the repository.
pub fn normalise(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// `dir/file`, or `file` when `dir` is empty.
pub fn join(dir: &str, file: &str) -> String {
    if dir.is_empty() || dir == "." {
        file.to_string()
    } else {
        format!("{}/{file}", dir.trim_end_matches('/'))
    }
}

impl Tree {
    /// Reads `dir` under `base` and every local module it calls. A folder that does not
    /// exist is left out (an old release may not have it yet).
    pub fn load(base: &Path, dir: &str) -> Result<Tree, InterfaceError> {
        Tree::load_with(base, dir, &mut Cache::default())
    }

    /// [`Tree::load`], reusing interfaces already in `cache`.
    pub fn load_with(base: &Path, dir: &str, cache: &mut Cache) -> Result<Tree, InterfaceError> {
        Tree::load_from(Source::Dir(base), dir, cache)
    }

    /// Reads `dir` and the local modules it calls from `source`; an error names the
    /// first file that cannot be read.
    pub fn load_from(source: Source, dir: &str, cache: &mut Cache) -> Result<Tree, InterfaceError> {
        let tree = Tree::load_lenient(source, dir, cache)?;
        match tree.unread.first() {
            Some(unread) => Err(unread.to_error()),
            None => Ok(tree),
        }
    }

    /// [`Tree::load_from`], leaving out the files that cannot be read (listed in
    /// [`Tree::unread`]): a published release is compared with what can be known of
    /// it, and which folders a tree spans is known even when a file in it is broken.
    pub fn load_lenient(
        source: Source,
        dir: &str,
        cache: &mut Cache,
    ) -> Result<Tree, InterfaceError> {
        let mut tree = Tree {
            root_dir: normalise(dir).unwrap_or_default(),
            ..Tree::default()
        };
        let mut queue = vec![tree.root_dir.clone()];
        while let Some(dir) = queue.pop() {
            if tree.modules.contains_key(&dir) {
                continue;
            }
            let Some(Entry { module, unread }) = cache.lenient(source, &dir)? else {
                continue;
            };
            // Repository-relative, whether read from disk or from a commit.
            tree.unread.extend(unread.iter().map(|u| Unread {
                file: join(&dir, u.file.rsplit('/').next().unwrap_or(&u.file)),
                ..u.clone()
            }));
            for call in &module.module_calls {
                if let Some(callee) = resolve(&dir, call) {
                    queue.push(callee);
                }
            }
            tree.modules.insert(dir, module);
        }
        Ok(tree)
    }

    pub fn root(&self) -> &ModuleInterface {
        static EMPTY: std::sync::OnceLock<ModuleInterface> = std::sync::OnceLock::new();
        self.modules
            .get(&self.root_dir)
            .map(|m| &**m)
            .unwrap_or_else(|| EMPTY.get_or_init(ModuleInterface::default))
    }

    pub fn exists(&self) -> bool {
        self.modules.contains_key(&self.root_dir)
    }

    /// The folder a local module call points at, if it is in this tree.
    pub fn callee(&self, dir: &str, call: &ModuleCall) -> Option<String> {
        resolve(dir, call).filter(|d| self.modules.contains_key(d))
    }

    /// Every local call edge: (caller folder, call, callee folder).
    pub fn edges(&self) -> Vec<(&str, &ModuleCall, String)> {
        let mut out = Vec::new();
        for (dir, module) in &self.modules {
            for call in &module.module_calls {
                if let Some(callee) = self.callee(dir, call) {
                    out.push((dir.as_str(), call, callee));
                }
            }
        }
        out
    }

    /// The interface recorded in a bundle config: the root's inputs and outputs, with
    /// the kinds of resource of every vendored module.
    pub fn to_schema(&self) -> stackpack_schema::interface::Interface {
        let mut interface = self.root().to_schema();
        let mut kinds: Vec<String> = self
            .modules
            .values()
            .flat_map(|m| m.resources.iter().map(|r| r.kind.clone()))
            .collect();
        kinds.sort();
        kinds.dedup();
        interface.resource_kinds = kinds;
        interface
    }
}

fn resolve(dir: &str, call: &ModuleCall) -> Option<String> {
    if !call.is_local() {
        return None;
    }
    resolve_source(dir, call.source.as_deref()?)
}
