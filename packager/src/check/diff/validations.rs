//! An input's `validation` blocks: added, removed, or provably relaxed.

use std::collections::BTreeSet;

use hcl_edit::expr::Expression;
use serde_json::Value;
use stackpack_interface::eval::{canonical_text, static_value};
use stackpack_interface::Variable;

use super::rule::{finding, Rule};
use crate::check::finding::Finding;

pub(super) fn compare_validations(
    old: &Variable,
    new: &Variable,
    dir: &str,
    out: &mut Vec<Finding>,
) {
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
