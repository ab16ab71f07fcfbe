//! Publishing: version, build, sign and push every changed stack to a registry.
//!
//! A bundle becomes visible only once whole and signed: the `claim` module pushes blobs,
//! the manifest by digest and the signature before it writes the version tag, and
//! settles races for prerelease numbers. Module packages share that loop.

mod claim;

use semver::Version;
use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::{Progress, RegistryAddress, Remote};
use stackpack_bundle::transfer;
use stackpack_bundle::verify::{verify_bundle, Trust};
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::signature::SigningKey;
use stackpack_schema::version::Bump;

use crate::build::{build_stack, BuiltBundle};
use crate::error::{Error, Result};
use crate::plan::{Plan, StackPlan};
use crate::repository::Repository;

pub(crate) use claim::{claim_tag, Artifact, ClaimOptions, Claimed};

/// Makes a progress callback for one stack's or module's uploads.
pub type ProgressFactory<'a> = &'a dyn Fn(&str) -> Progress;

/// Where a publish sends what it builds.
#[derive(Clone, Copy)]
pub struct Destination<'a> {
    pub remote: &'a Remote,
    pub address: &'a RegistryAddress,
    /// A local layout that artifacts are built into before they are pushed.
    pub layout: &'a ImageLayout,
    /// Progress bars, one per artifact; none in CI logs or with `--quiet`.
    pub progress: Option<ProgressFactory<'a>>,
}

impl Destination<'_> {
    /// The claim options for one artifact in `repository`.
    pub(crate) fn claim(&self, repository: String, name: &str, what: String) -> ClaimOptions<'_> {
        ClaimOptions {
            destination: self,
            repository,
            what,
            progress: self.progress.map(|make| make(name)),
        }
    }
}

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
    /// Seconds spent sending blobs and the manifest.
    pub push_seconds: f64,
    /// Prerelease numbers lost to concurrent publishers before this one was won.
    pub collisions: usize,
}

impl PublishedStack {
    /// An unchanged stack: its latest version stays.
    fn unchanged(stack_plan: &StackPlan) -> Self {
        PublishedStack {
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
            push_seconds: 0.0,
            collisions: 0,
        }
    }

    fn claimed(stack_plan: &StackPlan, claimed: Claimed) -> Self {
        PublishedStack {
            stack: stack_plan.stack.name.clone(),
            version: Some(claimed.version),
            digest: Some(claimed.digest),
            published: true,
            bump: stack_plan.bump,
            reason: stack_plan.reason.clone(),
            bytes_sent: claimed.bytes_sent,
            blobs_skipped: claimed.blobs_skipped,
            push_seconds: claimed.push_seconds,
            collisions: claimed.collisions,
        }
    }
}

/// Publishes the planned stacks, signed with `key`.
pub fn publish(
    repo: &Repository,
    plan: &Plan,
    destination: &Destination<'_>,
    key: &dyn SigningKey,
) -> Result<Vec<PublishedStack>> {
    plan.stacks
        .iter()
        .map(|stack_plan| match &stack_plan.next {
            None => Ok(PublishedStack::unchanged(stack_plan)),
            Some(first_version) => {
                let bundle = StackBundle {
                    repo,
                    plan,
                    stack_plan,
                    key,
                    destination,
                };
                publish_stack(&bundle, first_version.clone())
            }
        })
        .collect()
}

fn publish_stack(bundle: &StackBundle<'_>, first_version: Version) -> Result<PublishedStack> {
    let stack = &bundle.stack_plan.stack.name;
    let options = bundle.destination.claim(
        bundle.destination.address.stack_repository(stack),
        stack,
        format!("stack `{stack}`"),
    );
    let claimed = claim_tag(&options, bundle, first_version)?;
    Ok(PublishedStack::claimed(bundle.stack_plan, claimed))
}

/// One planned stack, as the tag-claim loop builds and pushes it.
struct StackBundle<'a> {
    repo: &'a Repository,
    plan: &'a Plan,
    stack_plan: &'a StackPlan,
    key: &'a dyn SigningKey,
    destination: &'a Destination<'a>,
}

impl Artifact for StackBundle<'_> {
    type Built = BuiltBundle;

    fn build(&self, version: &Version) -> Result<BuiltBundle> {
        let layout = self.destination.layout;
        let built = build_stack(
            self.repo,
            self.plan,
            self.stack_plan,
            version,
            Some(&self.destination.address.namespace),
            self.key,
            layout,
        )?;
        verify_bundle(
            layout,
            &self.stack_plan.stack.name,
            version,
            &Trust::Keys(vec![self.key.public_key()]),
            &Limits::default(),
        )
        .map_err(|e| Error::refused(format!("the bundle just built does not verify: {e}")))?;
        Ok(built)
    }

    fn manifest<'b>(&self, built: &'b BuiltBundle) -> &'b Descriptor {
        &built.manifest
    }

    /// The signature and the attestations go up before the tag, so a tagged bundle
    /// is always signed and attested; a publish cut off before the tag leaves an
    /// untagged manifest that the next run finishes.
    fn push_companions(&self, built: &BuiltBundle, repository: &str) -> Result<u64> {
        let referrers: Vec<Descriptor> = std::iter::once(&built.signature)
            .chain(&built.attestations)
            .cloned()
            .collect();
        let pushed = transfer::push_referrers(
            self.destination.remote,
            repository,
            self.destination.layout,
            &referrers,
            &built.manifest.digest,
        )
        .map_err(transfer_error)?;
        Ok(pushed.bytes_sent)
    }
}

pub(crate) fn transfer_error(e: stackpack_bundle::transfer::TransferError) -> Error {
    match e {
        stackpack_bundle::transfer::TransferError::Remote(remote) => Error::from(remote),
        other => Error::refused(other.to_string()),
    }
}
