//! Where a forecast reads what it plans: release indexes (a registry, or the local
//! image layout of `build`), the bundles they pin, and the registry's answer to
//! "which customers would this rollout reach, running what".

use std::collections::BTreeMap;

use semver::Version;
use stackpack_bundle::layout::{ImageLayout, MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE};
use stackpack_bundle::remote::{RegistryAddress, Remote};
use stackpack_schema::digest::Digest;
use stackpack_schema::forecast::ForecastTargets;
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
        let repository = crate::release_publish::fetch::release_repository(self.address, name);
        let found =
            crate::release_publish::fetch::remote_release(self.remote, &repository, version)?;
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

/// The registry's API root for `host`: `https://HOST`, or `http://HOST` with
/// `--insecure` (loopback only: the HTTP client refuses a token in clear elsewhere).
pub fn api_root(host: &str, insecure: bool) -> String {
    format!("{}://{host}", if insecure { "http" } else { "https" })
}

/// `GET /api/v1/forecast-targets?release=R&version=V[&channel=C]`.
pub fn targets(
    api: &str,
    token: Option<&str>,
    release: &str,
    version: &Version,
    channel: Option<&str>,
) -> Result<ForecastTargets> {
    let mut url = format!("{api}/api/v1/forecast-targets?release={release}&version={version}");
    if let Some(channel) = channel {
        url.push_str(&format!("&channel={channel}"));
    }
    let answer = stackpack_bundle::remote::http::get(&url, token, 64 << 20).map_err(|e| {
        Error::refused(format!(
            "cannot ask registry `{api}` which customers `{release}@{version}` would reach: {e}"
        ))
        .hint("check that the registry is up and `--registry` names it; a forecast needs the registry's ledger")
    })?;
    if answer.status != 200 {
        return Err(Error::refused(format!(
            "registry `{api}` answered HTTP {} to `GET /api/v1/forecast-targets` for `{release}@{version}`: {}",
            answer.status,
            answer.body.trim()
        ))
        .hint(match answer.status {
            401 | 403 => "set `STACKPACK_REGISTRY_TOKEN` to a token of this registry that may read its ledger",
            404 => "the registry does not know this release, or is older than this `stackpack` and has no forecasts",
            _ => "see the registry's log",
        }));
    }
    serde_json::from_str(&answer.body).map_err(|e| {
        Error::refused(format!(
            "registry `{api}` answered forecast targets this `stackpack` cannot read: {e}"
        ))
    })
}

/// `PUT /api/v1/forecasts/{release}/{version}`: the registry keeps the forecast.
pub fn send(
    api: &str,
    token: &str,
    forecast: &stackpack_schema::forecast::ReleaseForecast,
) -> Result<()> {
    let url = format!(
        "{api}/api/v1/forecasts/{}/{}",
        forecast.release, forecast.version
    );
    let body = serde_json::to_vec(forecast).expect("a forecast serialises");
    let answer = stackpack_bundle::remote::http::put_json(&url, token, body).map_err(|e| {
        Error::refused(format!("cannot send the forecast to registry `{api}`: {e}"))
            .hint("run again when the registry answers, or pass `--no-send` to only print it")
    })?;
    if !(200..300).contains(&answer.status) {
        return Err(Error::refused(format!(
            "registry `{api}` refused the forecast of `{}@{}` (HTTP {}): {}",
            forecast.release,
            forecast.version,
            answer.status,
            answer.body.trim()
        ))
        .hint("a forecast is sent with a token that may publish (`STACKPACK_REGISTRY_TOKEN`)"));
    }
    Ok(())
}
