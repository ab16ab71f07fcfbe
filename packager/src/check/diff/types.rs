//! An input's type (narrowed or widened, and the defaults of its optional
//! attributes) and its nullability.

use serde_json::Value;
use stackpack_interface::Variable;
use stackpack_schema::version::Bump;

use super::rule::{finding, Rule};
use super::show::show;
use crate::check::finding::Finding;

/// The type, and the defaults of its optional attributes.
pub(super) fn compare_type(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
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
        out.push(
            finding(
                rule,
                name,
                dir,
                &new.location,
                format!("input `{name}` changed its type from `{o}` to `{n}`"),
            )
            .with_change(o.to_string(), n.to_string()),
        );
    }
    let mut attr_defaults = Vec::new();
    o.changed_optional_defaults(n, name, &mut attr_defaults);
    for (path, od, nd) in attr_defaults {
        let (before, after) = (show(&od), show(&nd));
        out.push(
            finding(
                Rule::DefaultChanged,
                &path,
                dir,
                &new.location,
                format!("optional attribute `{path}` changed its default from {before} to {after}"),
            )
            .with_change(before, after),
        );
    }
}

pub(super) fn compare_nullable(old: &Variable, new: &Variable, dir: &str, out: &mut Vec<Finding>) {
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
