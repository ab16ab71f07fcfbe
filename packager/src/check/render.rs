//! Findings for people (an aligned table), for CI (GitHub workflow annotations) and
//! for scripts (one JSON document).

use serde::Serialize;
use stackpack_schema::version::Bump;

use super::finding::{escape_data, escape_property};
pub use super::finding::{findings_table, github_annotation, table};
use super::finding::{Finding, Severity};

/// The result of checking a repository: one report per stack or module, and the lints.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutput {
    /// The commit compared against.
    pub against: Option<String>,
    pub units: Vec<UnitReport>,
    pub lints: Vec<Finding>,
    /// Every customer's inputs checked against the interface the build would publish.
    pub customers: Vec<crate::impact::CustomerReport>,
    /// The customers `--allow-breaking` named, when it matched exactly those affected.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_breaking: Vec<String>,
    /// Every release `stackpack.toml` declares, its graph proven (see
    /// [`crate::release::graph`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<crate::release::graph::ReleaseReport>,
    /// False when a requested bump is lower than required, a lint failed, a
    /// customer would break (and `--allow-breaking` did not name exactly them), or a
    /// release's graph is broken.
    pub ok: bool,
}

/// One stack or module's result.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitReport {
    /// Repository-relative folder.
    pub path: String,
    pub kind: super::UnitKind,
    pub required: Bump,
    /// The bump asked for with `--bump`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<Bump>,
    /// True when a requested bump is lower than the required one.
    pub refused: bool,
    pub findings: Vec<Finding>,
    pub warnings: Vec<String>,
    /// No earlier release to compare with: its first.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub first: bool,
}

impl UnitReport {
    /// The required bump, or `error` when the unit has errors of its own (a file that
    /// cannot be read, a call Terraform refuses): then no bump would be right.
    pub fn required_text(&self) -> String {
        if self.findings.iter().any(|f| f.severity == Severity::Error) {
            "error".to_string()
        } else if self.first {
            "first release".to_string()
        } else {
            self.required.to_string()
        }
    }
}

/// The error for a requested bump lower than the required one, in the house style:
/// what, every finding that needs more (where, what, rule), and one hint. For
/// `stackpack check`, and for `version`/`publish` when they refuse a `--bump`.
pub fn refusal(
    path: &str,
    required: Bump,
    requested: Option<Bump>,
    findings: &[Finding],
) -> String {
    let broken: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if !broken.is_empty() {
        // Files the engine would refuse: no bump can be judged, whatever was asked.
        let mut out =
            format!("error: `{path}` cannot be judged: the engine would refuse its files\n");
        for f in broken {
            out.push_str(&format!("  --> `{}`: {}\n", f.location(), f.message));
            out.push_str(&format!("      rule: {}\n", f.rule));
        }
        out.push_str("hint: fix these files first (`terraform validate` in the folder shows the same), then check again\n");
        return out;
    }
    let mut out = format!(
        "error: `{path}` needs a {required} release, but `--bump {}` was asked for\n",
        requested.map_or("-".to_string(), |b| b.to_string())
    );
    for f in findings.iter().filter(|f| f.bump > requested) {
        out.push_str(&format!("  --> `{}`: {}\n", f.location(), f.message));
        out.push_str(&format!(
            "      rule: {} (requires a {} release)\n",
            f.rule,
            f.bump.map_or("-".to_string(), |b| b.to_string())
        ));
    }
    out.push_str(&format!(
        "hint: release with `--bump {required}`, or undo the change\n"
    ));
    out
}

/// One JSON document.
pub fn json(output: &CheckOutput) -> String {
    serde_json::to_string_pretty(output).expect("check output serialises")
}

/// Every finding as an annotation: errors for lint errors and for the findings of a
/// refused unit, warnings for lint warnings and for breaking changes, notices otherwise.
fn annotations(output: &CheckOutput) -> String {
    let mut out = String::new();
    for unit in &output.units {
        for f in &unit.findings {
            let level = match (unit.refused, f.bump) {
                _ if f.severity == Severity::Error => "error",
                (true, Some(b)) if Some(b) > unit.requested => "error",
                (_, Some(Bump::Major)) => "warning",
                _ => "notice",
            };
            out.push_str(&github_annotation(f, level));
            out.push('\n');
        }
    }
    for f in &output.lints {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        out.push_str(&github_annotation(f, level));
        out.push('\n');
    }
    out.push_str(&crate::release::graph::render::github(&output.releases));
    out
}

/// The stacks and modules a PR view groups findings by: every checked unit, then every
/// stack that has customers, in order, each once.
fn sections(output: &CheckOutput) -> Vec<(super::UnitKind, String)> {
    let mut out: Vec<(super::UnitKind, String)> = output
        .units
        .iter()
        .map(|u| (u.kind, u.path.clone()))
        .collect();
    for r in &output.customers {
        if !r.stack_path.is_empty() && !out.iter().any(|(_, p)| *p == r.stack_path) {
            out.push((super::UnitKind::Stack, r.stack_path.clone()));
        }
    }
    out
}

fn in_folder(file: &str, dir: &str) -> bool {
    file.strip_prefix(dir)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// The customers of the stack at `path` this release breaks, sorted.
fn affected_of<'a>(output: &'a CheckOutput, path: &str) -> Vec<&'a str> {
    let mut names: Vec<&str> = output
        .customers
        .iter()
        .filter(|r| r.stack_path == path && r.breaks)
        .map(|r| r.customer.as_str())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// One line per stack or module: the bump it needs, and whom it breaks.
fn per_stack_line(output: &CheckOutput, kind: super::UnitKind, path: &str) -> (bool, String) {
    let unit = output.units.iter().find(|u| u.path == path);
    let mut text = match unit {
        Some(u) if u.first => {
            format!("{kind} `{path}` is a first release: nothing earlier to compare with")
        }
        Some(u) => format!("{kind} `{path}` needs a {} release", u.required),
        None => format!("{kind} `{path}` did not change"),
    };
    let affected = affected_of(output, path);
    let allowed = !affected.is_empty()
        && affected
            .iter()
            .all(|c| output.allowed_breaking.iter().any(|a| a == c));
    if affected.is_empty() {
        let checked = output
            .customers
            .iter()
            .filter(|r| r.stack_path == path)
            .count();
        if checked > 0 {
            text.push_str(&if checked == 1 {
                "; the 1 customer's inputs fit".to_string()
            } else {
                format!("; all {checked} customers' inputs fit")
            });
        }
    } else {
        let names: Vec<String> = affected.iter().map(|c| format!("`{c}`")).collect();
        text.push_str(&format!(
            "; it breaks {} customer{}: {}{}",
            affected.len(),
            if affected.len() == 1 { "" } else { "s" },
            names.join(", "),
            if allowed { " (allowed)" } else { "" }
        ));
    }
    let failed = unit.is_some_and(|u| u.refused) || (!affected.is_empty() && !allowed);
    (failed, text)
}

/// The pull request's view as workflow annotations: one line per stack or module
/// (the bump it needs and whom it breaks), then every finding at its file and line.
pub fn github(output: &CheckOutput) -> String {
    let mut out = String::new();
    for (kind, path) in sections(output) {
        let (failed, text) = per_stack_line(output, kind, &path);
        let level = if failed { "error" } else { "notice" };
        out.push_str(&format!(
            "::{level} title={}::{}\n",
            escape_property(&format!("stackpack check: {path}")),
            escape_data(&text)
        ));
    }
    out.push_str(&annotations(output));
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn markdown_findings(findings: &[&Finding]) -> String {
    let mut out = String::from("| level | rule | where | finding |\n|---|---|---|---|\n");
    for f in findings {
        let level = f
            .bump
            .map_or_else(|| f.severity.to_string(), |b| b.to_string());
        out.push_str(&format!(
            "| {level} | `{}` | `{}` | {} |\n",
            f.rule,
            cell(&f.location()),
            cell(&f.message)
        ));
    }
    out
}

/// Markdown for `$GITHUB_STEP_SUMMARY`: per stack or module, the bump it needs, every
/// finding, and every customer it breaks with why; then the lints outside them.
pub fn step_summary(output: &CheckOutput) -> String {
    let mut out = String::from("### Stackpack check\n\n");
    if let Some(against) = &output.against {
        out.push_str(&format!("Compared with {}.\n\n", cell(against)));
    }
    let sections = sections(output);
    if sections.is_empty() {
        out.push_str("No stack or module changed.\n");
    }
    for (kind, path) in &sections {
        let (failed, text) = per_stack_line(output, *kind, path);
        out.push_str(&format!(
            "#### {} {}\n\n",
            if failed { "❌" } else { "✅" },
            cell(&text)
        ));
        let mut findings: Vec<&Finding> = output
            .units
            .iter()
            .filter(|u| u.path == *path)
            .flat_map(|u| &u.findings)
            .collect();
        findings.extend(output.lints.iter().filter(|f| in_folder(&f.file, path)));
        if !findings.is_empty() {
            out.push_str(&markdown_findings(&findings));
            out.push('\n');
        }
        let warnings: Vec<&String> = output
            .units
            .iter()
            .filter(|u| u.path == *path)
            .flat_map(|u| &u.warnings)
            .collect();
        for w in &warnings {
            out.push_str(&format!("- warning: {}\n", cell(w)));
        }
        if !warnings.is_empty() {
            out.push('\n');
        }
        let customers: Vec<&crate::impact::CustomerReport> = output
            .customers
            .iter()
            .filter(|r| r.stack_path == *path && !r.findings.is_empty())
            .collect();
        if !customers.is_empty() {
            out.push_str("| customer | result | where | finding |\n|---|---|---|---|\n");
            for r in customers {
                for f in &r.findings {
                    out.push_str(&format!(
                        "| `{}` | {} | `{}` | {} |\n",
                        r.customer,
                        r.result(),
                        cell(&f.location()),
                        cell(&f.message)
                    ));
                }
            }
            out.push('\n');
        }
    }
    let rest: Vec<&Finding> = output
        .lints
        .iter()
        .filter(|f| !sections.iter().any(|(_, p)| in_folder(&f.file, p)))
        .chain(
            output
                .customers
                .iter()
                .filter(|r| r.stack_path.is_empty())
                .flat_map(|r| &r.findings),
        )
        .collect();
    if !rest.is_empty() {
        out.push_str("#### Lints elsewhere in the repository\n\n");
        out.push_str(&markdown_findings(&rest));
    }
    out.push_str(&crate::release::graph::render::markdown(&output.releases));
    out.push('\n');
    out
}

/// The whole output for a person.
pub fn human(output: &CheckOutput) -> String {
    let mut out = String::new();
    if let Some(against) = &output.against {
        out.push_str(&format!("compared with `{against}`\n\n"));
    }
    let mut rows = vec![vec![
        "KIND".to_string(),
        "PATH".to_string(),
        "REQUIRED".to_string(),
        "REQUESTED".to_string(),
    ]];
    for unit in &output.units {
        rows.push(vec![
            unit.kind.to_string(),
            unit.path.clone(),
            unit.required_text(),
            match (unit.requested, unit.refused) {
                (Some(r), true) => format!("{r} (too small)"),
                (Some(r), false) => r.to_string(),
                (None, _) => "-".to_string(),
            },
        ]);
    }
    if output.units.is_empty() {
        out.push_str("no stack or module changed\n");
    } else {
        out.push_str(&table(&rows));
    }
    for unit in &output.units {
        if unit.findings.is_empty() && unit.warnings.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n{} `{}` needs {}:\n",
            unit.kind,
            unit.path,
            match unit.required_text().as_str() {
                "error" => "its errors fixed before any release".to_string(),
                "first release" => "no bump: it is a first release".to_string(),
                bump => format!("a {bump} release"),
            }
        ));
        if !unit.findings.is_empty() {
            out.push_str(&findings_table(&unit.findings));
        }
        for w in &unit.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    if !output.lints.is_empty() {
        out.push_str("\nlints:\n");
        out.push_str(&findings_table(&output.lints));
    }
    out.push_str(&crate::release::graph::render::human(&output.releases));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Rule;

    #[test]
    fn refusals_name_every_finding_that_needs_more() {
        let finding = |rule: Rule, bump| Finding {
            rule: rule.into(),
            item: "x".into(),
            file: "stacks/a/variables.tf".into(),
            line: 4,
            bump: Some(bump),
            severity: Severity::Info,
            message: format!("{rule} happened"),
            change: None,
            decisive: false,
        };
        let text = refusal(
            "stacks/a",
            Bump::Major,
            Some(Bump::Minor),
            &[
                finding(Rule::OutputAdded, Bump::Minor),
                finding(Rule::DefaultChanged, Bump::Major),
            ],
        );
        assert_eq!(
            text,
            "error: `stacks/a` needs a major release, but `--bump minor` was asked for\n  \
             --> `stacks/a/variables.tf:4`: default-changed happened\n      \
             rule: default-changed (requires a major release)\n\
             hint: release with `--bump major`, or undo the change\n"
        );
    }

    #[test]
    fn a_stack_whose_files_the_engine_refuses_is_not_blamed_on_a_bump_nobody_asked_for() {
        let unreadable = Finding {
            rule: crate::check::Broken::UnreadableFile.into(),
            item: "main.tf".into(),
            file: "stacks/a/main.tf".into(),
            line: 7,
            bump: None,
            severity: Severity::Error,
            message: "expected `}`".into(),
            change: None,
            decisive: false,
        };
        let text = refusal("stacks/a", Bump::Patch, None, &[unreadable]);
        assert!(!text.contains("--bump"), "{text}");
        assert!(
            text.starts_with("error: `stacks/a` cannot be judged"),
            "{text}"
        );
        assert!(
            text.contains("--> `stacks/a/main.tf:7`: expected `}`"),
            "{text}"
        );
        assert!(text.contains("hint: fix these files first"), "{text}");
    }
}
