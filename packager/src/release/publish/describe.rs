//! The description of a release's next version: its stacks in apply order, each
//! pinned to the version this run published for it or else the latest stable (on
//! a pull request too: a branch pins its own prereleases only where it changed a
//! stack), its services resolved to digests, and what changed since the last
//! stable version. Nothing new when the parts match the latest version on this
//! line.

use std::collections::{BTreeMap, BTreeSet};

use semver::Version;
use stackpack_bundle::transfer::pull_bundle;
use stackpack_schema::bundle::Source;
use stackpack_schema::digest::Digest;
use stackpack_schema::release::{apply_order, ReleaseDescription, ReleaseStack, RELEASE_FORMAT};
use stackpack_schema::version::{self, Bump, Channel};

use super::changes::{engine_change, release_bump, release_changes, same_parts};
use super::engine::{carried_engine, CarriedEngine};
use super::fetch::{release_repository, release_versions, remote_release};
use super::services::{resolve_service, Connect, ResolvedService};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::publish::{transfer_error, Destination, PublishedStack};
use crate::repository::Repository;

/// What a release's next version is, if any.
pub enum Described {
    /// Its parts match the latest version on this line.
    Unchanged {
        version: Version,
        digest: Digest,
    },
    New(Box<NewRelease>),
}

/// A new release version, described but not yet written.
pub struct NewRelease {
    pub description: ReleaseDescription,
    pub services: Vec<ResolvedService>,
    /// The engine it carries, to write beside it.
    pub engine: Option<CarriedEngine>,
    pub bump: Bump,
}

/// Describes release `name` as this run would publish it.
pub fn describe_release(
    repo: &Repository,
    plan: &Plan,
    name: &str,
    published: &[PublishedStack],
    destination: &Destination<'_>,
    connect: Connect<'_>,
) -> Result<Described> {
    let settings = &repo.config.releases[name];
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for stack in &settings.stacks {
        let found = repo.stack(stack)?;
        graph.insert(stack.clone(), found.config.dependencies());
    }
    let order = apply_order(&graph)
        .map_err(|e| Error::refused(format!("release `{name}`: {e}")).at("stackpack.toml"))?;
    let stacks = order
        .iter()
        .map(|stack| pin_stack(repo, stack, published, destination))
        .collect::<Result<Vec<_>>>()?;
    let services = settings
        .services
        .iter()
        .map(|(service, reference)| {
            resolve_service(
                service,
                reference,
                destination.remote,
                connect,
                destination.layout,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let records: Vec<_> = services.iter().map(|s| s.service.clone()).collect();
    let engine = carried_engine(repo, name, &stacks, destination.layout)?;
    let pinned_engine = engine.as_ref().map(|e| &e.description);

    let remote = destination.remote;
    let repository = release_repository(destination.address, name);
    let versions = release_versions(remote, &repository)?;
    let stable = version::latest_stable(&versions).cloned();
    if let Some(latest) = latest_on_line(&versions, &plan.channel).or(stable.clone()) {
        if let Some(release) = remote_release(remote, &repository, &latest)? {
            if same_parts(&release.description, &stacks, &records)
                && release.description.engine.as_ref().map(|e| &e.digest)
                    == pinned_engine.map(|e| &e.digest)
            {
                return Ok(Described::Unchanged {
                    version: latest,
                    digest: release.descriptor.digest,
                });
            }
        }
    }
    let previous = match &stable {
        Some(stable) => remote_release(remote, &repository, stable)?.map(|r| r.description),
        None => None,
    };
    let changes = previous
        .as_ref()
        .map(|p| {
            let mut changes = release_changes(p, &stacks, &records);
            changes.extend(engine_change(name, p.engine.as_ref(), pinned_engine));
            changes
        })
        .unwrap_or_default();
    let bump = release_bump(&changes);
    let next = version::next_version(&versions, bump, &settings.initial_version(), &plan.channel);
    Ok(Described::New(Box::new(NewRelease {
        description: ReleaseDescription {
            format: RELEASE_FORMAT,
            name: name.to_string(),
            version: next,
            source: Source {
                repository: repo.source_address()?,
                commit: plan.commit.clone(),
                branch: plan.branch.clone(),
            },
            created: crate::build::rfc3339(plan.commit_time),
            stacks,
            services: records,
            changes,
            engine: pinned_engine.cloned(),
        },
        services,
        engine,
        bump,
    })))
}

/// The latest prerelease of this branch's line (`X.Y.Z-<slug>.<n>`); `None` on main.
fn latest_on_line(versions: &[Version], channel: &Channel) -> Option<Version> {
    let Channel::Prerelease { slug } = channel else {
        return None;
    };
    let on_line = versions.iter().filter(|v| {
        let base = Version::new(v.major, v.minor, v.patch);
        version::prerelease_number(v, &base, slug).is_some()
    });
    version::latest(on_line).cloned()
}

/// Pins `name`: the version this run published, else the latest stable in the
/// registry; its bundle is brought into the local layout when not there.
fn pin_stack(
    repo: &Repository,
    name: &str,
    published: &[PublishedStack],
    destination: &Destination<'_>,
) -> Result<ReleaseStack> {
    let stack = repo.stack(name)?;
    let repository = destination.address.stack_repository(name);
    let (version, digest) = match published.iter().find(|p| p.stack == name && p.published) {
        Some(PublishedStack {
            version: Some(version),
            digest: Some(digest),
            ..
        }) => (version.clone(), digest.clone()),
        _ => latest_stable_bundle(destination, &repository, name)?,
    };
    let layout = destination.layout;
    let held = layout.find_bundle(name, &version)?;
    if held.map(|d| d.digest) != Some(digest.clone()) {
        pull_bundle(
            destination.remote,
            &repository,
            name,
            &version,
            layout,
            None,
        )
        .map_err(transfer_error)?;
    }
    Ok(ReleaseStack {
        name: name.to_string(),
        version,
        digest,
        depends_on: stack.config.dependencies().into_iter().collect(),
        inputs_from: stack.config.inputs.from.clone(),
    })
}

fn latest_stable_bundle(
    destination: &Destination<'_>,
    repository: &str,
    name: &str,
) -> Result<(Version, Digest)> {
    let remote = destination.remote;
    let versions: Vec<Version> = remote
        .tags(repository)?
        .iter()
        .filter_map(|t| Version::parse(t).ok())
        .collect();
    let no_stable = || {
        Error::refused(format!(
            "stack `{name}` has no stable version in `{}`, so no release can pin it",
            destination.address
        ))
        .hint("publish the stack from the main branch first")
    };
    let latest = version::latest_stable(&versions)
        .cloned()
        .ok_or_else(no_stable)?;
    let digest = remote
        .tag_digest(repository, &latest.to_string())?
        .ok_or_else(no_stable)?;
    Ok((latest, digest))
}
