//! The provider packages a stack's bundle carries: read from the stack's lock file,
//! found in the vendor's provider mirror, checked against the lock file's hashes.
//!
//! The lock file is the source of truth: every provider it pins, for every target
//! platform in `stackpack.toml`, becomes one layer holding the registry's own zip.
//! A stack that uses providers without a lock file, a missing package, or a package
//! whose hashes the lock file does not list, is refused before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::provider::{hash_package, PackageError, PackageHashes};
use stackpack_interface::lockfile::{self, LockedProvider, LOCK_FILE};
use stackpack_schema::bundle::{package_file_name, ProviderPackage};
use stackpack_schema::interface::Interface;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor};

use crate::config::ProviderSettings;
use crate::error::{Error, Result};

/// A package found and checked, with the file it comes from.
#[derive(Clone, Debug)]
pub struct FoundPackage {
    pub package: ProviderPackage,
    pub path: PathBuf,
}

/// Every package the stack at `stack_dir` (repository-relative) needs, checked.
pub fn collect(
    root: &Path,
    stack_dir: &str,
    interface: &Interface,
    settings: &ProviderSettings,
) -> Result<Vec<FoundPackage>> {
    let lock_path = root.join(stack_dir).join(LOCK_FILE);
    let locked = match std::fs::read_to_string(&lock_path) {
        Ok(text) => {
            lockfile::parse(&text).map_err(|e| Error::refused_by(e).at(lock_path.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return no_lock_file(stack_dir, interface, settings).map(|()| Vec::new());
        }
        Err(e) => return Err(stackpack_bundle::error::io("read", &lock_path, e)),
    };
    if locked.is_empty() {
        return Ok(Vec::new());
    }
    let mirror = mirror_folder(root, stack_dir, settings)?;
    let mut found = Vec::new();
    for provider in &locked {
        for platform in &settings.platforms {
            found.push(find(&mirror, &lock_path, provider, platform)?);
        }
    }
    found.sort_by(|a, b| {
        (&a.package.source, &a.package.version, &a.package.platform).cmp(&(
            &b.package.source,
            &b.package.version,
            &b.package.platform,
        ))
    });
    Ok(found)
}

/// A stack with resources or `required_providers` and no lock file cannot be
/// installed offline: say how to make one.
fn no_lock_file(stack_dir: &str, interface: &Interface, settings: &ProviderSettings) -> Result<()> {
    let uses_providers = !interface.required_providers.is_empty()
        || interface
            .resource_kinds
            .iter()
            .any(|kind| !kind.starts_with("terraform_"));
    if !uses_providers {
        return Ok(());
    }
    let platforms: String = settings
        .platforms
        .iter()
        .map(|p| format!(" -platform={p}"))
        .collect();
    Err(Error::refused(format!(
        "stack `{stack_dir}` uses providers but has no `{LOCK_FILE}`: a customer without network access could not install them"
    ))
    .at(stack_dir)
    .hint(format!(
        "run `terraform providers lock{platforms}` in `{stack_dir}` (add `-fs-mirror=DIR` offline) and commit `{LOCK_FILE}`"
    )))
}

fn mirror_folder(root: &Path, stack_dir: &str, settings: &ProviderSettings) -> Result<PathBuf> {
    let mirror = settings.mirror.as_ref().ok_or_else(|| {
        Error::refused(format!(
            "stack `{stack_dir}` pins providers in `{LOCK_FILE}`, and `stackpack.toml` names no provider mirror to take their packages from"
        ))
        .at(root.join("stackpack.toml").display())
        .hint("add `[providers]` with `mirror = \"DIR\"`, and fill DIR in CI with `terraform providers mirror -platform=linux_amd64 DIR`")
    })?;
    let mirror = root.join(mirror);
    if !mirror.is_dir() {
        return Err(Error::refused(format!(
            "the provider mirror `{}` is not a folder",
            mirror.display()
        ))
        .at(root.join("stackpack.toml").display())
        .hint(format!(
            "fill it with `terraform providers mirror -platform=linux_amd64 {}` in a stack folder",
            mirror.display()
        )));
    }
    Ok(mirror)
}

fn find(
    mirror: &Path,
    lock_path: &Path,
    provider: &LockedProvider,
    platform: &str,
) -> Result<FoundPackage> {
    let file = package_file_name(&provider.source, &provider.version, platform);
    let path = mirror.join(&provider.source).join(&file);
    let wanted = format!(
        "`{}` {} for `{platform}`",
        provider.source, provider.version
    );
    if !path.is_file() {
        return Err(Error::refused(format!(
            "the provider mirror has no package for {wanted}: `{}` is missing",
            path.display()
        ))
        .at(lock_path.display())
        .hint(format!(
            "run `terraform providers mirror -platform={platform} {}` in the stack's folder, or remove `{platform}` from `[providers] platforms`",
            mirror.display()
        )));
    }
    let hashes = hashed_once(&path).map_err(Error::refused_by)?;
    let hash = matching_hash(&hashes, provider, &wanted, &path, lock_path)?;
    let package = ProviderPackage {
        source: provider.source.clone(),
        version: provider.version.clone(),
        platform: platform.to_string(),
        hash,
        digest: hashes.digest,
        size: hashes.size,
    };
    Ok(FoundPackage { package, path })
}

/// A file as it stands: where it lives and what it holds (by size and the time of its
/// last change). A package replaced in the mirror is another file.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct FileIdentity {
    device: u64,
    inode: u64,
    size: u64,
    modified_ns: i128,
}

impl FileIdentity {
    fn of(path: &Path) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let metadata = std::fs::metadata(path).ok()?;
        Some(FileIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.len(),
            modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
        })
    }
}

/// [`hash_package`], once per package file in this process. A build reads the same
/// provider zip for every stack that pins it, and its `h1:` hash (inflating the
/// whole provider, hundreds of megabytes for AWS's) was most of a build's time:
/// four stacks on one provider hashed it four times.
fn hashed_once(path: &Path) -> std::result::Result<PackageHashes, PackageError> {
    static HASHED: Mutex<BTreeMap<FileIdentity, PackageHashes>> = Mutex::new(BTreeMap::new());
    let Some(identity) = FileIdentity::of(path) else {
        return hash_package(path);
    };
    if let Some(hashes) = HASHED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&identity)
    {
        return Ok(hashes.clone());
    }
    let hashes = hash_package(path)?;
    // Still the same file after hashing: what was read is what the key names.
    if FileIdentity::of(path) == Some(identity) {
        HASHED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(identity, hashes.clone());
    }
    Ok(hashes)
}

fn matching_hash(
    hashes: &PackageHashes,
    provider: &LockedProvider,
    wanted: &str,
    path: &Path,
    lock_path: &Path,
) -> Result<String> {
    if let Some(hash) = hashes.matching(&provider.hashes) {
        return Ok(hash.clone());
    }
    let locked = if provider.hashes.is_empty() {
        "no hashes".to_string()
    } else {
        provider
            .hashes
            .iter()
            .map(|h| format!("`{h}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(Error::refused(format!(
        "the package for {wanted} does not match the lock file: `{}` hashes to `{}` and `{}`, and `{LOCK_FILE}` lists {locked}",
        path.display(),
        hashes.zh(),
        hashes.h1
    ))
    .at(lock_path.display())
    .hint("refill the mirror from the provider's registry, or run `terraform providers lock` again for this platform if the new package is the one you trust"))
}

/// Copies each package into the layout as a layer of its own and returns the layer
/// descriptors, annotated with source, version and platform. The zip is stored as it
/// is: it is compressed already.
pub fn write_layers(found: &[FoundPackage], layout: &ImageLayout) -> Result<Vec<Descriptor>> {
    let mut layers = Vec::new();
    for item in found {
        let package = &item.package;
        let mut source = std::fs::File::open(&item.path)
            .map_err(|e| stackpack_bundle::error::io("read", &item.path, e))?;
        let mut writer = layout.blob_writer()?;
        std::io::copy(&mut source, &mut writer)
            .map_err(|e| stackpack_bundle::error::io("copy", &item.path, e))?;
        // Checked against the hash taken earlier, so a package replaced in between
        // is refused rather than shipped.
        let size = writer.commit_expecting(&package.digest)?;
        let mut layer = Descriptor::new(media_type::PROVIDER_PACKAGE, package.digest.clone(), size);
        let mut annotations = Annotations::new();
        annotations.insert(annotation::TITLE.into(), package.file_name());
        annotations.insert(annotation::PROVIDER_SOURCE.into(), package.source.clone());
        annotations.insert(annotation::PROVIDER_VERSION.into(), package.version.clone());
        annotations.insert(
            annotation::PROVIDER_PLATFORM.into(),
            package.platform.clone(),
        );
        layer.annotations = Some(annotations);
        layers.push(layer);
    }
    Ok(layers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn provider_zip(path: &Path, binary: &[u8]) {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        zip.start_file(
            "terraform-provider-x_v1.0.0",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(binary).unwrap();
        zip.finish().unwrap();
    }

    #[test]
    fn a_package_replaced_in_the_mirror_is_hashed_again_not_served_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("terraform-provider-x_1.0.0_linux_amd64.zip");
        provider_zip(&path, b"first build");
        let first = hashed_once(&path).unwrap();
        assert_eq!(hashed_once(&path).unwrap(), first);
        // Replaced as a mirror refresh does: a new file renamed over the old one.
        let staged = dir.path().join("staged.zip");
        provider_zip(&staged, b"second build, another size");
        std::fs::rename(&staged, &path).unwrap();
        let second = hashed_once(&path).unwrap();
        assert_ne!(second, first);
        assert_eq!(second, hash_package(&path).unwrap());
    }
}
