//! Every rule a finding can name, as one type: the interface table's rules (which
//! need a bump, and live in the schema so bundle configs record them), the
//! repository lints, the errors of a stack that stop any version being judged, and
//! the checks of customers' inputs, and the proof of the release graph. Each has its id as users write it, in output and
//! in `stackpack.toml [rules]`; a finding is made from a variant, never from text.

use std::cmp::Ordering;
use std::fmt;

use serde::{Serialize, Serializer};
pub use stackpack_schema::rules::Rule;

/// Declares one family of rules with its ids.
macro_rules! rule_family {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $id:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            pub fn id(self) -> &'static str {
                match self {
                    $($name::$variant => $id,)*
                }
            }

            pub fn from_id(id: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|rule| rule.id() == id)
            }
        }
    };
}

rule_family! {
    /// The repository lints: their level is `error`, `warn` or `off`.
    Lint {
        NoEnvironmentNames => "no-environment-names",
        NoSecretLiterals => "no-secret-literals",
        SensitiveInputDefault => "sensitive-input-default",
        InputTypeMissing => "input-type-missing",
        InputDescriptionMissing => "input-description-missing",
        IgnoreWithoutReason => "ignore-without-reason",
        ControllerOwnedField => "controller-owned-field",
        SensitiveInputNotEphemeral => "sensitive-input-not-ephemeral",
        RunsCommandsOnRunner => "runs-commands-on-runner",
        SensitiveInputStored => "sensitive-input-stored",
    }
}

rule_family! {
    /// Errors of the stack itself, not version bumps: no rule level changes them.
    Broken {
        UnreadableFile => "unreadable-file",
        ModuleArgumentUndeclared => "module-argument-undeclared",
    }
}

rule_family! {
    /// What a customer's inputs file does against the stack's new interface.
    Inputs {
        InterfaceUnreadable => "interface-unreadable",
        CidrInvalid => "cidr-invalid",
        CidrOverlap => "cidr-overlap",
        InputsForNoStack => "inputs-for-no-stack",
        InputsUnreadable => "inputs-unreadable",
        PlaceholderNotFilled => "placeholder-not-filled",
        MissingInput => "missing-input",
        UnknownInput => "unknown-input",
        TypeMismatch => "type-mismatch",
        DeprecatedInput => "deprecated-input",
        AliasAndInputBothSet => "alias-and-input-both-set",
        ValidationFailed => "validation-failed",
        ValidationNotEvaluated => "validation-not-evaluated",
        WiredInputSet => "wired-input-set",
    }
}

rule_family! {
    /// What `check` proves of the releases in `stackpack.toml` and the dependencies
    /// and wiring in each `stack.toml` (see [`crate::release::graph`]).
    Graph {
        ReleaseStackMissing => "release-stack-missing",
        ReleaseNamedLikeStack => "release-named-like-stack",
        DependencyOutsideRelease => "dependency-outside-release",
        DependencyCycle => "dependency-cycle",
        WiredOutputMissing => "wired-output-missing",
        WiredInputMissing => "wired-input-missing",
        WiredTypeMismatch => "wired-type-mismatch",
        WiredSensitiveOutput => "wired-sensitive-output",
        ServiceReferenceInvalid => "service-reference-invalid",
        WiringBroken => "wiring-broken",
    }
}

/// The rule a finding names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleId {
    /// One of the interface table's: the change needs a bump.
    Interface(Rule),
    Lint(Lint),
    Broken(Broken),
    Inputs(Inputs),
    Graph(Graph),
}

impl RuleId {
    /// The rule's id, as users write it.
    pub fn id(self) -> &'static str {
        match self {
            RuleId::Interface(rule) => rule.id(),
            RuleId::Lint(rule) => rule.id(),
            RuleId::Broken(rule) => rule.id(),
            RuleId::Inputs(rule) => rule.id(),
            RuleId::Graph(rule) => rule.id(),
        }
    }

    /// The rule with this id, of any family.
    pub fn from_id(id: &str) -> Option<RuleId> {
        Rule::from_id(id)
            .map(RuleId::Interface)
            .or_else(|| Lint::from_id(id).map(RuleId::Lint))
            .or_else(|| Broken::from_id(id).map(RuleId::Broken))
            .or_else(|| Inputs::from_id(id).map(RuleId::Inputs))
            .or_else(|| Graph::from_id(id).map(RuleId::Graph))
    }
}

impl From<Rule> for RuleId {
    fn from(rule: Rule) -> RuleId {
        RuleId::Interface(rule)
    }
}

impl From<Lint> for RuleId {
    fn from(rule: Lint) -> RuleId {
        RuleId::Lint(rule)
    }
}

impl From<Broken> for RuleId {
    fn from(rule: Broken) -> RuleId {
        RuleId::Broken(rule)
    }
}

impl From<Inputs> for RuleId {
    fn from(rule: Inputs) -> RuleId {
        RuleId::Inputs(rule)
    }
}

impl From<Graph> for RuleId {
    fn from(rule: Graph) -> RuleId {
        RuleId::Graph(rule)
    }
}

/// By id, as findings have always been sorted in output.
impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.id().cmp(other.id())
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_names_one_rule() {
        let mut ids: Vec<&str> = Rule::ALL
            .iter()
            .map(|r| r.id())
            .chain(Lint::ALL.iter().map(|r| r.id()))
            .chain(Broken::ALL.iter().map(|r| r.id()))
            .chain(Inputs::ALL.iter().map(|r| r.id()))
            .chain(Graph::ALL.iter().map(|r| r.id()))
            .collect();
        for id in &ids {
            assert_eq!(RuleId::from_id(id).map(RuleId::id), Some(*id));
        }
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), count, "an id is used twice");
    }
}
