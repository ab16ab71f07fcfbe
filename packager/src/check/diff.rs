//! The interface rules: comparing an old and a new interface, finding by finding.
//!
//! Each function here looks at one kind of change and says which rule it falls under
//! and what bump it needs before the repository's rule levels are applied.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use stackpack_schema::version::Bump;

use super::tree::Tree;
use super::{Finding, Severity};
use hcl_edit::expr::Expression;
use stackpack_interface::constraint::{compare_text, SetChange};
use stackpack_interface::eval::{canonical_text, static_value, Evaluator};
use stackpack_interface::{DefaultValue, Location, ModuleCall, ModuleInterface, Variable};

use super::{Broken, Rule, RuleId};

fn finding(
    rule: Rule,
    item: impl Into<String>,
    dir: &str,
    loc: &Location,
    message: String,
) -> Finding {
    Finding {
        rule: rule.into(),
        item: item.into(),
        file: join(dir, &loc.file),
        line: loc.line,
        bump: Some(rule.default_bump()),
        severity: Severity::Info,
        message,
    }
}

fn error_finding(
    rule: Broken,
    item: String,
    file: String,
    line: usize,
    message: String,
) -> Finding {
    Finding {
        rule: rule.into(),
        item,
        file,
        line,
        bump: None,
        severity: Severity::Error,
        message,
    }
}

/// A file of the work tree that cannot be read, new or changed since the release.
pub fn unreadable(u: &super::tree::Unread) -> Finding {
    error_finding(
        Broken::UnreadableFile,
        u.file.clone(),
        u.file.clone(),
        u.line,
        format!(
            "`{}` cannot be read: {}; nothing it declares can be compared, so no version can be judged \
             (fix the syntax there; `terraform validate` in that folder points at the same place)",
            u.file, u.message
        ),
    )
}

/// A `module` block that sets an argument its module does not declare: Terraform
/// refuses the call, so the stack is broken whatever its version.
pub fn undeclared_arguments(
    caller_dir: &str,
    call: &ModuleCall,
    callee_dir: &str,
    old: Option<&ModuleInterface>,
    new: &ModuleInterface,
    out: &mut Vec<Finding>,
) {
    for name in call.args.keys() {
        if new.variable(name).is_some() {
            continue;
        }
        let how = if old.is_some_and(|m| m.variable(name).is_some()) {
            "no longer declares"
        } else {
            "does not declare"
        };
        out.push(error_finding(
            Broken::ModuleArgumentUndeclared,
            format!("module.{}.{name}", call.name),
            join(caller_dir, &call.location.file),
            call.location.line,
            format!(
                "module `{callee_dir}` {how} the input `{name}`, which `module.{}` still sets: \
                 Terraform refuses this call (remove the argument, or keep the input in the module)",
                call.name
            ),
        ));
    }
}

/// `dir/file`, or `file` when `dir` is empty.
pub fn join(dir: &str, file: &str) -> String {
    if dir.is_empty() || dir == "." {
        file.to_string()
    } else {
        format!("{}/{file}", dir.trim_end_matches('/'))
    }
}

fn show(value: &Option<Value>) -> String {
    match value {
        Some(v) => format!("`{v}`"),
        None => "no default".to_string(),
    }
}

fn show_default(d: &DefaultValue, v: &Variable) -> String {
    match d {
        DefaultValue::Required => "no default".to_string(),
        DefaultValue::Value(_) => show(&v.effective_default()),
        DefaultValue::Expression(e) => format!("`{e}`"),
    }
}

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
fn rename_source<'a>(
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

/// Compares one module's own interface: inputs, outputs, provider sources.
pub fn diff_module(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    added_inputs(old, new, dir, out);
    removed_inputs(old, new, dir, out);
    changed_inputs(old, new, dir, out);
    diff_outputs(old, new, dir, out);
    provider_sources(old, new, dir, out);
}

/// Inputs that are new, or new names of renamed inputs.
fn added_inputs(old: &ModuleInterface, new: &ModuleInterface, dir: &str, out: &mut Vec<Finding>) {
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
fn removed_inputs(old: &ModuleInterface, new: &ModuleInterface, dir: &str, out: &mut Vec<Finding>) {
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
fn changed_inputs(old: &ModuleInterface, new: &ModuleInterface, dir: &str, out: &mut Vec<Finding>) {
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

fn diff_outputs(old: &ModuleInterface, new: &ModuleInterface, dir: &str, out: &mut Vec<Finding>) {
    for o in &new.outputs {
        match old.output(&o.name) {
            None => out.push(finding(
                Rule::OutputAdded,
                &o.name,
                dir,
                &o.location,
                format!("output `{}` was added", o.name),
            )),
            Some(prev) if prev.sensitive != o.sensitive => out.push(finding(
                Rule::OutputSensitivityChanged,
                &o.name,
                dir,
                &o.location,
                format!(
                    "output `{}` changed `sensitive` from `{}` to `{}`",
                    o.name, prev.sensitive, o.sensitive
                ),
            )),
            Some(_) => {}
        }
    }
    for o in &old.outputs {
        if new.output(&o.name).is_none() {
            out.push(finding(
                Rule::OutputRemoved,
                &o.name,
                dir,
                &o.location,
                format!("output `{}` was removed", o.name),
            ));
        }
    }
}

/// Providers whose source moved: another provider under the same local name.
fn provider_sources(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    let show_source = |c: Option<&str>| c.map_or("none".to_string(), |c| format!("`{c}`"));
    for (name, p) in &new.required_providers {
        let Some(prev) = old.required_providers.get(name) else {
            continue;
        };
        // No source means `hashicorp/<name>` on the default registry.
        let full_source = |s: &Option<String>| {
            s.as_deref().map_or_else(
                || format!("hashicorp/{name}"),
                |s| {
                    s.to_lowercase()
                        .trim_start_matches("registry.terraform.io/")
                        .to_string()
                },
            )
        };
        if full_source(&prev.source) != full_source(&p.source) {
            out.push(finding(
                Rule::ProviderSourceChanged,
                name,
                dir,
                &p.location,
                format!(
                    "provider `{name}` changed its source from {} to {}",
                    show_source(prev.source.as_deref()),
                    show_source(p.source.as_deref())
                ),
            ));
        }
    }
}

/// A resource address that disappears is destroyed (and, if renamed, re-created),
/// unless a `moved` block carries it over. Run for the root and for every vendored
/// module, whose resources the stack's callers own just the same. `kinds_left` are
/// the kinds the whole new tree still manages: a kind gone from the tree is reported
/// once, as `resource-kind-removed`. Data sources own nothing and have no address
/// to keep.
pub fn diff_addresses(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    kinds_left: &BTreeSet<&str>,
    out: &mut Vec<Finding>,
) {
    let new_addresses: BTreeSet<String> = new.resources.iter().map(|r| r.address()).collect();
    for r in old.resources.iter().filter(|r| !r.is_data()) {
        let address = r.address();
        if new_addresses.contains(&address) || new.moved.iter().any(|m| m.from == address) {
            continue;
        }
        match new.removed.iter().find(|m| m.from == address) {
            Some(removed) if !removed.destroy => out.push(finding(
                Rule::ResourceForgotten,
                &address,
                dir,
                &removed.location,
                format!(
                    "a `removed` block with `destroy = false` forgets `{address}`: it stays in callers' accounts, \
                     no longer managed"
                ),
            )),
            Some(removed) => out.push(finding(
                Rule::ResourceAddressRemoved,
                &address,
                dir,
                &removed.location,
                format!("a `removed` block destroys `{address}` in callers' accounts"),
            )),
            None if kinds_left.contains(r.kind.as_str()) => out.push(finding(
                Rule::ResourceAddressRemoved,
                &address,
                dir,
                &r.location,
                format!(
                    "resource `{address}` is no longer declared and no `moved` block carries it over: \
                     it would be destroyed"
                ),
            )),
            None => {}
        }
    }
}

/// One input in both versions: its default, type, nullability and validations.
fn compare_variable(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    compare_default(old, new, dir, out);
    compare_type(old, new, dir, out);
    compare_nullable(old, new, dir, out);
    compare_flags(old, new, dir, out);
    compare_validations(old, new, dir, out);
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
        (DefaultValue::Required, _) => out.push(finding(
            Rule::InputDefaultAdded,
            name,
            dir,
            &new.location,
            format!(
                "input `{name}` now has default {}",
                show_default(&new.default, new)
            ),
        )),
        (_, DefaultValue::Required) => out.push(finding(
            Rule::InputDefaultRemoved,
            name,
            dir,
            &new.location,
            format!(
                "input `{name}` lost its default {}: callers who never set it now fail",
                show_default(&old.default, old)
            ),
        )),
        (a, b) => {
            if default_differs(old, new) {
                out.push(finding(
                    Rule::DefaultChanged,
                    name,
                    dir,
                    &new.location,
                    format!(
                        "input `{name}` changed its default from {} to {}",
                        show_default(a, old),
                        show_default(b, new)
                    ),
                ));
            }
        }
    }
}

/// Does a caller who does not set the input get another value? Both defaults are
/// read under the new type: attributes new in the type fill both alike (a widened
/// type, not a changed default), and a changed attribute default is its own finding.
fn default_differs(old: &Variable, new: &Variable) -> bool {
    match (&old.default, &new.default) {
        (DefaultValue::Value(a), DefaultValue::Value(_)) => {
            let after = new.effective_default();
            old.effective_default() != after
                && Some(stackpack_interface::types::convert(a, &new.type_expr)) != after
        }
        (a, b) => a != b,
    }
}

/// The type, and the defaults of its optional attributes.
fn compare_type(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    let name = &new.name;
    let (o, n) = (&old.type_expr, &new.type_expr);
    let wider = o.accepted_by(n);
    let narrower = n.accepted_by(o);
    if !(wider && narrower) {
        let rule = if wider {
            Rule::TypeWidened
        } else {
            Rule::TypeNarrowed
        };
        out.push(finding(
            rule,
            name,
            dir,
            &new.location,
            format!("input `{name}` changed its type from `{o}` to `{n}`"),
        ));
    }
    let mut attr_defaults = Vec::new();
    o.changed_optional_defaults(n, name, &mut attr_defaults);
    for (path, od, nd) in attr_defaults {
        out.push(finding(
            Rule::DefaultChanged,
            &path,
            dir,
            &new.location,
            format!(
                "optional attribute `{path}` changed its default from {} to {}",
                show(&od),
                show(&nd)
            ),
        ));
    }
}

fn compare_nullable(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    let name = &new.name;
    if old.nullable && !new.nullable {
        out.push(finding(
            Rule::NullableTightened,
            name,
            dir,
            &new.location,
            format!("input `{name}` no longer accepts `null` (`nullable = false`)"),
        ));
    } else if !old.nullable && new.nullable {
        let mut f = finding(
            Rule::NullableLoosened,
            name,
            dir,
            &new.location,
            format!("input `{name}` now accepts `null` (`nullable = true`)"),
        );
        // A caller passing `null` used to get the default; now gets `null`.
        if new.effective_default().is_some_and(|d| d != Value::Null) {
            f.bump = Some(Bump::Major);
            f.message
                .push_str(": callers passing `null` now get `null` instead of the default");
        }
        out.push(f);
    }
}

fn compare_validations(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
    let name = &new.name;
    let old_conditions: BTreeSet<&str> = old
        .validations
        .iter()
        .map(|v| v.canonical.as_str())
        .collect();
    let new_conditions: BTreeSet<&str> = new
        .validations
        .iter()
        .map(|v| v.canonical.as_str())
        .collect();
    // Old conditions that a new one only relaxes: neither dropped nor tightened.
    let mut relaxed: BTreeSet<&str> = BTreeSet::new();
    for v in &new.validations {
        if old_conditions.contains(v.canonical.as_str()) {
            continue;
        }
        let widens = old.validations.iter().find(|o| {
            !new_conditions.contains(o.canonical.as_str()) && relaxes(&o.condition, &v.condition)
        });
        match widens {
            Some(o) => {
                relaxed.insert(o.canonical.as_str());
                out.push(finding(
                    Rule::ValidationRelaxed,
                    name,
                    dir,
                    &v.location,
                    format!(
                        "input `{name}` relaxed the validation `{}` to `{}`: every value accepted before still is",
                        one_line(&o.condition),
                        one_line(&v.condition)
                    ),
                ));
            }
            None => out.push(finding(
                Rule::ValidationAdded,
                name,
                dir,
                &v.location,
                format!(
                    "input `{name}` has a new or changed validation: `{}`",
                    one_line(&v.condition)
                ),
            )),
        }
    }
    for v in &old.validations {
        if !new_conditions.contains(v.canonical.as_str())
            && !relaxed.contains(v.canonical.as_str())
            && new.validations.len() < old.validations.len()
        {
            out.push(finding(
                Rule::ValidationRemoved,
                name,
                dir,
                &new.location,
                format!(
                    "input `{name}` dropped the validation `{}`",
                    one_line(&v.condition)
                ),
            ));
        }
    }
}

/// Does every value that passes the `old` condition pass the `new` one? Only the
/// shapes that can be proven from the text are recognised: a new `||` alternative, a
/// dropped `&&` clause, a comparison with a looser bound, a longer `contains` list.
/// Anything else is not proven, and so stays a tightened validation.
fn relaxes(old: &str, new: &str) -> bool {
    let parse = |text: &str| hcl_edit::parser::parse_expr(text).ok();
    match (parse(old), parse(new)) {
        (Some(a), Some(b)) => implies(&a, &b, 0),
        _ => false,
    }
}

fn implies(a: &Expression, b: &Expression, depth: usize) -> bool {
    use hcl_edit::expr::BinaryOperator::{And, Or};
    if depth > 16 {
        return false;
    }
    let (a, b) = (unparen(a), unparen(b));
    if canonical_text(a) == canonical_text(b) {
        return true;
    }
    let next = depth + 1;
    if let Some(parts) = operands(b, Or) {
        if parts.iter().any(|p| implies(a, p, next)) {
            return true;
        }
    }
    if let Some(parts) = operands(b, And) {
        return parts.iter().all(|p| implies(a, p, next));
    }
    if let Some(parts) = operands(a, Or) {
        return parts.iter().all(|p| implies(p, b, next));
    }
    if let Some(parts) = operands(a, And) {
        if parts.iter().any(|p| implies(p, b, next)) {
            return true;
        }
    }
    looser_bound(a, b) || longer_list(a, b)
}

fn unparen(e: &Expression) -> &Expression {
    match e {
        Expression::Parenthesis(p) => unparen(p.inner()),
        e => e,
    }
}

/// The operands of a chain of one operator (`a || b || c`), or `None`.
fn operands(e: &Expression, op: hcl_edit::expr::BinaryOperator) -> Option<Vec<&Expression>> {
    let Expression::BinaryOp(b) = unparen(e) else {
        return None;
    };
    if *b.operator.value() != op {
        return None;
    }
    let mut out = Vec::new();
    for side in [&b.lhs_expr, &b.rhs_expr] {
        match operands(side, op) {
            Some(inner) => out.extend(inner),
            None => out.push(unparen(side)),
        }
    }
    Some(out)
}

/// `x < 10` → `x < 20`, `x >= 3` → `x >= 1`: the same operand and operator, a looser
/// number.
fn looser_bound(a: &Expression, b: &Expression) -> bool {
    use hcl_edit::expr::BinaryOperator::{Greater, GreaterEq, Less, LessEq};
    let (Expression::BinaryOp(x), Expression::BinaryOp(y)) = (a, b) else {
        return false;
    };
    let (op, same_op) = (*x.operator.value(), *y.operator.value());
    if op != same_op || canonical_text(&x.lhs_expr) != canonical_text(&y.lhs_expr) {
        return false;
    }
    let number = |e: &Expression| static_value(e).and_then(|v| v.as_f64());
    let (Some(before), Some(after)) = (number(&x.rhs_expr), number(&y.rhs_expr)) else {
        return false;
    };
    match op {
        Less | LessEq => after >= before,
        Greater | GreaterEq => after <= before,
        _ => false,
    }
}

/// `contains(["a", "b"], x)` → `contains(["a", "b", "c"], x)`.
fn longer_list(a: &Expression, b: &Expression) -> bool {
    let parts = |e: &Expression| -> Option<(Vec<Value>, String)> {
        let Expression::FuncCall(call) = e else {
            return None;
        };
        if !call.name.namespace.is_empty() || call.name.name.as_str() != "contains" {
            return None;
        }
        let args: Vec<&Expression> = call.args.iter().collect();
        let [list, item] = args.as_slice() else {
            return None;
        };
        let Value::Array(items) = static_value(list)? else {
            return None;
        };
        Some((items, canonical_text(item)))
    };
    match (parts(a), parts(b)) {
        (Some((before, x)), Some((after, y))) => x == y && before.iter().all(|v| after.contains(v)),
        _ => false,
    }
}

fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > 80 {
        format!("{}…", joined.chars().take(79).collect::<String>())
    } else {
        joined
    }
}

/// What a changed module does to the caller of one `module` block: defaults the caller
/// relies on that changed, new inputs it does not set, narrowed inputs it passes
/// through from its own callers.
pub fn diff_call(
    caller_dir: &str,
    call: &ModuleCall,
    callee_dir: &str,
    old: &ModuleInterface,
    new: &ModuleInterface,
    out: &mut Vec<Finding>,
) {
    let site = CallSite {
        prefix: format!("module.{}", call.name),
        caller: join(caller_dir, &call.location.to_string()),
        callee_dir,
    };
    for var in &new.variables {
        let passed = call.args.get(&var.name);
        match (old.variable(&var.name), passed) {
            (None, None) if var.is_required() && rename_source(old, new, var).is_none() => {
                out.push(new_required_input(&site, var));
            }
            (None, _) => {}
            (Some(prev), None) => unset_default_changes(&site, prev, var, out),
            // The caller passes its own callers' values through: a narrower input
            // reaches them.
            (Some(prev), Some(value)) if value.to_string().contains("var.") => {
                if narrowed(prev, var) {
                    out.push(passed_through_narrowed(&site, var));
                }
            }
            (Some(_), Some(_)) => {}
        }
    }
}

/// One `module` block as the findings about it name it.
struct CallSite<'a> {
    /// `module.<name>`, the start of each finding's item.
    prefix: String,
    /// The block's `file:line`, repository-relative.
    caller: String,
    callee_dir: &'a str,
}

fn new_required_input(site: &CallSite, var: &Variable) -> Finding {
    finding(
        Rule::ModuleInputRequired,
        format!("{}.{}", site.prefix, var.name),
        site.callee_dir,
        &var.location,
        format!(
            "module `{}` gained the required input `{}`, which `{}` does not set",
            site.callee_dir, var.name, site.caller
        ),
    )
}

/// Defaults (of the input, or of its optional attributes) that changed under a
/// caller who does not set the input.
fn unset_default_changes(site: &CallSite, prev: &Variable, var: &Variable, out: &mut Vec<Finding>) {
    let mut changes = Vec::new();
    if default_differs(prev, var) {
        changes.push((
            var.name.clone(),
            show_default(&prev.default, prev),
            show_default(&var.default, var),
        ));
    }
    let mut attrs = Vec::new();
    prev.type_expr
        .changed_optional_defaults(&var.type_expr, &var.name, &mut attrs);
    changes.extend(attrs.into_iter().map(|(p, a, b)| (p, show(&a), show(&b))));
    for (path, a, b) in changes {
        out.push(finding(
            Rule::ModuleDefaultChanged,
            format!("{}.{path}", site.prefix),
            site.callee_dir,
            &var.location,
            format!(
                "module `{}` changed the default of `{path}` from {a} to {b}, and `{}` does not set it: \
                 callers of this stack get a different plan",
                site.callee_dir, site.caller
            ),
        ));
    }
}

/// Does `var` accept less than `prev` did: a narrower type, no more `null`, or a
/// new validation?
fn narrowed(prev: &Variable, var: &Variable) -> bool {
    !prev.type_expr.accepted_by(&var.type_expr)
        || (prev.nullable && !var.nullable)
        || var
            .validations
            .iter()
            .any(|v| !prev.validations.iter().any(|p| p.canonical == v.canonical))
}

fn passed_through_narrowed(site: &CallSite, var: &Variable) -> Finding {
    finding(
        Rule::ModuleInputNarrowed,
        format!("{}.{}", site.prefix, var.name),
        site.callee_dir,
        &var.location,
        format!(
            "module `{}` accepts less for `{}` (type, nullability or validation), and `{}` passes \
             its callers' value to it",
            site.callee_dir, var.name, site.caller
        ),
    )
}

/// Where a kind of resource is declared, and whether it is created by default.
#[derive(Clone, Debug)]
pub struct KindSite {
    pub address: String,
    pub file: String,
    pub line: usize,
    pub on_by_default: bool,
    /// False when a `count`/`for_each` on the way could not be evaluated.
    pub known: bool,
}

/// Every kind of resource in the tree, with where it is first created by default.
pub fn kinds(tree: &Tree) -> BTreeMap<String, KindSite> {
    let mut out = BTreeMap::new();
    let inputs = tree.root().default_inputs();
    walk_kinds(tree, &tree.root_dir, &inputs, "", true, true, 0, &mut out);
    out
}

/// Is a `count` or `for_each` on? `Some(true)` for a non-zero count or a non-empty
/// collection, `None` when unknown.
fn gate(
    count: Option<&Expression>,
    for_each: Option<&Expression>,
    vars: &BTreeMap<String, Value>,
    locals: &BTreeMap<String, Expression>,
) -> Option<bool> {
    let mut ev = Evaluator::new(vars, locals);
    if let Some(c) = count {
        return match ev.eval(interpolated(c))? {
            Value::Number(n) => Some(n.as_f64()? > 0.0),
            Value::String(s) => Some(s.parse::<f64>().ok()? > 0.0),
            Value::Bool(b) => Some(b),
            _ => None,
        };
    }
    if let Some(f) = for_each {
        return match ev.eval(interpolated(f))? {
            Value::Array(a) => Some(!a.is_empty()),
            Value::Object(m) => Some(!m.is_empty()),
            Value::Null => Some(false),
            _ => None,
        };
    }
    Some(true)
}

/// `"${expr}"` is `expr` itself, with its type: the engine unwraps a template that
/// is one interpolation and nothing else (0.11-style `"${var.create_x}"` stays a
/// `bool`, `"${var.subnets}"` a map).
fn interpolated(expr: &Expression) -> &Expression {
    if let Expression::StringTemplate(t) = expr {
        let mut elements = t.iter();
        if let (Some(hcl_edit::template::Element::Interpolation(i)), None) =
            (elements.next(), elements.next())
        {
            return &i.expr;
        }
    }
    expr
}

#[allow(clippy::too_many_arguments)]
fn walk_kinds(
    tree: &Tree,
    dir: &str,
    inputs: &BTreeMap<String, Value>,
    path: &str,
    on: bool,
    known: bool,
    depth: usize,
    out: &mut BTreeMap<String, KindSite>,
) {
    let Some(module) = tree.modules.get(dir) else {
        return;
    };
    if depth > 16 {
        return;
    }
    for r in &module.resources {
        let g = gate(
            r.count.as_ref(),
            r.for_each.as_ref(),
            inputs,
            &module.locals,
        );
        let site = KindSite {
            address: format!("{path}{}", r.address()),
            file: join(dir, &r.location.file),
            line: r.location.line,
            on_by_default: on && g.unwrap_or(true),
            known: known && g.is_some(),
        };
        merge_site(out, &r.kind, site);
    }
    for call in &module.module_calls {
        let Some(callee) = tree.callee(dir, call) else {
            continue;
        };
        let Some(callee_module) = tree.modules.get(&callee) else {
            continue;
        };
        let g = gate(
            call.count.as_ref(),
            call.for_each.as_ref(),
            inputs,
            &module.locals,
        );
        let mut callee_inputs = callee_module.default_inputs();
        let mut ev = Evaluator::new(inputs, &module.locals);
        for (name, expr) in &call.args {
            match ev.eval(interpolated(expr)) {
                Some(v) => {
                    let v = callee_module.variable(name).map_or(v.clone(), |var| {
                        stackpack_interface::types::convert(&v, &var.type_expr)
                    });
                    callee_inputs.insert(name.clone(), v);
                }
                None => {
                    callee_inputs.remove(name);
                }
            }
        }
        walk_kinds(
            tree,
            &callee,
            &callee_inputs,
            &format!("{path}module.{}.", call.name),
            on && g.unwrap_or(true),
            known && g.is_some(),
            depth + 1,
            out,
        );
    }
}

fn merge_site(out: &mut BTreeMap<String, KindSite>, kind: &str, site: KindSite) {
    match out.get_mut(kind) {
        None => {
            out.insert(kind.to_string(), site);
        }
        Some(existing) => {
            if site.on_by_default && !existing.on_by_default {
                *existing = site;
            }
        }
    }
}

/// The constraint every module of a tree puts together on the engine, or on one
/// provider: all of them must hold at once.
fn combined(tree: &Tree, pick: &dyn Fn(&ModuleInterface) -> Option<String>) -> Option<String> {
    let mut parts: Vec<String> = tree.modules.values().filter_map(|m| pick(m)).collect();
    parts.sort();
    parts.dedup();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Where a tree's constraint changed: the first module whose own constraint differs.
fn changed_site(
    old: &Tree,
    new: &Tree,
    pick: &dyn Fn(&ModuleInterface) -> Option<String>,
    locate: &dyn Fn(&ModuleInterface) -> Option<Location>,
) -> (String, Location) {
    for (dir, module) in &new.modules {
        let before = old.modules.get(dir).and_then(|m| pick(m));
        if pick(module) != before {
            return (dir.clone(), locate(module).unwrap_or_default());
        }
    }
    for (dir, module) in &old.modules {
        if !new.modules.contains_key(dir) && pick(module).is_some() {
            return (dir.clone(), locate(module).unwrap_or_default());
        }
    }
    (new.root_dir.clone(), locate(new.root()).unwrap_or_default())
}

/// Engine and provider constraints, as the whole tree (the stack and every module it
/// vendors) states them: a vendored module that narrows its provider constraint
/// narrows the stack's too.
pub fn diff_constraints(old: &Tree, new: &Tree, out: &mut Vec<Finding>) {
    let show = |c: &Option<String>| {
        c.as_deref()
            .map_or("none".to_string(), |c| format!("`{c}`"))
    };
    let engine = |m: &ModuleInterface| m.required_version.as_ref().map(|(v, _)| v.clone());
    let engine_at = |m: &ModuleInterface| m.required_version.as_ref().map(|(_, l)| l.clone());
    let (before, after) = (combined(old, &engine), combined(new, &engine));
    let change = compare_text(before.as_deref(), after.as_deref());
    if change != SetChange::Same {
        let (dir, loc) = changed_site(old, new, &engine, &engine_at);
        let (rule, how) = match change {
            SetChange::Narrowed => (
                Rule::EngineConstraintNarrowed,
                "some engine versions allowed before no longer are",
            ),
            _ => (
                Rule::EngineConstraintWidened,
                "every engine version allowed before still is",
            ),
        };
        out.push(finding(
            rule,
            "required_version",
            &dir,
            &loc,
            format!(
                "`required_version` changed from {} to {}: {how}",
                show(&before),
                show(&after)
            ),
        ));
    }
    // Providers the release already used, declared or only implied by its resources
    // (no constraint: every version), that the new tree constrains.
    let used: BTreeSet<&str> = old
        .modules
        .values()
        .flat_map(|m| {
            m.required_providers
                .keys()
                .map(String::as_str)
                .chain(m.resources.iter().map(|r| r.provider()))
        })
        .collect();
    let names: BTreeSet<&String> = new
        .modules
        .values()
        .flat_map(|m| m.required_providers.keys())
        .filter(|n| used.contains(n.as_str()))
        .collect();
    for name in names {
        let version = |m: &ModuleInterface| {
            m.required_providers
                .get(name)
                .and_then(|p| p.version.clone())
        };
        let version_at =
            |m: &ModuleInterface| m.required_providers.get(name).map(|p| p.location.clone());
        let (before, after) = (combined(old, &version), combined(new, &version));
        let change = compare_text(before.as_deref(), after.as_deref());
        if change == SetChange::Same {
            continue;
        }
        let (dir, loc) = changed_site(old, new, &version, &version_at);
        let (rule, how) = match change {
            SetChange::Narrowed => (
                Rule::ProviderConstraintNarrowed,
                "some versions allowed before no longer are",
            ),
            _ => (
                Rule::ProviderConstraintWidened,
                "every version allowed before still is",
            ),
        };
        out.push(finding(
            rule,
            name.as_str(),
            &dir,
            &loc,
            format!(
                "provider `{name}` constraint changed from {} to {}: {how}",
                show(&before),
                show(&after)
            ),
        ));
    }
}

/// New and removed kinds of resource between two trees.
pub fn diff_kinds(old: &Tree, new: &Tree, out: &mut Vec<Finding>) {
    let old_kinds = kinds(old);
    let new_kinds = kinds(new);
    for (kind, site) in &new_kinds {
        if old_kinds.contains_key(kind) {
            continue;
        }
        let loc = Location {
            file: site.file.clone(),
            line: site.line,
        };
        if let Some(source) = kind.strip_prefix("data.") {
            out.push(finding(
                Rule::DataSourceAdded,
                kind,
                "",
                &loc,
                format!(
                    "`{}` reads the data source `{source}`: it changes nothing callers own \
                     (note: callers' credentials may need permission to read it)",
                    site.address
                ),
            ));
        } else if site.on_by_default {
            let mut message = format!(
                "`{}` adds the resource kind `{kind}`, created with every input at its default",
                site.address
            );
            if !site.known {
                message.push_str(
                    " (its `count`/`for_each` could not be evaluated, so it counts as on)",
                );
            }
            out.push(finding(
                Rule::ResourceKindAddedByDefault,
                kind,
                "",
                &loc,
                message,
            ));
        } else {
            out.push(finding(
                Rule::ResourceKindAddedGated,
                kind,
                "",
                &loc,
                format!(
                    "`{}` adds the resource kind `{kind}`, off unless an input turns it on",
                    site.address
                ),
            ));
        }
    }
    for (kind, site) in &old_kinds {
        if new_kinds.contains_key(kind) {
            continue;
        }
        let loc = Location {
            file: site.file.clone(),
            line: site.line,
        };
        if let Some(source) = kind.strip_prefix("data.") {
            out.push(finding(
                Rule::DataSourceRemoved,
                kind,
                "",
                &loc,
                format!(
                    "`{}` no longer reads the data source `{source}`: nothing callers own changes",
                    site.address
                ),
            ));
            continue;
        }
        if !site.on_by_default {
            continue;
        }
        out.push(finding(
            Rule::ResourceKindRemoved,
            kind,
            "",
            &loc,
            format!("the resource kind `{kind}` (`{}`) is no longer managed: existing ones would be destroyed", site.address),
        ));
    }
}
