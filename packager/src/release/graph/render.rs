//! The releases in `check`'s output: a table for people, annotations for CI.

use super::ReleaseReport;
use crate::check::finding::{findings_table, github_annotation, table};
use crate::check::Severity;

/// One row per release (its stacks in apply order, its services, the result), then
/// each release's findings. Empty when the repository declares no release.
pub fn human(reports: &[ReleaseReport]) -> String {
    if reports.is_empty() {
        return String::new();
    }
    let mut rows = vec![vec![
        "RELEASE".to_string(),
        "RESULT".to_string(),
        "SERVICES".to_string(),
        "STACKS (APPLY ORDER)".to_string(),
    ]];
    for r in reports {
        rows.push(vec![
            r.release.clone(),
            result(r),
            r.services.len().to_string(),
            r.stacks.join(" → "),
        ]);
    }
    let mut out = format!("\nreleases:\n{}", table(&rows));
    for r in reports.iter().filter(|r| !r.findings.is_empty()) {
        out.push_str(&format!("\nrelease `{}`:\n", r.release));
        out.push_str(&findings_table(&r.findings));
    }
    out
}

/// `refused`, `major`, or `ok`.
pub fn result(report: &ReleaseReport) -> String {
    if report.refused {
        "refused".to_string()
    } else if let Some(bump) = report.bump {
        bump.to_string()
    } else {
        "ok".to_string()
    }
}

/// Every finding as a workflow annotation: errors for what refuses a release,
/// warnings for a major break and for advice.
pub fn github(reports: &[ReleaseReport]) -> String {
    let mut out = String::new();
    for f in reports.iter().flat_map(|r| &r.findings) {
        let level = match (f.severity, f.bump) {
            (Severity::Error, _) => "error",
            (Severity::Warning, _) | (_, Some(_)) => "warning",
            _ => "notice",
        };
        out.push_str(&github_annotation(f, level));
        out.push('\n');
    }
    out
}

/// What stderr says when a release is refused: each error at its `file:line`.
pub fn refusal(report: &ReleaseReport) -> String {
    let mut out = format!(
        "error: release `{}` cannot be published: its graph is broken\n",
        report.release
    );
    for f in report.errors() {
        out.push_str(&format!("  --> `{}`: {}\n", f.location(), f.message));
        out.push_str(&format!("      rule: {}\n", f.rule));
    }
    out.push_str("hint: fix `stackpack.toml` `[releases]` or the stacks' `depends-on` and `[inputs.from]`; see `docs/configuration.md`\n");
    out
}

/// The releases for a pull request's step summary: one line each, then its findings.
pub fn markdown(reports: &[ReleaseReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let mark = if r.refused { "❌" } else { "✅" };
        out.push_str(&format!(
            "#### {mark} release `{}`: {} ({})\n\n",
            r.release,
            result(r),
            r.stacks.join(" → ")
        ));
        if r.findings.is_empty() {
            continue;
        }
        out.push_str("| level | rule | where | finding |\n|---|---|---|---|\n");
        for f in &r.findings {
            let level = f
                .bump
                .map_or_else(|| f.severity.to_string(), |b| b.to_string());
            out.push_str(&format!(
                "| {level} | `{}` | `{}` | {} |\n",
                f.rule,
                f.location().replace('|', "\\|"),
                f.message.replace('|', "\\|")
            ));
        }
        out.push('\n');
    }
    out
}
