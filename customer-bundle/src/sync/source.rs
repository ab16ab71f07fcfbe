//! Where a pass reads what should run: the registry's assignment, a desired-state
//! file, or the channel statements imported into the store. Every source ends in
//! the same [`Target`]s; whatever cannot be acted on is a [`Refusal`] naming why.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use semver::Version;
use stackpack_bundle::channel;
use stackpack_schema::digest::Digest;
use stackpack_schema::rollout::{ApprovedKind, SignedChannelStatement, SyncState};
use stackpack_schema::signature::PublicKey;

use super::deployable;
use super::desired::{self, Wanted};
use super::registry::Registry;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::pull::RemoteBundle;

/// A release a pass converges to.
#[derive(Clone, Debug)]
pub struct Target {
    /// A release, or a single stack (a release of one: see `sync::single`).
    pub kind: ApprovedKind,
    /// The release's name, or the single stack's.
    pub release: String,
    pub version: Version,
    /// The release index digest a trusted statement approves; `None` for a version
    /// the desired-state file pins (any release the vendor signed as that version).
    /// A single stack's is its bundle manifest's.
    pub digest: Option<Digest>,
    /// The release's inputs folder, or the single stack's file.
    pub inputs: PathBuf,
    /// The registry asks for a person before this is applied (its forecast replaces
    /// or destroys resources here), in its words: a plan with changes is held
    /// whatever `[sync] approve` says. Only an assignment carries one.
    pub hold: Option<String>,
}

/// A release named by the source that this pass will not act on.
#[derive(Clone, Debug)]
pub struct Refusal {
    pub kind: ApprovedKind,
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
        kind: ApprovedKind::Release,
        release: release.to_string(),
        assigned: assigned.cloned(),
        state: SyncState::Refused,
        message,
    }
}

impl Refusal {
    fn of(mut self, kind: ApprovedKind) -> Refusal {
        self.kind = kind;
        self
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

/// The statements in the store for `channel`, verified; the others as refusals
/// by release.
struct Statements {
    valid: Vec<SignedChannelStatement>,
    /// By release (or stack) name: what it is, and why refused.
    refused: BTreeMap<String, (ApprovedKind, String)>,
    other_channel: BTreeMap<String, (ApprovedKind, String)>,
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
                out.refused.insert(
                    release,
                    (
                        ApprovedKind::Release,
                        format!("an unreadable channel statement: {e}"),
                    ),
                );
                continue;
            }
        };
        let s = &signed.statement;
        match signed.verify(&keys, channel_name) {
            Ok(_) => out.valid.push(signed),
            Err(stackpack_schema::rollout::StatementError::OtherChannel { found, .. }) => {
                out.other_channel.insert(
                    s.release.clone(),
                    (s.kind, format!(
                        "the store's statement for `{}@{}` is for channel `{found}`, not this runner's channel `{channel_name}`",
                        s.release, s.version
                    )),
                );
            }
            Err(e) => {
                out.refused.insert(
                    s.release.clone(),
                    (
                        s.kind,
                        format!(
                            "the channel statement for `{}@{}` is refused: {e}",
                            s.release, s.version
                        ),
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
    kind: ApprovedKind,
    release: &str,
) -> Option<&'a SignedChannelStatement> {
    statements
        .iter()
        .filter(|s| s.statement.kind == kind && s.statement.release == release)
        .filter(|s| s.statement.version.pre.is_empty() || home.config.policy.allow_prereleases)
        .max_by(|a, b| a.statement.version.cmp_precedence(&b.statement.version))
}

/// The digest of the store's release (index) or single stack (bundle manifest)
/// `name@version`, if it holds one.
fn held(home: &Home, kind: ApprovedKind, name: &str, version: &Version) -> Result<Option<Digest>> {
    deployable::of(kind).held(&home.store()?, name, version)
}

/// Whether the store holds exactly the release (or stack bundle) a statement
/// approves.
fn in_store(
    home: &Home,
    kind: ApprovedKind,
    release: &str,
    version: &Version,
    digest: &Digest,
) -> Result<bool> {
    Ok(held(home, kind, release, version)?.as_ref() == Some(digest))
}

fn not_in_store(release: &str, version: &Version) -> String {
    format!(
        "the channel statement approves `{release}@{version}`, which the store does not hold: import the export that carries it (`stackpack export --channel`)"
    )
}

/// Airgapped: every release (and single stack) with a trusted statement for this
/// runner's channel.
pub fn from_store(home: &Home, inputs: Option<PathBuf>) -> Result<Assigned> {
    let channel_name = home.config.sync.channel();
    let statements = store_statements(home, channel_name)?;
    let mut names: Vec<(String, ApprovedKind)> = statements
        .valid
        .iter()
        .map(|s| (s.statement.release.clone(), s.statement.kind))
        .chain(statements.refused.iter().map(|(n, (k, _))| (n.clone(), *k)))
        .chain(
            statements
                .other_channel
                .iter()
                .map(|(n, (k, _))| (n.clone(), *k)),
        )
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.as_str().cmp(b.1.as_str())));
    names.dedup();
    let mut out = Assigned::default();
    for (name, kind) in names {
        match newest(home, &statements.valid, kind, &name) {
            Some(s) => {
                let s = &s.statement;
                if !in_store(home, kind, &name, &s.version, &s.digest)? {
                    out.refused.push(
                        refusal(&name, Some(&s.version), not_in_store(&name, &s.version)).of(kind),
                    );
                    continue;
                }
                match deployable::of(kind).inputs(&name, None, inputs.clone()) {
                    Ok(inputs) => out.targets.push(Target {
                        kind,
                        release: name.clone(),
                        version: s.version.clone(),
                        digest: Some(s.digest.clone()),
                        inputs,
                        hold: None,
                    }),
                    Err(message) => out
                        .refused
                        .push(refusal(&name, Some(&s.version), message).of(kind)),
                }
            }
            None => {
                let message = statements
                    .refused
                    .get(&name)
                    .or(statements.other_channel.get(&name))
                    .map(|(_, m)| m.clone())
                    .unwrap_or_else(|| format!("no statement for channel `{channel_name}`"));
                out.refused.push(refusal(&name, None, message).of(kind));
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
    let mut out = Assigned::default();
    let mut statements: Option<Statements> = None;
    for d in wanted {
        let (kind, name) = (d.kind, d.release.as_str());
        let inputs = match deployable::of(kind).inputs(name, d.inputs.clone(), inputs.clone()) {
            Ok(inputs) => inputs,
            Err(message) => {
                out.refused.push(refusal(name, None, message).of(kind));
                continue;
            }
        };
        match &d.wanted {
            Wanted::Version(version) => {
                if held(home, kind, name, version)?.is_none() {
                    match registry {
                        Some(registry) => pull(home, registry, kind, name, version)?,
                        None => return Err(not_held(home, &d, version)?),
                    }
                }
                out.targets.push(Target {
                    kind,
                    release: name.to_string(),
                    version: version.clone(),
                    digest: None,
                    inputs,
                    hold: None,
                });
            }
            Wanted::Channel(wanted_channel) => channel_target(
                home,
                &d,
                wanted_channel,
                inputs,
                registry,
                &mut statements,
                &mut out,
            )?,
        }
    }
    Ok(out)
}

/// A desired release that follows a channel: the newest version a trusted
/// statement for this runner's channel approves (from the store, else fetched from
/// the registry next to the release), or why there is none.
fn channel_target(
    home: &Home,
    d: &desired::DesiredRelease,
    wanted_channel: &str,
    inputs: PathBuf,
    registry: Option<&Registry>,
    statements: &mut Option<Statements>,
    out: &mut Assigned,
) -> Result<()> {
    let (kind, name) = (d.kind, d.release.as_str());
    let channel_name = home.config.sync.channel();
    if wanted_channel != channel_name {
        out.refused.push(refusal(name, None, format!(
            "the desired state follows channel `{wanted_channel}` for `{name}` ({}), and this runner accepts statements for channel `{channel_name}` only",
            d.at
        )).of(kind));
        return Ok(());
    }
    if statements.is_none() {
        *statements = Some(store_statements(home, channel_name)?);
    }
    let known = statements
        .as_ref()
        .is_some_and(|all| newest(home, &all.valid, kind, name).is_some());
    if let (false, Some(registry)) = (known, registry) {
        // No statement carried here yet: the vendor's, found next to
        // the release in the registry, kept in the store.
        if fetch_statement(home, registry, kind, name, channel_name)? {
            *statements = Some(store_statements(home, channel_name)?);
        }
    }
    let all = statements.as_ref().expect("read above");
    match newest(home, &all.valid, kind, name) {
        Some(s) => {
            let s = &s.statement;
            if !in_store(home, kind, name, &s.version, &s.digest)? {
                out.refused.push(
                    refusal(name, Some(&s.version), not_in_store(name, &s.version))
                        .of(kind),
                );
                return Ok(());
            }
            out.targets.push(Target {
                kind,
                release: name.to_string(),
                version: s.version.clone(),
                digest: Some(s.digest.clone()),
                inputs,
                hold: None,
            });
        }
        None => out.refused.push(
            refusal(
                name,
                None,
                all.refused
                    .get(name)
                    .map(|(_, m)| m.clone())
                    .unwrap_or_else(|| {
                        let place = if registry.is_some() {
                            "in the store or the registry"
                        } else {
                            "in the store"
                        };
                        format!(
                            "no trusted statement for `{name}` on channel `{channel_name}` {place} ({})",
                            d.at
                        )
                    }),
            )
            .of(kind),
        ),
    }
    Ok(())
}

/// The desired state names a version this runner does not have, and no registry
/// is set to pull it from.
fn not_held(home: &Home, d: &desired::DesiredRelease, version: &Version) -> Result<Error> {
    let store = home.store()?;
    let what = d.kind.as_str();
    let held: Vec<String> = deployable::of(d.kind)
        .versions_held(&store, &d.release)?
        .into_iter()
        .map(|v| format!("`{}@{v}`", d.release))
        .collect();
    let also = if held.is_empty() {
        format!("the store holds no {what} `{}`", d.release)
    } else {
        format!("the store holds {}", held.join(", "))
    };
    Ok(Error::refused(format!(
        "the desired state names {what} `{}@{version}`, which this runner does not have; {also}",
        d.release
    ))
    .at(d.at.clone())
    .hint("import it (`stackpack-runner import FILE`), set `registry` under `[sync]` to pull it, or fix the name or version"))
}

/// Connected: the registry's assignment, each verified against the vendor's
/// statement (trusted key, this channel, exactly this digest), pulled if needed.
/// A single stack's assignment is a release of one.
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
        let kind = a.kind;
        let refuse = |message: String| refusal(&a.release, Some(&a.version), message).of(kind);
        if let Err(e) = a.verify(&keys, channel_name) {
            out.refused.push(refuse(format!(
                "the registry's assignment of `{}@{}` is refused: {e}",
                a.release, a.version
            )));
            continue;
        }
        if !a.version.pre.is_empty() && !home.config.policy.allow_prereleases {
            out.refused.push(refuse(format!(
                "`{}@{}` is a prerelease, and this runner's policy allows stable versions only",
                a.release, a.version
            )));
            continue;
        }
        let inputs = match deployable::of(kind).inputs(&a.release, None, inputs.clone()) {
            Ok(inputs) => inputs,
            Err(message) => {
                out.refused.push(refuse(message));
                continue;
            }
        };
        if held(home, kind, &a.release, &a.version)?.is_none() {
            if let Err(e) = pull(home, registry, kind, &a.release, &a.version) {
                let mut failed = refuse(e.message);
                failed.state = SyncState::Failed;
                out.refused.push(failed);
                continue;
            }
        }
        if !in_store(home, kind, &a.release, &a.version, &a.digest)? {
            out.refused.push(refuse(format!(
                "the store's `{}@{}` is not the {} the vendor approved (`{}`)",
                a.release,
                a.version,
                kind.as_str(),
                a.digest.short()
            )));
            continue;
        }
        out.targets.push(Target {
            kind,
            release: a.release,
            version: a.version,
            digest: Some(a.digest),
            inputs,
            hold: a.hold.filter(|words| !words.trim().is_empty()),
        });
    }
    Ok(out)
}

/// `HOST/NS/releases/R:V` (a single stack: `HOST/NS/stacks/S:V`) into the store,
/// verified.
fn pull(
    home: &Home,
    registry: &Registry,
    kind: ApprovedKind,
    name: &str,
    version: &Version,
) -> Result<()> {
    let folder = deployable::of(kind).folder();
    let reference = RemoteBundle {
        host: registry.address.host.clone(),
        repository: format!("{}/{folder}/{name}", registry.address.namespace),
        stack: name.to_string(),
        version: version.clone(),
    };
    deployable::of(kind).pull(home, &reference, registry.insecure, None)?;
    Ok(())
}

/// The newest statement for `name` on `channel` that the registry holds as a
/// referrer of one of its version tags (`NS/releases/<name>`, a single stack:
/// `NS/stacks/<name>`), signed by a trusted key: written into the store, and the
/// release (or bundle) it approves pulled. False when there is none. The registry's
/// assignment is per customer; a GitOps runner asks the repository instead.
fn fetch_statement(
    home: &Home,
    registry: &Registry,
    kind: ApprovedKind,
    name: &str,
    channel_name: &str,
) -> Result<bool> {
    use stackpack_bundle::remote::Remote;
    use stackpack_schema::media_type;
    use stackpack_schema::oci::ImageManifest;

    let folder = deployable::of(kind).folder();
    let repository = format!("{}/{folder}/{name}", registry.address.namespace);
    let remote = Remote::new(&registry.address.host, registry.insecure)?;
    let keys = trusted(home)?;
    let mut versions: Vec<Version> = remote
        .tags(&repository)?
        .iter()
        .filter_map(|t| Version::parse(t).ok())
        .filter(|v| v.pre.is_empty() || home.config.policy.allow_prereleases)
        .collect();
    versions.sort_by(|a, b| b.cmp_precedence(a));
    for version in versions {
        let Some((subject_bytes, subject)) =
            remote.pull_manifest(&repository, &version.to_string())?
        else {
            continue;
        };
        let referrers = remote.referrers(
            &repository,
            &subject,
            Some(media_type::CHANNEL_STATEMENT_ARTIFACT),
        )?;
        for referrer in referrers {
            let Some((bytes, _)) =
                remote.pull_manifest(&repository, &referrer.digest.to_string())?
            else {
                continue;
            };
            let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) else {
                continue;
            };
            let Some(layer) = manifest
                .layers
                .iter()
                .find(|l| l.media_type == media_type::CHANNEL_STATEMENT_LAYER)
            else {
                continue;
            };
            let layer = remote.pull_blob_bytes(&repository, layer, channel::STATEMENT_LIMIT)?;
            let Ok(signed) = SignedChannelStatement::from_bytes(&layer) else {
                continue;
            };
            let s = &signed.statement;
            // Only a statement for exactly this tag's manifest, this name and kind,
            // signed by a trusted key for this channel, counts.
            if s.kind != kind
                || s.release != name
                || s.version != version
                || s.digest != subject
                || signed.verify(&keys, channel_name).is_err()
            {
                continue;
            }
            let media = manifest
                .subject
                .as_ref()
                .map(|d| d.media_type.clone())
                .unwrap_or_else(|| deployable::of(kind).media_type().into());
            let subject = stackpack_schema::oci::Descriptor::new(
                media,
                subject.clone(),
                subject_bytes.len() as u64,
            );
            if held(home, kind, name, &version)?.is_none() {
                pull(home, registry, kind, name, &version)?;
            }
            channel::write_statement(&home.store()?, &signed, &subject)?;
            return Ok(true);
        }
    }
    Ok(false)
}
