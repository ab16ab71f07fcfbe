//! Where releases already exist. The planner asks this boundary which versions a
//! stack has and what each was built from; an image layout (`build`) or a registry
//! (`publish`, `version`, `check`) answers through the same trait.

use semver::Version;
use stackpack_bundle::layout::{ImageLayout, MAX_CONFIG_SIZE, MAX_MANIFEST_SIZE};
use stackpack_schema::bundle::BundleConfig;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::ImageManifest;

use crate::error::{Error, Result};

/// One existing release.
#[derive(Clone, Debug)]
pub struct Release {
    pub version: Version,
    pub manifest_digest: Digest,
    pub config: BundleConfig,
}

pub trait ReleaseSource {
    /// Every version of `stack` that exists.
    fn versions(&self, stack: &str) -> Result<Vec<Version>>;
    /// One release, with its config.
    fn release(&self, stack: &str, version: &Version) -> Result<Option<Release>>;
    /// A short description for messages (`layout .stackpack/bundles`).
    fn describe(&self) -> String;
}

impl ReleaseSource for ImageLayout {
    fn versions(&self, stack: &str) -> Result<Vec<Version>> {
        Ok(ImageLayout::versions(self, stack)?)
    }

    fn release(&self, stack: &str, version: &Version) -> Result<Option<Release>> {
        let Some(descriptor) = self.find_bundle(stack, version)? else {
            return Ok(None);
        };
        let manifest: ImageManifest =
            serde_json::from_slice(&self.read_blob(&descriptor.digest, MAX_MANIFEST_SIZE)?)
                .map_err(|e| {
                    Error::refused(format!(
                        "the manifest of `{stack}@{version}` is invalid: {e}"
                    ))
                    .at(self.root().display())
                })?;
        let config: BundleConfig =
            serde_json::from_slice(&self.read_blob(&manifest.config.digest, MAX_CONFIG_SIZE)?)
                .map_err(|e| {
                    Error::refused(format!("the config of `{stack}@{version}` is invalid: {e}"))
                        .at(self.root().display())
                })?;
        Ok(Some(Release {
            version: version.clone(),
            manifest_digest: descriptor.digest,
            config,
        }))
    }

    fn describe(&self) -> String {
        format!("layout `{}`", self.root().display())
    }
}

/// No releases anywhere: a first build.
pub struct NoReleases;

impl ReleaseSource for NoReleases {
    fn versions(&self, _: &str) -> Result<Vec<Version>> {
        Ok(vec![])
    }
    fn release(&self, _: &str, _: &Version) -> Result<Option<Release>> {
        Ok(None)
    }
    fn describe(&self) -> String {
        "no release source".to_string()
    }
}

/// Releases in a registry: versions from the tag list (every page), configs from the
/// manifests. A fresh CI runner with no local history sees exactly what exists.
pub struct RegistryReleases<'a> {
    pub remote: &'a stackpack_bundle::remote::Remote,
    pub address: &'a stackpack_bundle::remote::RegistryAddress,
}

impl ReleaseSource for RegistryReleases<'_> {
    fn versions(&self, stack: &str) -> Result<Vec<Version>> {
        let tags = self.remote.tags(&self.address.stack_repository(stack))?;
        Ok(tags
            .iter()
            .filter_map(|tag| Version::parse(tag).ok())
            .collect())
    }

    fn release(&self, stack: &str, version: &Version) -> Result<Option<Release>> {
        let repository = self.address.stack_repository(stack);
        let Some((bytes, digest)) = self
            .remote
            .pull_manifest(&repository, &version.to_string())?
        else {
            return Ok(None);
        };
        let manifest: ImageManifest = serde_json::from_slice(&bytes).map_err(|e| {
            Error::refused(format!(
                "the manifest of `{repository}:{version}` is invalid: {e}"
            ))
        })?;
        if manifest.artifact_type.as_deref() != Some(stackpack_schema::media_type::BUNDLE_ARTIFACT)
        {
            return Ok(None);
        }
        let config_bytes =
            self.remote
                .pull_blob_bytes(&repository, &manifest.config, MAX_CONFIG_SIZE)?;
        let config: BundleConfig = serde_json::from_slice(&config_bytes).map_err(|e| {
            Error::refused(format!(
                "the config of `{repository}:{version}` is invalid: {e}"
            ))
        })?;
        Ok(Some(Release {
            version: version.clone(),
            manifest_digest: digest,
            config,
        }))
    }

    fn describe(&self) -> String {
        format!("registry `{}`", self.address)
    }
}
