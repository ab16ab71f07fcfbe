//! The version each engine binary said, remembered in the home: asking costs an
//! engine start (two for an engine without `version -json`) on every command, and a
//! binary's version changes only when the file does. An entry counts only while the
//! file keeps its size, modification time and inode; anything unreadable is a miss.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// `<home>/engine-versions.json`.
const FILE: &str = "engine-versions.json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    size: u64,
    modified_ns: i128,
    inode: u64,
    version: String,
}

fn entry_for(path: &Path, version: String) -> Option<Entry> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Entry {
        size: meta.len(),
        modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        inode: meta.ino(),
        version,
    })
}

fn read(home: &Path) -> BTreeMap<String, Entry> {
    std::fs::read(home.join(FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The version `path` said before, if the file is unchanged since.
pub(crate) fn cached(home: &Path, path: &Path) -> Option<String> {
    let known = read(home).remove(&path.display().to_string())?;
    let now = entry_for(path, known.version.clone())?;
    (now == known).then_some(known.version)
}

/// Remembers what `path` said. A failure to write only costs the next command a
/// question.
pub(crate) fn remember(home: &Path, path: &Path, version: &str) {
    let Some(entry) = entry_for(path, version.to_string()) else {
        return;
    };
    let mut all = read(home);
    all.insert(path.display().to_string(), entry);
    let text = serde_json::to_string_pretty(&all).expect("serialises");
    let _ = crate::files::write_private(&home.join(FILE), &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remembered_version_counts_only_while_the_binary_is_unchanged() {
        let home = tempfile::tempdir().unwrap();
        let binary = home.path().join("terraform");
        std::fs::write(&binary, "one").unwrap();
        assert_eq!(cached(home.path(), &binary), None);
        remember(home.path(), &binary, "1.9.8");
        assert_eq!(cached(home.path(), &binary).as_deref(), Some("1.9.8"));
        // Replaced by another binary (another size): asked again.
        std::fs::write(&binary, "other").unwrap();
        assert_eq!(cached(home.path(), &binary), None);
        // An unreadable file is a miss, not an error.
        std::fs::write(home.path().join(FILE), "{not json").unwrap();
        assert_eq!(cached(home.path(), &binary), None);
    }
}
