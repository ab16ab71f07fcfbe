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

use stackpack_bundle::provider::{current_platform, hash_package, mirror_cli_config};
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
    for (provider, package) in locked.iter().zip(&packages) {
        let target = mirror.join(package.mirror_path());
        place(&store.blob_path(&package.digest), &target, package)?;
        check_placed(&target, package, provider)?;
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
fn check_placed(target: &Path, package: &ProviderPackage, provider: &LockedProvider) -> Result<()> {
    let refuse = |what: String| {
        Error::refused(what)
            .at(format!("`{}`", target.display()))
            .hint("the store was changed after verification; import the bundle again")
    };
    let hashes = hash_package(target).map_err(|e| refuse(e.to_string()))?;
    if hashes.digest != package.digest {
        return Err(refuse(format!(
            "provider package `{}` changed after it was verified: it now hashes to `{}`",
            package.file_name(),
            hashes.digest
        )));
    }
    if !provider.hashes.is_empty() && hashes.matching(&provider.hashes).is_none() {
        return Err(refuse(format!(
            "provider package `{}` matches none of the hashes its lock file pins",
            package.file_name()
        )));
    }
    Ok(())
}
