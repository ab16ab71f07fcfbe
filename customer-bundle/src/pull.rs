//! `pull`: a bundle and its signatures from a registry, through a staging layout,
//! into the store, only once verified (the same path `import` takes).

use semver::Version;

use super::error::{Error, Result};
use super::home::Home;
use super::store::{import_layout, staging, Imported};
use stackpack_bundle::remote::{Progress, Remote};
use stackpack_bundle::transfer::{pull_bundle, TransferError};

/// `HOST[:PORT]/REPOSITORY:VERSION`, where the repository's last component is the
/// stack (`registry.acme.example/acme/stacks/data-plane:1.4.0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteBundle {
    pub host: String,
    pub repository: String,
    pub stack: String,
    pub version: Version,
}

impl std::str::FromStr for RemoteBundle {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let usage = || {
            Error::usage(format!(
                "`{text}` is not a bundle reference: expected `HOST[:PORT]/NAMESPACE/stacks/STACK:VERSION`"
            ))
            .hint("for example `registry.acme.example/acme/stacks/data-plane:1.4.0`")
        };
        let trimmed = text.trim_start_matches("oci://");
        let (host, path) = trimmed.split_once('/').ok_or_else(usage)?;
        let (repository, version) = path.rsplit_once(':').ok_or_else(usage)?;
        let version = Version::parse(version).map_err(|_| usage())?;
        let stack = repository
            .rsplit('/')
            .next()
            .unwrap_or(repository)
            .to_string();
        for part in repository.split('/') {
            stackpack_schema::reference::validate_name(part).map_err(|_| usage())?;
        }
        if host.is_empty() {
            return Err(usage());
        }
        Ok(RemoteBundle {
            host: host.to_string(),
            repository: repository.to_string(),
            stack,
            version,
        })
    }
}

/// Downloads `bundle` with its signatures, verifies it with the home's trusted keys,
/// and adds it to the store. Nothing enters the store unless it verifies; a download
/// cut short resumes on the next call.
pub fn pull(
    home: &Home,
    bundle: &RemoteBundle,
    insecure: bool,
    progress: Option<Progress>,
) -> Result<Vec<Imported>> {
    let remote = Remote::new(&bundle.host, insecure).map_err(remote_error)?;
    remote.probe().map_err(remote_error)?;
    let (_staging_dir, staged) = staging(home)?;
    pull_bundle(
        &remote,
        &bundle.repository,
        &bundle.stack,
        &bundle.version,
        &staged,
        progress,
    )
    .map_err(|e| match e {
        TransferError::Remote(remote) => remote_error(remote),
        TransferError::NotFound { reference, host } => {
            Error::refused(format!("`{reference}` is not in registry `{host}`"))
                .hint("check the stack and version with your vendor; `stackpack-runner status` lists what is installed")
        }
        other => Error::refused(other.to_string()),
    })?;
    import_layout(home, &staged)
}

fn remote_error(e: stackpack_bundle::remote::RemoteError) -> Error {
    let hint = e.hint();
    let error = Error::refused(e.to_string());
    match hint {
        Some(hint) => error.hint(hint),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_name_host_repository_stack_and_version() {
        let bundle: RemoteBundle = "127.0.0.1:5000/acme/stacks/data-plane:1.4.0-feat.2"
            .parse()
            .unwrap();
        assert_eq!(bundle.host, "127.0.0.1:5000");
        assert_eq!(bundle.repository, "acme/stacks/data-plane");
        assert_eq!(bundle.stack, "data-plane");
        assert_eq!(bundle.version.to_string(), "1.4.0-feat.2");
        for bad in [
            "data-plane@1.0.0",
            "host/acme/stacks/x",
            "host/acme/stacks/x:latest",
            "host/Acme/x:1.0.0",
        ] {
            assert!(bad.parse::<RemoteBundle>().is_err(), "{bad}");
        }
    }
}
