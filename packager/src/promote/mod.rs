//! Promotion: the vendor's signed "release R version V (digest D) is approved for
//! channel C" (a [`SignedChannelStatement`]), the one thing a rollout starts from.
//!
//! - [`resolve_remote`] and [`resolve_local`] find what is approved: the release index
//!   `<namespace>/releases/<name>:<version>`, else the stack bundle
//!   `<namespace>/stacks/<name>:<version>` (a single stack is a release of one);
//! - [`sign`] makes the statement;
//! - [`push`] sends it as an OCI artifact whose `subject` is what it approves, into
//!   the same repository: our registry records the promotion from it, any other
//!   registry keeps it as a referrer (through the tag-schema fallback on registries
//!   without the referrers API, as bundle signatures are);
//! - [`forecast`] reads the registry's forecast of what is promoted, and refuses
//!   when a customer would lose a stateful resource without a person approving;
//! - [`pull_statements`] copies a subject's statements for one channel into a
//!   layout, for `export --channel`.

pub mod forecast;

use semver::Version;
use stackpack_bundle::channel::{read_statement, statement_artifact, statement_entry_annotations};
use stackpack_bundle::layout::{ImageLayout, MAX_MANIFEST_SIZE};
use stackpack_bundle::release::find_release;
use stackpack_bundle::remote::{RegistryAddress, Remote};
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Descriptor, ImageManifest};
use stackpack_schema::rollout::{
    ApprovedKind, ChannelStatement, SignedChannelStatement, CHANNEL_STATEMENT_FORMAT,
};
use stackpack_schema::signature::{PublicKey, SignatureEnvelope, SigningKey};

use crate::error::{Error, Result};
use crate::release::publish::fetch::{release_repository, remote_release};

/// What a promotion approves, as found.
#[derive(Clone, Debug)]
pub struct Approved {
    pub kind: ApprovedKind,
    pub name: String,
    pub version: Version,
    /// The repository holding it (`<namespace>/releases/<name>` or
    /// `<namespace>/stacks/<name>`); the statement goes there too.
    pub repository: String,
    /// The release index (or bundle manifest): the statement's subject.
    pub subject: Descriptor,
    /// The keys whose signatures on it verify (a release's description, a bundle's
    /// manifest), for a warning when the promoting key is not among them.
    pub signers: Vec<PublicKey>,
}

/// Who promotes, what for, and when.
#[derive(Clone, Debug)]
pub struct Promotion {
    pub channel: String,
    pub required: bool,
    /// RFC 3339, UTC.
    pub promoted_at: String,
    pub promoted_by: Option<String>,
}

/// Refuses a channel name the registry and the runner would not take: the same rules
/// as every other name (`stable`, `beta`, `lts-2026`).
pub fn check_channel(channel: &str) -> Result<()> {
    stackpack_schema::reference::validate_name(channel).map_err(|_| {
        Error::usage(format!("`{channel}` is not a channel name")).hint(
            "a channel name is lowercase letters, digits and single `.`, `_` or `-` between them, such as `stable` or `beta`",
        )
    })
}

/// `name@version` is not published in `place`; `published` are the versions of
/// `name` that are (as a release or a stack bundle), named newest first.
fn not_found(name: &str, version: &Version, place: &str, published: &[Version]) -> Error {
    let mut published: Vec<&Version> = published.iter().collect();
    published.sort_by(|a, b| b.cmp_precedence(a));
    published.dedup();
    let (versions, hint) = match published.first() {
        None => (
            format!("; nothing named `{name}` is published there"),
            "publish it first with `stackpack publish`: only a published version can be promoted".to_string(),
        ),
        Some(newest) => (
            format!(
                "; its published versions: {}",
                published
                    .iter()
                    .take(10)
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "promote a published version (the newest is `{name}@{newest}`), or publish `{version}` first with `stackpack publish`"
            ),
        ),
    };
    Error::usage(format!(
        "`{name}@{version}` is neither a release nor a stack bundle in `{place}`{versions}"
    ))
    .hint(hint)
}

/// The versions of `name` tagged in `repositories` (what cannot be listed is left
/// out: this only feeds a refusal's words).
fn remote_versions(remote: &Remote, repositories: &[&str]) -> Vec<Version> {
    repositories
        .iter()
        .flat_map(|repository| remote.tags(repository).unwrap_or_default())
        .filter_map(|tag| tag.parse::<Version>().ok())
        .collect()
}

/// Finds `name@version` in the registry: the release index, else the stack bundle.
pub fn resolve_remote(
    remote: &Remote,
    address: &RegistryAddress,
    name: &str,
    version: &Version,
) -> Result<Approved> {
    let repository = release_repository(address, name);
    if let Some(release) = remote_release(remote, &repository, version)? {
        let wrong = |what: String| {
            Error::refused(format!(
                "`{}/{repository}:{version}` is not release `{name}@{version}`: {what}",
                remote.host()
            ))
            .hint("the tag was moved or written by hand; publish the release again with `stackpack publish`")
        };
        let annotated = release
            .index
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotation::VERSION));
        if annotated.map(String::as_str) != Some(version.to_string().as_str()) {
            return Err(wrong(format!(
                "its index says version `{}`",
                annotated.map_or("(none)", String::as_str)
            )));
        }
        if release.description.name != name || &release.description.version != version {
            return Err(wrong(format!(
                "its description names `{}@{}`",
                release.description.name, release.description.version
            )));
        }
        let signers = remote_signers(remote, &repository, &release.index.manifests);
        return Ok(Approved {
            kind: ApprovedKind::Release,
            name: name.to_string(),
            version: version.clone(),
            repository,
            subject: release.descriptor,
            signers,
        });
    }
    let stack_repository = address.stack_repository(name);
    let Some((bytes, digest)) = remote.pull_manifest(&stack_repository, &version.to_string())?
    else {
        let published = remote_versions(remote, &[&repository, &stack_repository]);
        return Err(not_found(name, version, &address.to_string(), &published));
    };
    let repository = stack_repository;
    let manifest: ImageManifest = serde_json::from_slice(&bytes).map_err(|e| {
        Error::refused(format!(
            "`{}/{repository}:{version}` is unreadable: {e}",
            remote.host()
        ))
    })?;
    if manifest.artifact_type.as_deref() != Some(media_type::BUNDLE_ARTIFACT) {
        return Err(Error::refused(format!(
            "`{}/{repository}:{version}` is not a Stackpack bundle (its artifactType is `{}`)",
            remote.host(),
            manifest.artifact_type.as_deref().unwrap_or("(none)")
        ))
        .hint("promote releases and stack bundles that `stackpack publish` pushed"));
    }
    let signers = remote
        .referrers(&repository, &digest, Some(media_type::SIGNATURE_ARTIFACT))
        .map(|found| remote_signers(remote, &repository, &found))
        .unwrap_or_default();
    let mut subject = Descriptor::new(media_type::OCI_MANIFEST, digest, bytes.len() as u64);
    subject.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
    Ok(Approved {
        kind: ApprovedKind::Stack,
        name: name.to_string(),
        version: version.clone(),
        repository,
        subject,
        signers,
    })
}

/// The keys of the signature manifests among `entries` whose envelopes verify. Only
/// feeds a warning, so what cannot be read is left out rather than refused.
fn remote_signers(remote: &Remote, repository: &str, entries: &[Descriptor]) -> Vec<PublicKey> {
    let mut signers = Vec::new();
    for entry in entries
        .iter()
        .filter(|d| d.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT))
    {
        let Ok(Some((bytes, _))) = remote.pull_manifest(repository, &entry.digest.to_string())
        else {
            continue;
        };
        let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) else {
            continue;
        };
        for layer in &manifest.layers {
            let signer = remote
                .pull_blob_bytes(repository, layer, MAX_MANIFEST_SIZE)
                .ok()
                .and_then(|bytes| SignatureEnvelope::from_bytes(&bytes).ok())
                .and_then(|envelope| envelope.verify_integrity().ok());
            signers.extend(signer);
        }
    }
    signers
}

/// Finds `name@version` in an image layout (the airgapped vendor flow): the release,
/// else the stack bundle, with the keys that signed it.
pub fn resolve_local(layout: &ImageLayout, name: &str, version: &Version) -> Result<Approved> {
    // As a layout names its entries (`releases/<name>:<version>`); nothing is pushed.
    let repository = |kind: &str| format!("{kind}/{name}");
    if let Some(found) = find_release(layout, name, version)? {
        let mut subject = Descriptor::new(found.media_type, found.digest, found.size);
        subject.artifact_type = Some(media_type::RELEASE_ARTIFACT.into());
        let signers = layout_signers(layout, &subject.digest)?;
        return Ok(Approved {
            kind: ApprovedKind::Release,
            name: name.to_string(),
            version: version.clone(),
            repository: repository("releases"),
            subject,
            signers,
        });
    }
    if let Some(found) = layout.find_bundle(name, version)? {
        let mut subject = Descriptor::new(found.media_type, found.digest, found.size);
        subject.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
        let signers = layout_signers(layout, &subject.digest)?;
        return Ok(Approved {
            kind: ApprovedKind::Stack,
            name: name.to_string(),
            version: version.clone(),
            repository: repository("stacks"),
            subject,
            signers,
        });
    }
    let published = layout.versions(name).unwrap_or_default();
    Err(not_found(
        name,
        version,
        &layout.root().display().to_string(),
        &published,
    ))
}

/// The vendor's signed statement approving `approved` for the promotion's channel.
pub fn sign(
    approved: &Approved,
    promotion: &Promotion,
    key: &dyn SigningKey,
) -> Result<SignedChannelStatement> {
    SignedChannelStatement::try_sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: promotion.channel.clone(),
            kind: approved.kind,
            release: approved.name.clone(),
            version: approved.version.clone(),
            digest: approved.subject.digest.clone(),
            required: promotion.required,
            promoted_at: promotion.promoted_at.clone(),
            promoted_by: promotion.promoted_by.clone(),
            key_id: String::new(),
        },
        key,
    )
    .map_err(signing_failed)
}

/// A signature the vendor's key (a KMS key) could not make: nothing was pushed.
fn signing_failed(e: stackpack_schema::signature::SignError) -> Error {
    Error::refused(format!("nothing was promoted: {e}"))
        .hint("check the signing key (`--key`), then run the same promote again")
}

/// What a push left in the registry.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// The statement manifest, as listed among the subject's referrers.
    pub manifest: Descriptor,
    /// False when the registry has no referrers API and the tag-schema fallback index
    /// (`sha256-<hex>`) lists it instead.
    pub referrers_api: bool,
}

/// Pushes the statement into `approved.repository`: the empty config, the statement
/// layer, then the manifest by digest (untagged: it is found as a referrer of the
/// release index), and on a registry without the referrers API, an entry in the
/// fallback index. A registry that refuses it (our registry's rollout refuses, say,
/// a version older than the channel's newest) is shown in its own words.
pub fn push(
    remote: &Remote,
    approved: &Approved,
    signed: &SignedChannelStatement,
) -> Result<Pushed> {
    let repository = &approved.repository;
    let (manifest, layer) = statement_artifact(signed, &approved.subject);
    remote.push_blob_bytes(repository, media_type::EMPTY_BLOB)?;
    remote.push_blob_bytes(repository, &layer)?;
    let bytes = manifest.to_bytes();
    let digest = Digest::of(&bytes);
    remote
        .push_manifest(
            repository,
            &digest.to_string(),
            &bytes,
            media_type::OCI_MANIFEST,
        )
        .map_err(|e| refused_promotion(e, approved, signed))?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, bytes.len() as u64);
    descriptor.artifact_type = Some(media_type::CHANNEL_STATEMENT_ARTIFACT.into());
    // The spec has a referrers index list each manifest's annotations: readers can
    // pick a channel's statements without opening every one.
    descriptor.annotations = manifest.annotations.clone();
    let referrers_api = remote.has_referrers_api(repository, &approved.subject.digest)?;
    if !referrers_api {
        remote.add_to_referrers_fallback(repository, &approved.subject.digest, &descriptor)?;
    }
    Ok(Pushed {
        manifest: descriptor,
        referrers_api,
    })
}

/// Pushes the statement again as a Sigstore bundle (DSSE, predicate
/// [`CHANNEL_PREDICATE`](stackpack_schema::attest::statement::CHANNEL_PREDICATE)) referring to the same release index, so the customer's own
/// Sigstore tools can check the approval too. After [`push`]: the registry's rollout
/// starts from the Stackpack statement, and this one only mirrors it.
pub fn push_sigstore(
    remote: &Remote,
    approved: &Approved,
    signed: &SignedChannelStatement,
    key: &dyn SigningKey,
) -> Result<()> {
    use stackpack_bundle::sign::{referrer_manifest, Referrer};
    use stackpack_schema::attest::sigstore::SigstoreBundle;
    use stackpack_schema::attest::statement::{Statement, Subject, CHANNEL_PREDICATE};
    let repository = &approved.repository;
    let statement = Statement::new(
        Subject::new(repository, &approved.subject.digest),
        CHANNEL_PREDICATE,
        serde_json::to_value(&signed.statement).expect("a statement serializes"),
    );
    let sealed = SigstoreBundle::seal(&statement, key)
        .map_err(signing_failed)?
        .to_bytes();
    let mut annotations = stackpack_schema::oci::Annotations::new();
    annotations.insert(annotation::PREDICATE_TYPE.into(), CHANNEL_PREDICATE.into());
    annotations.insert(annotation::CHANNEL.into(), signed.statement.channel.clone());
    let manifest = referrer_manifest(
        &approved.subject,
        Referrer {
            artifact_type: media_type::SIGSTORE_BUNDLE,
            layer_media_type: media_type::SIGSTORE_BUNDLE,
            content: &sealed,
            created: &signed.statement.promoted_at,
            annotations,
        },
    );
    remote.push_blob_bytes(repository, media_type::EMPTY_BLOB)?;
    remote.push_blob_bytes(repository, &sealed)?;
    let bytes = manifest.to_bytes();
    let digest = Digest::of(&bytes);
    remote.push_manifest(
        repository,
        &digest.to_string(),
        &bytes,
        media_type::OCI_MANIFEST,
    )?;
    if !remote.has_referrers_api(repository, &approved.subject.digest)? {
        let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, bytes.len() as u64);
        descriptor.artifact_type = Some(media_type::SIGSTORE_BUNDLE.into());
        remote.add_to_referrers_fallback(repository, &approved.subject.digest, &descriptor)?;
    }
    Ok(())
}

/// A manifest `PUT` the registry refused on its merits: the promotion is refused, with
/// the registry's reason; anything else is the transport's error as usual.
fn refused_promotion(
    error: stackpack_bundle::remote::RemoteError,
    approved: &Approved,
    signed: &SignedChannelStatement,
) -> Error {
    match &error {
        // Our registry answers 404 for a channel it does not have (its words name
        // the channels it has): the command named something wrong, exit 2.
        stackpack_bundle::remote::RemoteError::Rejected { host, status: 404, detail, .. } => {
            Error::usage(format!(
                "registry `{host}` refused to promote {} `{}@{}`: {detail}",
                approved.kind, approved.name, approved.version,
            ))
            .caused_by(error)
        }
        stackpack_bundle::remote::RemoteError::Rejected { host, status, detail, .. } => {
            Error::refused(format!(
                "registry `{host}` refused to promote {} `{}@{}` to channel `{}` (HTTP {status}): {detail}",
                approved.kind,
                approved.name,
                approved.version,
                signed.statement.channel
            ))
            .hint("a channel only moves forward: promote a newer version, or see the channel's rollout in the registry")
            .caused_by(error)
        }
        _ => Error::from(error),
    }
}

/// Copies the statements for `channel` whose subject is `subject` (in `repository`)
/// into `layout`, byte for byte, each listed in its `index.json` as
/// [`stackpack_bundle::channel::write_statement`] lists one. Returns their index
/// entries; a referrer that is not a readable statement is skipped with `skipped`
/// told why.
pub fn pull_statements(
    remote: &Remote,
    repository: &str,
    subject: &Digest,
    channel: &str,
    layout: &ImageLayout,
    skipped: &mut dyn FnMut(&Digest, String),
) -> Result<Vec<(Descriptor, SignedChannelStatement)>> {
    let mut found = Vec::new();
    for referrer in remote.referrers(
        repository,
        subject,
        Some(media_type::CHANNEL_STATEMENT_ARTIFACT),
    )? {
        // The annotation narrows the reads; the statement itself decides below.
        if referrer
            .annotation(annotation::CHANNEL)
            .is_some_and(|c| c != channel)
        {
            continue;
        }
        let Some((bytes, digest)) =
            remote.pull_manifest(repository, &referrer.digest.to_string())?
        else {
            continue;
        };
        let manifest: ImageManifest = match serde_json::from_slice(&bytes) {
            Ok(manifest) => manifest,
            Err(e) => {
                skipped(&digest, format!("not a manifest: {e}"));
                continue;
            }
        };
        let blobs: Vec<Descriptor> = manifest
            .blobs()
            .filter(|blob| blob.size <= stackpack_bundle::channel::STATEMENT_LIMIT)
            .cloned()
            .collect();
        remote.pull_blobs(repository, &blobs, layout, None)?;
        layout.write_blob(&bytes)?;
        let mut descriptor =
            Descriptor::new(media_type::OCI_MANIFEST, digest.clone(), bytes.len() as u64);
        descriptor.artifact_type = Some(media_type::CHANNEL_STATEMENT_ARTIFACT.into());
        let signed = match read_statement(layout, &descriptor) {
            Ok(signed) => signed,
            Err(e) => {
                skipped(&digest, e.to_string());
                continue;
            }
        };
        if signed.statement.channel != channel || &signed.statement.digest != subject {
            continue;
        }
        descriptor.annotations = Some(statement_entry_annotations(&signed));
        layout.update_index(|index| {
            index.manifests.retain(|d| d.digest != descriptor.digest);
            index.manifests.push(descriptor.clone());
        })?;
        found.push((descriptor, signed));
    }
    Ok(found)
}

/// The keys whose signatures of `subject` verify in `layout`: a release index's
/// (signatures of its description, entries of the index) or a bundle's. What cannot
/// be read is left out: the caller refuses a key that is not among them.
pub fn layout_signers(
    layout: &ImageLayout,
    subject: &stackpack_schema::digest::Digest,
) -> Result<Vec<PublicKey>> {
    use stackpack_schema::oci::ImageIndex;
    let bytes = layout.read_blob(subject, MAX_MANIFEST_SIZE)?;
    let (signed, candidates) = match serde_json::from_slice::<ImageIndex>(&bytes) {
        Ok(index) if !index.manifests.is_empty() => {
            let description = index.manifests[0].digest.clone();
            let entries = index
                .manifests
                .into_iter()
                .skip(1)
                .filter(|d| d.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT))
                .collect();
            (description, entries)
        }
        _ => (subject.clone(), layout.signatures_for(subject)?),
    };
    let mut ids = Vec::new();
    for candidate in candidates {
        let Ok(bytes) = layout.read_blob(&candidate.digest, MAX_MANIFEST_SIZE) else {
            continue;
        };
        let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) else {
            continue;
        };
        let Some(layer) = manifest
            .layers
            .iter()
            .find(|l| l.media_type == media_type::SIGNATURE_LAYER)
        else {
            continue;
        };
        let Ok(envelope) = layout.read_blob(&layer.digest, 64 * 1024) else {
            continue;
        };
        let Ok(envelope) = SignatureEnvelope::from_bytes(&envelope) else {
            continue;
        };
        if envelope.payload.manifest_digest != signed {
            continue;
        }
        if let Ok(key) = envelope.verify_integrity() {
            ids.push(key);
        }
    }
    Ok(ids)
}
