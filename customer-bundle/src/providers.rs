//! Providers for the engine, from the verified bundle only.
//!
//! The stack's lock file names the provider packages `init` will want. Each must be a
//! layer of the bundle for this machine's platform, already verified with the rest of
//! the bundle and kept in the store, which is content-addressed. They are laid out as
//! a packed `filesystem_mirror` in the home (`providers/mirror`: hard links into the
//! store where the file system allows, copies elsewhere), hashed again as the lock
//! file pins them, and a CLI configuration is written that installs only from that
//! mirror, with direct installation excluded for every provider. So `init` never
//! reaches a network, and a bundle missing a package fails here, with our own error,
//! before the engine runs.
//!
//! Unpacked providers are kept in the engine's plugin cache (`providers/cache`), so a
//! run links a provider into its work folder instead of unpacking hundreds of
//! megabytes each time; the engine checks every cached provider against the lock
//! file before it uses it. The cache is not safe for two engines filling it at once,
//! so `init` runs under a home-wide lock ([`CacheLock`]).

use std::path::{Path, PathBuf};

use stackpack_bundle::provider::{
    current_platform, mirror_cli_config, package_h1, zh_hash, zip_digest,
};
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_interface::lockfile::{self, LockedProvider, LOCK_FILE};
use stackpack_schema::bundle::ProviderPackage;

use crate::error::{io, Error, Result};
use crate::files;
use crate::home::Home;

/// What the engine runs need: the CLI configuration, and whether a lock file pins the
/// providers (then `init` runs with `-lockfile=readonly`).
#[derive(Debug)]
pub struct ProviderSetup {
    pub cli_config: PathBuf,
    pub locked: bool,
    /// The packages laid out, for status lines.
    pub installed: Vec<ProviderPackage>,
    /// Held until `init` has filled the plugin cache; dropped after.
    pub cache_lock: CacheLock,
}

/// The home-wide lock over the provider mirror and the plugin cache.
#[derive(Debug)]
pub struct CacheLock {
    _file: std::fs::File,
}

impl CacheLock {
    fn acquire(home: &Home) -> Result<CacheLock> {
        use fs2::FileExt;
        let dir = home.locks_dir();
        files::create_folder(&dir)?;
        let path = dir.join("providers.lock");
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("open", &path, e))?;
        // Another runner holds it only while its `init` links providers: wait.
        file.lock_exclusive().map_err(|e| io("lock", &path, e))?;
        Ok(CacheLock { _file: file })
    }
}

/// Lays out the providers the lock file in `stack_dir` pins in the home's mirror, and
/// writes the CLI configuration in `work` (an absolute path).
pub fn prepare(
    home: &Home,
    bundle: &VerifiedBundle,
    stack_dir: &Path,
    work: &Path,
) -> Result<ProviderSetup> {
    let lock_path = stack_dir.join(LOCK_FILE);
    let locked = match std::fs::read_to_string(&lock_path) {
        Ok(text) => lockfile::parse(&text).map_err(|e| {
            Error::refused_by(e)
                .at(format!("the bundle's `{}`", relative_lock(bundle)))
                .hint("ask the vendor for a bundle with a valid lock file")
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io("read", &lock_path, e)),
    };
    let platform = current_platform();
    let packages = packages_for(bundle, &locked, &platform)?;
    let cache_lock = CacheLock::acquire(home)?;
    let mirror = home.root.join("providers").join("mirror");
    let cache = home.root.join("providers").join("cache");
    for dir in [&mirror, &cache] {
        files::create_folder(dir)?;
    }
    let store = home.store()?;
    let h1_cache = home.root.join("providers").join("h1");
    for (provider, package) in locked.iter().zip(&packages) {
        let target = mirror.join(package.mirror_path());
        place(&store.blob_path(&package.digest), &target, package)?;
        check_placed(&h1_cache, &target, package, provider)?;
    }
    let cli_config = work.join("stackpack.tfrc");
    std::fs::write(&cli_config, mirror_cli_config(&mirror, Some(&cache)))
        .map_err(|e| io("write", &cli_config, e))?;
    Ok(ProviderSetup {
        cli_config,
        locked: !locked.is_empty(),
        installed: packages,
        cache_lock,
    })
}

fn relative_lock(bundle: &VerifiedBundle) -> String {
    format!("{}/{LOCK_FILE}", bundle.config.entrypoint)
}

/// The bundle's package for every locked provider, or one error naming each missing.
fn packages_for(
    bundle: &VerifiedBundle,
    locked: &[LockedProvider],
    platform: &str,
) -> Result<Vec<ProviderPackage>> {
    let mut packages = Vec::new();
    let mut missing = Vec::new();
    for provider in locked {
        match bundle.provider(&provider.source, &provider.version, platform) {
            Some(package) => packages.push(package.clone()),
            None => missing.push(format!("`{}` {}", provider.source, provider.version)),
        }
    }
    if missing.is_empty() {
        return Ok(packages);
    }
    Err(Error::refused(format!(
        "`{}@{}` carries no package for {} on `{platform}`, which its `{LOCK_FILE}` pins; with no network, `init` could not install {}",
        bundle.config.stack,
        bundle.config.version,
        missing.join(", "),
        if missing.len() == 1 { "it" } else { "them" }
    ))
    .hint(format!(
        "ask the vendor for a bundle built with `{platform}` in `[providers] platforms` of `stackpack.toml`"
    )))
}

/// A hard link into the store when the file system allows it, a copy otherwise;
/// made beside and renamed into place, so the mirror never holds half a package.
/// A package already there is kept when it is the same file as the store's blob.
fn place(blob: &Path, target: &Path, package: &ProviderPackage) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let parent = target.parent().expect("mirror paths have a folder");
    files::create_folder(parent)?;
    if let (Ok(a), Ok(b)) = (std::fs::metadata(blob), std::fs::metadata(target)) {
        if a.ino() == b.ino() && a.dev() == b.dev() {
            return Ok(());
        }
    }
    let staged = parent.join(format!(".{}.partial", package.file_name()));
    let _ = std::fs::remove_file(&staged);
    if std::fs::hard_link(blob, &staged).is_err() {
        std::fs::copy(blob, &staged).map_err(|e| io("copy a provider package to", &staged, e))?;
    }
    std::fs::rename(&staged, target).map_err(|e| io("place", target, e))
}

/// The package as placed still hashes to the verified layer, and to a hash the lock
/// file pins: the store could have changed since verification.
///
/// The `h1:` hash inflates the whole zip (about 0.4 s for the AWS provider): it is
/// worked out once per package digest and kept in `h1_cache` (the home's
/// `providers/h1/<hex>`), since equal digests are equal bytes. The zip's own SHA-256
/// is read every time.
fn check_placed(
    h1_cache: &Path,
    target: &Path,
    package: &ProviderPackage,
    provider: &LockedProvider,
) -> Result<()> {
    let refuse = |what: String| {
        Error::refused(what)
            .at(format!("`{}`", target.display()))
            .hint("the store was changed after verification; import the bundle again")
    };
    let (digest, _) = zip_digest(target).map_err(|e| refuse(e.to_string()))?;
    if digest != package.digest {
        return Err(refuse(format!(
            "provider package `{}` changed after it was verified: it now hashes to `{}`",
            package.file_name(),
            digest
        )));
    }
    if provider.hashes.is_empty() || provider.hashes.contains(&zh_hash(&digest)) {
        return Ok(());
    }
    let h1 = known_h1(h1_cache, target, &digest).map_err(|e| refuse(e.to_string()))?;
    if !provider.hashes.contains(&h1) {
        return Err(refuse(format!(
            "provider package `{}` matches none of the hashes its lock file pins",
            package.file_name()
        )));
    }
    Ok(())
}

/// The `h1:` hash of the package at `target`, whose SHA-256 is `digest`: kept from
/// an earlier run, or worked out and kept for the next.
fn known_h1(
    cache: &Path,
    target: &Path,
    digest: &stackpack_schema::digest::Digest,
) -> std::result::Result<String, stackpack_bundle::provider::PackageError> {
    let kept = cache.join(digest.hex());
    if let Ok(h1) = std::fs::read_to_string(&kept) {
        if h1.starts_with("h1:") && !h1.contains('\n') {
            return Ok(h1);
        }
    }
    let h1 = package_h1(target)?;
    // Only a cache: a home that cannot keep it works it out again next time. Kept
    // whole or not at all, owner-only (a temporary file renamed into place).
    if files::create_folder(cache).is_ok() {
        let _ = stackpack_bundle::layout::write_atomically(&kept, h1.as_bytes());
    }
    Ok(h1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zip_at(path: &Path, body: &[u8]) {
        let mut writer = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        writer
            .start_file(
                "terraform-provider-x_v1.0.0",
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
        std::io::Write::write_all(&mut writer, body).unwrap();
        writer.finish().unwrap();
    }

    fn package_of(path: &Path) -> ProviderPackage {
        let hashes = stackpack_bundle::provider::hash_package(path).unwrap();
        ProviderPackage {
            source: "registry.terraform.io/acme/x".into(),
            version: "1.0.0".into(),
            platform: "linux_amd64".into(),
            hash: hashes.h1.clone(),
            digest: hashes.digest,
            size: hashes.size,
        }
    }

    fn locked(hashes: &[&str]) -> LockedProvider {
        LockedProvider {
            source: "registry.terraform.io/acme/x".into(),
            version: "1.0.0".into(),
            constraints: None,
            hashes: hashes.iter().map(|h| h.to_string()).collect(),
        }
    }

    #[test]
    fn a_placed_package_is_checked_against_its_lock_with_its_h1_worked_out_once() {
        let dir = tempfile::tempdir().unwrap();
        let (zip, cache) = (dir.path().join("x.zip"), dir.path().join("h1"));
        zip_at(&zip, b"a provider");
        let package = package_of(&zip);
        let kept = cache.join(package.digest.hex());

        check_placed(&cache, &zip, &package, &locked(&[&package.hash])).unwrap();
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), package.hash);
        // The kept hash is what the next run reads: the zip is not inflated again.
        std::fs::write(&kept, "h1:kept").unwrap();
        check_placed(&cache, &zip, &package, &locked(&["h1:kept"])).unwrap();
        std::fs::remove_file(&kept).unwrap();

        // A lock pinning the zip's own hash needs no h1 at all.
        let zh = zh_hash(&package.digest);
        check_placed(&cache, &zip, &package, &locked(&[&zh])).unwrap();
        assert!(!kept.exists());

        let other = check_placed(&cache, &zip, &package, &locked(&["h1:other"])).unwrap_err();
        assert!(
            other
                .message
                .contains("matches none of the hashes its lock file pins"),
            "{}",
            other.message
        );
        zip_at(&zip, b"another provider");
        let changed = check_placed(&cache, &zip, &package, &locked(&[&package.hash])).unwrap_err();
        assert!(
            changed.message.contains("changed after it was verified"),
            "{}",
            changed.message
        );
    }
}
