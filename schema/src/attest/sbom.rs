//! The CycloneDX 1.6 bill of materials of a bundle or a release: CycloneDX because
//! it types what a stack holds (files, libraries, containers, applications) and
//! because the programs' own archives already ship one (`scripts/dist.sh`).
//!
//! A bundle's: the stack's files by SHA-256, its local modules (with their versions
//! where a module package lends one), and its providers (source address, version,
//! platform, the lock file's `h1:`/`zh:` hash, the zip's SHA-256). A release's: the
//! bundles it pins, its services by digest, and the engine it carries.
//! Deterministic: the serial number is derived from the subject's digest and the
//! timestamp is the source commit's, so a rebuild writes the same bytes.

use serde::{Deserialize, Serialize};

use crate::bundle::BundleConfig;
use crate::digest::Digest;
use crate::release::ReleaseDescription;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bom {
    pub bom_format: String,
    pub spec_version: String,
    pub serial_number: String,
    pub version: u32,
    pub metadata: Metadata,
    #[serde(default)]
    pub components: Vec<Component>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    pub timestamp: String,
    pub tools: Tools,
    pub component: Component,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tools {
    pub components: Vec<Component>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(rename = "bom-ref", default, skip_serializing_if = "Option::is_none")]
    pub bom_ref: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<Hash>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hash {
    pub alg: String,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Property {
    pub name: String,
    pub value: String,
}

impl Component {
    fn new(kind: &str, bom_ref: String, name: &str, version: Option<String>) -> Self {
        Component {
            kind: kind.into(),
            bom_ref: Some(bom_ref),
            name: name.into(),
            version,
            hashes: Vec::new(),
            properties: Vec::new(),
        }
    }

    fn hash(mut self, digest: &Digest) -> Self {
        self.hashes.push(Hash {
            alg: "SHA-256".into(),
            content: digest.hex().into(),
        });
        self
    }

    fn property(mut self, name: &str, value: impl Into<String>) -> Self {
        self.properties.push(Property {
            name: format!("stackpack:{name}"),
            value: value.into(),
        });
        self
    }

    /// The value of the `stackpack:<name>` property.
    pub fn property_value(&self, name: &str) -> Option<&str> {
        let name = format!("stackpack:{name}");
        self.properties
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.value.as_str())
    }

    /// The SHA-256 hex this component lists.
    pub fn sha256(&self) -> Option<&str> {
        self.hashes
            .iter()
            .find(|h| h.alg == "SHA-256")
            .map(|h| h.content.as_str())
    }
}

/// `urn:uuid:` from the first 16 bytes of the subject's digest (version 8, custom).
fn serial(subject: &Digest) -> String {
    let h = subject.hex();
    let variant = u8::from_str_radix(&h[16..17], 16).unwrap_or(0) & 0x3 | 0x8;
    format!(
        "urn:uuid:{}-{}-8{}-{variant:x}{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

fn bom(subject: &Digest, created: &str, component: Component, components: Vec<Component>) -> Bom {
    Bom {
        bom_format: "CycloneDX".into(),
        spec_version: "1.6".into(),
        serial_number: serial(subject),
        version: 1,
        metadata: Metadata {
            timestamp: created.into(),
            tools: Tools {
                components: vec![Component::new(
                    "application",
                    "tool:stackpack".into(),
                    "stackpack",
                    Some(env!("CARGO_PKG_VERSION").into()),
                )],
            },
            component,
        },
        components,
    }
}

/// The SBOM of a bundle published under `repository`.
pub fn for_bundle(config: &BundleConfig, manifest: &Digest, repository: &str) -> Bom {
    let version = config.version.to_string();
    let subject = Component::new("application", "bundle".into(), repository, Some(version))
        .hash(manifest)
        .property("stack", &config.stack)
        .property("commit", &config.source.commit);
    let files = config
        .files
        .iter()
        .map(|f| Component::new("file", format!("file:{}", f.path), &f.path, None).hash(&f.digest));
    let modules = config.modules.iter().map(|m| {
        Component::new(
            "library",
            format!("module:{}", m.path),
            &m.name,
            m.version.clone(),
        )
        .hash(&m.digest)
        .property("path", &m.path)
    });
    let providers = config.providers.iter().map(|p| {
        Component::new(
            "library",
            format!("provider:{}@{}:{}", p.source, p.version, p.platform),
            &p.source,
            Some(p.version.clone()),
        )
        .hash(&p.digest)
        .property("platform", &p.platform)
        .property("lockHash", &p.hash)
    });
    bom(
        manifest,
        &config.created,
        subject,
        files.chain(modules).chain(providers).collect(),
    )
}

/// The SBOM of a release published under `repository`.
pub fn for_release(description: &ReleaseDescription, index: &Digest, repository: &str) -> Bom {
    let version = description.version.to_string();
    let subject = Component::new("application", "release".into(), repository, Some(version))
        .hash(index)
        .property("release", &description.name)
        .property("commit", &description.source.commit);
    let stacks = description.stacks.iter().map(|s| {
        Component::new(
            "application",
            format!("stack:{}", s.name),
            &s.name,
            Some(s.version.to_string()),
        )
        .hash(&s.digest)
    });
    let services = description.services.iter().map(|s| {
        Component::new("container", format!("service:{}", s.name), &s.name, None)
            .hash(&s.digest)
            .property("reference", &s.reference)
    });
    let engine = description.engine.iter().flat_map(|e| {
        e.platforms.iter().map(move |p| {
            Component::new(
                "application",
                format!("engine:{}", p.platform),
                e.name.as_str(),
                Some(e.version.to_string()),
            )
            .hash(&p.digest)
            .property("platform", &p.platform)
        })
    });
    bom(
        index,
        &description.created,
        subject,
        stacks.chain(services).chain(engine).collect(),
    )
}

impl Bom {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("an SBOM serializes")
    }

    /// The provider components whose hash differs from `config`'s lock, as
    /// "`source` `version` (`platform`)": an SBOM that does not describe this bundle.
    pub fn provider_mismatches(&self, config: &BundleConfig) -> Vec<String> {
        let listed = |p: &crate::bundle::ProviderPackage| {
            self.components.iter().any(|c| {
                c.name == p.source
                    && c.version.as_deref() == Some(p.version.as_str())
                    && c.property_value("platform") == Some(p.platform.as_str())
                    && c.property_value("lockHash") == Some(p.hash.as_str())
                    && c.sha256() == Some(p.digest.hex())
            })
        };
        config
            .providers
            .iter()
            .filter(|p| !listed(p))
            .map(|p| format!("`{}` `{}` (`{}`)", p.source, p.version, p.platform))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::ProviderPackage;

    fn config() -> BundleConfig {
        let mut config: BundleConfig = serde_json::from_value(serde_json::json!({
            "format": 1, "stack": "network", "version": "1.2.0",
            "source": {"repository": "https://git.acme.example/infra", "commit": "abc", "branch": "main"},
            "created": "2026-01-01T00:00:00Z",
            "engine": {}, "entrypoint": "stacks/network",
            "interface": {},
            "modules": [], "files": []
        }))
        .unwrap();
        config.providers.push(ProviderPackage {
            source: "registry.terraform.io/hashicorp/aws".into(),
            version: "5.0.0".into(),
            platform: "linux_amd64".into(),
            hash: "zh:00ff".into(),
            digest: Digest::of(b"zip"),
            size: 3,
        });
        config
    }

    #[test]
    fn an_sbom_lists_the_locks_provider_hashes_and_a_changed_one_is_named() {
        let config = config();
        let bom = for_bundle(&config, &Digest::of(b"m"), "acme/stacks/network");
        assert!(bom.provider_mismatches(&config).is_empty());
        assert!(bom.serial_number.starts_with("urn:uuid:"));
        // The same input, the same bytes.
        assert_eq!(
            bom.to_bytes(),
            for_bundle(&config, &Digest::of(b"m"), "acme/stacks/network").to_bytes()
        );

        let mut other = config.clone();
        other.providers[0].hash = "zh:11ee".into();
        assert_eq!(
            bom.provider_mismatches(&other),
            vec!["`registry.terraform.io/hashicorp/aws` `5.0.0` (`linux_amd64`)".to_string()]
        );
    }
}
