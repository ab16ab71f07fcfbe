//! Resources: addresses removed or forgotten, and kinds of resource (and data
//! sources) added or removed across the whole tree, with whether a new kind is
//! created with every input at its default.

use std::collections::{BTreeMap, BTreeSet};

use hcl_edit::expr::Expression;
use serde_json::Value;
use stackpack_interface::eval::Evaluator;
use stackpack_interface::{Location, ModuleInterface};

use super::rule::{finding, Rule};
use crate::check::finding::Finding;
use crate::check::tree::{join, Tree};

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
