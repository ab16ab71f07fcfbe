//! Writes an airgapped customer's kit (`stackpack kit`): the export of a release, the
//! runner program, the vendor's public key, `SHA256SUMS` signed with the vendor's key,
//! and `VERIFY.md` + `verify.sh`, in one tar. The format is `stackpack_bundle::kit`'s,
//! which the runner reads; this module only assembles and signs.

use std::path::{Path, PathBuf};

use stackpack_bundle::kit::{self, KitManifest, KitRunner};
use stackpack_schema::signature::PrivateKey;

use crate::error::{Error, Result};

/// What goes into a kit besides the export, which the caller has written into the
/// staging folder as `bundles.tar`.
pub struct KitParts<'a> {
    pub release: String,
    pub channel: Option<String>,
    pub runner: Option<&'a Path>,
    pub key: &'a PrivateKey,
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
    write_file(
        staging,
        kit::SUMS_SIG,
        &parts.key.sign_bytes(sums.as_bytes()),
    )?;
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
