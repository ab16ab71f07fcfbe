//! SLSA provenance v1: where a bundle or a release came from.
//!
//! The build definition names the source (repository, ref, commit), what was built
//! (bundle or release, its name and version) and, as resolved dependencies by
//! digest, the source commit, the modules and providers a bundle vendors, or the
//! bundles, services and engine a release pins. The run details name the builder
//! (GitHub Actions, GitLab CI, or a local build) and the run, and list the SBOM as a
//! byproduct by digest, so the provenance's signature covers it too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::statement::{Statement, Subject, PROVENANCE_PREDICATE};
use crate::bundle::{BundleConfig, Source};
use crate::digest::Digest;
use crate::release::ReleaseDescription;

pub const BUNDLE_BUILD_TYPE: &str = "https://stackpack.dev/provenance/bundle/v1";
pub const RELEASE_BUILD_TYPE: &str = "https://stackpack.dev/provenance/release/v1";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    pub build_definition: BuildDefinition,
    pub run_details: RunDetails,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildDefinition {
    pub build_type: String,
    pub external_parameters: ExternalParameters,
    pub internal_parameters: InternalParameters,
    #[serde(default)]
    pub resolved_dependencies: Vec<ResourceDescriptor>,
}

/// What the vendor chose: the source and what was built from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalParameters {
    /// The source repository's address, without credentials.
    pub repository: String,
    /// `refs/heads/<branch>`.
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub commit: String,
    /// `bundle` or `release`.
    pub kind: String,
    /// The stack's or the release's name.
    pub name: String,
    pub version: String,
}

/// What the builder chose: the tool that built it and the run, for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InternalParameters {
    /// The `stackpack` version that built it.
    pub stackpack: String,
    /// `GitHub Actions`, `GitLab CI` or `a local build`.
    pub builder: String,
    /// The CI's run number, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// A SLSA ResourceDescriptor: something by name and digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDescriptor {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default)]
    pub digest: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl ResourceDescriptor {
    fn named(name: &str, digest: &Digest) -> Self {
        ResourceDescriptor {
            uri: None,
            digest: BTreeMap::from([(digest.algorithm().into(), digest.hex().into())]),
            name: Some(name.into()),
            media_type: None,
            annotations: BTreeMap::new(),
        }
    }

    fn annotated(mut self, key: &str, value: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDetails {
    pub builder: BuilderId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BuildMetadata>,
    #[serde(default)]
    pub byproducts: Vec<ResourceDescriptor>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuilderId {
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildMetadata {
    /// The run's address (`https://github.com/acme/infra/actions/runs/123/attempts/1`).
    pub invocation_id: String,
}

/// The machine that ran the build, as its environment tells (the packager reads it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Builder {
    /// SLSA `builder.id`.
    pub id: String,
    /// For people: `GitHub Actions`, `GitLab CI`, `a local build`.
    pub name: String,
    /// The run's number, shown as "run 123".
    pub run: Option<String>,
    /// The run's address.
    pub invocation: Option<String>,
}

/// What the packager hands over besides the artifact itself.
pub struct Inputs<'a> {
    pub builder: &'a Builder,
    pub stackpack_version: &'a str,
    /// The repository path the subject is published under (`acme/stacks/network`).
    pub repository: &'a str,
    /// The SBOM written beside it, as its digest.
    pub sbom: &'a Digest,
}

/// `refs/heads/<branch>`, as git and CI systems name a branch.
pub fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

fn source_dependency(source: &Source) -> ResourceDescriptor {
    ResourceDescriptor {
        uri: Some(format!(
            "git+{}@{}",
            source.repository,
            branch_ref(&source.branch)
        )),
        digest: BTreeMap::from([("gitCommit".to_string(), source.commit.clone())]),
        name: Some("source".into()),
        media_type: None,
        annotations: BTreeMap::new(),
    }
}

fn run_details(inputs: &Inputs<'_>) -> RunDetails {
    let mut sbom = ResourceDescriptor::named("sbom.cdx.json", inputs.sbom);
    sbom.media_type = Some(crate::media_type::CYCLONEDX_JSON.into());
    RunDetails {
        builder: BuilderId {
            id: inputs.builder.id.clone(),
        },
        metadata: inputs
            .builder
            .invocation
            .clone()
            .map(|invocation_id| BuildMetadata { invocation_id }),
        byproducts: vec![sbom],
    }
}

fn definition(
    build_type: &str,
    source: &Source,
    kind: &str,
    name: &str,
    version: String,
    inputs: &Inputs<'_>,
    mut dependencies: Vec<ResourceDescriptor>,
) -> BuildDefinition {
    dependencies.insert(0, source_dependency(source));
    BuildDefinition {
        build_type: build_type.into(),
        external_parameters: ExternalParameters {
            repository: source.repository.clone(),
            git_ref: branch_ref(&source.branch),
            commit: source.commit.clone(),
            kind: kind.into(),
            name: name.into(),
            version,
        },
        internal_parameters: InternalParameters {
            stackpack: inputs.stackpack_version.into(),
            builder: inputs.builder.name.clone(),
            run: inputs.builder.run.clone(),
        },
        resolved_dependencies: dependencies,
    }
}

/// The provenance statement of a bundle whose manifest is `manifest`.
pub fn for_bundle(config: &BundleConfig, manifest: &Digest, inputs: &Inputs<'_>) -> Statement {
    let modules = config.modules.iter().map(|m| {
        let d = ResourceDescriptor::named(&m.name, &m.digest).annotated("path", &m.path);
        match &m.version {
            Some(v) => d.annotated("version", v),
            None => d,
        }
    });
    let providers = config.providers.iter().map(|p| {
        ResourceDescriptor::named(&p.source, &p.digest)
            .annotated("version", &p.version)
            .annotated("platform", &p.platform)
            .annotated("hash", &p.hash)
    });
    let definition = definition(
        BUNDLE_BUILD_TYPE,
        &config.source,
        "bundle",
        &config.stack,
        config.version.to_string(),
        inputs,
        modules.chain(providers).collect(),
    );
    statement(manifest, inputs, definition)
}

/// The provenance statement of a release whose index is `index`.
pub fn for_release(
    description: &ReleaseDescription,
    index: &Digest,
    inputs: &Inputs<'_>,
) -> Statement {
    let stacks = description.stacks.iter().map(|s| {
        ResourceDescriptor::named(&s.name, &s.digest).annotated("version", s.version.to_string())
    });
    let services = description.services.iter().map(|s| {
        ResourceDescriptor::named(&s.name, &s.digest).annotated("reference", &s.reference)
    });
    let engine = description.engine.iter().flat_map(|e| {
        e.platforms.iter().map(move |p| {
            ResourceDescriptor::named(e.name.as_str(), &p.digest)
                .annotated("version", e.version.to_string())
                .annotated("platform", &p.platform)
        })
    });
    let definition = definition(
        RELEASE_BUILD_TYPE,
        &description.source,
        "release",
        &description.name,
        description.version.to_string(),
        inputs,
        stacks.chain(services).chain(engine).collect(),
    );
    statement(index, inputs, definition)
}

fn statement(
    subject: &Digest,
    inputs: &Inputs<'_>,
    build_definition: BuildDefinition,
) -> Statement {
    let provenance = Provenance {
        build_definition,
        run_details: run_details(inputs),
    };
    Statement::new(
        Subject::new(inputs.repository, subject),
        PROVENANCE_PREDICATE,
        serde_json::to_value(provenance).expect("provenance serializes"),
    )
}

impl Provenance {
    /// The SBOM the provenance names among its byproducts.
    pub fn sbom(&self) -> Option<Digest> {
        self.run_details
            .byproducts
            .iter()
            .find(|b| b.media_type.as_deref() == Some(crate::media_type::CYCLONEDX_JSON))
            .and_then(|b| b.digest.get("sha256"))
            .and_then(|hex| format!("sha256:{hex}").parse().ok())
    }

    /// "GitHub Actions run 123", "a local build".
    pub fn built_by(&self) -> String {
        let p = &self.build_definition.internal_parameters;
        match &p.run {
            Some(run) => format!("{} run {run}", p.builder),
            None => p.builder.clone(),
        }
    }
}
