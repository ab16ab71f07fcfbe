//! Every interface rule, its id and the bump it needs by default, and the one way
//! a finding is made from a rule.

use stackpack_interface::Location;
use stackpack_schema::version::Bump;

use crate::check::finding::{Finding, Severity};
use crate::check::tree::join;

/// Declares [`Rule`]: every rule of the interface table, its id as users write it
/// (in output and in `stackpack.toml [rules]`) and the bump it needs by default. A
/// finding can only be made from a variant, so a misspelt rule cannot lose its bump.
macro_rules! interface_rules {
    ($($variant:ident => ($id:literal, $bump:ident),)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// The default bump of an interface rule, by id.
pub fn default_bump(rule: &str) -> Option<Bump> {
    Rule::from_id(rule).map(Rule::default_bump)
}

pub(super) fn finding(
    rule: Rule,
    item: impl Into<String>,
    dir: &str,
    loc: &Location,
    message: String,
) -> Finding {
    Finding {
        rule: rule.id().to_string(),
        item: item.into(),
        file: join(dir, &loc.file),
        line: loc.line,
        bump: Some(rule.default_bump()),
        severity: Severity::Info,
        message,
    }
}
