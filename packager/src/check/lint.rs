//! Repository lints, all on by default and each configurable in `[rules]`:
//!
//! - `no-environment-names`: modules mention no environment or customer name (customer
//!   ids are the folder names under `customers/`, environments come from the config).
//!   Code only: a comment may talk about "production".
//! - `no-secret-literals`: no secret-looking literal in any packed file or `.tfvars`:
//!   cloud access keys, private keys, tokens, and literal values given to keys named
//!   like `password`, `secret` or `token`. The value itself is never printed.
//! - `sensitive-input-default`: a `sensitive` input has no default.
//! - `input-type-missing`, `input-description-missing`: every input of a module or
//!   stack has a type and a description.
//! - `ignore-without-reason`: `# stackpack:ignore <rule> reason: <why>` must say why.
//!
//! An inline ignore applies to its own line and the line after it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::diff::join;
use super::{Cache, CheckError, Finding, RuleConfig, Severity};
use stackpack_interface::{DefaultValue, Variable};

pub const LINT_RULES: &[&str] = &[
    "no-environment-names",
    "no-secret-literals",
    "sensitive-input-default",
    "input-type-missing",
    "input-description-missing",
    "ignore-without-reason",
];

/// What the lints need to know about the repository.
#[derive(Clone, Debug, Default)]
pub struct LintOptions {
    /// Module folders, repository-relative (`modules/network`).
    pub modules: Vec<String>,
    /// Stack folders, repository-relative (`stacks/data-plane`).
    pub stacks: Vec<String>,
    /// Environment names from `stackpack.toml` `environments`.
    pub environments: Vec<String>,
    pub rules: RuleConfig,
}

impl LintOptions {
    /// Stacks and modules found by the default layout: `stacks/*` and `modules/*`.
    pub fn discover(repo_root: &Path, environments: Vec<String>, rules: RuleConfig) -> LintOptions {
        let list = |dir: &str| -> Vec<String> {
            let mut out: Vec<String> = std::fs::read_dir(repo_root.join(dir))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| format!("{dir}/{}", e.file_name().to_string_lossy()))
                .collect();
            out.sort();
            out
        };
        LintOptions {
            modules: list("modules"),
            stacks: list("stacks"),
            environments,
            rules,
        }
    }
}

fn lint_finding(
    rule: &str,
    item: impl Into<String>,
    file: &str,
    line: usize,
    message: String,
) -> Finding {
    Finding {
        rule: rule.to_string(),
        item: item.into(),
        file: file.to_string(),
        line,
        bump: None,
        severity: Severity::Error,
        message,
    }
}

/// Runs every lint over the repository.
pub fn lint(repo_root: &Path, options: &LintOptions) -> Result<Vec<Finding>, CheckError> {
    lint_with(repo_root, options, &mut Cache::default())
}

/// [`lint`], reusing interfaces already in `cache`.
pub fn lint_with(
    repo_root: &Path,
    options: &LintOptions,
    cache: &mut Cache,
) -> Result<Vec<Finding>, CheckError> {
    let names = forbidden_names(repo_root, options);
    let texts = lintable_texts(repo_root, options);
    let mut findings = Vec::new();
    for (rel, text) in &texts {
        secrets(rel, text, &mut findings);
        let in_module = options
            .modules
            .iter()
            .any(|m| rel.starts_with(&format!("{m}/")));
        if in_module
            && (rel.ends_with(".tf") || rel.ends_with(".tf.json") || rel.ends_with(".tftpl"))
        {
            environment_names(rel, text, &names, &mut findings);
        }
    }
    for dir in options.modules.iter().chain(options.stacks.iter()) {
        let path = repo_root.join(dir);
        if !path.is_dir() {
            continue;
        }
        let module = cache.get(&path)?;
        for var in &module.variables {
            input_lints(dir, var, &mut findings);
        }
    }
    let mut kept = options.rules.apply(apply_ignores(&texts, findings));
    kept.sort_by(|a, b| (&a.file, a.line, &a.rule).cmp(&(&b.file, b.line, &b.rule)));
    kept.dedup();
    Ok(kept)
}

/// Customer ids and environment names, lower-cased, with what each one is: words
/// a reusable module should not hard-code.
fn forbidden_names(repo_root: &Path, options: &LintOptions) -> Vec<(String, &'static str)> {
    let mut names: Vec<(String, &str)> = customer_ids(repo_root)
        .iter()
        .map(|c| (c.to_lowercase(), "customer"))
        .collect();
    names.extend(
        options
            .environments
            .iter()
            .map(|e| (e.to_lowercase(), "environment")),
    );
    names.retain(|(n, _)| !n.is_empty());
    names
}

/// Every readable file under the modules, the stacks and `customers/`, by
/// repository-relative path.
fn lintable_texts(repo_root: &Path, options: &LintOptions) -> BTreeMap<String, String> {
    let customers_dir = "customers".to_string();
    let roots = options
        .modules
        .iter()
        .chain(options.stacks.iter())
        .chain(std::iter::once(&customers_dir));
    let mut texts = BTreeMap::new();
    for root in roots {
        for file in files_under(&repo_root.join(root)) {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let rel = file
                .strip_prefix(repo_root)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            texts.insert(rel, text);
        }
    }
    texts
}

/// The lints on one input: a sensitive default, a missing type or description, a
/// literal secret.
fn input_lints(dir: &str, var: &Variable, findings: &mut Vec<Finding>) {
    let file = join(dir, &var.location.file);
    let line = var.location.line;
    let mut add = |rule: &str, message: String| {
        findings.push(lint_finding(rule, &var.name, &file, line, message));
    };
    if var.sensitive && matches!(&var.default, DefaultValue::Value(v) if !v.is_null()) {
        add(
            "sensitive-input-default",
            format!(
                "sensitive input `{}` has a default: a secret would be packed into every bundle",
                var.name
            ),
        );
    }
    if !var.type_declared {
        add(
            "input-type-missing",
            format!("input `{}` has no `type`", var.name),
        );
    }
    if var
        .description
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        add(
            "input-description-missing",
            format!("input `{}` has no `description`", var.name),
        );
    }
    if secret_key(&var.name) {
        if let DefaultValue::Value(serde_json::Value::String(s)) = &var.default {
            if looks_like_value(s) {
                add(
                    "no-secret-literals",
                    format!(
                        "input `{}` has a literal default that looks like a secret",
                        var.name
                    ),
                );
            }
        }
    }
}

/// Drops findings that an inline `stackpack:ignore RULE reason: …` on their line
/// or the line above covers; an ignore without a reason is a finding itself.
fn apply_ignores(texts: &BTreeMap<String, String>, findings: Vec<Finding>) -> Vec<Finding> {
    let mut kept = Vec::new();
    let mut ignores: BTreeMap<&str, Vec<Ignore>> = BTreeMap::new();
    for (rel, text) in texts {
        let found = parse_ignores(text);
        for i in found.iter().filter(|i| i.reason.is_none()) {
            kept.push(lint_finding(
                "ignore-without-reason",
                &i.rule,
                rel,
                i.line,
                format!(
                    "`stackpack:ignore {}` must give a reason: `# stackpack:ignore {} reason: why`",
                    i.rule, i.rule
                ),
            ));
        }
        ignores.insert(rel.as_str(), found);
    }
    for f in findings {
        let ignored = ignores.get(f.file.as_str()).is_some_and(|list| {
            list.iter().any(|i| {
                i.reason.is_some() && i.rule == f.rule && (i.line == f.line || i.line + 1 == f.line)
            })
        });
        if !ignored {
            kept.push(f);
        }
    }
    kept
}

/// Customer ids: the folder names under `customers/`.
pub fn customer_ids(repo_root: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo_root.join("customers"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    out.sort();
    out
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The line with comments removed (outside strings).
fn code_of(line: &str, in_block_comment: &mut bool) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut in_string = false;
    while i < chars.len() {
        let c = chars[i];
        if *in_block_comment {
            if c == '*' && chars.get(i + 1) == Some(&'/') {
                *in_block_comment = false;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = chars.get(i + 1) {
                    out.push(*n);
                }
                i += 2;
                continue;
            }
            if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '#' => break,
            '/' if chars.get(i + 1) == Some(&'/') => break,
            '/' if chars.get(i + 1) == Some(&'*') => {
                *in_block_comment = true;
                i += 1;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

fn environment_names(rel: &str, text: &str, names: &[(String, &str)], out: &mut Vec<Finding>) {
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        let code = code_of(line, &mut in_block).to_lowercase();
        for (name, what) in names {
            let found = code.match_indices(name.as_str()).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + name.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric())
                    && !after.is_some_and(|c| c.is_alphanumeric())
            });
            if found {
                out.push(lint_finding(
                    "no-environment-names",
                    name.clone(),
                    rel,
                    i + 1,
                    format!("module mentions the {what} name `{name}`: modules must not know environments or customers"),
                ));
            }
        }
    }
}

/// Is this key name one whose value is a secret?
fn secret_key(key: &str) -> bool {
    let key = key.to_lowercase();
    let last = key.rsplit(['_', '-', '.']).next().unwrap_or("");
    matches!(
        last,
        "password" | "passwd" | "pwd" | "secret" | "token" | "apikey" | "passphrase"
    ) || [
        "api_key",
        "access_key",
        "secret_key",
        "private_key",
        "client_secret",
        "secret_access_key",
        "auth_token",
        "access_token",
    ]
    .iter()
    .any(|k| key.ends_with(k))
}

/// A literal that is a value rather than a reference, a template or empty.
fn looks_like_value(value: &str) -> bool {
    let v = value.trim();
    v.len() >= 4
        && !v.contains("${")
        && !v.starts_with("arn:")
        && !v.contains('/')
        && !v.contains(' ')
}

fn run_of(bytes: &[u8], start: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes[start.min(bytes.len())..]
        .iter()
        .take_while(|b| ok(**b))
        .count()
}

/// What kind of secret a line holds, if any.
fn secret_in(line: &str) -> Option<&'static str> {
    let bytes = line.as_bytes();
    if line.contains("-----BEGIN") && line.contains("PRIVATE KEY") {
        return Some("a private key");
    }
    let upper_alnum = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    let token_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    for prefix in [
        "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA",
    ] {
        for (at, _) in line.match_indices(prefix) {
            let before_ok = at == 0 || !upper_alnum(bytes[at - 1]);
            let run = run_of(bytes, at + 4, upper_alnum);
            if before_ok && run == 16 {
                return Some("an AWS access key id");
            }
        }
    }
    let prefixed: &[(&str, usize, &'static str)] = &[
        ("ghp_", 36, "a GitHub token"),
        ("gho_", 36, "a GitHub token"),
        ("ghu_", 36, "a GitHub token"),
        ("ghs_", 36, "a GitHub token"),
        ("ghr_", 36, "a GitHub token"),
        ("github_pat_", 22, "a GitHub token"),
        ("glpat-", 20, "a GitLab token"),
        ("xoxb-", 10, "a Slack token"),
        ("xoxp-", 10, "a Slack token"),
        ("xoxa-", 10, "a Slack token"),
        ("sk_live_", 20, "a Stripe key"),
        ("AIza", 35, "a Google API key"),
    ];
    for (prefix, min, what) in prefixed {
        for (at, _) in line.match_indices(prefix) {
            if run_of(bytes, at + prefix.len(), token_char) >= *min {
                return Some(what);
            }
        }
    }
    // `password = "literal"`, `"api_key": "literal"`.
    let trimmed = line.trim();
    let split = trimmed.find(['=', ':'])?;
    let key = trimmed[..split].trim().trim_matches('"');
    let value = trimmed[split + 1..].trim().trim_end_matches(',').trim();
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
        && secret_key(key)
        && value.len() >= 2
        && value.starts_with('"')
        && value.ends_with('"')
        && looks_like_value(&value[1..value.len() - 1])
    {
        return Some("a literal password or token");
    }
    None
}

fn secrets(rel: &str, text: &str, out: &mut Vec<Finding>) {
    for (i, line) in text.lines().enumerate() {
        if let Some(what) = secret_in(line) {
            out.push(lint_finding(
                "no-secret-literals",
                what,
                rel,
                i + 1,
                format!("this line holds what looks like {what}: keep secrets out of the repository and pass them at apply time"),
            ));
        }
    }
}

struct Ignore {
    rule: String,
    reason: Option<String>,
    line: usize,
}

fn parse_ignores(text: &str) -> Vec<Ignore> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(at) = line.find("stackpack:ignore") else {
            continue;
        };
        let rest = line[at + "stackpack:ignore".len()..].trim();
        let rule: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
        let reason = rest
            .find("reason:")
            .map(|r| rest[r + "reason:".len()..].trim().to_string())
            .filter(|r| !r.is_empty());
        out.push(Ignore {
            rule,
            reason,
            line: i + 1,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_secrets_without_false_alarms() {
        assert_eq!(
            secret_in("access_key = \"AKIAIOSFODNN7EXAMPLE\""),
            Some("an AWS access key id")
        );
        assert_eq!(
            secret_in("-----BEGIN OPENSSH PRIVATE KEY-----"),
            Some("a private key")
        );
        assert_eq!(
            secret_in("db_password = \"hunter22\""),
            Some("a literal password or token")
        );
        assert_eq!(
            secret_in("\"api_token\": \"abcd1234efgh\","),
            Some("a literal password or token")
        );
        assert_eq!(secret_in("db_password = var.db_password"), None);
        assert_eq!(secret_in("secret_arn = \"arn:aws:secretsmanager:x\""), None);
        assert_eq!(secret_in("token = \"${var.token}\""), None);
        assert_eq!(secret_in("account_id = \"111122223333\""), None);
        let gh = format!("token = \"ghp_{}\"", "a".repeat(36));
        assert_eq!(secret_in(&gh), Some("a GitHub token"));
    }

    #[test]
    fn comments_are_not_code() {
        let mut b = false;
        assert_eq!(
            code_of("name = \"a#b\" # production", &mut b),
            "name = \"a#b\" "
        );
        assert_eq!(code_of("x = 1 /* production", &mut b), "x = 1 ");
        assert!(b);
        assert_eq!(code_of("still */ y = 2", &mut b), " y = 2");
    }

    #[test]
    fn ignores_need_reasons() {
        let list = parse_ignores("# stackpack:ignore no-secret-literals reason: test fixture\n# stackpack:ignore input-type-missing\n");
        assert_eq!(list[0].reason.as_deref(), Some("test fixture"));
        assert!(list[1].reason.is_none());
    }
}
