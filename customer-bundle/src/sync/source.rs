//! Where a pass reads what should run: the registry's assignment, a desired-state
//! file, or the channel statements imported into the store. Every source ends in
//! the same [`Target`]s; whatever cannot be acted on is a [`Refusal`] naming why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use semver::Version;
use stackpack_bundle::channel;
use stackpack_bundle::release::{find_release, releases_in};
use stackpack_schema::digest::Digest;
use stackpack_schema::rollout::{ApprovedKind, SignedChannelStatement, SyncState};
use stackpack_schema::signature::PublicKey;

use super::desired::{self, Wanted};
use super::registry::Registry;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::pull::RemoteBundle;

/// A release a pass converges to.
#[derive(Clone, Debug)]
pub struct Target {
    pub release: String,
    pub version: Version,
    /// The release index digest a trusted statement approves; `None` for a version
    /// the desired-state file pins (any release the vendor signed as that version).
    pub digest: Option<Digest>,
    pub inputs: PathBuf,
}

/// A release named by the source that this pass will not act on.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub release: String,
    pub assigned: Option<Version>,
    pub state: SyncState,
    pub message: String,
}

/// What the source says.
#[derive(Debug, Default)]
pub struct Assigned {
    pub targets: Vec<Target>,
    pub refused: Vec<Refusal>,
}

fn refusal(release: &str, assigned: Option<&Version>, message: String) -> Refusal {
    Refusal {
        release: release.to_string(),
        assigned: assigned.cloned(),
        state: SyncState::Refused,
        message,
    }
}

fn trusted(home: &Home) -> Result<Vec<PublicKey>> {
    Ok(home
        .trusted_keys()?
        .into_iter()
        .map(|(_, k, _)| k)
        .collect())
}

/// The inputs folder of the home (`[sync] inputs`), or the flag's.
pub fn default_inputs(home: &Home, flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| home.config.sync.inputs.as_ref().map(|p| home.resolve(p)))
}

fn inputs_or_refuse(
    release: &str,
    inputs: Option<PathBuf>,
) -> std::result::Result<PathBuf, String> {
    inputs.ok_or_else(|| {
        format!("no inputs folder for release `{release}`: set `inputs` under `[sync]` in `runner.toml`, or for the release in the desired-state file")
    })
}

/// The statements in the store for `channel`, verified; the others as refusals
/// by release.
struct Statements {
    valid: Vec<SignedChannelStatement>,
    refused: BTreeMap<String, String>,
    other_channel: BTreeMap<String, String>,
}

fn store_statements(home: &Home, channel_name: &str) -> Result<Statements> {
    let store = home.store()?;
    let keys = trusted(home)?;
    let mut out = Statements {
        valid: vec![],
        refused: BTreeMap::new(),
        other_channel: BTreeMap::new(),
    };
    for (descriptor, read) in channel::statements_in(&store, None)? {
        let signed = match read {
            Ok(signed) => signed,
            Err(e) => {
                let release = descriptor
                    .annotation(stackpack_schema::media_type::annotation::RELEASE)
                    .unwrap_or("?")
                    .to_string();
                out.refused
                    .insert(release, format!("an unreadable channel statement: {e}"));
                continue;
            }
        };
        let s = &signed.statement;
        if s.kind != ApprovedKind::Release {
            continue;
        }
        match signed.verify(&keys, channel_name) {
            Ok(_) => out.valid.push(signed),
            Err(stackpack_schema::rollout::StatementError::OtherChannel { found, .. }) => {
                out.other_channel.insert(
                    s.release.clone(),
                    format!(
                        "the store's statement for `{}@{}` is for channel `{found}`, not this runner's channel `{channel_name}`",
                        s.release, s.version
                    ),
                );
            }
            Err(e) => {
                out.refused.insert(
                    s.release.clone(),
                    format!(
                        "the channel statement for `{}@{}` is refused: {e}",
                        s.release, s.version
                    ),
                );
            }
        }
    }
    Ok(out)
}

/// The newest statement for `release` that the policy allows (prereleases only
/// when `[policy] allow-prereleases`).
fn newest<'a>(
    home: &Home,
    statements: &'a [SignedChannelStatement],
    release: &str,
) -> Option<&'a SignedChannelStatement> {
    statements
        .iter()
        .filter(|s| s.statement.release == release)
        .filter(|s| s.statement.version.pre.is_empty() || home.config.policy.allow_prereleases)
        .max_by(|a, b| a.statement.version.cmp_precedence(&b.statement.version))
}

/// Whether the store holds exactly the release a statement approves.
fn in_store(home: &Home, release: &str, version: &Version, digest: &Digest) -> Result<bool> {
    Ok(find_release(&home.store()?, release, version)?.is_some_and(|d| &d.digest == digest))
}

fn not_in_store(release: &str, version: &Version) -> String {
    format!(
        "the channel statement approves `{release}@{version}`, which the store does not hold: import the export that carries it (`stackpack export --channel`)"
    )
}

/// Airgapped: every release with a trusted statement for this runner's channel.
pub fn from_store(home: &Home, inputs: Option<PathBuf>) -> Result<Assigned> {
    let channel_name = home.config.sync.channel();
    let statements = store_statements(home, channel_name)?;
    let mut names: Vec<String> = statements
        .valid
        .iter()
        .map(|s| s.statement.release.clone())
        .chain(statements.refused.keys().cloned())
        .chain(statements.other_channel.keys().cloned())
        .collect();
    names.sort();
    names.dedup();
    let mut out = Assigned::default();
    for name in names {
        match newest(home, &statements.valid, &name) {
            Some(s) => {
                let s = &s.statement;
                if !in_store(home, &name, &s.version, &s.digest)? {
                    out.refused.push(refusal(
                        &name,
                        Some(&s.version),
                        not_in_store(&name, &s.version),
                    ));
                    continue;
                }
                match inputs_or_refuse(&name, inputs.clone()) {
                    Ok(inputs) => out.targets.push(Target {
                        release: name.clone(),
                        version: s.version.clone(),
                        digest: Some(s.digest.clone()),
                        inputs,
                    }),
                    Err(message) => out.refused.push(refusal(&name, Some(&s.version), message)),
                }
            }
            None => {
                let message = statements
                    .refused
                    .get(&name)
                    .or(statements.other_channel.get(&name))
                    .cloned()
                    .unwrap_or_else(|| format!("no statement for channel `{channel_name}`"));
                out.refused.push(refusal(&name, None, message));
            }
        }
    }
    Ok(out)
}

/// GitOps: the desired-state file.
pub fn from_desired(
    home: &Home,
    path: &Path,
    inputs: Option<PathBuf>,
    registry: Option<&Registry>,
) -> Result<Assigned> {
    let wanted = desired::read(path)?;
    let channel_name = home.config.sync.channel();
    let mut out = Assigned::default();
    let mut statements: Option<Statements> = None;
    for d in wanted {
        let inputs = match inputs_or_refuse(&d.release, d.inputs.clone().or(inputs.clone())) {
            Ok(inputs) => inputs,
            Err(message) => {
                out.refused.push(refusal(&d.release, None, message));
                continue;
            }
        };
        match &d.wanted {
            Wanted::Version(version) => {
                if find_release(&home.store()?, &d.release, version)?.is_none() {
                    match registry {
                        Some(registry) => pull(home, registry, &d.release, version)?,
                        None => {
                            let held: Vec<String> = releases_in(&home.store()?)?
                                .into_iter()
                                .filter(|(n, _, _)| *n == d.release)
                                .map(|(n, v, _)| format!("`{n}@{v}`"))
                                .collect();
                            let also = if held.is_empty() {
                                format!("the store holds no release `{}`", d.release)
                            } else {
                                format!("the store holds {}", held.join(", "))
                            };
                            return Err(Error::refused(format!(
                                "the desired state names release `{}@{version}`, which this runner does not have; {also}",
                                d.release
                            ))
                            .at(d.at.clone())
                            .hint("import it (`stackpack-runner import FILE`), set `registry` under `[sync]` to pull it, or fix the name or version"));
                        }
                    }
                }
                out.targets.push(Target {
                    release: d.release.clone(),
                    version: version.clone(),
                    digest: None,
                    inputs,
                });
            }
            Wanted::Channel(wanted_channel) => {
                if wanted_channel != channel_name {
                    out.refused.push(refusal(&d.release, None, format!(
                        "the desired state follows channel `{wanted_channel}` for `{}` ({}), and this runner accepts statements for channel `{channel_name}` only",
                        d.release, d.at
                    )));
                    continue;
                }
                if statements.is_none() {
                    statements = Some(store_statements(home, channel_name)?);
                }
                let all = statements.as_ref().expect("read above");
                match newest(home, &all.valid, &d.release) {
                    Some(s) => {
                        let s = &s.statement;
                        if !in_store(home, &d.release, &s.version, &s.digest)? {
                            out.refused.push(refusal(
                                &d.release,
                                Some(&s.version),
                                not_in_store(&d.release, &s.version),
                            ));
                            continue;
                        }
                        out.targets.push(Target {
                            release: d.release.clone(),
                            version: s.version.clone(),
                            digest: Some(s.digest.clone()),
                            inputs,
                        });
                    }
                    None => out.refused.push(refusal(
                        &d.release,
                        None,
                        all.refused.get(&d.release).cloned().unwrap_or_else(|| {
                            format!(
                                "no trusted statement for `{}` on channel `{channel_name}` in the store ({})",
                                d.release, d.at
                            )
                        }),
                    )),
                }
            }
        }
    }
    Ok(out)
}

/// Connected: the registry's assignment, each verified against the vendor's
/// statement (trusted key, this channel, exactly this digest), pulled if needed.
pub fn from_registry(
    home: &Home,
    registry: &Registry,
    inputs: Option<PathBuf>,
) -> Result<Assigned> {
    let response = registry.assignment(&home.config.customer)?;
    let channel_name = home.config.sync.channel();
    let keys = trusted(home)?;
    let mut out = Assigned::default();
    for a in response.assignments {
        if a.kind != ApprovedKind::Release {
            out.refused.push(refusal(
                &a.release,
                Some(&a.version),
                format!(
                "`{}@{}` is assigned as a single stack, which this runner syncs as a release only",
                a.release, a.version
            ),
            ));
            continue;
        }
        if let Err(e) = a.verify(&keys, channel_name) {
            out.refused.push(refusal(
                &a.release,
                Some(&a.version),
                format!(
                    "the registry's assignment of `{}@{}` is refused: {e}",
                    a.release, a.version
                ),
            ));
            continue;
        }
        if !a.version.pre.is_empty() && !home.config.policy.allow_prereleases {
            out.refused.push(refusal(
                &a.release,
                Some(&a.version),
                format!(
                    "`{}@{}` is a prerelease, and this runner's policy allows stable versions only",
                    a.release, a.version
                ),
            ));
            continue;
        }
        let inputs = match inputs_or_refuse(&a.release, inputs.clone()) {
            Ok(inputs) => inputs,
            Err(message) => {
                out.refused
                    .push(refusal(&a.release, Some(&a.version), message));
                continue;
            }
        };
        if find_release(&home.store()?, &a.release, &a.version)?.is_none() {
            if let Err(e) = pull(home, registry, &a.release, &a.version) {
                out.refused.push(Refusal {
                    release: a.release.clone(),
                    assigned: Some(a.version.clone()),
                    state: SyncState::Failed,
                    message: e.message,
                });
                continue;
            }
        }
        if !in_store(home, &a.release, &a.version, &a.digest)? {
            out.refused.push(refusal(
                &a.release,
                Some(&a.version),
                format!(
                    "the store's `{}@{}` is not the release the vendor approved (`{}`)",
                    a.release,
                    a.version,
                    a.digest.short()
                ),
            ));
            continue;
        }
        out.targets.push(Target {
            release: a.release,
            version: a.version,
            digest: Some(a.digest),
            inputs,
        });
    }
    Ok(out)
}

/// `HOST/NS/releases/R:V` into the store, verified.
fn pull(home: &Home, registry: &Registry, release: &str, version: &Version) -> Result<()> {
    let reference = RemoteBundle {
        host: registry.address.host.clone(),
        repository: format!("{}/releases/{release}", registry.address.namespace),
        stack: release.to_string(),
        version: version.clone(),
    };
    crate::release::pull::pull(home, &reference, registry.insecure)?;
    Ok(())
}
