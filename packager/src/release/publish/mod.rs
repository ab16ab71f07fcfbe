//! Publishing releases: after the stacks, each `[releases.<name>]` whose parts
//! changed becomes a new version of one signed OCI image index in
//! `<namespace>/releases/<name>` (see `stackpack_schema::release`).
//!
//! - [`check_releases`] refuses a release that names a missing stack, depends on a
//!   stack outside it, or has a cycle, before anything is pushed;
//! - [`describe`] pins each stack (this run's version, else the latest stable) and
//!   each service (a tag resolved to its digest) and decides the version;
//! - `push` sends it whole, tag last; [`fetch`] reads releases back.

mod changes;
pub mod describe;
pub mod engine;
pub mod fetch;
mod push;
pub mod services;

use semver::Version;
use stackpack_bundle::release::write_release;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::release::ReleaseChange;
use stackpack_schema::signature::SigningKey;
use stackpack_schema::version::{self, Bump};

use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::publish::{Destination, PublishedStack};
use crate::repository::Repository;
use describe::{describe_release, Described};
use services::Connect;

/// What publishing one release did.
#[derive(Clone, Debug)]
pub struct PublishedRelease {
    pub name: String,
    /// The new version, or the latest one when nothing changed.
    pub version: Option<Version>,
    pub digest: Option<Digest>,
    pub published: bool,
    pub bump: Bump,
    pub changes: Vec<ReleaseChange>,
    pub bytes_sent: u64,
}

/// Refuses, before anything is pushed, a release whose graph `stackpack check`
/// refuses (see [`crate::release::graph`]): a missing stack, a name clash, a
/// dependency outside the release, a cycle, a wiring to a missing output or input,
/// a type that does not fit, a service reference that is not one.
pub fn check_releases(repo: &Repository) -> Result<()> {
    let graph = crate::release::graph::ReleaseGraph::load(&repo.root, &repo.config)?;
    let mut cache = crate::check::Cache::default();
    let reports =
        crate::release::graph::prove(&graph, &mut |path| cache.get(&repo.root.join(path)).ok());
    if let Some(report) = reports.iter().find(|r| r.refused) {
        let first = report
            .errors()
            .next()
            .expect("a refused release has an error");
        return Err(Error::refused(format!(
            "release `{}` cannot be published: {} ({} problem{} in all)",
            report.release,
            first.message,
            report.errors().count(),
            if report.errors().count() == 1 {
                ""
            } else {
                "s"
            }
        ))
        .at(first.location())
        .hint("run `stackpack check` to see every problem; nothing was pushed"));
    }
    Ok(())
}

/// Publishes every release of the repository whose parts changed. A publish
/// narrowed with `--stack` leaves alone the releases none of whose stacks it
/// selected: it neither built nor published their parts, and must not need them.
pub fn publish_releases(
    repo: &Repository,
    plan: &Plan,
    stacks: &[PublishedStack],
    destination: &Destination<'_>,
    key: &dyn SigningKey,
    connect: Connect<'_>,
) -> Result<Vec<PublishedRelease>> {
    let mut published = Vec::new();
    for (name, settings) in &repo.config.releases {
        let selected = |stack: &String| plan.stacks.iter().any(|s| &s.stack.name == stack);
        if !settings.stacks.iter().any(selected) {
            continue;
        }
        let described = describe_release(repo, plan, name, stacks, destination, connect)?;
        published.push(match described {
            Described::Unchanged { version, digest } => PublishedRelease {
                name: name.clone(),
                version: Some(version),
                digest: Some(digest),
                published: false,
                bump: Bump::Patch,
                changes: Vec::new(),
                bytes_sent: 0,
            },
            Described::New(new) => build_and_push(&new, destination, key)?,
        });
    }
    Ok(published)
}

/// How many prerelease numbers to try when racing other publishes of the branch.
const MAX_ATTEMPTS: usize = 20;

/// Writes the release into the local layout, signed, and pushes it. A prerelease
/// number another publish took meanwhile moves to the next free one; a stable
/// version is never overwritten.
fn build_and_push(
    new: &describe::NewRelease,
    destination: &Destination<'_>,
    key: &dyn SigningKey,
) -> Result<PublishedRelease> {
    let mut description = new.description.clone();
    let repository = fetch::release_repository(destination.address, &description.name);
    for _ in 0..MAX_ATTEMPTS {
        let (index, attestations) = write_signed(&description, new, &repository, destination, key)?;
        let built = push::BuiltRelease {
            version: &description.version,
            index: &index,
            attestations: &attestations,
            services: &new.services,
        };
        match push::push_release(destination, &repository, &built)? {
            push::Outcome::Tagged { bytes_sent } => {
                return Ok(PublishedRelease {
                    name: description.name.clone(),
                    version: Some(description.version.clone()),
                    digest: Some(index.digest),
                    published: true,
                    bump: new.bump,
                    changes: description.changes.clone(),
                    bytes_sent,
                })
            }
            push::Outcome::Taken(existing) => {
                // The layout must not keep a version the registry holds otherwise.
                destination
                    .layout
                    .update_index(|i| i.manifests.retain(|d| d.digest != index.digest))?;
                if version::is_stable(&description.version) {
                    return Err(Error::refused(format!(
                        "release `{}@{}` already exists in `{}` as `{}`, and this one is `{}`: published versions are never overwritten",
                        description.name,
                        description.version,
                        destination.address,
                        existing.short(),
                        index.digest.short()
                    ))
                    .hint("another pipeline published this release version; rerun publish to get the next version"));
                }
                description.version =
                    next_free_prerelease(destination, &repository, &description.version)?;
            }
        }
    }
    Err(Error::refused(format!(
        "could not claim a prerelease number for release `{}` after {MAX_ATTEMPTS} tries: other publishes keep taking them",
        description.name
    ))
    .hint("run publish again once the other pipelines have finished"))
}

/// The next prerelease number on `taken`'s line that no tag holds.
fn next_free_prerelease(
    destination: &Destination<'_>,
    repository: &str,
    taken: &Version,
) -> Result<Version> {
    let existing = fetch::release_versions(destination.remote, repository)?;
    Ok(version::next_prerelease_past(taken, &existing))
}

/// Writes `description` as a release index into the local layout, its description
/// signed (see `bundle::release`), and adds the index to the layout's `index.json`;
/// then its attestations. Returns the index and the attestations' descriptors.
fn write_signed(
    description: &stackpack_schema::release::ReleaseDescription,
    new: &describe::NewRelease,
    repository: &str,
    destination: &Destination<'_>,
    key: &dyn SigningKey,
) -> Result<(Descriptor, Vec<Descriptor>)> {
    let layout = destination.layout;
    let services: Vec<Descriptor> = new.services.iter().map(|s| s.descriptor.clone()).collect();
    if let Some(engine) = &new.engine {
        stackpack_bundle::carried_engine::write(layout, &engine.binaries, &engine.manifest)?;
    }
    let index = write_release(layout, description, &services, key, repository)?;
    fetch::add_release_entries(layout, &index, &description.name, &description.version)?;
    let attestations = crate::attest::attest_release(description, &index, repository, key, layout)?;
    Ok((index, attestations))
}
