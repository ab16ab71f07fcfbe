//! `pull`: a bundle and its signatures from a registry, through a staging layout,
//! into the store, only once verified (the same path `import` takes).

use semver::Version;

use super::error::{Error, Result};
use super::home::Home;
use super::store::{import_pulled, staging, verify_error, Imported};
use stackpack_bundle::remote::{Progress, Remote};
use stackpack_bundle::transfer::{pull_bundle_reusing, TransferError};
use stackpack_bundle::verify::Trust;
use stackpack_schema::signature::PublicKey;

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
    let remote = Remote::new(&bundle.host, insecure)?;
    remote.probe()?;
    let (_staging_dir, staged) = staging(home)?;
    // What the store holds already, checked again as it is copied, is not moved.
    let store = home.store()?;
    // Who signed is checked before the layers move: an untrusted bundle costs its
    // manifest and signatures, not its megabytes. Read once, for the freshness
    // statement too.
    let keys: Vec<PublicKey> = home
        .trusted_keys()?
        .into_iter()
        .map(|(_, key, _)| key)
        .collect();
    let trust = Trust::Keys(keys.clone());
    pull_bundle_reusing(
        &remote,
        &bundle.repository,
        &bundle.stack,
        &bundle.version,
        &staged,
        Some(&store),
        &trust,
        progress,
    )
    .map_err(|e| match e {
        TransferError::Remote(remote) => Error::from(remote),
        TransferError::NotFound { reference, host } => {
            not_found(&remote, bundle, &reference, &host)
        }
        TransferError::Signature(error) => {
            verify_error(home, &staged, &bundle.stack, &bundle.version, error).at(format!(
                "`{}/{}:{}`",
                bundle.host, bundle.repository, bundle.version
            ))
        }
        other => Error::refused(other.to_string()),
    })?;
    check_freshness(home, &remote, bundle, &keys)?;
    import_pulled(
        home,
        &staged,
        &bundle.repository,
        &mut crate::release::stored::Staged::default(),
    )
}

/// The reference names a repository or a version the registry does not have: the
/// command's mistake (exit 2), with the repository's versions when it exists, else
/// the nearest repository the registry lists (`/v2/_catalog`, when it allows that).
fn not_found(remote: &Remote, bundle: &RemoteBundle, reference: &str, host: &str) -> Error {
    let repository = &bundle.repository;
    let mut versions: Vec<Version> = remote
        .tags(repository)
        .unwrap_or_default()
        .iter()
        .filter_map(|tag| tag.parse().ok())
        .collect();
    versions.sort_by(|a, b| b.cmp_precedence(a));
    if let Some(newest) = versions.first() {
        let listed: Vec<String> = versions.iter().take(10).map(|v| format!("`{v}`")).collect();
        return Error::usage(format!(
            "`{reference}` is not in registry `{host}`: repository `{repository}` has no version `{}`; its versions: {}",
            bundle.version,
            listed.join(", ")
        ))
        .hint(format!(
            "pull a published version (the newest is `{host}/{repository}:{newest}`), or ask your vendor whether `{}` was published",
            bundle.version
        ));
    }
    let catalog = remote
        .catalog(repository)
        .ok()
        .flatten()
        .unwrap_or_default();
    let names: Vec<&str> = catalog.iter().map(String::as_str).collect();
    let near = stackpack_interface::tfvars::did_you_mean(repository, &names)
        .map(|near| format!("; did you mean `{host}/{near}:{}`?", bundle.version))
        .unwrap_or_default();
    let hint = if repository.contains("/stacks/") {
        "check the stack's name with your vendor; `stackpack-runner status` lists what is installed"
    } else {
        "a bundle lives at `HOST/NAMESPACE/stacks/STACK:VERSION`, as in `registry.acme.example/acme/stacks/data-plane:1.4.0`"
    };
    Error::usage(format!(
        "`{reference}` is not in registry `{host}`: repository `{repository}` does not exist{near}"
    ))
    .hint(hint)
}

/// What the registry's signed "newest version" statement says, and whether it is
/// fresh enough for this runner's policy (`[policy] max-latest-age`).
fn check_freshness(
    home: &Home,
    remote: &Remote,
    bundle: &RemoteBundle,
    trusted: &[PublicKey],
) -> Result<()> {
    let max_age = match &home.config.policy.max_latest_age {
        Some(text) => Some(super::home::parse_age(text).ok_or_else(|| {
            Error::refused(format!("`max-latest-age = \"{text}\"` is not an age"))
                .at(format!("`{}`", home.root.join("runner.toml").display()))
                .hint("write a number and a unit: `14d`, `12h`, `90m`")
        })?),
        None => None,
    };
    let statement = stackpack_bundle::freshness::fetch_statement(
        remote,
        &bundle.repository,
        &home.config.policy.signed_for(&bundle.repository),
        trusted,
    )
    .map_err(|e| {
        Error::refused(format!(
            "the registry's signed statement of the newest version of `{}` is not valid: {e}",
            bundle.stack
        ))
        .hint("the vendor signs, with each release, which version is the newest, so a frozen registry cannot hide a newer one; ask your vendor to sign it with a key this runner trusts (`stackpack-runner trust list`)")
    })?;
    let Some(statement) = statement else {
        return match max_age {
            Some(_) => Err(Error::refused(format!(
                "the registry has no signed latest statement for `{}`, and this runner's policy needs one",
                bundle.stack
            ))
            .hint("ask your vendor to publish from the main branch (it signs the statement), or remove `max-latest-age` from `[policy]`")),
            None => Ok(()),
        };
    };
    let payload = &statement.payload;
    let age = stackpack_bundle::freshness::age_seconds(&payload.signed_at).unwrap_or(i64::MAX);
    eprintln!(
        "the vendor's newest stable `{}` is `{}` (statement signed {} by key `{}`)",
        bundle.stack,
        payload.version,
        payload.signed_at,
        statement.signer.key_id()
    );
    if let Some(max) = max_age {
        if age > max {
            return Err(Error::refused(format!(
                "the registry's latest statement for `{}` was signed {}s ago, and this runner's policy allows {}s: the registry may be frozen, serving an old state",
                bundle.stack, age, max
            ))
            .hint("ask your vendor whether newer versions exist; pull again once the registry serves a fresh statement"));
        }
    }
    Ok(())
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
