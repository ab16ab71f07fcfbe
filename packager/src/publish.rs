//! Publishing: version, build, sign and push every changed stack to a registry.
//!
//! Order of writes, so that a bundle becomes visible only once whole and signed:
//! blobs the registry lacks, then the manifest by digest (untagged), then the
//! signature (with the referrers fallback index where needed), and only then the
//! version tag. A stable tag that exists with another digest is an error, never an
//! overwrite. Two publishes racing for the same prerelease number both notice (the
//! tag is read before it is written, and again after a short settle) and the one
//! whose write was overwritten takes the next number. Registries that make tags
//! immutable (ours with `--prerelease-tags immutable`) close the race completely.

use semver::Version;
use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::{Progress, RegistryAddress, Remote};
use stackpack_bundle::transfer;
use stackpack_bundle::verify::{verify_bundle, Trust};
use stackpack_schema::digest::Digest;
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::version::{self, Bump};

use crate::build::build_stack;
use crate::error::{Error, Result};
use crate::plan::{Plan, StackPlan};
use crate::releases::from_remote;
use crate::repository::Repository;

/// How many prerelease numbers to try when racing other publishers.
const MAX_ATTEMPTS: usize = 20;

/// How long a written tag is left to settle before it is read back.
const TAG_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Makes a progress callback for one stack's uploads.
pub type ProgressFactory<'a> = &'a dyn Fn(&str) -> Progress;

/// What happened to one stack.
#[derive(Clone, Debug)]
pub struct PublishedStack {
    pub stack: String,
    /// The version now in the registry for this build (new or existing).
    pub version: Option<Version>,
    pub digest: Option<Digest>,
    pub published: bool,
    pub bump: Bump,
    pub reason: String,
    pub bytes_sent: u64,
    pub blobs_skipped: usize,
    /// Prerelease numbers lost to concurrent publishers before this one was won.
    pub collisions: usize,
}

/// Publishes the planned stacks. `layout` is a local layout the bundles are built
/// into before they are pushed.
pub fn publish(
    repo: &Repository,
    plan: &Plan,
    remote: &Remote,
    address: &RegistryAddress,
    key: &PrivateKey,
    layout: &ImageLayout,
    progress: Option<ProgressFactory<'_>>,
) -> Result<Vec<PublishedStack>> {
    let mut results = Vec::new();
    for stack_plan in &plan.stacks {
        let Some(first_version) = &stack_plan.next else {
            results.push(PublishedStack {
                stack: stack_plan.stack.name.clone(),
                version: stack_plan.previous.as_ref().map(|r| r.version.clone()),
                digest: stack_plan
                    .previous
                    .as_ref()
                    .map(|r| r.manifest_digest.clone()),
                published: false,
                bump: stack_plan.bump,
                reason: stack_plan.reason.clone(),
                bytes_sent: 0,
                blobs_skipped: 0,
                collisions: 0,
            });
            continue;
        };
        let progress_for = progress.map(|make| make(&stack_plan.stack.name));
        results.push(publish_stack(
            repo,
            plan,
            stack_plan,
            first_version.clone(),
            remote,
            address,
            key,
            layout,
            progress_for,
        )?);
    }
    Ok(results)
}

#[allow(clippy::too_many_arguments)]
fn publish_stack(
    repo: &Repository,
    plan: &Plan,
    stack_plan: &StackPlan,
    mut version: Version,
    remote: &Remote,
    address: &RegistryAddress,
    key: &PrivateKey,
    layout: &ImageLayout,
    progress: Option<Progress>,
) -> Result<PublishedStack> {
    let stack = &stack_plan.stack.name;
    let repository = address.stack_repository(stack);
    let what = format!("stack `{stack}`");
    let mut collisions = 0;
    let mut bytes_sent = 0;
    let mut blobs_skipped = 0;
    for _ in 0..MAX_ATTEMPTS {
        let built = build_stack(
            repo,
            plan,
            stack_plan,
            &version,
            Some(&address.namespace),
            key,
            layout,
        )?;
        verify_bundle(
            layout,
            stack,
            &version,
            &Trust::Keys(vec![key.public_key()]),
            &Limits::default(),
        )
        .map_err(|e| Error::refused(format!("the bundle just built does not verify: {e}")))?;
        let digest = built.manifest.digest.clone();
        let tag = version.to_string();

        // Someone may hold this version already.
        match remote.tag_digest(&repository, &tag).map_err(from_remote)? {
            Some(existing) if existing == digest => {
                // Our own earlier, interrupted run: make sure the signature is there.
                transfer::push_signature(remote, &repository, layout, &built.signature, &digest)
                    .map_err(transfer_error)?;
                return Ok(done(
                    stack_plan,
                    version,
                    digest,
                    bytes_sent,
                    blobs_skipped,
                    collisions,
                ));
            }
            Some(existing) => {
                version = after_collision(
                    remote,
                    &repository,
                    address,
                    &what,
                    &version,
                    &existing,
                    &digest,
                )?;
                collisions += 1;
                continue;
            }
            None => {}
        }

        let pushed = transfer::push_manifest_with_blobs(
            remote,
            &repository,
            layout,
            &built.manifest,
            &digest.to_string(),
            progress.clone(),
        )
        .map_err(transfer_error)?;
        bytes_sent += pushed.bytes_sent;
        blobs_skipped += pushed.blobs_skipped;
        let signed =
            transfer::push_signature(remote, &repository, layout, &built.signature, &digest)
                .map_err(transfer_error)?;
        bytes_sent += signed.bytes_sent;

        // Tag last, then read the tag back: a racing publisher may have taken it.
        let manifest_bytes =
            layout.read_blob(&digest, stackpack_bundle::layout::MAX_MANIFEST_SIZE)?;
        if let Some(existing) = remote.tag_digest(&repository, &tag).map_err(from_remote)? {
            if existing != digest {
                version = after_collision(
                    remote,
                    &repository,
                    address,
                    &what,
                    &version,
                    &existing,
                    &digest,
                )?;
                collisions += 1;
                continue;
            }
        }
        match write_tag_and_read_back(
            remote,
            &repository,
            &tag,
            &manifest_bytes,
            &built.manifest.media_type,
        )? {
            Some(existing) if existing == digest => {
                return Ok(done(
                    stack_plan,
                    version,
                    digest,
                    bytes_sent,
                    blobs_skipped,
                    collisions,
                ));
            }
            Some(existing) => {
                version = after_collision(
                    remote,
                    &repository,
                    address,
                    &what,
                    &version,
                    &existing,
                    &digest,
                )?;
                collisions += 1;
            }
            // The tag vanished right after our write: claim the same version again.
            None => {}
        }
    }
    Err(Error::refused(format!(
        "could not claim a prerelease number for `{stack}` after {MAX_ATTEMPTS} tries: other publishes keep taking them"
    ))
    .hint("run publish again once the other pipelines have finished"))
}

fn done(
    stack_plan: &StackPlan,
    version: Version,
    digest: Digest,
    bytes_sent: u64,
    blobs_skipped: usize,
    collisions: usize,
) -> PublishedStack {
    PublishedStack {
        stack: stack_plan.stack.name.clone(),
        version: Some(version),
        digest: Some(digest),
        published: true,
        bump: stack_plan.bump,
        reason: stack_plan.reason.clone(),
        bytes_sent,
        blobs_skipped,
        collisions,
    }
}

/// The next prerelease number on the same line that no tag holds yet.
fn next_free_prerelease(remote: &Remote, repository: &str, taken: &Version) -> Result<Version> {
    let mut existing: Vec<Version> = remote
        .tags(repository)
        .map_err(from_remote)?
        .iter()
        .filter_map(|t| Version::parse(t).ok())
        .collect();
    existing.push(taken.clone());
    let slug = taken
        .pre
        .as_str()
        .rsplit_once('.')
        .map(|(slug, _)| slug.to_string())
        .unwrap_or_default();
    let base = Version::new(taken.major, taken.minor, taken.patch);
    Ok(version::next_prerelease(&base, &slug, &existing))
}

/// The error for a stable tag held by other content. `what` names the artifact
/// (``stack `data-plane` `` or ``module `network` ``).
fn stable_conflict(
    address: &RegistryAddress,
    what: &str,
    version: &Version,
    existing: &Digest,
    ours: &Digest,
) -> Error {
    Error::refused(format!(
        "{what} version `{version}` already exists in `{address}` as `{}`, and this build is `{}`: stable versions are never overwritten",
        existing.short(),
        ours.short()
    ))
    .hint("another pipeline published this version from different content; rerun publish to get the next version")
}

/// `version`'s tag holds `existing`, not `ours`: an error for a stable version (it is
/// never overwritten), else the next prerelease number no tag holds yet.
pub(crate) fn after_collision(
    remote: &Remote,
    repository: &str,
    address: &RegistryAddress,
    what: &str,
    version: &Version,
    existing: &Digest,
    ours: &Digest,
) -> Result<Version> {
    if version::is_stable(version) {
        return Err(stable_conflict(address, what, version, existing, ours));
    }
    next_free_prerelease(remote, repository, version)
}

/// Writes `tag`, lets it settle, and reads it back: the digest it holds now.
pub(crate) fn write_tag_and_read_back(
    remote: &Remote,
    repository: &str,
    tag: &str,
    manifest_bytes: &[u8],
    media_type: &str,
) -> Result<Option<Digest>> {
    remote
        .push_manifest(repository, tag, manifest_bytes, media_type)
        .map_err(from_remote)?;
    // A rival that checked the tag just before we wrote it writes its own a moment
    // later: plain registries have no compare-and-swap, so wait for such a write
    // to land, then read the tag again. The later writer keeps the number; the
    // earlier one sees the change and takes the next.
    std::thread::sleep(TAG_SETTLE);
    remote.tag_digest(repository, tag).map_err(from_remote)
}

pub(crate) fn transfer_error(e: stackpack_bundle::transfer::TransferError) -> Error {
    match e {
        stackpack_bundle::transfer::TransferError::Remote(remote) => from_remote(remote),
        other => Error::refused(other.to_string()),
    }
}
