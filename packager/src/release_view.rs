//! Where `version` and `check` read the releases that exist: the registry `publish`
//! pushes to (`--registry`, else `registry` in `stackpack.toml`) when it answers, so
//! that a fresh clone agrees with `publish`; when it cannot be reached at all, the
//! local image layout of earlier builds, with a note saying so. A registry that
//! answers and refuses (credentials, plain HTTP without `--insecure`) is an error.

use std::path::Path;

use semver::Version;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::{RegistryAddress, Remote, RemoteError};

use crate::error::{Error, Result};
use crate::releases::{NoReleases, RegistryReleases, Release, ReleaseSource};

/// The releases `version` and `check` compare with.
pub struct ReleaseView {
    registry: Option<(Remote, RegistryAddress)>,
    layout: Option<ImageLayout>,
    /// Set when versions come from the local layout only, and why.
    pub note: Option<String>,
    /// `the local layout `DIR``.
    local: String,
}

impl ReleaseView {
    /// Reads from `registry` (an address, from the flag or `stackpack.toml`) when it
    /// answers; when it cannot be reached, from the layout in `layout_dir`, with a
    /// note. An address that is not one is a usage error; a registry that refuses
    /// the credentials or the transport is refused (exit 1), as `publish` is.
    pub fn open(registry: Option<&str>, insecure: bool, layout_dir: &Path) -> Result<ReleaseView> {
        let layout = ImageLayout::open(layout_dir).ok();
        let local = format!("the local layout `{}`", layout_dir.display());
        let Some(text) = registry else {
            return Ok(ReleaseView {
                registry: None,
                layout,
                note: Some(format!(
                    "no registry named (`--registry` or `registry` in `stackpack.toml`): versions come from {local} only"
                )),
                local,
            });
        };
        let address: RegistryAddress = text.parse().map_err(|e: RemoteError| {
            let hint = e.hint().unwrap_or("write it as `HOST[:PORT]/NAMESPACE`");
            Error::usage_by(e).hint(hint)
        })?;
        let remote = Remote::new(&address.host, insecure)?;
        // The same first questions `publish` asks (is this a registry, over the right
        // transport; may these credentials read), so that a registry that needs
        // `--insecure` or refuses the token is an error here too, with the same hint.
        let probe = remote
            .probe()
            .and_then(|()| remote.tags(&address.stack_repository("probe")));
        match probe {
            Ok(_) => Ok(ReleaseView {
                registry: Some((remote, address)),
                layout,
                note: None,
                local,
            }),
            // Only a registry that does not answer at all falls back: offline work
            // stays possible, and the warning says whose versions are used instead.
            Err(e @ RemoteError::Unreachable { .. }) => Ok(ReleaseView {
                registry: None,
                layout,
                note: Some(format!(
                    "registry `{address}` cannot be reached ({e}): versions come from {local} only, and `publish` may choose differently"
                )),
                local,
            }),
            Err(e) => Err(e.into()),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&dyn ReleaseSource) -> T) -> T {
        match (&self.registry, &self.layout) {
            (Some((remote, address)), _) => f(&RegistryReleases { remote, address }),
            (None, Some(layout)) => f(layout),
            (None, None) => f(&NoReleases),
        }
    }
}

impl ReleaseSource for ReleaseView {
    fn versions(&self, stack: &str) -> Result<Vec<Version>> {
        self.with(|s| s.versions(stack))
    }

    fn release(&self, stack: &str, version: &Version) -> Result<Option<Release>> {
        self.with(|s| s.release(stack, version))
    }

    fn describe(&self) -> String {
        match (&self.registry, &self.layout) {
            (None, None) => format!("{} (none yet)", self.local),
            _ => self.with(|s| s.describe()),
        }
    }
}
