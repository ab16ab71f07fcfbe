//! Rule levels from a `[rules]` table (`stackpack.toml`'s, or a stack's own for its
//! lints) and their application to findings. Apart from the rest of `check` so that
//! reading a `stack.toml` ([`crate::config`]) needs no more than this.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::Serialize;
use stackpack_schema::version::Bump;

use super::finding::{Finding, Severity};
use super::rule_id::RuleId;

/// A configured rule level (`stackpack.toml` `[rules]`): interface rules take
/// `major|minor|patch|off`, lints `error|warn|off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Major,
    Minor,
    Patch,
    Error,
    Warn,
    Off,
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "major" => Level::Major,
            "minor" => Level::Minor,
            "patch" => Level::Patch,
            "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "off" => Level::Off,
            other => return Err(format!("`{other}` is not a rule level")),
        })
    }
}

/// Rule levels per repository. Rules not named keep their defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuleConfig {
    pub levels: BTreeMap<RuleId, Level>,
}

impl RuleConfig {
    /// Reads a `[rules]` table: `rule-id = "major" | "minor" | "patch" | "off"` for
    /// interface rules, `"error" | "warn" | "off"` for lints. The error names the key.
    pub fn from_table(table: &toml::Table) -> Result<RuleConfig, String> {
        let mut levels = BTreeMap::new();
        for (rule, value) in table {
            let Some(text) = value.as_str() else {
                return Err(format!(
                    "rule `{rule}` must be a string such as `\"major\"` or `\"off\"`"
                ));
            };
            let level: Level = text.parse().map_err(|e| format!("rule `{rule}`: {e}"))?;
            let id = match RuleId::from_id(rule) {
                Some(id @ (RuleId::Interface(_) | RuleId::Lint(_))) => id,
                _ => {
                    return Err(format!(
                        "`{rule}` is not a rule (see `stackpack check --help` for the list)"
                    ))
                }
            };
            match (id, level) {
                (RuleId::Interface(_), Level::Error | Level::Warn) => {
                    return Err(format!(
                        "rule `{rule}` takes `major`, `minor`, `patch` or `off`, not `{text}`"
                    ))
                }
                (RuleId::Lint(_), Level::Major | Level::Minor | Level::Patch) => {
                    return Err(format!(
                        "lint `{rule}` takes `error`, `warn` or `off`, not `{text}`"
                    ))
                }
                _ => {}
            }
            levels.insert(id, level);
        }
        Ok(RuleConfig { levels })
    }

    pub fn level(&self, rule: RuleId) -> Option<Level> {
        self.levels.get(&rule).copied()
    }

    /// Refuses interface rules: where only lints may be set (a stack's `[rules]`).
    pub fn only_lints(self) -> Result<RuleConfig, String> {
        match self
            .levels
            .keys()
            .find(|rule| !matches!(rule, RuleId::Lint(_)))
        {
            Some(rule) => Err(format!(
                "`{}` is an interface rule; a stack sets lints only",
                rule.id()
            )),
            None => Ok(self),
        }
    }

    /// [`RuleConfig::apply`] to the findings in files under `dir` (a stack's
    /// folder, for its own `[rules]`); the others are kept as they are.
    pub fn apply_under(&self, dir: &str, findings: Vec<Finding>) -> Vec<Finding> {
        let prefix = format!("{dir}/");
        let (inside, mut outside): (Vec<Finding>, Vec<Finding>) = findings
            .into_iter()
            .partition(|f| f.file.starts_with(&prefix));
        outside.extend(self.apply(inside));
        outside
    }

    /// Applies the levels: drops rules turned off, sets configured bumps and severities.
    pub fn apply(&self, findings: Vec<Finding>) -> Vec<Finding> {
        findings
            .into_iter()
            .filter_map(|mut f| {
                match self.level(f.rule) {
                    Some(Level::Off) => return None,
                    Some(Level::Major) => f.bump = Some(Bump::Major),
                    Some(Level::Minor) => f.bump = Some(Bump::Minor),
                    Some(Level::Patch) => f.bump = Some(Bump::Patch),
                    Some(Level::Error) => f.severity = Severity::Error,
                    Some(Level::Warn) => f.severity = Severity::Warning,
                    None => {}
                }
                Some(f)
            })
            .collect()
    }
}
