//! An airgapped customer's kit: one tar that carries everything a customer's account
//! needs to run a release with nothing downloaded, and that its security team can
//! check with only `sha256sum` and `openssl` before anything runs.
//!
//! ```text
//! kit.json              what the kit holds (release, version, channel, runner, key id)
//! bundles.tar           the release as `stackpack export` writes it: bundles, release
//!                       index, signatures, channel statement, services
//! stackpack-runner-<v>-x86_64-linux.tar.gz   the runner program (scripts/dist.sh)
//! vendor.pub            the public key that signed SHA256SUMS (compare its id with
//!                       the one your vendor gave you; never trust it for being here)
//! VERIFY.md, verify.sh  how to check the kit by hand, and a script that does
//! SHA256SUMS            `sha256sum`'s format: every file above
//! SHA256SUMS.sig        raw signature of SHA256SUMS (`openssl pkeyutl -rawin`): ed25519,
//!                       or ECDSA P-256 (DER, over SHA-256) for a key in AWS KMS
//! ```
//!
//! The packager writes kits (`stackpack kit`); the runner reads them (`import`),
//! checking the signature against the keys it trusts, every file's sum, and that no
//! file is there that the sums do not name, before it imports anything. The bundles
//! inside are verified again on import, against their own signatures.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use stackpack_schema::digest::Sha256Hasher;
use stackpack_schema::signature::PublicKey;

use crate::error::{Error, Result};

pub const MANIFEST: &str = "kit.json";
pub const BUNDLES: &str = "bundles.tar";
pub const VENDOR_KEY: &str = "vendor.pub";
pub const VERIFY_SH: &str = "verify.sh";
pub const VERIFY_MD: &str = "VERIFY.md";
pub const SUMS: &str = "SHA256SUMS";
pub const SUMS_SIG: &str = "SHA256SUMS.sig";

/// The largest kit file read into memory (`kit.json`, the sums, a key): the large
/// ones (bundles, runner) are streamed.
const SMALL_FILE: u64 = 1 << 20;

/// `kit.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KitManifest {
    /// The kit format; 1 today.
    pub kit: u32,
    /// `RELEASE@VERSION` (or `STACK@VERSION`) as the vendor named it.
    pub release: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<KitRunner>,
    /// The id of the key that signed `SHA256SUMS`.
    pub key_id: String,
    /// A kit made for one customer (`stackpack kit --for`): who.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made_for: Option<String>,
    /// The layers left out of `bundles.tar` because the customer's receipts say its
    /// runner holds them: taken from its store on import, hashed there, and
    /// verified with the rest against the full signed manifests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<stackpack_schema::digest::Digest>,
}

/// The runner program a kit carries.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KitRunner {
    /// The archive's file name in the kit.
    pub file: String,
    pub version: String,
}

/// The runner archive name `scripts/dist.sh` writes: `stackpack-runner-<v>-<arch>-linux.tar.gz`.
pub fn runner_archive_version(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("stackpack-runner-")?;
    let rest = rest.strip_suffix("-linux.tar.gz")?;
    let (version, arch) = rest.rsplit_once('-')?;
    (!version.is_empty() && !arch.is_empty()).then_some(version)
}

/// `SHA256SUMS` of `files` (name, SHA-256 hex), sorted by name: `sha256sum`'s format.
pub fn sums_text(files: &[(String, String)]) -> String {
    let mut files = files.to_vec();
    files.sort();
    files
        .iter()
        .map(|(name, hex)| format!("{hex}  {name}\n"))
        .collect()
}

/// The SHA-256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).map_err(|e| crate::error::io("read", path, e))?;
    let mut hasher = Sha256Hasher::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buffer)
            .map_err(|e| crate::error::io("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finish().hex().to_string())
}

/// Whether the tar at `path` is a kit: it holds `kit.json` at its top. Decided on
/// the first entry that is not a plain top-level file (a layout's `blobs/…`), so an
/// export of many gigabytes is not read through before its import; headers are
/// skipped by seeking, not reading.
pub fn is_kit(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut archive = tar::Archive::new(file);
    let Ok(entries) = archive.entries_with_seek() else {
        return false;
    };
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        let Ok(path) = entry.path() else {
            return false;
        };
        if matches!(path.to_str(), Some("." | "./")) {
            continue;
        }
        match top_name(&path) {
            Some(name) if name == MANIFEST => return true,
            Some(_) => {}
            None => return false,
        }
    }
    false
}

/// Copies the `stackpack-runner` program out of a runner archive (`scripts/dist.sh`'s
/// `<name>/stackpack-runner`) into `out`; `Ok(false)` when it holds none. The
/// packager reads it through to check the archive, the runner to install it.
pub fn copy_runner(archive: &Path, out: &mut dyn std::io::Write) -> std::io::Result<bool> {
    let file = std::fs::File::open(archive)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in tar.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        let is_runner = path.components().count() == 2
            && path.file_name().is_some_and(|n| n == "stackpack-runner")
            && entry.header().entry_type().is_file();
        if is_runner {
            std::io::copy(&mut entry, out)?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// The name of an entry at the tar's top (`kit.json`, or `./kit.json` from
/// `tar -C DIR -cf kit.tar .`); `None` for anything deeper, or the top folder itself.
fn top_name(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let text = text.strip_prefix("./").unwrap_or(text);
    let flat = !text.is_empty() && !text.contains('/') && text != "." && text != "..";
    flat.then(|| text.to_string())
}

/// A kit unpacked into a folder and checked: signed by a trusted key, every file
/// whole, nothing extra.
pub struct CheckedKit {
    pub dir: PathBuf,
    pub manifest: KitManifest,
    pub signer: PublicKey,
}

impl CheckedKit {
    pub fn bundles(&self) -> PathBuf {
        self.dir.join(BUNDLES)
    }

    pub fn runner_archive(&self) -> Option<PathBuf> {
        self.manifest
            .runner
            .as_ref()
            .map(|r| self.dir.join(&r.file))
    }
}

/// Unpacks the kit `tar` into `into` (an empty folder) and checks it against
/// `trusted`. Nothing in it is to be used unless this returns `Ok`.
pub fn unpack_checked(tar: &Path, into: &Path, trusted: &[PublicKey]) -> Result<CheckedKit> {
    unpack_flat(tar, into)?;
    let sums = read_small(into, SUMS, tar)?;
    let signature = read_small(into, SUMS_SIG, tar)?;
    let signer = trusted
        .iter()
        .find(|key| key.verify_bytes(&sums, &signature))
        .cloned()
        .ok_or_else(|| untrusted(into, tar, trusted))?;
    let listed = parse_sums(&String::from_utf8_lossy(&sums), tar)?;
    check_files(into, tar, &listed)?;
    let manifest: KitManifest =
        serde_json::from_slice(&read_small(into, MANIFEST, tar)?).map_err(|e| {
            Error::refused(format!("`{MANIFEST}` in the kit is not readable: {e}"))
                .at(tar.display())
                .hint("ask your vendor for the kit again (`stackpack kit`)")
        })?;
    if manifest.kit != 1 {
        return Err(Error::refused(format!(
            "the kit is of format {}, which this runner does not read",
            manifest.kit
        ))
        .at(tar.display())
        .hint("upgrade the runner first, or ask your vendor for a kit of format 1"));
    }
    Ok(CheckedKit {
        dir: into.to_path_buf(),
        manifest,
        signer,
    })
}

fn untrusted(into: &Path, tar: &Path, trusted: &[PublicKey]) -> Error {
    let in_kit = std::fs::read_to_string(into.join(VENDOR_KEY))
        .ok()
        .and_then(|pem| PublicKey::from_pem(&pem).ok())
        .map(|key| key.key_id());
    let trusted_ids = if trusted.is_empty() {
        "none".to_string()
    } else {
        trusted
            .iter()
            .map(|k| format!("`{}`", k.key_id()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let message = match in_kit {
        Some(id) => format!("the kit's `{SUMS}` is not signed by a key this runner trusts (the kit names key `{id}`; trusted: {trusted_ids})"),
        None => format!("the kit's `{SUMS}` is not signed by a key this runner trusts (trusted: {trusted_ids})"),
    };
    Error::refused(message).at(tar.display()).hint(
        "if the kit is your vendor's, check its key id with them, then `stackpack-runner trust add vendor.pub`; nothing was imported",
    )
}

/// Regular files at the top of the tar only: a kit has no folders, links or paths.
fn unpack_flat(tar: &Path, into: &Path) -> Result<()> {
    let file = std::fs::File::open(tar).map_err(|e| crate::error::io("open", tar, e))?;
    let mut archive = tar::Archive::new(file);
    let damaged = |e: std::io::Error| {
        Error::refused(format!("the kit is damaged or truncated: {e}"))
            .at(tar.display())
            .hint("copy the kit again and compare its size with the vendor's; nothing was imported")
    };
    for entry in archive.entries().map_err(damaged)? {
        let mut entry = entry.map_err(damaged)?;
        let path = entry.path().map_err(damaged)?.into_owned();
        let kind = entry.header().entry_type();
        if kind.is_dir() && matches!(path.to_str(), Some("." | "./")) {
            continue;
        }
        let name = top_name(&path);
        let Some(name) = name.filter(|_| kind.is_file()) else {
            return Err(Error::refused(format!(
                "the kit holds `{}`, which is not a plain file at its top",
                path.display()
            ))
            .at(tar.display())
            .hint("a kit is written by `stackpack kit`; ask your vendor for it again"));
        };
        let target = into.join(&name);
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&target)
            .map_err(|e| crate::error::io("write", &target, e))?;
        std::io::copy(&mut entry, &mut out).map_err(damaged)?;
    }
    Ok(())
}

fn read_small(dir: &Path, name: &str, tar: &Path) -> Result<Vec<u8>> {
    let path = dir.join(name);
    let size = std::fs::metadata(&path).map(|m| m.len()).map_err(|_| {
        Error::refused(format!("the kit has no `{name}`"))
            .at(tar.display())
            .hint("a kit is written by `stackpack kit`; ask your vendor for it again (it may be truncated)")
    })?;
    if size > SMALL_FILE {
        return Err(Error::refused(format!(
            "`{name}` in the kit is {size} bytes, more than a kit's `{name}` ever is"
        ))
        .at(tar.display()));
    }
    std::fs::read(&path).map_err(|e| crate::error::io("read", &path, e))
}

fn parse_sums(text: &str, tar: &Path) -> Result<Vec<(String, String)>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let (hex, name) = line.split_once("  ").unwrap_or(("", ""));
            let ok = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
            if !ok || name.is_empty() || name.contains('/') {
                return Err(Error::refused(format!(
                    "`{SUMS}` has a line that is not `<sha256>  <file>`: `{line}`"
                ))
                .at(tar.display()));
            }
            Ok((name.to_string(), hex.to_ascii_lowercase()))
        })
        .collect()
}

fn check_files(dir: &Path, tar: &Path, listed: &[(String, String)]) -> Result<()> {
    for (name, hex) in listed {
        let path = dir.join(name);
        if !path.is_file() {
            return Err(Error::refused(format!(
                "the kit has no `{name}`, which its signed `{SUMS}` lists"
            ))
            .at(tar.display())
            .hint("the kit is truncated or was changed: ask your vendor for it again; nothing was imported"));
        }
        let actual = sha256_file(&path)?;
        if &actual != hex {
            return Err(Error::refused(format!(
                "`{name}` in the kit does not match its signed sum (`sha256:{actual}`, signed `sha256:{hex}`)"
            ))
            .at(tar.display())
            .hint("the kit was changed after the vendor signed it: ask your vendor for it again; nothing was imported"));
        }
    }
    let entries = std::fs::read_dir(dir).map_err(|e| crate::error::io("read", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let known = name == SUMS || name == SUMS_SIG || listed.iter().any(|(n, _)| n == &name);
        if !known {
            return Err(Error::refused(format!(
                "the kit holds `{name}`, which its signed `{SUMS}` does not list"
            ))
            .at(tar.display())
            .hint(
                "something was added to the kit after the vendor signed it; nothing was imported",
            ));
        }
    }
    Ok(())
}

/// `verify.sh`: the kit checked with only `sha256sum` and `openssl` (and a POSIX
/// shell), before anything of it runs.
pub const VERIFY_SCRIPT: &str = r#"#!/bin/sh
# Checks this kit with nothing but sha256sum and openssl, before anything in it runs.
#   sh verify.sh [TRUSTED.pub]
# TRUSTED.pub: your own copy of the vendor's public key (default: the kit's vendor.pub,
# whose key id you must then compare with the one your vendor gave you).
set -eu
case "$0" in */*) cd "${0%/*}" ;; esac
key="${1:-vendor.pub}"
case "$key" in /*) ;; *) [ -f "$key" ] || key="$OLDPWD/$key" ;; esac
id=$(openssl pkey -pubin -in "$key" -outform DER | sha256sum)
echo "key id: $(printf '%.16s' "$id") ($key)"
openssl pkeyutl -verify -pubin -inkey "$key" -rawin -in SHA256SUMS -sigfile SHA256SUMS.sig
sha256sum -c --strict SHA256SUMS
echo "the kit is whole and signed by key $(printf '%.16s' "$id")"
"#;

/// `VERIFY.md`, filled with the kit's names.
pub fn verify_text(manifest: &KitManifest) -> String {
    let runner = match &manifest.runner {
        Some(r) => format!(
            "- `{}`: the runner program {} (`stackpack-runner --version` says its commit)\n",
            r.file, r.version
        ),
        None => String::new(),
    };
    let made_for = match &manifest.made_for {
        Some(customer) => format!(
            "- made for customer `{customer}`: {} layer(s) its runner already holds are left out; \
             `import` takes them from the runner's store and verifies them with the rest\n",
            manifest.omitted.len()
        ),
        None => String::new(),
    };
    format!(
        "# Kit for `{release}`\n\n\
What this kit holds:\n\n\
- `{BUNDLES}`: the release's signed bundles (as `stackpack export` writes them)\n\
{made_for}\
{runner}\
- `{VENDOR_KEY}`: the public key that signed `{SUMS}` (key id `{key_id}`)\n\
- `{SUMS}`, `{SUMS_SIG}`: every file's SHA-256, and the vendor's signature of them\n\n\
## Check it before anything runs (only `sha256sum` and `openssl`)\n\n\
First compare the key id above with the one your vendor gave you by another channel:\n\
a key is trusted because of who gave it to you, never because it is in the kit.\n\n\
    openssl pkey -pubin -in {VENDOR_KEY} -outform DER | sha256sum | cut -c1-16   # must be {key_id}\n\
    openssl pkeyutl -verify -pubin -inkey {VENDOR_KEY} -rawin -in {SUMS} -sigfile {SUMS_SIG}\n\
    sha256sum -c --strict {SUMS}\n\n\
`sh {VERIFY_SH} [your-copy-of-vendor.pub]` runs the same three lines.\n\n\
## Then\n\n\
    stackpack-runner trust add {VENDOR_KEY}     # once, after checking its id\n\
    stackpack-runner import kit.tar              # checks all of the above again, then imports\n\
    stackpack-runner import kit.tar --upgrade-runner   # also installs the kit's runner\n",
        release = manifest.release,
        key_id = manifest.key_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_archive_name_gives_its_version() {
        assert_eq!(
            runner_archive_version("stackpack-runner-1.2.3-x86_64-linux.tar.gz"),
            Some("1.2.3")
        );
        assert_eq!(
            runner_archive_version("stackpack-runner-1.2.3-rc.1-x86_64-linux.tar.gz"),
            Some("1.2.3-rc.1")
        );
        assert_eq!(
            runner_archive_version("stackpack-1.2.3-x86_64-linux.tar.gz"),
            None
        );
        assert_eq!(
            runner_archive_version("stackpack-runner-x86_64.tar.gz"),
            None
        );
    }

    #[test]
    fn sums_are_sorted_in_sha256sums_format() {
        let text = sums_text(&[("b".into(), "1".repeat(64)), ("a".into(), "2".repeat(64))]);
        assert_eq!(
            text,
            format!("{}  a\n{}  b\n", "2".repeat(64), "1".repeat(64))
        );
        let parsed = parse_sums(&text, Path::new("kit.tar")).unwrap();
        assert_eq!(parsed[0], ("a".to_string(), "2".repeat(64)));
        assert!(parse_sums("xyz  a\n", Path::new("kit.tar")).is_err());
        assert!(parse_sums(&format!("{}  ../a\n", "2".repeat(64)), Path::new("k")).is_err());
    }
}
