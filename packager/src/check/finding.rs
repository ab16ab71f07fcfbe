//! One thing the checker found, and how any list of findings is shown: as an aligned
//! table for people, and as GitHub workflow annotations for CI. The interface rules,
//! the lints, the customer checks ([`crate::impact`]) and [`super::render`] all use
//! these, and this module uses none of them.

use std::fmt;

use serde::Serialize;
use stackpack_schema::rules::InterfaceFinding;
use stackpack_schema::version::Bump;

use super::rule_id::RuleId;

/// How loud a finding is. Interface findings are `info`: their weight is their bump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// One thing the checker found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// The rule, such as `default-changed` or `no-secret-literals`.
    pub rule: RuleId,
    /// What it is about: an input, an output, a resource kind, a provider.
    pub item: String,
    /// Repository-relative path.
    pub file: String,
    /// 1-based; 0 when unknown.
    pub line: usize,
    /// The bump an interface finding requires; absent for lints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bump: Option<Bump>,
    pub severity: Severity,
    pub message: String,
    /// The values compared, where the rule compares two (a type, a default, a
    /// constraint): `before` and `after` beside the other fields in JSON.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub change: Option<Box<Change>>,
    /// One of the findings that decided the unit's bump: its bump is the unit's, above
    /// patch. Set by [`super::check_units`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub decisive: bool,
}

/// What an item was in the last release and is now, as the source spells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub before: String,
    pub after: String,
}

impl Finding {
    /// The finding as a bundle config records it, when it is one of the interface
    /// table's: the support page shows these as the packager decided them.
    pub fn recorded(&self) -> Option<InterfaceFinding> {
        let RuleId::Interface(rule) = self.rule else {
            return None;
        };
        Some(InterfaceFinding {
            rule,
            item: self.item.clone(),
            file: self.file.clone(),
            line: self.line,
            bump: self.bump?,
            message: self.message.clone(),
        })
    }

    /// The finding with the values it compares, before and after.
    pub fn with_change(mut self, before: impl Into<String>, after: impl Into<String>) -> Finding {
        // Messages quote values in backticks; the fields hold the values alone.
        let bare = |text: String| text.trim_matches('`').to_string();
        self.change = Some(Box::new(Change {
            before: bare(before.into()),
            after: bare(after.into()),
        }));
        self
    }

    /// `file:line`.
    pub fn location(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// A workflow command's message, with the characters GitHub reads as syntax escaped.
pub(crate) fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`file=`, `title=`), escaped.
pub(crate) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One GitHub workflow annotation: `::error file=F,line=L,title=T::message`.
pub fn github_annotation(finding: &Finding, level: &str) -> String {
    let title = match finding.bump {
        Some(b) => format!("{} ({b})", finding.rule),
        None => finding.rule.to_string(),
    };
    let mut props = format!("file={}", escape_property(&finding.file));
    if finding.line > 0 {
        props.push_str(&format!(",line={}", finding.line));
    }
    props.push_str(&format!(",title={}", escape_property(&title)));
    format!("::{level} {props}::{}", escape_data(&finding.message))
}

/// Aligned columns, no borders, widest column last.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; columns];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The findings of one list as a table: level, rule, location, message.
pub fn findings_table(findings: &[Finding]) -> String {
    let mut rows = vec![vec![
        "LEVEL".to_string(),
        "RULE".to_string(),
        "LOCATION".to_string(),
        "FINDING".to_string(),
    ]];
    for f in findings {
        rows.push(vec![
            f.bump
                .map_or_else(|| f.severity.to_string(), |b| b.to_string()),
            f.rule.to_string(),
            f.location(),
            f.message.clone(),
        ]);
    }
    table(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_escape_their_fields() {
        let f = Finding {
            rule: stackpack_schema::rules::Rule::DefaultChanged.into(),
            item: "x".into(),
            file: "modules/a,b/variables.tf".into(),
            line: 3,
            bump: Some(Bump::Major),
            severity: Severity::Info,
            message: "100% changed\nsecond line".into(),
            change: None,
            decisive: false,
        };
        assert_eq!(
            github_annotation(&f, "error"),
            "::error file=modules/a%2Cb/variables.tf,line=3,title=default-changed (major)::100%25 changed%0Asecond line"
        );
    }

    #[test]
    fn tables_align_and_put_the_widest_last() {
        let t = table(&[
            vec!["a".into(), "bbb".into(), "long text".into()],
            vec!["ccc".into(), "d".into(), "x".into()],
        ]);
        assert_eq!(t, "a    bbb  long text\nccc  d    x\n");
    }
}
