//! The interface rules, named once: the packager's checker makes findings from
//! [`Rule`], records them in the bundle config as [`InterfaceChanges`], and the
//! registry's support page shows that record. Nobody else decides what a change needs.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::version::Bump;

/// Declares [`Rule`]: every rule of the interface table, its id as users write it
/// (in output, in `stackpack.toml [rules]` and in bundle configs) and the bump it
/// needs by default. A finding can only be made from a variant, so a misspelt rule
/// cannot lose its bump.
macro_rules! interface_rules {
    ($($variant:ident => ($id:literal, $bump:ident),)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $($variant,)*
        }

        impl Rule {
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// The rule's id, as in `stackpack.toml [rules]` and in findings.
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)*
                }
            }

            /// The bump the rule needs before the repository's levels apply.
            pub fn default_bump(self) -> Bump {
                match self {
                    $(Rule::$variant => Bump::$bump,)*
                }
            }

            pub fn from_id(id: &str) -> Option<Rule> {
                Rule::ALL.iter().copied().find(|rule| rule.id() == id)
            }
        }
    };
}

interface_rules! {
    InputAddedWithDefault => ("input-added-with-default", Minor),
    InputAddedWithoutDefault => ("input-added-without-default", Major),
    InputDefaultAdded => ("input-default-added", Minor),
    InputDefaultRemoved => ("input-default-removed", Major),
    DefaultChanged => ("default-changed", Major),
    InputRemoved => ("input-removed", Major),
    InputRenamedWithAlias => ("input-renamed-with-alias", Minor),
    InputRenamedUnguarded => ("input-renamed-unguarded", Major),
    TypeNarrowed => ("type-narrowed", Major),
    TypeWidened => ("type-widened", Minor),
    NullableTightened => ("nullable-tightened", Major),
    NullableLoosened => ("nullable-loosened", Minor),
    ValidationAdded => ("validation-added", Major),
    ValidationRelaxed => ("validation-relaxed", Minor),
    ValidationRemoved => ("validation-removed", Minor),
    InputSensitiveAdded => ("input-sensitive-added", Minor),
    InputSensitiveRemoved => ("input-sensitive-removed", Major),
    InputEphemeralChanged => ("input-ephemeral-changed", Major),
    OutputRemoved => ("output-removed", Major),
    OutputSensitivityChanged => ("output-sensitivity-changed", Major),
    OutputAdded => ("output-added", Minor),
    ResourceKindAddedByDefault => ("resource-kind-added-by-default", Major),
    ResourceKindAddedGated => ("resource-kind-added-gated", Minor),
    ResourceKindRemoved => ("resource-kind-removed", Major),
    ResourceAddressRemoved => ("resource-address-removed", Major),
    ResourceForgotten => ("resource-forgotten", Major),
    DataSourceAdded => ("data-source-added", Patch),
    DataSourceRemoved => ("data-source-removed", Patch),
    EngineConstraintNarrowed => ("engine-constraint-narrowed", Major),
    EngineConstraintWidened => ("engine-constraint-widened", Patch),
    ProviderConstraintNarrowed => ("provider-constraint-narrowed", Major),
    ProviderConstraintWidened => ("provider-constraint-widened", Patch),
    ProviderSourceChanged => ("provider-source-changed", Major),
    ModuleDefaultChanged => ("module-default-changed", Major),
    ModuleInputRequired => ("module-input-required", Major),
    ModuleInputNarrowed => ("module-input-narrowed", Major),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl std::str::FromStr for Rule {
    type Err = String;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Rule::from_id(id).ok_or_else(|| format!("`{id}` is not an interface rule"))
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        id.parse().map_err(serde::de::Error::custom)
    }
}

/// What the checker found between a stack's last stable release and the build, as
/// the packager decided it: recorded in the bundle config, so the support page shows
/// that decision instead of judging the change again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceChanges {
    /// The release the build was compared with: the stack's last stable version.
    pub since: semver::Version,
    /// Every finding, sorted by file, line, rule and item; empty when the interface
    /// did not change.
    pub findings: Vec<InterfaceFinding>,
}

/// One interface change: its rule, what it is about, where, and the bump it needs
/// under the repository's rule levels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterfaceFinding {
    pub rule: Rule,
    /// An input, an output, a resource kind, a provider.
    pub item: String,
    /// Repository-relative path.
    pub file: String,
    /// 1-based; 0 when unknown.
    pub line: usize,
    /// The bump it requires, after the repository's rule levels.
    pub bump: Bump,
    /// What changed, in words, with the value before and after where known.
    pub message: String,
}

impl InterfaceFinding {
    /// `file:line`, or the file alone when the line is not known.
    pub fn location(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_reads_back_from_its_id() {
        for rule in Rule::ALL {
            assert_eq!(Rule::from_id(rule.id()), Some(*rule));
            let json = serde_json::to_string(rule).unwrap();
            assert_eq!(json, format!("\"{}\"", rule.id()));
            assert_eq!(serde_json::from_str::<Rule>(&json).unwrap(), *rule);
        }
        assert_eq!(Rule::ALL.len(), 36);
        assert!(serde_json::from_str::<Rule>("\"no-such-rule\"").is_err());
    }
}
