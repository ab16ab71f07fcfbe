//! A stack's (or module's) public API: what its callers may set and read, and what
//! kinds of resource it manages. Recorded in every bundle config, compared across
//! versions to compute the required version bump, and checked against a customer's
//! inputs by the runner.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The interface of one stack or module.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interface {
    /// Input variables, sorted by name.
    #[serde(default)]
    pub inputs: Vec<Input>,
    /// Outputs, sorted by name.
    #[serde(default)]
    pub outputs: Vec<Output>,
    /// Kinds of resource managed, as `aws_s3_bucket` or `data.aws_ami`, sorted.
    #[serde(default)]
    pub resource_kinds: Vec<String>,
    /// The `required_version` constraint on Terraform/OpenTofu, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_version: Option<String>,
    /// Provider source and version constraint, by local name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub required_providers: BTreeMap<String, ProviderRequirement>,
}

impl Interface {
    pub fn input(&self, name: &str) -> Option<&Input> {
        self.inputs.iter().find(|input| input.name == name)
    }

    pub fn output(&self, name: &str) -> Option<&Output> {
        self.outputs.iter().find(|output| output.name == name)
    }
}

/// One input variable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Input {
    pub name: String,
    /// The type constraint, structured (`any` when none is declared).
    #[serde(rename = "type")]
    pub type_constraint: crate::types::TypeExpr,
    /// True when the input has no default: every caller must set it.
    pub required: bool,
    /// The default, evaluated to a value (`null` is a real default). Absent when
    /// required, or when it could not be evaluated statically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    #[serde(default)]
    pub sensitive: bool,
    #[serde(default = "default_true")]
    pub nullable: bool,
    #[serde(default)]
    pub ephemeral: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A deprecation message; set on an old name kept as an alias after a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<String>,
    /// The new name this input is an alias for, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    /// Validation conditions, as source text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validations: Vec<String>,
}

fn default_true() -> bool {
    true
}

/// One output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub name: String,
    #[serde(default)]
    pub sensitive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A `required_providers` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRequirement {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
