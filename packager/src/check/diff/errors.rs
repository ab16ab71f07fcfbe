//! Errors of the stack itself, not version bumps: a file that cannot be read, a
//! `module` block Terraform refuses. No rule level changes them, and while one
//! stands no version can be judged.

use crate::check::Broken;
use stackpack_interface::{ModuleCall, ModuleInterface};

use crate::check::finding::{Finding, Severity};
use crate::check::tree::{join, Unread};

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
        change: None,
        decisive: false,
    }
}

/// A file of the work tree that cannot be read, new or changed since the release.
pub fn unreadable(u: &Unread) -> Finding {
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
