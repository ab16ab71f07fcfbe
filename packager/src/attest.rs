//! What the packager attests beside each signature: the SBOM and the provenance of
//! each bundle and release (see `stackpack_schema::attest`), with the builder this
//! run is, read from the CI's own variables.

use stackpack_bundle::attest::{write_attestations, ToAttest};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::attest::provenance::{self, Builder, Inputs};
use stackpack_schema::attest::sbom;
use stackpack_schema::bundle::BundleConfig;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::release::ReleaseDescription;
use stackpack_schema::signature::SigningKey;

use crate::error::Result;

/// Writes a bundle's SBOM, provenance and Sigstore signature beside it in `layout`;
/// returns their descriptors, to be pushed before its tag.
pub fn attest_bundle(
    config: &BundleConfig,
    manifest: &Descriptor,
    repository: &str,
    key: &dyn SigningKey,
    layout: &ImageLayout,
) -> Result<Vec<Descriptor>> {
    let builder = builder();
    let version = config.version.to_string();
    let what = ToAttest {
        subject: manifest,
        repository,
        version: &version,
        created: &config.created,
        sbom: &sbom::for_bundle(config, &manifest.digest, repository),
    };
    let provenance = |sbom: &Digest| {
        provenance::for_bundle(
            config,
            &manifest.digest,
            &inputs(&builder, repository, sbom),
        )
    };
    Ok(write_attestations(layout, &what, provenance, key)?)
}

/// The same for a release, whose subject is its index.
pub fn attest_release(
    description: &ReleaseDescription,
    index: &Descriptor,
    repository: &str,
    key: &dyn SigningKey,
    layout: &ImageLayout,
) -> Result<Vec<Descriptor>> {
    let builder = builder();
    let version = description.version.to_string();
    let what = ToAttest {
        subject: index,
        repository,
        version: &version,
        created: &description.created,
        sbom: &sbom::for_release(description, &index.digest, repository),
    };
    let provenance = |sbom: &Digest| {
        provenance::for_release(
            description,
            &index.digest,
            &inputs(&builder, repository, sbom),
        )
    };
    Ok(write_attestations(layout, &what, provenance, key)?)
}

fn inputs<'a>(builder: &'a Builder, repository: &'a str, sbom: &'a Digest) -> Inputs<'a> {
    Inputs {
        builder,
        stackpack_version: env!("CARGO_PKG_VERSION"),
        repository,
        sbom,
    }
}

/// The builder this process runs on: GitHub Actions, GitLab CI, or a local build.
/// Read from the variables each CI sets for every job.
pub fn builder() -> Builder {
    builder_from(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
}

fn builder_from(var: impl Fn(&str) -> Option<String>) -> Builder {
    if var("GITHUB_ACTIONS").as_deref() == Some("true") {
        let server = var("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        let hosting = match var("RUNNER_ENVIRONMENT").as_deref() {
            Some("self-hosted") => "self-hosted",
            _ => "github-hosted",
        };
        let run = var("GITHUB_RUN_ID");
        let invocation = match (var("GITHUB_REPOSITORY"), &run) {
            (Some(repository), Some(run)) => Some(format!(
                "{server}/{repository}/actions/runs/{run}/attempts/{}",
                var("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".into())
            )),
            _ => None,
        };
        return Builder {
            id: format!("https://github.com/actions/runner/{hosting}"),
            name: "GitHub Actions".into(),
            run,
            invocation,
        };
    }
    if var("GITLAB_CI").as_deref() == Some("true") {
        let server = var("CI_SERVER_URL").unwrap_or_else(|| "https://gitlab.com".into());
        let id = match (var("CI_PROJECT_PATH"), var("CI_RUNNER_ID")) {
            (Some(project), Some(runner)) => format!("{server}/{project}/-/runners/{runner}"),
            _ => format!("{server}/-/runners"),
        };
        return Builder {
            id,
            name: "GitLab CI".into(),
            run: var("CI_JOB_ID"),
            invocation: var("CI_JOB_URL"),
        };
    }
    Builder {
        id: "https://stackpack.dev/builders/local".into(),
        name: "a local build".into(),
        run: None,
        invocation: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Builder {
        builder_from(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn github_actions_names_its_run() {
        let b = from(&[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REPOSITORY", "acme/infra"),
            ("GITHUB_RUN_ID", "123"),
            ("GITHUB_RUN_ATTEMPT", "2"),
        ]);
        assert_eq!(b.id, "https://github.com/actions/runner/github-hosted");
        assert_eq!(b.name, "GitHub Actions");
        assert_eq!(b.run.as_deref(), Some("123"));
        assert_eq!(
            b.invocation.as_deref(),
            Some("https://github.com/acme/infra/actions/runs/123/attempts/2")
        );
    }

    #[test]
    fn gitlab_and_local() {
        let b = from(&[
            ("GITLAB_CI", "true"),
            ("CI_SERVER_URL", "https://git.acme.io"),
            ("CI_PROJECT_PATH", "acme/infra"),
            ("CI_RUNNER_ID", "7"),
            ("CI_JOB_ID", "456"),
            ("CI_JOB_URL", "https://git.acme.io/acme/infra/-/jobs/456"),
        ]);
        assert_eq!(b.id, "https://git.acme.io/acme/infra/-/runners/7");
        assert_eq!(b.run.as_deref(), Some("456"));
        assert_eq!(from(&[]).name, "a local build");
        assert_eq!(from(&[]).invocation, None);
    }
}
