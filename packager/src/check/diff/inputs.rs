//! Inputs added, removed, renamed, and changed in their default, `sensitive` or
//! `ephemeral` flags; each input in both versions is also compared by
//! [`super::types`] and [`super::validations`].

use crate::check::RuleId;
use std::collections::BTreeSet;

use serde_json::Value;
use stackpack_interface::{DefaultValue, ModuleInterface, Variable};

use super::rule::{finding, Rule};
use super::show::show_default;
use super::{types, validations};
use crate::check::finding::Finding;

/// Is there a condition anywhere in the module that reads both inputs (so setting
/// both can be refused)?
fn guarded(module: &ModuleInterface, a: &str, b: &str) -> bool {
    let refers = |text: &str, name: &str| {
        let needle = format!("var.{name}");
        text.match_indices(&needle).any(|(i, _)| {
            !text[i + needle.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
    };
    module
        .conditions
        .iter()
        .any(|c| refers(&c.text, a) && refers(&c.text, b))
}

/// The old name a new input replaces, when the rename is declared: a
/// `stackpack:renamed-from` annotation, or an old input (kept, now `deprecated`) whose
/// deprecation message names the new one.
pub(super) fn rename_source<'a>(
    old: &'a ModuleInterface,
    new: &'a ModuleInterface,
    var: &Variable,
) -> Option<&'a str> {
    if let Some(from) = &var.renamed_from {
        return old.variable(from).map(|v| v.name.as_str());
    }
    new.variables.iter().find_map(|alias| {
        let message = alias.deprecated.as_deref()?;
        let mentions = message
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .any(|w| w == var.name);
        (mentions && old.variable(&alias.name).is_some() && alias.name != var.name)
            .then_some(alias.name.as_str())
    })
}

/// Inputs that are new, or new names of renamed inputs.
pub(super) fn added_inputs(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    for var in new
        .variables
        .iter()
        .filter(|v| old.variable(&v.name).is_none())
    {
        let renamed_with_alias =
            rename_source(old, new, var).filter(|from| new.variable(from).is_some());
        out.push(match renamed_with_alias {
            Some(from) => renamed_input(new, from, var, dir),
            None => added_input(var, dir),
        });
    }
}

/// An input renamed with its old name kept as an alias: safe only if setting both
/// is refused.
fn renamed_input(new: &ModuleInterface, from: &str, var: &Variable, dir: &str) -> Finding {
    if guarded(new, from, &var.name) {
        finding(
            Rule::InputRenamedWithAlias,
            &var.name,
            dir,
            &var.location,
            format!(
                "input `{from}` was renamed `{}`; the old name stays as a deprecated alias",
                var.name
            ),
        )
    } else {
        finding(
            Rule::InputRenamedUnguarded,
            &var.name,
            dir,
            &var.location,
            format!(
                "input `{from}` was renamed `{}` and kept as an alias, but nothing refuses setting both \
                 (add a validation or precondition that reads `var.{from}` and `var.{}`)",
                var.name, var.name
            ),
        )
    }
}

fn added_input(var: &Variable, dir: &str) -> Finding {
    if var.is_required() {
        finding(
            Rule::InputAddedWithoutDefault,
            &var.name,
            dir,
            &var.location,
            format!(
                "input `{}` was added without a default: every caller must now set it",
                var.name
            ),
        )
    } else {
        finding(
            Rule::InputAddedWithDefault,
            &var.name,
            dir,
            &var.location,
            format!(
                "input `{}` was added with default {}",
                var.name,
                show_default(&var.default, var)
            ),
        )
    }
}

/// Inputs that are gone, including renames that kept no alias.
pub(super) fn removed_inputs(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    for var in old
        .variables
        .iter()
        .filter(|v| new.variable(&v.name).is_none())
    {
        let renamed_to = new.renamed_to(&var.name);
        let message = match renamed_to {
            Some(to) => format!(
                "input `{}` was renamed `{}` without keeping the old name as a deprecated alias",
                var.name, to.name
            ),
            None => format!("input `{}` was removed", var.name),
        };
        // Point at the new name when there is one, else at the old declaration.
        let location = renamed_to.map_or(&var.location, |v| &v.location);
        out.push(finding(
            Rule::InputRemoved,
            &var.name,
            dir,
            location,
            message,
        ));
    }
}

/// Inputs in both versions, compared one by one.
pub(super) fn changed_inputs(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    let moved_defaults = moved_defaults(old, new);
    for new_var in &new.variables {
        let Some(old_var) = old.variable(&new_var.name) else {
            continue;
        };
        let mark = out.len();
        compare_variable(old_var, new_var, dir, out);
        if moved_defaults.contains(new_var.name.as_str()) {
            let mut i = mark;
            while i < out.len() {
                if out[i].rule == RuleId::Interface(Rule::DefaultChanged)
                    && out[i].item == new_var.name
                {
                    out.remove(i);
                } else {
                    i += 1;
                }
            }
        }
    }
}

/// Aliases whose default moved to their new name (`null` now, the old default on
/// the new input): callers who set neither still get the same value.
fn moved_defaults<'a>(old: &'a ModuleInterface, new: &'a ModuleInterface) -> BTreeSet<&'a str> {
    let mut moved = BTreeSet::new();
    for var in new
        .variables
        .iter()
        .filter(|v| old.variable(&v.name).is_none())
    {
        let Some(from) = rename_source(old, new, var) else {
            continue;
        };
        let (Some(old_alias), Some(new_alias)) = (old.variable(from), new.variable(from)) else {
            continue;
        };
        if new_alias.effective_default() == Some(Value::Null)
            && old_alias.effective_default().is_some()
            && var.effective_default() == old_alias.effective_default()
        {
            moved.insert(from);
        }
    }
    moved
}

/// One input in both versions: its default, type, nullability and validations.
fn compare_variable(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    compare_default(old, new, dir, out);
    types::compare_type(old, new, dir, out);
    types::compare_nullable(old, new, dir, out);
    compare_flags(old, new, dir, out);
    validations::compare_validations(old, new, dir, out);
}

/// `sensitive` and `ephemeral`. Marking an input sensitive only hides it in plans
/// (minor); unmarking shows callers' secrets in every plan and log (major). An
/// ephemeral input is kept out of saved plans, so a caller's `plan -out` then `apply`
/// must pass it again, and one that stops being ephemeral refuses the ephemeral values
/// callers pass: major both ways.
fn compare_flags(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    let name = &new.name;
    if old.sensitive != new.sensitive {
        let (rule, what) = if new.sensitive {
            (
                Rule::InputSensitiveAdded,
                "is now `sensitive`: plans hide its value",
            )
        } else {
            (
                Rule::InputSensitiveRemoved,
                "is no longer `sensitive`: callers' values now show in plans and logs",
            )
        };
        out.push(finding(
            rule,
            name,
            dir,
            &new.location,
            format!("input `{name}` {what}"),
        ));
    }
    if old.ephemeral != new.ephemeral {
        let what = if new.ephemeral {
            "is now `ephemeral`: saved plans no longer keep it, so callers must pass it again at apply"
        } else {
            "is no longer `ephemeral`: callers passing ephemeral values are refused"
        };
        out.push(finding(
            Rule::InputEphemeralChanged,
            name,
            dir,
            &new.location,
            format!("input `{name}` {what}"),
        ));
    }
}

fn compare_default(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    let name = &new.name;
    match (&old.default, &new.default) {
        (DefaultValue::Required, DefaultValue::Required) => {}
        (DefaultValue::Required, _) => out.push(
            finding(
                Rule::InputDefaultAdded,
                name,
                dir,
                &new.location,
                format!(
                    "input `{name}` now has default {}",
                    show_default(&new.default, new)
                ),
            )
            .with_change("no default", show_default(&new.default, new)),
        ),
        (_, DefaultValue::Required) => out.push(
            finding(
                Rule::InputDefaultRemoved,
                name,
                dir,
                &new.location,
                format!(
                    "input `{name}` lost its default {}: callers who never set it now fail",
                    show_default(&old.default, old)
                ),
            )
            .with_change(show_default(&old.default, old), "no default"),
        ),
        (a, b) => {
            if default_differs(old, new) {
                let (before, after) = (show_default(a, old), show_default(b, new));
                out.push(
                    finding(
                        Rule::DefaultChanged,
                        name,
                        dir,
                        &new.location,
                        format!("input `{name}` changed its default from {before} to {after}"),
                    )
                    .with_change(before, after),
                );
            }
        }
    }
}

/// Does a caller who does not set the input get another value? Both defaults are
/// read under the new type: attributes new in the type fill both alike (a widened
/// type, not a changed default), and a changed attribute default is its own finding.
pub(super) fn default_differs(old: &Variable, new: &Variable) -> bool {
    match (&old.default, &new.default) {
        (DefaultValue::Value(a), DefaultValue::Value(_)) => {
            let after = new.effective_default();
            old.effective_default() != after
                && Some(stackpack_interface::types::convert(a, &new.type_expr)) != after
        }
        (a, b) => a != b,
    }
}
