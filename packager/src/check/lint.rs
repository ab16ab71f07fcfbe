//! Repository lints, all on by default and each configurable in `[rules]`
//! ([`default_severity`] says which refuse and which warn):
//!
//! - `no-environment-names`: modules name no environment or customer (customer ids
//!   are the folder names under `customers/`, environments come from the config) in
//!   a value: a literal, a resource's name, a tag (see `check/env_names.rs`). Schema
//!   names, input and output names and prose may use the same words.
//! - `no-secret-literals`: no secret-looking literal in any packed file or `.tfvars`:
//!   cloud access keys, private keys, tokens, and literal values given to keys named
//!   like `password`, `secret` or `token`. The value itself is never printed. In
//!   documentation, which the engine never reads, a warning.
//! - `sensitive-input-default`: a `sensitive` input has no default that could hold a
//!   secret (`""`, `null` and empty collections are how modules make one optional).
//! - `input-type-missing`, `input-description-missing` (warnings): every input of a
//!   module or stack has a type and a description.
//! - `ignore-without-reason`: `# stackpack:ignore <rule> reason: <why>` must say why.
//! - `controller-owned-field` (warning): a resource sets a size an autoscaler or a
//!   controller changes outside Terraform (`desired_size` in `scaling_config`,
//!   `desired_capacity`, `desired_count`, `replicas`, an autoscaled `node_count`; not
//!   a fixed size, `min_size` equal to `max_size`) without `lifecycle { ignore_changes = [...] }` covering it: drift you will fight
//!   every plan.
//! - `sensitive-input-not-ephemeral` (warning): a sensitive input that only reaches
//!   provider configuration, ephemeral resources or write-only (`*_wo`) arguments, in a
//!   stack or module whose `required_version` only allows engines with ephemeral
//!   inputs (Terraform >= 1.10, OpenTofu >= 1.11), could be `ephemeral = true` and so
//!   stay out of plans and state.
//! - `sensitive-input-stored` (warning, `check/stored_secrets.rs`): a sensitive
//!   input given to an argument the provider stores in the state.
//!
//! An inline ignore applies to its own line and the line after it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use hcl_edit::expr::Expression;
use hcl_edit::structure::{Block, Body};
use hcl_edit::Span;
use stackpack_interface::constraint::{self, Constraint, SetChange};
use stackpack_interface::{DefaultValue, ModuleInterface, Variable};

use stackpack_schema::bundle::EngineName;

use super::env_names;
use super::tree::join;
use super::{Cache, CheckError, Finding, Lint, RuleConfig, Severity};
use crate::secret_text::{looks_like_value, secret_in, secret_key};

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

/// The level a lint has when `[rules]` does not name it. What a module may
/// reasonably leave out (a type Terraform infers, a description) and what only costs
/// work later (a size a controller owns, a secret that could be ephemeral) warns;
/// what packs a secret, an environment or a customer into a module refuses.
pub fn default_severity(rule: Lint) -> Severity {
    match rule {
        Lint::InputTypeMissing
        | Lint::InputDescriptionMissing
        | Lint::ControllerOwnedField
        | Lint::SensitiveInputNotEphemeral
        | Lint::RunsCommandsOnRunner
        | Lint::SensitiveInputStored => Severity::Warning,
        Lint::NoEnvironmentNames
        | Lint::NoSecretLiterals
        | Lint::SensitiveInputDefault
        | Lint::IgnoreWithoutReason => Severity::Error,
    }
}

fn lint_finding(
    rule: Lint,
    item: impl Into<String>,
    file: &str,
    line: usize,
    message: String,
) -> Finding {
    Finding {
        rule: rule.into(),
        item: item.into(),
        file: file.to_string(),
        line,
        bump: None,
        severity: default_severity(rule),
        message,
        change: None,
        decisive: false,
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
    // Each `.tf` file parsed once, for every lint that reads its blocks (it was
    // parsed again by each of five).
    let bodies = parsed_bodies(&texts);
    let read = folders_the_engine_reads(repo_root, options, cache);
    let mut findings = Vec::new();
    for (rel, text) in &texts {
        let body = bodies.get(rel.as_str()).map(|body| &**body);
        let shown = shown_to_people(rel, &read);
        secrets(rel, text, shown, &mut findings);
        let in_module = options
            .modules
            .iter()
            .any(|m| rel.starts_with(&format!("{m}/")));
        if in_module
            && (rel.ends_with(".tf") || rel.ends_with(".tf.json") || rel.ends_with(".tftpl"))
        {
            environment_names(rel, text, body, &names, shown, &mut findings);
        }
        // A file that does not parse is reported by the interface reader, with its line.
        if let (Some(body), false) = (body, rel.starts_with("customers/")) {
            controller_owned_fields(rel, text, body, &mut findings);
            runs_commands(rel, text, body, &mut findings);
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
        let engine = options
            .stacks
            .contains(dir)
            .then(|| stack_engine(repo_root, dir))
            .flatten();
        could_be_ephemeral(dir, &module, engine, &bodies, &mut findings);
        super::stored_secrets::stored_secrets(dir, &module, &texts, &bodies, &mut findings);
    }
    let mut kept = options.rules.apply(apply_ignores(&texts, findings));
    for stack in &options.stacks {
        kept = stack_rules(repo_root, stack).apply_under(stack, kept);
    }
    kept.sort_by(|a, b| (&a.file, a.line, &a.rule).cmp(&(&b.file, b.line, &b.rule)));
    kept.dedup();
    Ok(kept)
}

/// The `.tf` files of `texts` that parse, by repository-relative path.
fn parsed_bodies(texts: &BTreeMap<String, String>) -> BTreeMap<&str, Rc<Body>> {
    texts
        .iter()
        .filter(|(rel, _)| rel.ends_with(".tf"))
        .filter_map(|(rel, text)| {
            let body = stackpack_interface::parsed::hcl_body(text).ok()?;
            Some((rel.as_str(), body))
        })
        .collect()
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
        // What `build` packs of a stack folder, dotfiles its `include` names among
        // them, is what is read here: a secret in a packed `.env` is found.
        let include = options
            .stacks
            .contains(root)
            .then(|| stack_include(repo_root, root));
        for file in files_under(&repo_root.join(root), include.as_deref()) {
            let Some(text) = read_text(&file) else {
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

/// How much of a file decides whether it is text.
const SNIFF_BYTES: u64 = 64 * 1024;

/// Reads `path` as text, or `None` for a file that is not UTF-8 text. Its first block
/// decides for binaries (provider zips, images, archives): a large one is never read
/// whole, so linting keeps memory flat however big the stack's binaries grow.
fn read_text(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.by_ref()
        .take(SNIFF_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.contains(&0) {
        return None;
    }
    // A block may end inside a character; anything else invalid is not text.
    if let Err(e) = std::str::from_utf8(&bytes) {
        if e.error_len().is_some() {
            return None;
        }
    }
    file.read_to_end(&mut bytes).ok()?;
    String::from_utf8(bytes).ok()
}

/// The lints on one input: a sensitive default, a missing type or description, a
/// literal secret.
fn input_lints(dir: &str, var: &Variable, findings: &mut Vec<Finding>) {
    let file = join(dir, &var.location.file);
    let line = var.location.line;
    let mut add = |rule: Lint, message: String| {
        findings.push(lint_finding(rule, &var.name, &file, line, message));
    };
    if var.sensitive && matches!(&var.default, DefaultValue::Value(v) if could_hold_secret(v)) {
        add(
            Lint::SensitiveInputDefault,
            format!(
                "sensitive input `{}` has a default: a secret would be packed into every bundle",
                var.name
            ),
        );
    }
    if !var.type_declared {
        add(
            Lint::InputTypeMissing,
            format!("input `{}` has no `type`", var.name),
        );
    }
    if var
        .description
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        add(
            Lint::InputDescriptionMissing,
            format!("input `{}` has no `description`", var.name),
        );
    }
    if secret_key(&var.name) {
        if let DefaultValue::Value(serde_json::Value::String(s)) = &var.default {
            if looks_like_value(s) {
                add(
                    Lint::NoSecretLiterals,
                    format!(
                        "input `{}` has a literal default that looks like a secret",
                        var.name
                    ),
                );
            }
        }
    }
}

/// Could this default of a sensitive input be a secret? `""`, `null`, `[]` and `{}`
/// are how a module makes a secret optional (the AKS module's `client_secret`), and
/// a bool is a switch: none packs a secret.
fn could_hold_secret(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(_) => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
        Value::Number(_) => true,
    }
}

/// Line numbers of byte offsets in one text.
struct Lines(Vec<usize>);

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    fn of(&self, span: Option<std::ops::Range<usize>>) -> usize {
        span.map_or(0, |s| match self.0.binary_search(&s.start) {
            Ok(i) => i + 1,
            Err(i) => i,
        })
    }
}

/// Sizes that something outside Terraform owns once the resource exists, by the
/// block path (without indexes) under which each sits, `None` for anywhere.
const CONTROLLER_FIELDS: &[(&str, Option<&str>, &str)] = &[
    (
        "desired_size",
        Some("scaling_config"),
        "the cluster autoscaler",
    ),
    (
        "desired_capacity",
        None,
        "the Auto Scaling group's policies",
    ),
    ("desired_count", None, "service auto scaling"),
    ("replicas", None, "a horizontal pod autoscaler"),
];

/// `controller-owned-field`: sizes set on resources without `ignore_changes` for them.
fn controller_owned_fields(rel: &str, text: &str, body: &Body, out: &mut Vec<Finding>) {
    let lines = Lines::new(text);
    for block in body.blocks().filter(|b| b.ident.as_str() == "resource") {
        let address = block
            .labels
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join(".");
        let ignored = ignore_changes(&block.body);
        let autoscaled = block
            .body
            .blocks()
            .any(|b| b.ident.as_str() == "autoscaling");
        let mut fields = Vec::new();
        sized_fields(&block.body, &mut Vec::new(), autoscaled, &mut fields);
        for (path, line, owner) in fields {
            let covered = ignored
                .iter()
                .any(|i| i.first().is_some_and(|f| f == "all") || path.starts_with(i.as_slice()));
            if covered {
                continue;
            }
            let dotted = path.join(".");
            let ignore = path
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    if i + 1 < path.len() {
                        format!("{p}[0]")
                    } else {
                        p.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(".");
            out.push(lint_finding(
                Lint::ControllerOwnedField,
                format!("{address}.{dotted}"),
                rel,
                lines.of(line),
                format!(
                    "`{address}` sets `{dotted}`, which {owner} changes outside Terraform: drift you will fight every plan; add `lifecycle {{ ignore_changes = [{ignore}] }}`"
                ),
            ));
        }
    }
}

/// `runs-commands-on-runner`: a `local-exec` provisioner or an `external` data
/// source runs a program on the machine that runs the engine, the customer's
/// runner, with its credentials, and no plan shows what it does.
fn runs_commands(rel: &str, text: &str, body: &Body, out: &mut Vec<Finding>) {
    let lines = Lines::new(text);
    let label = |block: &Block, i: usize| block.labels.get(i).map(|l| l.as_str().to_string());
    let mut warn = |item: String, span, what: String| {
        out.push(lint_finding(
                Lint::RunsCommandsOnRunner,
                item,
                rel,
                lines.of(span),
                format!("{what}: it runs commands on the runner's machine, in the customer's account, and no plan shows what they do; customers' policies may refuse it"),
            ));
    };
    for block in body.blocks() {
        let kind = label(block, 0).unwrap_or_default();
        let address = format!("{kind}.{}", label(block, 1).unwrap_or_default());
        match block.ident.as_str() {
            "data" if kind == "external" => warn(
                format!("data.{address}"),
                block.span(),
                format!("`data.{address}` is an `external` data source"),
            ),
            "resource" => {
                for provisioner in block.body.blocks().filter(|b| {
                    b.ident.as_str() == "provisioner"
                        && label(b, 0).as_deref() == Some("local-exec")
                }) {
                    warn(
                        address.clone(),
                        provisioner.span(),
                        format!("`{address}` has a `local-exec` provisioner"),
                    );
                }
            }
            _ => {}
        }
    }
}

/// The lint levels a stack's own `stack.toml` `[rules]` sets for the files in its
/// folder (none when it has none or cannot be read: `build` reports that).
fn stack_rules(repo_root: &Path, dir: &str) -> RuleConfig {
    let path = repo_root.join(dir).join("stack.toml");
    std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| toml::from_str::<crate::config::StackConfig>(&text).ok())
        .and_then(|config| RuleConfig::from_table(&config.rules).ok())
        .unwrap_or_default()
}

/// A controller-owned attribute: its block path, span and owner.
type SizedField = (Vec<String>, Option<std::ops::Range<usize>>, &'static str);

/// Every controller-owned attribute under `body`.
fn sized_fields(body: &Body, path: &mut Vec<String>, autoscaled: bool, out: &mut Vec<SizedField>) {
    // `min_size` equal to `max_size` leaves an autoscaler no room: the size is fixed.
    let text_of = |key: &str| {
        body.get_attribute(key)
            .map(|a| a.value.to_string().trim().to_string())
    };
    let fixed = text_of("min_size").is_some_and(|min| Some(min) == text_of("max_size"));
    for attr in body.attributes().filter(|_| !fixed) {
        let key = attr.key.as_str();
        let parent = path.last().map(String::as_str);
        let owner = CONTROLLER_FIELDS
            .iter()
            .find(|(field, under, _)| *field == key && under.is_none_or(|u| Some(u) == parent))
            .map(|(_, _, owner)| *owner)
            .or_else(|| {
                (autoscaled && key == "node_count").then_some("the node pool's autoscaling")
            });
        if let Some(owner) = owner {
            let mut full = path.clone();
            full.push(key.to_string());
            out.push((full, attr.span(), owner));
        }
    }
    for block in body.blocks() {
        match block.ident.as_str() {
            "lifecycle" => continue,
            // `dynamic "x" { content { … } }` generates `x` blocks.
            "dynamic" => {
                let Some(label) = block.labels.first() else {
                    continue;
                };
                path.push(label.as_str().to_string());
                for content in block
                    .body
                    .blocks()
                    .filter(|b| b.ident.as_str() == "content")
                {
                    sized_fields(&content.body, path, autoscaled, out);
                }
            }
            name => {
                path.push(name.to_string());
                sized_fields(&block.body, path, autoscaled, out);
            }
        }
        path.pop();
    }
}

/// The paths in a resource's `lifecycle { ignore_changes = [...] }`, indexes dropped:
/// `scaling_config[0].desired_size` is `["scaling_config", "desired_size"]`; `all`
/// is `["all"]`.
fn ignore_changes(body: &Body) -> Vec<Vec<String>> {
    let Some(value) = body
        .blocks()
        .filter(|b| b.ident.as_str() == "lifecycle")
        .find_map(|b| b.body.get_attribute("ignore_changes"))
        .map(|a| &a.value)
    else {
        return Vec::new();
    };
    let items: Vec<&Expression> = match value {
        Expression::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    items
        .into_iter()
        .map(|item| {
            let text = item.to_string();
            let text = text.trim().trim_matches('"');
            let mut path = Vec::new();
            let mut word = String::new();
            let mut depth = 0;
            for c in text.chars() {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    '.' if depth == 0 => path.push(std::mem::take(&mut word)),
                    c if depth == 0 && !c.is_whitespace() => word.push(c),
                    _ => {}
                }
            }
            path.push(word);
            path.retain(|p| !p.is_empty());
            path
        })
        .collect()
}

/// `engine` in a stack's `stack.toml`, when it names one.
fn stack_engine(repo_root: &Path, dir: &str) -> Option<EngineName> {
    let text = std::fs::read_to_string(repo_root.join(dir).join("stack.toml")).ok()?;
    let table: toml::Table = text.parse().ok()?;
    table.get("engine")?.as_str()?.parse().ok()
}

/// Whether every version `required_version` allows supports ephemeral inputs, on the
/// engine the stack names, or on both when it names none (OpenTofu's numbers overlap
/// Terraform's, and it gained them later).
fn engine_supports_ephemeral(required: &str, engine: Option<EngineName>) -> bool {
    let Some(required) = Constraint::parse(required) else {
        return false;
    };
    let since = if engine == Some(EngineName::Terraform) {
        ">= 1.10.0"
    } else {
        ">= 1.11.0"
    };
    let floor = Constraint::parse(since).expect("a valid constraint");
    // Within the floor when the floor allows everything `required` does.
    constraint::compare(Some(&required), Some(&floor)) != SetChange::Narrowed
}

/// `sensitive-input-not-ephemeral`: sensitive inputs of `dir` that reach only places
/// where an ephemeral value may go, on an engine that has ephemeral inputs.
fn could_be_ephemeral(
    dir: &str,
    module: &ModuleInterface,
    engine: Option<EngineName>,
    bodies: &BTreeMap<&str, Rc<Body>>,
    out: &mut Vec<Finding>,
) {
    let Some((required, _)) = &module.required_version else {
        return;
    };
    let candidates: Vec<&Variable> = module
        .variables
        .iter()
        .filter(|v| v.sensitive && !v.ephemeral)
        .collect();
    if candidates.is_empty() || !engine_supports_ephemeral(required, engine) {
        return;
    }
    let prefix = format!("{dir}/");
    let bodies: Vec<&Body> = bodies
        .iter()
        .filter(|(rel, _)| {
            rel.strip_prefix(&prefix)
                .is_some_and(|name| !name.contains('/') && name.ends_with(".tf"))
        })
        .map(|(_, body)| &**body)
        .collect();
    let engine_name = match engine {
        Some(EngineName::Terraform) => "Terraform >= 1.10",
        Some(EngineName::Tofu) => "OpenTofu >= 1.11",
        None => "Terraform >= 1.10 and OpenTofu >= 1.11",
    };
    for var in candidates {
        let only_ephemeral_uses = bodies.iter().all(|body| {
            body.blocks().all(|block| match block.ident.as_str() {
                "variable" => true,
                "provider" | "ephemeral" => true,
                _ => !reads_outside_write_only(block, &var.name),
            })
        });
        if !only_ephemeral_uses {
            continue;
        }
        out.push(lint_finding(
            Lint::SensitiveInputNotEphemeral,
            &var.name,
            &join(dir, &var.location.file),
            var.location.line,
            format!(
                "sensitive input `{}` only reaches provider configuration, ephemeral resources or write-only arguments, and `required_version = \"{required}\"` means {engine_name}: declare it `ephemeral = true` so it stays out of plans and state",
                var.name
            ),
        ));
    }
}

/// Does `block` read `var.<name>` in an argument that is not write-only (`*_wo`)?
fn reads_outside_write_only(block: &Block, name: &str) -> bool {
    block.body.attributes().any(|a| {
        !a.key.as_str().ends_with("_wo") && crate::impact::references(&a.value.to_string(), name)
    }) || block
        .body
        .blocks()
        .any(|b| reads_outside_write_only(b, name))
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
                Lint::IgnoreWithoutReason,
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
                i.reason.is_some()
                    && i.rule == f.rule.id()
                    && (i.line == f.line || i.line + 1 == f.line)
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

/// The `include` list of the stack at `dir` (empty when `stack.toml` has none or
/// cannot be read: `build` reports that).
fn stack_include(repo_root: &Path, dir: &str) -> Vec<String> {
    let path = repo_root.join(dir).join("stack.toml");
    std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| toml::from_str::<crate::config::StackConfig>(&text).ok())
        .map(|config| config.include)
        .unwrap_or_default()
}

/// The files under `dir`, sorted. Dotfiles and dot-folders are skipped, as the
/// bundle leaves them out, except those a stack's `include` names (`Some`).
fn files_under(dir: &Path, include: Option<&[String]>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let p = e.path();
            if name.starts_with('.') {
                let path_in_folder = p
                    .strip_prefix(dir)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                // The file itself, a folder above it, or a folder on the way down
                // to an included file.
                let wanted = include.is_some_and(|include| {
                    name != ".terraform"
                        && (crate::pack::is_included(&path_in_folder, include)
                            || include.iter().any(|entry| {
                                entry
                                    .trim_end_matches('/')
                                    .strip_prefix(path_in_folder.as_str())
                                    .is_some_and(|rest| rest.starts_with('/'))
                            }))
                });
                if !wanted {
                    continue;
                }
            }
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

/// `no-environment-names` in one module file: the values it holds (see
/// [`super::env_names`]); a template file (`.tftpl`) is all value but its comments.
fn environment_names(
    rel: &str,
    text: &str,
    body: Option<&Body>,
    names: &[(String, &str)],
    shown: Option<&str>,
    out: &mut Vec<Finding>,
) {
    let lines = Lines::new(text);
    let values = if rel.ends_with(".tf.json") {
        env_names::json_values(text)
    } else if rel.ends_with(".tf") {
        body.map(env_names::body_values)
    } else {
        None
    };
    let values = values.unwrap_or_else(|| template_lines(text));
    let mut seen = std::collections::BTreeSet::new();
    for value in values {
        let line = value.at.map_or(0, |at| lines.of(Some(at..at)));
        for (name, what) in names {
            if env_names::names_word(&value.text, name) && seen.insert((line, name.clone())) {
                let mut finding = lint_finding(
                    Lint::NoEnvironmentNames,
                    name.clone(),
                    rel,
                    line,
                    format!("module mentions the {what} name `{name}`: modules must not know environments or customers"),
                );
                // An example's `Environment = "staging"` tag shows a caller's use.
                if let Some(shown) = shown {
                    finding.severity = Severity::Warning;
                    finding.message = format!("{shown} mentions the {what} name `{name}`: the engine never reads it when the module is used");
                }
                out.push(finding);
            }
        }
    }
}

/// A template's lines without their comments, each a value.
fn template_lines(text: &str) -> Vec<env_names::Literal> {
    let mut in_block = false;
    let mut at = 0;
    let mut out = Vec::new();
    for line in text.split_inclusive('\n') {
        out.push(env_names::Literal {
            text: code_of(line, &mut in_block),
            at: Some(at),
        });
        at += line.len();
    }
    out
}

/// Is this a documentation file: read by people, never by the engine? A README,
/// an upgrade guide, a changelog, a licence, any Markdown or reStructuredText file,
/// anything under a `docs/` folder.
pub fn is_documentation(rel: &str) -> bool {
    let lower = rel.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let stem = name.split('.').next().unwrap_or(name);
    [".md", ".markdown", ".rst", ".adoc"]
        .iter()
        .any(|ext| name.ends_with(ext))
        || ["readme", "changelog", "license", "licence", "notice"].contains(&stem)
        || stem.starts_with("upgrade")
        || lower.split('/').any(|part| part == "docs")
}

/// The folders of every module and stack with the local modules each calls,
/// transitively: the `.tf` files the engine reads when one is applied.
fn folders_the_engine_reads(
    repo_root: &Path,
    options: &LintOptions,
    cache: &mut Cache,
) -> std::collections::BTreeSet<String> {
    let mut read = std::collections::BTreeSet::new();
    for dir in options.modules.iter().chain(options.stacks.iter()) {
        read.insert(dir.clone());
        // A module that cannot be read is reported by the interface checker.
        if let Ok(tree) = super::Tree::load_lenient(super::tree::Source::Dir(repo_root), dir, cache)
        {
            read.extend(tree.modules.into_keys());
        }
    }
    read
}

/// Is the file at `rel` shown to people rather than read by the engine: documentation,
/// or a file of an example no module or stack calls (Terraform code in a folder
/// outside every tree, anything under an `examples/` or `test/` folder outside every
/// tree)? A usage example there (`password = "YourPwdShouldBeLongAndSecure!"`, a
/// demo's Kubernetes secret) is worth a look, not a refusal.
fn shown_to_people(rel: &str, read: &std::collections::BTreeSet<String>) -> Option<&'static str> {
    if is_documentation(rel) {
        return Some("this documentation");
    }
    if rel.starts_with("customers/") {
        return None;
    }
    let code = rel.ends_with(".tf") || rel.ends_with(".tf.json");
    let folder = rel.rsplit_once('/').map_or("", |(folder, _)| folder);
    let unread_code = code && !read.contains(folder);
    // The folders on the way down from the repository: an example folder counts when
    // no folder from it down to the file is one the engine reads.
    let parts: Vec<&str> = folder.split('/').collect();
    let in_example = (1..=parts.len()).any(|end| {
        EXAMPLE_FOLDERS.contains(&parts[end - 1])
            && (end..=parts.len()).all(|below| !read.contains(&parts[..below].join("/")))
    });
    (unread_code || in_example).then_some("this example, which no module or stack calls,")
}

/// Folders modules keep examples and tests in, beside their code.
const EXAMPLE_FOLDERS: &[&str] = &["examples", "example", "test", "tests", "fixtures"];

fn secrets(rel: &str, text: &str, shown: Option<&str>, out: &mut Vec<Finding>) {
    for (i, line) in text.lines().enumerate() {
        if let Some(what) = secret_in(line) {
            let mut finding = lint_finding(
                Lint::NoSecretLiterals,
                what,
                rel,
                i + 1,
                format!("this line holds what looks like {what}: keep secrets out of the repository and pass them at apply time"),
            );
            if let Some(shown) = shown {
                finding.severity = Severity::Warning;
                finding.message = format!("{shown} holds what looks like {what}: the engine never reads it when the module is used, but make sure it is an example, not a real secret");
            }
            out.push(finding);
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
    fn text_is_read_whole_and_binaries_are_judged_by_their_first_block() {
        let dir = tempfile::tempdir().unwrap();
        // Text longer than one block, with a character cut at the block's edge.
        let mut long = "a".repeat(SNIFF_BYTES as usize - 1);
        long.push_str("é = \"AKIAIOSFODNN7EXAMPLE\"\n");
        std::fs::write(dir.path().join("long.tf"), &long).unwrap();
        assert_eq!(
            read_text(&dir.path().join("long.tf")).as_deref(),
            Some(long.as_str())
        );
        // A binary: NUL in its first block, text after it is never read.
        let mut zip = b"PK\x03\x04\0".to_vec();
        zip.extend_from_slice(b"password = \"hunter22\"");
        std::fs::write(dir.path().join("provider.zip"), &zip).unwrap();
        assert_eq!(read_text(&dir.path().join("provider.zip")), None);
        // Not UTF-8 at all.
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9 au lait").unwrap();
        assert_eq!(read_text(&dir.path().join("latin1.txt")), None);
    }

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

    fn controller_findings(text: &str) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        let body = hcl_edit::parser::parse_body(text).unwrap();
        controller_owned_fields("m/main.tf", text, &body, &mut out);
        out.into_iter().map(|f| (f.item, f.line)).collect()
    }

    #[test]
    fn controller_owned_sizes_need_ignore_changes() {
        let node_group = "resource \"aws_eks_node_group\" \"p\" {\n  scaling_config {\n    desired_size = 1\n    min_size     = 1\n  }\n";
        assert_eq!(
            controller_findings(&format!("{node_group}}}\n")),
            [(
                "aws_eks_node_group.p.scaling_config.desired_size".to_string(),
                3
            )]
        );
        for ignore in [
            "[scaling_config[0].desired_size]",
            "[scaling_config]",
            "all",
            "[\"scaling_config[0].desired_size\"]",
        ] {
            let text =
                format!("{node_group}  lifecycle {{\n    ignore_changes = {ignore}\n  }}\n}}\n");
            assert!(controller_findings(&text).is_empty(), "{ignore}");
        }
        let other = format!("{node_group}  lifecycle {{\n    ignore_changes = [scaling_config[0].min_size]\n  }}\n}}\n");
        assert_eq!(controller_findings(&other).len(), 1);
        // A fixed size (`min_size` = `max_size`) leaves an autoscaler nothing to change.
        assert!(controller_findings("resource \"a\" \"b\" {\n  scaling_config {\n    desired_size = var.n\n    min_size = var.n\n    max_size = var.n\n  }\n}\n").is_empty());
        // `desired_size` outside `scaling_config` is someone else's field.
        assert!(controller_findings("resource \"x\" \"y\" {\n  desired_size = 1\n}\n").is_empty());
        let deployment = "resource \"kubernetes_deployment\" \"d\" {\n  spec {\n    replicas = 2\n  }\n}\nresource \"google_container_node_pool\" \"n\" {\n  node_count = 3\n  autoscaling {\n    min_node_count = 1\n  }\n}\nresource \"google_container_node_pool\" \"fixed\" {\n  node_count = 3\n}\n";
        assert_eq!(
            controller_findings(deployment),
            [
                ("kubernetes_deployment.d.spec.replicas".to_string(), 3),
                ("google_container_node_pool.n.node_count".to_string(), 7)
            ]
        );
    }

    #[test]
    fn ephemeral_needs_an_engine_that_has_it() {
        assert!(engine_supports_ephemeral(
            ">= 1.10",
            Some(EngineName::Terraform)
        ));
        assert!(!engine_supports_ephemeral(
            ">= 1.10",
            Some(EngineName::Tofu)
        ));
        assert!(!engine_supports_ephemeral(">= 1.10", None));
        assert!(engine_supports_ephemeral("~> 1.11", None));
        assert!(!engine_supports_ephemeral(
            ">= 1.5.0",
            Some(EngineName::Terraform)
        ));
        assert!(!engine_supports_ephemeral(
            ">= 1.10, != 1.9.0",
            Some(EngineName::Tofu)
        ));
    }

    #[test]
    fn ignores_need_reasons() {
        let list = parse_ignores("# stackpack:ignore no-secret-literals reason: test fixture\n# stackpack:ignore input-type-missing\n");
        assert_eq!(list[0].reason.as_deref(), Some("test fixture"));
        assert!(list[1].reason.is_none());
    }
}
