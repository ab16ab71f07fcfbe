//! The engine a release carries (`[releases.<name>] engine`): one binary per
//! platform, stored uncompressed as the layers of one image manifest
//! ([`media_type::ENGINE_ARTIFACT`]) that the release index pins, each binary's
//! digest also in the signed description (see
//! [`stackpack_schema::release::ReleaseEngine`]).
//!
//! The packager [`describe`]s the engine from its mirror (refusing a binary built
//! for another platform than the one it is filed under), then [`write()`]s it into
//! the layout the release is written to. The runner [`install`]s its platform's
//! binary from its store into its home, checking the digest the signature covers,
//! and checks the installed file again before every run ([`check_installed`]).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use semver::Version;
use stackpack_schema::bundle::EngineName;
use stackpack_schema::digest::{Digest, Sha256Hasher};
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::release::{EnginePlatform, ReleaseEngine};

use crate::layout::{ImageLayout, LayoutError};

/// Why an engine cannot be carried or run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot read engine binary `{path}`: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("`{path}` is filed as the `{platform}` engine, but it is {found}")]
    WrongPlatform {
        path: PathBuf,
        platform: String,
        found: String,
    },
    #[error("the engine binary `{path}` is `{found}`, not the `{expected}` the release signed")]
    Changed {
        path: PathBuf,
        expected: Digest,
        found: Digest,
    },
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// One platform's binary as the packager found it.
#[derive(Clone, Debug)]
pub struct EngineBinary {
    pub platform: String,
    pub path: PathBuf,
}

/// The engine's manifest and description, from its binaries: each one checked to
/// be an executable of its platform and hashed. Deterministic: the same binaries
/// give the same manifest digest, so an unchanged engine is not a change.
pub fn describe(
    name: EngineName,
    version: &Version,
    binaries: &[EngineBinary],
) -> Result<(ReleaseEngine, Vec<u8>), EngineError> {
    let mut platforms = Vec::new();
    let mut layers = Vec::new();
    for binary in binaries {
        check_platform(&binary.path, &binary.platform)?;
        let (digest, size) = hash_file(&binary.path)?;
        let mut layer = Descriptor::new(media_type::ENGINE_BINARY, digest.clone(), size);
        let mut annotations = Annotations::new();
        annotations.insert(annotation::TITLE.into(), name.as_str().to_string());
        annotations.insert(annotation::ENGINE_PLATFORM.into(), binary.platform.clone());
        layer.annotations = Some(annotations);
        layers.push(layer);
        platforms.push(EnginePlatform {
            platform: binary.platform.clone(),
            digest,
            size,
        });
    }
    let mut annotations = Annotations::new();
    annotations.insert(annotation::TITLE.into(), name.as_str().to_string());
    annotations.insert(annotation::VERSION.into(), version.to_string());
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::ENGINE_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers,
        subject: None,
        annotations: Some(annotations),
    };
    let bytes = manifest.to_bytes();
    let engine = ReleaseEngine {
        name,
        version: version.clone(),
        digest: Digest::of(&bytes),
        platforms,
    };
    Ok((engine, bytes))
}

/// Writes the binaries and the manifest [`describe`] made into `layout`; returns
/// the manifest's descriptor (an entry of the release index).
pub fn write(
    layout: &ImageLayout,
    binaries: &[EngineBinary],
    manifest: &[u8],
) -> Result<Descriptor, EngineError> {
    layout.write_blob(media_type::EMPTY_BLOB)?;
    for binary in binaries {
        let mut file = File::open(&binary.path).map_err(|source| EngineError::Read {
            path: binary.path.clone(),
            source,
        })?;
        let mut writer = layout.blob_writer()?;
        io::copy(&mut file, &mut writer).map_err(|source| EngineError::Read {
            path: binary.path.clone(),
            source,
        })?;
        writer.commit()?;
    }
    let (digest, size) = layout.write_blob(manifest)?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    descriptor.artifact_type = Some(media_type::ENGINE_ARTIFACT.into());
    Ok(descriptor)
}

/// Installs `platform`'s binary from `store` at `path` (made executable). When a
/// file is there already it is checked instead, and one that is not the signed
/// binary is refused, never replaced quietly: something changed a program this
/// runner executes. Written to a temporary name, checked against the signed
/// digest, then renamed: a cut-short copy is never run.
pub fn install(
    store: &ImageLayout,
    binary: &EnginePlatform,
    path: &Path,
) -> Result<(), EngineError> {
    if path.exists() {
        return check_installed(binary, path);
    }
    let read = |source| EngineError::Read {
        path: path.to_path_buf(),
        source,
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(read)?;
    let mut source = store.open_blob(&binary.digest)?;
    let mut temporary = tempfile::Builder::new()
        .prefix(".engine-")
        .tempfile_in(folder)
        .map_err(read)?;
    io::copy(&mut source, temporary.as_file_mut()).map_err(read)?;
    temporary.as_file().sync_all().map_err(read)?;
    check_installed(binary, temporary.path())?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(temporary.path(), std::fs::Permissions::from_mode(0o700))
        .map_err(read)?;
    temporary.persist(path).map_err(|e| read(e.error))?;
    Ok(())
}

/// The installed binary at `path` is the one the release signed.
pub fn check_installed(binary: &EnginePlatform, path: &Path) -> Result<(), EngineError> {
    let (found, _) = hash_file(path)?;
    if found != binary.digest {
        return Err(EngineError::Changed {
            path: path.to_path_buf(),
            expected: binary.digest.clone(),
            found,
        });
    }
    Ok(())
}

fn hash_file(path: &Path) -> Result<(Digest, u64), EngineError> {
    let read = |source| EngineError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(read)?;
    let mut hasher = Sha256Hasher::new();
    io::copy(&mut file, &mut hasher).map_err(read)?;
    let size = hasher.len();
    Ok((hasher.finish(), size))
}

/// Refuses a binary that is not an executable of `platform` (`linux_amd64`): its
/// ELF header says the machine; a Mach-O or PE file is another system's.
pub fn check_platform(path: &Path, platform: &str) -> Result<(), EngineError> {
    let mut header = [0u8; 20];
    let mut file = File::open(path).map_err(|source| EngineError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let read = file.read(&mut header).map_err(|source| EngineError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let found = binary_platform(&header[..read]);
    let (os, arch) = platform.split_once('_').unwrap_or((platform, ""));
    let matches = match &found {
        Found::Elf(machine) => os == "linux" && *machine == arch,
        Found::Other(_) => false,
    };
    if matches {
        return Ok(());
    }
    Err(EngineError::WrongPlatform {
        path: path.to_path_buf(),
        platform: platform.to_string(),
        found: match found {
            Found::Elf(machine) => format!("a Linux executable for `{machine}`"),
            Found::Other(what) => what.to_string(),
        },
    })
}

enum Found {
    /// An ELF executable for this machine (`amd64`, `arm64`, or the raw number).
    Elf(String),
    Other(&'static str),
}

fn binary_platform(header: &[u8]) -> Found {
    match header {
        [0x7f, b'E', b'L', b'F', ..] if header.len() >= 20 => {
            let machine = u16::from_le_bytes([header[18], header[19]]);
            Found::Elf(match machine {
                0x3e => "amd64".into(),
                0xb7 => "arm64".into(),
                0x03 => "386".into(),
                other => format!("machine {other:#x}"),
            })
        }
        [0xcf, 0xfa, 0xed, 0xfe, ..] | [0xca, 0xfe, 0xba, 0xbe, ..] => {
            Found::Other("a macOS executable")
        }
        [b'M', b'Z', ..] => Found::Other("a Windows executable"),
        [b'P', b'K', 3, 4, ..] => {
            Found::Other("a zip archive (unpack the engine's release zip into the mirror)")
        }
        _ => Found::Other("not an executable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elf(machine: u16) -> Vec<u8> {
        let mut header = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
        header.resize(18, 0);
        header.extend(machine.to_le_bytes());
        header.extend([0u8; 40]);
        header
    }

    #[test]
    fn an_engine_for_another_platform_is_refused_naming_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("terraform");
        std::fs::write(&path, elf(0xb7)).unwrap();
        let error = check_platform(&path, "linux_amd64")
            .unwrap_err()
            .to_string();
        assert!(error.contains("`linux_amd64`"), "{error}");
        assert!(error.contains("a Linux executable for `arm64`"), "{error}");
        assert!(check_platform(&path, "linux_arm64").is_ok());
        std::fs::write(&path, b"PK\x03\x04rest").unwrap();
        let error = check_platform(&path, "linux_amd64")
            .unwrap_err()
            .to_string();
        assert!(error.contains("zip archive"), "{error}");
        std::fs::write(&path, [0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]).unwrap();
        let error = check_platform(&path, "linux_amd64")
            .unwrap_err()
            .to_string();
        assert!(error.contains("macOS"), "{error}");
    }

    #[test]
    fn one_engine_describes_to_one_digest_and_installs_only_as_signed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("terraform");
        std::fs::write(&path, elf(0x3e)).unwrap();
        let binaries = [EngineBinary {
            platform: "linux_amd64".into(),
            path: path.clone(),
        }];
        let version = Version::new(0, 15, 0);
        let (engine, manifest) = describe(EngineName::Terraform, &version, &binaries).unwrap();
        let (again, _) = describe(EngineName::Terraform, &version, &binaries).unwrap();
        assert_eq!(engine, again);
        let layout = ImageLayout::create(dir.path().join("layout")).unwrap();
        let descriptor = write(&layout, &binaries, &manifest).unwrap();
        assert_eq!(descriptor.digest, engine.digest);

        let binary = engine.for_platform("linux_amd64").unwrap();
        let installed = dir.path().join("home/engines/terraform");
        install(&layout, binary, &installed).unwrap();
        assert!(check_installed(binary, &installed).is_ok());
        // Changed after it was installed: refused, not replaced quietly; once
        // removed, installed again from the store.
        std::fs::write(&installed, elf(0x3e).repeat(2)).unwrap();
        let error = install(&layout, binary, &installed)
            .unwrap_err()
            .to_string();
        assert!(error.contains("not the"), "{error}");
        std::fs::remove_file(&installed).unwrap();
        install(&layout, binary, &installed).unwrap();
        assert!(check_installed(binary, &installed).is_ok());
    }
}
