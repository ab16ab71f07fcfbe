//! Provider packages: the registry's own zips that a stack's lock file pins, carried
//! in a bundle as layers of their own, and laid out for the engine as a
//! `filesystem_mirror` so that `init` never reaches the network.
//!
//! Two hashes identify a package, as Terraform's lock files write them:
//! - `zh:<hex>`: the SHA-256 of the zip itself (also the layer's digest);
//! - `h1:<base64>`: the SHA-256 over the sorted lines `<hex sha256 of entry>  <entry
//!   name>\n` of the zip's entries (Go's `dirhash.Hash1`). A lock file made offline
//!   with `terraform providers lock -fs-mirror=DIR` holds only `h1:` hashes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use base64::Engine as _;
use stackpack_schema::digest::{Digest, Sha256Hasher};

/// Both hashes of one provider zip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageHashes {
    /// The SHA-256 of the zip, as a digest (its hex is the `zh:` hash).
    pub digest: Digest,
    pub size: u64,
    /// `h1:<base64>`.
    pub h1: String,
}

impl PackageHashes {
    /// `zh:<hex>`.
    pub fn zh(&self) -> String {
        zh_hash(&self.digest)
    }

    /// The first of `locked` this package matches, if any.
    pub fn matching<'a>(&self, locked: &'a [String]) -> Option<&'a String> {
        let zh = self.zh();
        locked.iter().find(|hash| **hash == zh || **hash == self.h1)
    }
}

/// The `zh:` hash a lock file pins a zip by, from the zip's SHA-256.
pub fn zh_hash(digest: &Digest) -> String {
    format!("zh:{}", digest.hex())
}

/// Why a provider zip could not be hashed.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("cannot read `{path}`: {source}")]
    Io { path: String, source: io::Error },
    #[error("`{path}` is not a provider zip: {detail}")]
    NotAZip { path: String, detail: String },
}

/// Hashes a provider zip both ways, streaming: memory stays flat whatever its size.
pub fn hash_package(path: &Path) -> Result<PackageHashes, PackageError> {
    let (digest, size) = zip_digest(path)?;
    let h1 = package_h1(path)?;
    Ok(PackageHashes { digest, size, h1 })
}

/// The `h1:` hash of a provider zip alone (it inflates every entry: the costly half
/// of [`hash_package`]).
pub fn package_h1(path: &Path) -> Result<String, PackageError> {
    let shown = path.display().to_string();
    let file = File::open(path).map_err(|source| PackageError::Io {
        path: shown.clone(),
        source,
    })?;
    h1_hash(file).map_err(|detail| PackageError::NotAZip {
        path: shown,
        detail,
    })
}

/// The SHA-256 of a provider zip (the `zh:` hash, its layer's digest) and its size.
pub fn zip_digest(path: &Path) -> Result<(Digest, u64), PackageError> {
    let shown = path.display().to_string();
    let io_error = |source| PackageError::Io {
        path: shown.clone(),
        source,
    };
    let mut file = File::open(path).map_err(io_error)?;
    let mut hasher = Sha256Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer).map_err(io_error)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    let size = hasher.len();
    Ok((hasher.finish(), size))
}

/// `h1:` of a zip: SHA-256 over `<hex sha256 of entry>  <name>\n`, sorted by name.
pub fn h1_hash(zip: impl Read + io::Seek) -> Result<String, String> {
    let mut archive = zip::ZipArchive::new(zip).map_err(|e| e.to_string())?;
    let mut lines = BTreeMap::new();
    let mut buffer = vec![0u8; 1 << 16];
    for index in 0..archive.len() {
        let mut entry = archive.by_index(index).map_err(|e| e.to_string())?;
        if entry.is_dir() {
            continue;
        }
        let name = entry.name().map_err(|e| e.to_string())?.to_string();
        if name.contains('\n') {
            return Err(format!(
                "entry name `{}` holds a newline",
                name.escape_debug()
            ));
        }
        let mut hasher = Sha256Hasher::new();
        loop {
            let read = entry.read(&mut buffer).map_err(|e| e.to_string())?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        lines.insert(name, hasher.finish());
    }
    let mut summary = Sha256Hasher::new();
    for (name, digest) in &lines {
        summary.update(format!("{}  {name}\n", digest.hex()).as_bytes());
    }
    let bytes = hex_to_bytes(summary.finish().hex());
    Ok(format!(
        "h1:{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

fn hex_to_bytes(text: &str) -> Vec<u8> {
    hex::decode(text).expect("digests are hex")
}

/// The platform this program runs on, as Terraform names it (`linux_amd64`).
pub fn current_platform() -> String {
    let os = std::env::consts::OS;
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "arm" => "arm",
        other => other,
    };
    format!("{os}_{arch}")
}

/// A CLI configuration that installs providers only from `mirror`, a packed
/// `filesystem_mirror`, with direct installation from any registry excluded; with
/// `cache`, unpacked providers are kept there and linked into each work folder.
pub fn mirror_cli_config(mirror: &Path, cache: Option<&Path>) -> String {
    let quote = |path: &Path| {
        path.display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
    };
    let mut text = String::from(
        "# Written by stackpack-runner: providers come only from the verified bundle.\n",
    );
    if let Some(cache) = cache {
        text.push_str(&format!("plugin_cache_dir = \"{}\"\n", quote(cache)));
    }
    text.push_str(&format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path    = \"{}\"\n    include = [\"*/*/*\"]\n  }}\n  direct {{\n    exclude = [\"*/*/*\"]\n  }}\n}}\n",
        quote(mirror)
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let mut writer = zip::ZipWriter::new(&mut out);
        for (name, bytes) in entries {
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(bytes).unwrap();
        }
        writer.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn h1_is_the_hash_of_sorted_entry_lines_whatever_the_zip_order() {
        let a = zip_of(&[("b", b"two"), ("a", b"one")]);
        let b = zip_of(&[("a", b"one"), ("b", b"two")]);
        let expected = {
            let one = Digest::of(b"one");
            let two = Digest::of(b"two");
            let summary = Digest::of(format!("{}  a\n{}  b\n", one.hex(), two.hex()).as_bytes());
            format!(
                "h1:{}",
                base64::engine::general_purpose::STANDARD.encode(hex_to_bytes(summary.hex()))
            )
        };
        assert_eq!(h1_hash(Cursor::new(a)).unwrap(), expected);
        assert_eq!(h1_hash(Cursor::new(b)).unwrap(), expected);
    }

    #[test]
    fn a_package_matches_the_lock_by_either_hash() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("terraform-provider-x_1.0.0_linux_amd64.zip");
        std::fs::write(&path, zip_of(&[("terraform-provider-x_v1.0.0", b"binary")])).unwrap();
        let hashes = hash_package(&path).unwrap();
        let zh = hashes.zh();
        assert_eq!(
            hashes
                .matching(std::slice::from_ref(&zh))
                .map(String::as_str),
            Some(zh.as_str())
        );
        assert!(hashes.matching(std::slice::from_ref(&hashes.h1)).is_some());
        assert!(hashes.matching(&["h1:other=".into()]).is_none());
    }

    #[test]
    fn the_cli_configuration_never_allows_direct_installation() {
        let text = mirror_cli_config(Path::new("/home/runner/work/providers"), None);
        assert!(text.contains("path    = \"/home/runner/work/providers\""));
        assert!(text.contains("exclude = [\"*/*/*\"]"));
    }
}
