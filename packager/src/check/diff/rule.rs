//! The one way a finding is made from an interface rule (the rules themselves, their
//! ids and default bumps, live in `stackpack_schema::rules`, so the registry shows
//! what the packager decided).

use stackpack_interface::Location;
pub(super) use stackpack_schema::rules::Rule;

use crate::check::finding::{Finding, Severity};
use crate::check::tree::join;

pub(super) fn finding(
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
        change: None,
        decisive: false,
    }
}
