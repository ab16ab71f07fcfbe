//! Writes an airgapped customer's kit (`stackpack kit`): the export of a release, the
//! runner program, the vendor's public key, `SHA256SUMS` signed with the vendor's key,
//! and `VERIFY.md` + `verify.sh`, in one tar. The format is `stackpack_bundle::kit`'s,
//! which the runner reads; this module only assembles and signs.

use std::path::{Path, PathBuf};

use stackpack_bundle::kit::{self, KitManifest, KitRunner};
use stackpack_schema::digest::Digest;
use stackpack_schema::signature::SigningKey;

use crate::error::{Error, Result};

/// What goes into a kit besides the export, which the caller has written into the
/// staging folder as `bundles.tar`.
pub struct KitParts<'a> {
    pub release: String,
    pub channel: Option<String>,
    pub runner: Option<&'a Path>,
    /// The vendor's key: a key file, or a key in AWS KMS.
    pub key: &'a dyn SigningKey,
    /// `--for`: the customer, and the layers left out of `bundles.tar`.
    pub made_for: Option<String>,
    pub omitted: Vec<Digest>,
}

/// The kit written: its path, size and files with their SHA-256.
pub struct WrittenKit {
    pub path: PathBuf,
    pub size: u64,
    pub manifest: KitManifest,
    pub files: Vec<(String, String)>,
}

/// Completes the kit in `staging` (which holds `bundles.tar`) and writes it to `out`,
/// whole or not at all.
pub fn write(staging: &Path, parts: &KitParts, out: &Path) -> Result<WrittenKit> {
    let runner = match parts.runner {
        Some(archive) => Some(add_runner(staging, archive)?),
        None => None,
    };
    let public = parts.key.public_key();
    let manifest = KitManifest {
        kit: 1,
        release: parts.release.clone(),
        channel: parts.channel.clone(),
        runner,
        key_id: public.key_id(),
        made_for: parts.made_for.clone(),
        omitted: parts.omitted.clone(),
    };
    let json = serde_json::to_vec_pretty(&manifest).expect("a kit manifest serializes");
    write_file(staging, kit::MANIFEST, &json)?;
    write_file(staging, kit::VENDOR_KEY, public.to_pem().as_bytes())?;
    write_file(staging, kit::VERIFY_SH, kit::VERIFY_SCRIPT.as_bytes())?;
    write_file(
        staging,
        kit::VERIFY_MD,
        kit::verify_text(&manifest).as_bytes(),
    )?;
    let mut files = Vec::new();
    for entry in std::fs::read_dir(staging).map_err(|e| crate::error::io("read", staging, e))? {
        let entry = entry.map_err(|e| crate::error::io("read", staging, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        files.push((name, kit::sha256_file(&entry.path())?));
    }
    let sums = kit::sums_text(&files);
    write_file(staging, kit::SUMS, sums.as_bytes())?;
    let signature = parts.key.try_sign(sums.as_bytes()).map_err(|e| {
        Error::refused(format!(
            "no kit was written: `{}` was not signed: {e}",
            kit::SUMS
        ))
        .hint("check the signing key (`--key`), then run the same `stackpack kit` again")
    })?;
    write_file(staging, kit::SUMS_SIG, &signature)?;
    let size = write_tar(staging, out)?;
    files.sort();
    Ok(WrittenKit {
        path: out.to_path_buf(),
        size,
        manifest,
        files,
    })
}

/// Copies the runner archive in, after checking it is one `scripts/dist.sh` wrote:
/// its name gives the version, and it holds the `stackpack-runner` program.
fn add_runner(staging: &Path, archive: &Path) -> Result<KitRunner> {
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(version) = kit::runner_archive_version(&name) else {
        return Err(Error::usage(format!(
            "`{}` is not a runner archive: its name is not `stackpack-runner-<version>-<arch>-linux.tar.gz`",
            archive.display()
        ))
        .hint("pass the runner archive `scripts/dist.sh` writes (`dist/stackpack-runner-…-x86_64-linux.tar.gz`)"));
    };
    if !holds_runner(archive)? {
        return Err(Error::usage(format!(
            "`{}` holds no `stackpack-runner` program",
            archive.display()
        ))
        .hint("pass the runner archive `scripts/dist.sh` writes, unchanged"));
    }
    let target = staging.join(&name);
    std::fs::copy(archive, &target).map_err(|e| crate::error::io("copy", archive, e))?;
    Ok(KitRunner {
        file: name.clone(),
        version: version.to_string(),
    })
}

/// Reads the runner through, so a truncated archive is found here, not at the customer's.
fn holds_runner(archive: &Path) -> Result<bool> {
    kit::copy_runner(archive, &mut std::io::sink()).map_err(|e| unreadable(archive, e))
}

fn unreadable(archive: &Path, e: std::io::Error) -> Error {
    Error::usage(format!(
        "`{}` is not a readable tar.gz: {e}",
        archive.display()
    ))
    .hint("pass the runner archive `scripts/dist.sh` writes, unchanged")
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).map_err(|e| crate::error::io("write", &path, e))
}

/// A plain tar, names sorted, no owner and no clock, written beside `out` and
/// renamed into place: a kit is whole or absent.
fn write_tar(staging: &Path, out: &Path) -> Result<u64> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temporary = tempfile::NamedTempFile::new_in(parent)
        .map_err(|e| crate::error::io("write a kit in", parent, e))?;
    let mut names: Vec<String> = std::fs::read_dir(staging)
        .map_err(|e| crate::error::io("read", staging, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut builder = tar::Builder::new(temporary.as_file());
    for name in &names {
        let path = staging.join(name);
        let mut file =
            std::fs::File::open(&path).map_err(|e| crate::error::io("read", &path, e))?;
        let size = file
            .metadata()
            .map_err(|e| crate::error::io("read", &path, e))?
            .len();
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(if name == kit::VERIFY_SH { 0o755 } else { 0o644 });
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, name, &mut file)
            .map_err(|e| crate::error::io("write", out, e))?;
    }
    builder
        .into_inner()
        .and_then(|f| f.sync_all())
        .map_err(|e| crate::error::io("write", out, e))?;
    let size = temporary
        .as_file()
        .metadata()
        .map_err(|e| crate::error::io("write", out, e))?
        .len();
    temporary
        .persist(out)
        .map_err(|e| crate::error::io("write", out, e.error))?;
    Ok(size)
}

/// The layers a customer's runner holds, by what the registry's ledger says it runs
/// (the forecast targets of `release`, which a publisher may read): every layer of
/// each bundle in place and of the release version it runs (the engine the
/// release carries among them), read from the registry's manifests. Empty for a
/// customer with no receipts: its kit is whole.
pub fn held_layers(
    api: &crate::forecast::api::LedgerApi,
    remote: &stackpack_bundle::remote::Remote,
    address: &stackpack_bundle::remote::RegistryAddress,
    release: &stackpack_schema::reference::StackRef,
    customer: &str,
) -> Result<std::collections::BTreeSet<Digest>> {
    api.require_token("`--for`")?;
    let version = release.version.as_ref().ok_or_else(|| {
        Error::usage(format!("`{release}` names no version")).hint("give `NAME@VERSION`")
    })?;
    let targets: stackpack_schema::forecast::ForecastTargets = api
        .get(&format!(
            "/api/v1/forecast-targets?release={}&version={version}",
            release.stack
        ))?
        .ok_or_else(|| {
            Error::refused(format!(
                "the registry at `{}` keeps no ledger, so it cannot say what customer `{customer}` holds",
                api.base()
            ))
            .hint("leave out `--for` for a whole kit")
        })?;
    let Some(target) = targets.customers.iter().find(|t| t.customer == customer) else {
        let known: Vec<&str> = targets
            .customers
            .iter()
            .map(|t| t.customer.as_str())
            .collect();
        return Err(Error::usage(format!(
            "customer `{customer}` is not known to the registry at `{}`",
            api.base()
        ))
        .hint(match stackpack_interface::tfvars::did_you_mean(customer, &known) {
            Some(near) => format!("did you mean `{near}`? (or leave out `--for` for a whole kit)"),
            None => "check the name with `stackpack-registry customer list`, or leave out `--for` for a whole kit".to_string(),
        }));
    };
    let mut roots: Vec<(String, String)> = target
        .stacks
        .iter()
        .map(|s| (address.stack_repository(&s.stack), s.digest.to_string()))
        .collect();
    let repository = crate::release::publish::fetch::release_repository(address, &release.stack);
    match &target.running {
        Some(running) => roots.push((repository, running.to_string())),
        // Receipts carried out of an airgap name stacks, not always the release:
        // a version of the release that pins a bundle the customer runs was
        // imported whole, its engine with it.
        None => {
            let held: Vec<String> = target.stacks.iter().map(|s| s.digest.to_string()).collect();
            for tag in releases_pinning(remote, &repository, &held)? {
                roots.push((repository.clone(), tag));
            }
        }
    }
    let mut layers = std::collections::BTreeSet::new();
    for (repository, reference) in roots {
        layers_of(remote, &repository, &reference, &mut layers, 0)?;
    }
    Ok(layers)
}

/// The newest versions of the release in `repository` (at most
/// [`RELEASES_LOOKED_AT`]) whose index pins one of the bundle digests `held`.
fn releases_pinning(
    remote: &stackpack_bundle::remote::Remote,
    repository: &str,
    held: &[String],
) -> Result<Vec<String>> {
    let mut versions: Vec<semver::Version> = remote
        .tags(repository)?
        .iter()
        .filter_map(|t| t.parse().ok())
        .collect();
    versions.sort();
    let mut pinning = Vec::new();
    for version in versions.iter().rev().take(RELEASES_LOOKED_AT) {
        let Some((bytes, _)) = remote.pull_manifest(repository, &version.to_string())? else {
            continue;
        };
        let Ok(index) = serde_json::from_slice::<stackpack_schema::oci::ImageIndex>(&bytes) else {
            continue;
        };
        if index
            .manifests
            .iter()
            .any(|d| held.contains(&d.digest.to_string()))
        {
            pinning.push(version.to_string());
        }
    }
    Ok(pinning)
}

/// How many release versions `--for` reads, newest first, to find the ones a
/// customer's bundles came with.
const RELEASES_LOOKED_AT: usize = 50;

/// Every layer `reference` (a digest or tag) reaches in `repository`: a manifest's layers, an index's
/// children's (a release: its bundles, its engine). A manifest the registry no
/// longer has is skipped: its layers then travel.
fn layers_of(
    remote: &stackpack_bundle::remote::Remote,
    repository: &str,
    reference: &str,
    layers: &mut std::collections::BTreeSet<Digest>,
    depth: usize,
) -> Result<()> {
    if depth > 2 {
        return Ok(());
    }
    let Some((bytes, _)) = remote.pull_manifest(repository, reference)? else {
        return Ok(());
    };
    if let Ok(index) = serde_json::from_slice::<stackpack_schema::oci::ImageIndex>(&bytes) {
        if !index.manifests.is_empty() {
            for child in &index.manifests {
                layers_of(
                    remote,
                    repository,
                    &child.digest.to_string(),
                    layers,
                    depth + 1,
                )?;
            }
            return Ok(());
        }
    }
    if let Ok(manifest) = serde_json::from_slice::<stackpack_schema::oci::ImageManifest>(&bytes) {
        layers.extend(manifest.layers.into_iter().map(|l| l.digest));
    }
    Ok(())
}
