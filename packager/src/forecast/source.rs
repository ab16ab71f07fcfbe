//! Where a forecast reads what it plans: release indexes (a registry, or the local
//! image layout of `build`), the bundles they pin, and the registry's answer to
//! "which customers would this rollout reach, running what".

use std::collections::BTreeMap;

use semver::Version;
use stackpack_bundle::layout::{ImageLayout, MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE};
use stackpack_bundle::remote::{RegistryAddress, Remote};
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::{ImageIndex, ImageManifest};
use stackpack_schema::release::{ReleaseDescription, Wire};
use stackpack_schema::rollout::ApprovedKind;

use crate::error::{Error, Result};
use crate::releases::ReleaseSource;

/// One stack of a step along a customer's path: what is applied or planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopStack {
    pub name: String,
    pub version: Version,
    /// The bundle manifest's digest the release index (or the ledger) pins.
    pub digest: Digest,
    /// Inputs taken from other stacks' outputs.
    pub inputs_from: BTreeMap<String, Wire>,
}

/// One version of a release (or of a single stack) along a customer's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    pub version: Version,
    /// In apply order.
    pub stacks: Vec<HopStack>,
}

impl Hop {
    pub fn of_release(description: &ReleaseDescription) -> Hop {
        Hop {
            version: description.version.clone(),
            stacks: description
                .stacks
                .iter()
                .map(|s| HopStack {
                    name: s.name.clone(),
                    version: s.version.clone(),
                    digest: s.digest.clone(),
                    inputs_from: s.inputs_from.clone(),
                })
                .collect(),
        }
    }
}

/// What is forecast: a release version, or a single stack's (a release of one).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub kind: ApprovedKind,
    pub name: String,
    /// The release index's digest (for a stack, its bundle manifest's).
    pub digest: Digest,
    pub hop: Hop,
}

/// Reads release indexes by name and version.
pub trait ReleaseIndexes {
    /// The description and the index's digest of `name@version`, if it exists.
    fn release_index(
        &self,
        name: &str,
        version: &Version,
    ) -> Result<Option<(ReleaseDescription, Digest)>>;
}

impl ReleaseIndexes for ImageLayout {
    fn release_index(
        &self,
        name: &str,
        version: &Version,
    ) -> Result<Option<(ReleaseDescription, Digest)>> {
        let Some(descriptor) = stackpack_bundle::release::find_release(self, name, version)? else {
            return Ok(None);
        };
        let invalid = |what: String| {
            Error::refused(format!("release `{name}@{version}` is unreadable: {what}"))
                .at(self.root().display())
        };
        let index: ImageIndex =
            serde_json::from_slice(&self.read_blob(&descriptor.digest, MAX_MANIFEST_SIZE)?)
                .map_err(|e| invalid(e.to_string()))?;
        let first = index
            .manifests
            .first()
            .ok_or_else(|| invalid("its index is empty".into()))?;
        let manifest: ImageManifest =
            serde_json::from_slice(&self.read_blob(&first.digest, MAX_MANIFEST_SIZE)?)
                .map_err(|e| invalid(e.to_string()))?;
        let description: ReleaseDescription =
            serde_json::from_slice(&self.read_blob(&manifest.config.digest, MAX_CONFIG_SIZE)?)
                .map_err(|e| invalid(e.to_string()))?;
        Ok(Some((description, descriptor.digest)))
    }
}

/// Release indexes in a registry, where `publish` pushed them.
pub struct RegistryIndexes<'a> {
    pub remote: &'a Remote,
    pub address: &'a RegistryAddress,
}

impl ReleaseIndexes for RegistryIndexes<'_> {
    fn release_index(
        &self,
        name: &str,
        version: &Version,
    ) -> Result<Option<(ReleaseDescription, Digest)>> {
        let repository = crate::release::publish::fetch::release_repository(self.address, name);
        let found =
            crate::release::publish::fetch::remote_release(self.remote, &repository, version)?;
        Ok(found.map(|r| (r.description, r.descriptor.digest)))
    }
}

/// `name@version`: the release index, else the stack bundle (a release of one, as
/// `promote` treats it).
pub fn candidate(
    indexes: &dyn ReleaseIndexes,
    bundles: &dyn ReleaseSource,
    name: &str,
    version: &Version,
) -> Result<Candidate> {
    if let Some((description, digest)) = indexes.release_index(name, version)? {
        return Ok(Candidate {
            kind: ApprovedKind::Release,
            name: name.to_string(),
            digest,
            hop: Hop::of_release(&description),
        });
    }
    let Some(release) = bundles.release(name, version)? else {
        return Err(Error::usage(format!(
            "`{name}@{version}` is neither a release nor a stack bundle in {}",
            bundles.describe()
        ))
        .hint(
            "publish it first with `stackpack publish`: only a published version can be forecast",
        ));
    };
    Ok(Candidate {
        kind: ApprovedKind::Stack,
        name: name.to_string(),
        digest: release.manifest_digest.clone(),
        hop: single_stack_hop(name, version, release.manifest_digest),
    })
}

fn single_stack_hop(name: &str, version: &Version, digest: Digest) -> Hop {
    Hop {
        version: version.clone(),
        stacks: vec![HopStack {
            name: name.to_string(),
            version: version.clone(),
            digest,
            inputs_from: BTreeMap::new(),
        }],
    }
}

/// The step at a required version the customer passes through, or why not.
pub fn through_hop(
    indexes: &dyn ReleaseIndexes,
    bundles: &dyn ReleaseSource,
    candidate: &Candidate,
    version: &Version,
) -> std::result::Result<Hop, String> {
    let name = &candidate.name;
    let missing = || format!("required version `{name}@{version}` is not in the registry");
    match candidate.kind {
        ApprovedKind::Release => match indexes.release_index(name, version) {
            Ok(Some((description, _))) => Ok(Hop::of_release(&description)),
            Ok(None) => Err(missing()),
            Err(e) => Err(e.to_string()),
        },
        ApprovedKind::Stack => match bundles.release(name, version) {
            Ok(Some(release)) => Ok(single_stack_hop(name, version, release.manifest_digest)),
            Ok(None) => Err(missing()),
            Err(e) => Err(e.to_string()),
        },
    }
}
