//! What a changed vendored module does to the `module` blocks that call it.

use stackpack_interface::{ModuleCall, ModuleInterface, Variable};

use super::inputs::{default_differs, rename_source};
use super::rule::{finding, Rule};
use super::show::{show, show_default};
use crate::check::finding::Finding;
use crate::check::tree::join;

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
