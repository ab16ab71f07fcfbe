//! Importing an airgapped customer's kit (`stackpack kit`; the format is
//! `stackpack_bundle::kit`): the kit is unpacked into a private staging folder and
//! checked whole (signed by a key this runner trusts, every file's sum, nothing
//! extra) before anything of it is used; then its bundles are imported (verified again
//! against their own signatures), and, only when asked, its runner program installed
//! in place of this one, never an older one.

use std::path::{Path, PathBuf};
use std::process::Command;

use stackpack_bundle::kit::{unpack_checked, CheckedKit, KitManifest};

use crate::error::{io, Error, Result};
use crate::home::Home;
use crate::release::stored::Staged;
use crate::store::{self, Imported};

/// What a kit import did.
pub struct KitImported {
    pub manifest: KitManifest,
    pub signer_key_id: String,
    pub imported: Vec<Imported>,
    pub runner: RunnerOutcome,
}

/// What became of the runner program the kit carries.
pub enum RunnerOutcome {
    /// The kit carries none.
    NoneCarried,
    /// Not asked for (`--upgrade-runner`): the versions, so the user can decide.
    Offered { carried: String, running: String },
    /// Installed at `path`, replacing `from`.
    Installed {
        version: String,
        from: String,
        path: PathBuf,
    },
    /// Asked for, but the kit's runner is this very version.
    AlreadyCurrent { version: String },
}

/// Imports the kit at `source`. With `upgrade_runner`, the kit's runner replaces the
/// running program once everything else has been imported.
pub fn import(home: &Home, source: &Path, upgrade_runner: bool) -> Result<KitImported> {
    let trusted = store::trusted(home)?;
    let staging = tempfile::Builder::new()
        .prefix(".kit-")
        .tempdir_in(&home.root)
        .map_err(|e| io("create a staging folder in", &home.root, e))?;
    let kit = unpack_checked(source, staging.path(), &trusted)?;
    // The runner is checked (it runs, and is not older) before anything is imported.
    let candidate = match (upgrade_runner, kit.runner_archive()) {
        (true, Some(archive)) => Some(unpack_runner(&archive, staging.path(), source)?),
        (true, None) => {
            return Err(Error::usage("the kit carries no runner program to upgrade to")
                .at(source.display())
                .hint("import it without `--upgrade-runner`, or ask your vendor for a kit made with `stackpack kit --runner`"))
        }
        (false, _) => None,
    };
    let imported = if kit.manifest.omitted.is_empty() {
        store::import(home, &kit.bundles(), &mut Staged::default())?
    } else {
        store::import_filling(
            home,
            &kit.bundles(),
            &kit.manifest.omitted,
            |missing| {
                Error::refused(format!(
                "this kit was made for customer `{}` and leaves out layer `{missing}`, which this runner's store does not hold: nothing was imported",
                kit.manifest.made_for.as_deref().unwrap_or("?")
            ))
            .at(source.display())
            .hint(format!(
                "ask your vendor for a whole kit (`stackpack kit {}` without `--for`)",
                kit.manifest.release
            ))
            },
            &mut Staged::default(),
        )?
    };
    let runner = match candidate {
        Some(candidate) => install(candidate)?,
        None => offered(&kit),
    };
    Ok(KitImported {
        manifest: kit.manifest.clone(),
        signer_key_id: kit.signer.key_id(),
        imported,
        runner,
    })
}

fn offered(kit: &CheckedKit) -> RunnerOutcome {
    match &kit.manifest.runner {
        Some(runner) => RunnerOutcome::Offered {
            carried: runner.version.clone(),
            running: env!("CARGO_PKG_VERSION").to_string(),
        },
        None => RunnerOutcome::NoneCarried,
    }
}

/// A runner taken out of the kit's archive and asked its version.
struct Candidate {
    binary: PathBuf,
    version: semver::Version,
}

fn unpack_runner(archive: &Path, staging: &Path, source: &Path) -> Result<Candidate> {
    let binary = staging.join("stackpack-runner.new");
    let mut out = std::fs::File::create(&binary).map_err(|e| io("write", &binary, e))?;
    let found = stackpack_bundle::kit::copy_runner(archive, &mut out).map_err(|e| {
        Error::refused(format!("the kit's runner archive is not readable: {e}"))
            .at(source.display())
    })?;
    drop(out);
    if !found {
        return Err(
            Error::refused("the kit's runner archive holds no `stackpack-runner`")
                .at(source.display())
                .hint("ask your vendor for the kit again"),
        );
    }
    set_executable(&binary)?;
    let version = version_of(&binary, source)?;
    let running = running_version();
    if version < running {
        return Err(Error::refused(format!(
            "the kit's runner is `{version}`, older than this runner (`{running}`): a runner is never downgraded"
        ))
        .at(source.display())
        .hint("import the kit without `--upgrade-runner` (its bundles are imported; this runner stays), or ask your vendor for a kit with a current runner"));
    }
    Ok(Candidate { binary, version })
}

/// This runner's own version.
fn running_version() -> semver::Version {
    semver::Version::parse(env!("CARGO_PKG_VERSION")).expect("our own version parses")
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| io("write", path, e))
}

/// Runs the new program with `--version` (it is signed and whole by now): it must
/// start here and say what it is.
fn version_of(binary: &Path, source: &Path) -> Result<semver::Version> {
    let output = Command::new(binary).arg("--version").output().map_err(|e| {
        Error::refused(format!("the kit's runner does not start on this machine: {e}"))
            .at(source.display())
            .hint("ask your vendor for a kit built for this platform (`x86_64-linux`, glibc 2.17 or newer)")
    })?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.strip_prefix("stackpack-runner ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| semver::Version::parse(v).ok())
        .filter(|_| output.status.success())
        .ok_or_else(|| {
            Error::refused(format!(
                "the kit's runner does not say its version (`--version` printed `{}`)",
                text.trim()
            ))
            .at(source.display())
        })
}

/// Puts the candidate in place of the running program: copied beside it, then
/// renamed over it, so the program is whole at every moment.
fn install(candidate: Candidate) -> Result<RunnerOutcome> {
    let running = running_version();
    if candidate.version == running {
        return Ok(RunnerOutcome::AlreadyCurrent {
            version: running.to_string(),
        });
    }
    let current = std::env::current_exe()
        .map_err(|e| Error::refused(format!("cannot tell where this runner is installed: {e}")))?;
    let beside = current.with_file_name(".stackpack-runner.upgrade");
    std::fs::copy(&candidate.binary, &beside).map_err(|e| {
        io("install the kit's runner beside", &current, e)
            .hint("run the import as the user that owns the runner's program file")
    })?;
    set_executable(&beside)?;
    std::fs::rename(&beside, &current).map_err(|e| io("replace", &current, e))?;
    Ok(RunnerOutcome::Installed {
        version: candidate.version.to_string(),
        from: running.to_string(),
        path: current,
    })
}
