//! Reading a dependency lock file (`.terraform.lock.hcl`): which provider versions a
//! stack is pinned to, and the hashes their packages must have. The packager builds
//! provider layers from it; the runner checks a bundle carries every provider it names.

use hcl_edit::expr::Expression;
use hcl_edit::structure::{Body, Structure};

/// The lock file's name in a stack's folder.
pub const LOCK_FILE: &str = ".terraform.lock.hcl";

/// One `provider "ADDRESS" { … }` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedProvider {
    /// The source address as the lock file writes it, fully qualified
    /// (`registry.terraform.io/hashicorp/aws`).
    pub source: String,
    pub version: String,
    /// The version constraints the configuration declared when it was locked.
    pub constraints: Option<String>,
    /// `h1:…` and `zh:…` hashes, as written.
    pub hashes: Vec<String>,
}

/// Why a lock file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LockFileError {
    #[error("{LOCK_FILE} is not valid HCL: {0}")]
    Syntax(String),
    #[error("{LOCK_FILE}: provider `{provider}` has no `{attribute}`")]
    Missing {
        provider: String,
        attribute: &'static str,
    },
}

/// Reads every provider the lock file pins, in file order.
pub fn parse(text: &str) -> Result<Vec<LockedProvider>, LockFileError> {
    let body: Body = hcl_edit::parser::parse_body(text)
        .map_err(|e| LockFileError::Syntax(e.to_string().lines().next().unwrap_or("").into()))?;
    let mut providers = Vec::new();
    for structure in body.iter() {
        let Structure::Block(block) = structure else {
            continue;
        };
        if block.ident.as_str() != "provider" {
            continue;
        }
        let Some(source) = block.labels.first().map(|l| l.as_str().to_string()) else {
            continue;
        };
        let attribute = |name: &str| {
            block.body.iter().find_map(|s| match s {
                Structure::Attribute(a) if a.key.as_str() == name => Some(a.value.clone()),
                _ => None,
            })
        };
        let string = |name: &str| match attribute(name) {
            Some(Expression::String(s)) => Some(s.value().to_string()),
            _ => None,
        };
        let version = string("version").ok_or_else(|| LockFileError::Missing {
            provider: source.clone(),
            attribute: "version",
        })?;
        let hashes = match attribute("hashes") {
            Some(Expression::Array(items)) => items
                .iter()
                .filter_map(|item| match item {
                    Expression::String(s) => Some(s.value().to_string()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        providers.push(LockedProvider {
            source,
            version,
            constraints: string("constraints"),
            hashes,
        });
    }
    Ok(providers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_versions_and_hashes_are_read_as_terraform_writes_them() {
        let text = r#"# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/hashicorp/aws" {
  version     = "3.39.0"
  constraints = "~> 3.39"
  hashes = [
    "h1:abc=",
    "zh:0123",
  ]
}

provider "registry.opentofu.org/hashicorp/random" {
  version = "3.6.0"
}
"#;
        let providers = parse(text).unwrap();
        assert_eq!(providers.len(), 2);
        assert_eq!(providers[0].source, "registry.terraform.io/hashicorp/aws");
        assert_eq!(providers[0].version, "3.39.0");
        assert_eq!(providers[0].constraints.as_deref(), Some("~> 3.39"));
        assert_eq!(providers[0].hashes, vec!["h1:abc=", "zh:0123"]);
        assert!(providers[1].hashes.is_empty());
    }

    #[test]
    fn a_provider_without_a_version_is_refused_by_name() {
        let error = parse("provider \"registry.terraform.io/hashicorp/aws\" {\n}\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            ".terraform.lock.hcl: provider `registry.terraform.io/hashicorp/aws` has no `version`"
        );
    }
}
