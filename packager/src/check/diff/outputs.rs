//! Outputs added, removed, or changed in their sensitivity.

use stackpack_interface::ModuleInterface;

use super::rule::{finding, Rule};
use crate::check::finding::Finding;

pub(super) fn diff_outputs(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
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
