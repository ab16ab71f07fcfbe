//! Claiming a version tag for a built artifact: the one loop that stack bundles and
//! module packages share.
//!
//! Order of writes, so that an artifact becomes visible only once whole: blobs the
//! registry lacks, then the manifest by digest (untagged), then what must sit beside
//! it (a bundle's signature), and only then the version tag. A stable tag that
//! exists with another digest is an error, never an overwrite. Two publishes racing
//! for the same prerelease number both notice (the tag is read before it is written,
//! and again after a short settle) and the one whose write was overwritten takes the
//! next number. Registries that make tags immutable close the race completely.

use semver::Version;
use stackpack_bundle::layout::MAX_MANIFEST_SIZE;
use stackpack_bundle::remote::{Progress, Remote};
use stackpack_bundle::transfer;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::version;

use super::{transfer_error, Destination};
use crate::error::{Error, Result};

/// How many prerelease numbers to try when racing other publishers.
const MAX_ATTEMPTS: usize = 20;

/// How long a written tag is left to settle before it is read back.
const TAG_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

/// Something a publish builds and tags: a stack bundle or a module package.
pub(crate) trait Artifact {
    /// What a build leaves in the layout.
    type Built;

    /// Builds the artifact as `version` into the destination's layout. A prerelease
    /// lost to a rival is built again under the next number, since the version is
    /// part of the manifest.
    fn build(&self, version: &Version) -> Result<Self::Built>;

    /// The manifest the tag will point at.
    fn manifest<'b>(&self, built: &'b Self::Built) -> &'b Descriptor;

    /// Pushes what must be in the registry before the tag points at the manifest.
    /// Returns the bytes sent.
    fn push_companions(&self, _built: &Self::Built, _repository: &str) -> Result<u64> {
        Ok(0)
    }

    /// The tag now holds this build's manifest.
    fn claimed(&self, _built: &Self::Built, _version: &Version) -> Result<()> {
        Ok(())
    }
}

/// Where and under which name one artifact is claimed.
pub(crate) struct ClaimOptions<'a> {
    pub destination: &'a Destination<'a>,
    /// The registry repository (`acme/stacks/data-plane`).
    pub repository: String,
    /// Names the artifact in messages: ``stack `data-plane` `` or ``module `network` ``.
    pub what: String,
    pub progress: Option<Progress>,
}

/// The version an artifact ended up with, and what it took to get there.
#[derive(Clone, Debug)]
pub(crate) struct Claimed {
    pub version: Version,
    pub digest: Digest,
    pub bytes_sent: u64,
    pub blobs_skipped: usize,
    /// Time spent sending blobs and the manifest (builds, signatures and the tag's
    /// settle time excluded): what compares with another tool's copy.
    pub push_seconds: f64,
    /// Prerelease numbers lost to concurrent publishers before this one was won.
    pub collisions: usize,
}

/// How one attempt at a tag ended.
enum Attempt {
    /// The tag holds our manifest.
    Won,
    /// Another manifest holds the tag.
    Lost(Digest),
    /// The tag vanished right after our write: claim the same version again.
    Vanished,
}

/// What the attempts at one artifact have sent so far.
#[derive(Default)]
struct Sent {
    bytes: u64,
    blobs_skipped: usize,
    push_seconds: f64,
}

/// Builds, pushes and tags `artifact`, starting at `first` and moving to the next
/// free prerelease number while rivals hold the tag.
pub(crate) fn claim_tag<A: Artifact>(
    options: &ClaimOptions<'_>,
    artifact: &A,
    first: Version,
) -> Result<Claimed> {
    let mut version = first;
    let mut sent = Sent::default();
    let mut collisions = 0;
    for _ in 0..MAX_ATTEMPTS {
        let built = artifact.build(&version)?;
        let digest = artifact.manifest(&built).digest.clone();
        match attempt(options, artifact, &built, &version, &mut sent)? {
            Attempt::Won => {
                artifact.claimed(&built, &version)?;
                return Ok(Claimed {
                    version,
                    digest,
                    bytes_sent: sent.bytes,
                    blobs_skipped: sent.blobs_skipped,
                    push_seconds: sent.push_seconds,
                    collisions,
                });
            }
            Attempt::Lost(existing) => {
                version = after_collision(options, &version, &existing, &digest)?;
                collisions += 1;
            }
            Attempt::Vanished => {}
        }
    }
    Err(Error::refused(format!(
        "could not claim a prerelease number for {} after {MAX_ATTEMPTS} tries: other publishes keep taking them",
        options.what
    ))
    .hint("run publish again once the other pipelines have finished"))
}

/// One try at `version`'s tag, adding what it pushes to `sent`.
fn attempt<A: Artifact>(
    options: &ClaimOptions<'_>,
    artifact: &A,
    built: &A::Built,
    version: &Version,
    sent: &mut Sent,
) -> Result<Attempt> {
    let Destination { remote, layout, .. } = options.destination;
    let repository = options.repository.as_str();
    let manifest = artifact.manifest(built);
    let digest = &manifest.digest;
    let tag = version.to_string();

    match remote.tag_digest(repository, &tag)? {
        Some(existing) if existing == *digest => {
            // Our own earlier, interrupted run: make sure its companions are there.
            artifact.push_companions(built, repository)?;
            return Ok(Attempt::Won);
        }
        Some(existing) => return Ok(Attempt::Lost(existing)),
        None => {}
    }

    let pushing = std::time::Instant::now();
    let pushed = transfer::push_manifest_with_blobs(
        remote,
        repository,
        layout,
        manifest,
        &digest.to_string(),
        options.progress.clone(),
    )
    .map_err(transfer_error)?;
    sent.push_seconds += pushing.elapsed().as_secs_f64();
    sent.bytes += pushed.bytes_sent;
    sent.blobs_skipped += pushed.blobs_skipped;
    sent.bytes += artifact.push_companions(built, repository)?;

    // Tag last, then read the tag back: a racing publisher may have taken it.
    let manifest_bytes = layout.read_blob(digest, MAX_MANIFEST_SIZE)?;
    if let Some(existing) = remote.tag_digest(repository, &tag)? {
        if existing != *digest {
            return Ok(Attempt::Lost(existing));
        }
    }
    let now = write_tag_and_read_back(
        remote,
        repository,
        &tag,
        &manifest_bytes,
        &manifest.media_type,
    )?;
    Ok(match now {
        Some(existing) if existing == *digest => Attempt::Won,
        Some(existing) => Attempt::Lost(existing),
        None => Attempt::Vanished,
    })
}

/// `version`'s tag holds `existing`, not `ours`: an error for a stable version (it is
/// never overwritten), else the next prerelease number no tag holds yet.
fn after_collision(
    options: &ClaimOptions<'_>,
    version: &Version,
    existing: &Digest,
    ours: &Digest,
) -> Result<Version> {
    if version::is_stable(version) {
        return Err(stable_conflict(options, version, existing, ours));
    }
    next_free_prerelease(options.destination.remote, &options.repository, version)
}

/// The error for a stable tag held by other content.
fn stable_conflict(
    options: &ClaimOptions<'_>,
    version: &Version,
    existing: &Digest,
    ours: &Digest,
) -> Error {
    Error::refused(format!(
        "{} version `{version}` already exists in `{}` as `{}`, and this build is `{}`: stable versions are never overwritten",
        options.what,
        options.destination.address,
        existing.short(),
        ours.short()
    ))
    .hint("another pipeline published this version from different content; rerun publish to get the next version")
}

/// The next prerelease number on the same line that no tag holds yet.
fn next_free_prerelease(remote: &Remote, repository: &str, taken: &Version) -> Result<Version> {
    let existing: Vec<Version> = remote
        .tags(repository)?
        .iter()
        .filter_map(|t| Version::parse(t).ok())
        .collect();
    Ok(version::next_prerelease_past(taken, &existing))
}

/// Writes `tag`, lets it settle, and reads it back: the digest it holds now.
fn write_tag_and_read_back(
    remote: &Remote,
    repository: &str,
    tag: &str,
    manifest_bytes: &[u8],
    media_type: &str,
) -> Result<Option<Digest>> {
    remote.push_manifest(repository, tag, manifest_bytes, media_type)?;
    // A rival that checked the tag just before we wrote it writes its own a moment
    // later: plain registries have no compare-and-swap, so wait for such a write
    // to land, then read the tag again. The later writer keeps the number; the
    // earlier one sees the change and takes the next.
    std::thread::sleep(TAG_SETTLE);
    remote.tag_digest(repository, tag).map_err(Error::from)
}
