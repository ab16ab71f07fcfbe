//! Reading a Terraform/OpenTofu module's public interface from its files, shared by
//! the packager (which judges version bumps with it) and the runner (which checks a
//! customer's inputs with it before any engine runs).
//!
//! A short tour: [`extract_module`] reads a folder; [`types`] models type
//! expressions and converts values to them; [`eval`] evaluates expressions (defaults,
//! `count`/`for_each`, `validation` conditions) with a subset of Terraform's
//! functions; [`constraint`] compares version constraints as sets of versions;
//! [`json_keys`] refuses a `.tf.json` key given twice in one object (the engine
//! reads both, `serde_json` only the last).
//!
//! [`extract_module`] parses every `*.tf` and `*.tf.json` file of one folder (not
//! recursively) and keeps what a caller can see or feel: variables, outputs, the kinds
//! of resource managed (with their `count`/`for_each`), module calls, `moved` and
//! `removed` blocks, and the engine and provider constraints. Every item remembers
//! where it was declared, as `file:line`.

pub mod constraint;
pub mod eval;
pub mod json_keys;
pub mod lockfile;
pub mod module_source;
mod parse;
pub mod parsed;
pub mod tfvars;
pub mod types;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use hcl_edit::expr::Expression;
use serde::Serialize;
use serde_json::Value;

pub use types::TypeExpr;

/// Where an item was declared: a file name inside the module's folder, and a 1-based line.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Location {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A variable's default.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "camelCase")]
pub enum DefaultValue {
    /// No default: every caller must set it.
    Required,
    /// A default we could evaluate.
    Value(Value),
    /// A default we could not evaluate statically, as canonical source text.
    Expression(String),
}

/// One `validation` block.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Validation {
    /// The condition as written (trimmed).
    pub condition: String,
    /// The condition with formatting and comments removed, for comparing.
    #[serde(skip)]
    pub canonical: String,
    pub error_message: Option<String>,
    pub location: Location,
}

/// One input variable.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Variable {
    pub name: String,
    /// The normalised type constraint (`any` when none is declared).
    #[serde(serialize_with = "display")]
    pub type_expr: TypeExpr,
    pub type_declared: bool,
    pub default: DefaultValue,
    pub nullable: bool,
    pub sensitive: bool,
    pub ephemeral: bool,
    pub description: Option<String>,
    pub deprecated: Option<String>,
    /// From a `# stackpack:renamed-from = "old"` annotation.
    pub renamed_from: Option<String>,
    pub validations: Vec<Validation>,
    pub location: Location,
}

fn display<T: fmt::Display, S: serde::Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

impl Variable {
    /// The default converted to the declared type, as the engine would see it.
    pub fn effective_default(&self) -> Option<Value> {
        match &self.default {
            DefaultValue::Value(v) => Some(types::convert(v, &self.type_expr)),
            _ => None,
        }
    }

    pub fn is_required(&self) -> bool {
        self.default == DefaultValue::Required
    }
}

/// One output.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputDecl {
    pub name: String,
    pub sensitive: bool,
    pub description: Option<String>,
    pub deprecated: Option<String>,
    /// The `value` expression: an output declares no type, so what a wiring can know
    /// of its type is read from this (a literal, or `var.x` with a declared type).
    #[serde(skip)]
    pub value: Option<Expression>,
    pub location: Location,
}

/// A `resource` or `data` block.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDecl {
    /// `aws_s3_bucket`, or `data.aws_ami` for a data source.
    pub kind: String,
    pub name: String,
    #[serde(skip)]
    pub count: Option<Expression>,
    #[serde(skip)]
    pub for_each: Option<Expression>,
    pub location: Location,
}

impl ResourceDecl {
    /// `aws_s3_bucket.this`.
    pub fn address(&self) -> String {
        format!("{}.{}", self.kind, self.name)
    }

    /// A `data` block: it reads, and manages nothing.
    pub fn is_data(&self) -> bool {
        self.kind.starts_with("data.")
    }

    /// The provider's local name, from the kind's prefix as the engine infers it
    /// (`aws_s3_bucket` → `aws`).
    pub fn provider(&self) -> &str {
        let kind = self.kind.strip_prefix("data.").unwrap_or(&self.kind);
        kind.split('_').next().unwrap_or(kind)
    }
}

/// A `module` block.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleCall {
    pub name: String,
    pub source: Option<String>,
    pub version: Option<String>,
    /// The arguments the caller sets, as expressions.
    #[serde(serialize_with = "expr_map")]
    pub args: BTreeMap<String, Expression>,
    #[serde(skip)]
    pub count: Option<Expression>,
    #[serde(skip)]
    pub for_each: Option<Expression>,
    pub location: Location,
}

fn expr_map<S: serde::Serializer>(
    map: &BTreeMap<String, Expression>,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(
        map.iter()
            .map(|(k, v)| (k, v.to_string().trim().to_string())),
    )
}

impl ModuleCall {
    /// True when the source is a local path (`./x`, `../x`): vendored into the bundle.
    pub fn is_local(&self) -> bool {
        self.source
            .as_deref()
            .is_some_and(|s| s.starts_with("./") || s.starts_with("../"))
    }
}

/// A `moved` block.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Moved {
    pub from: String,
    pub to: String,
    pub location: Location,
}

/// A `removed` block.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Removed {
    pub from: String,
    /// `lifecycle { destroy = false }`: the engine forgets the object instead of
    /// destroying it.
    pub destroy: bool,
    pub location: Location,
}

/// A `required_providers` entry (or a legacy `provider { version }`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProviderDecl {
    pub source: Option<String>,
    pub version: Option<String>,
    pub location: Location,
}

/// A condition found anywhere: validations, pre/postconditions, `check` assertions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Condition {
    pub text: String,
    pub location: Location,
}

/// The interface of one module or stack folder.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModuleInterface {
    /// Sorted by name.
    pub variables: Vec<Variable>,
    /// Sorted by name.
    pub outputs: Vec<OutputDecl>,
    pub resources: Vec<ResourceDecl>,
    pub module_calls: Vec<ModuleCall>,
    pub moved: Vec<Moved>,
    pub removed: Vec<Removed>,
    pub required_version: Option<(String, Location)>,
    pub required_providers: BTreeMap<String, ProviderDecl>,
    #[serde(skip)]
    pub locals: BTreeMap<String, Expression>,
    pub conditions: Vec<Condition>,
    /// The files read, sorted.
    pub files: Vec<String>,
}

/// Why a module could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InterfaceError {
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}:{line}:{column}`: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

impl ModuleInterface {
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.variables.iter().find(|v| v.name == name)
    }

    pub fn output(&self, name: &str) -> Option<&OutputDecl> {
        self.outputs.iter().find(|o| o.name == name)
    }

    /// Every variable's effective default (required ones left out), for evaluating
    /// `count` and `for_each` with every input at its default.
    pub fn default_inputs(&self) -> BTreeMap<String, Value> {
        self.variables
            .iter()
            .filter_map(|v| v.effective_default().map(|d| (v.name.clone(), d)))
            .collect()
    }

    /// The variable that a `stackpack:renamed-from` annotation names as the new name of
    /// `old`, if any.
    pub fn renamed_to(&self, old: &str) -> Option<&Variable> {
        self.variables
            .iter()
            .find(|v| v.renamed_from.as_deref() == Some(old))
    }

    /// The interface as recorded in a bundle config.
    pub fn to_schema(&self) -> stackpack_schema::interface::Interface {
        use stackpack_schema::interface::{Input, Interface, Output, ProviderRequirement};
        let inputs = self
            .variables
            .iter()
            .map(|v| Input {
                name: v.name.clone(),
                type_constraint: v.type_expr.clone(),
                required: v.is_required(),
                default: v.effective_default(),
                sensitive: v.sensitive,
                nullable: v.nullable,
                ephemeral: v.ephemeral,
                description: v.description.clone(),
                deprecated: v.deprecated.clone(),
                alias_of: self.renamed_to(&v.name).map(|n| n.name.clone()),
                validations: v.validations.iter().map(|c| c.condition.clone()).collect(),
            })
            .collect();
        let outputs = self
            .outputs
            .iter()
            .map(|o| Output {
                name: o.name.clone(),
                sensitive: o.sensitive,
                description: o.description.clone(),
            })
            .collect();
        let mut resource_kinds: Vec<String> =
            self.resources.iter().map(|r| r.kind.clone()).collect();
        resource_kinds.sort();
        resource_kinds.dedup();
        Interface {
            inputs,
            outputs,
            resource_kinds,
            required_version: self.required_version.as_ref().map(|(v, _)| v.clone()),
            required_providers: self
                .required_providers
                .iter()
                .map(|(name, p)| {
                    (
                        name.clone(),
                        ProviderRequirement {
                            source: p.source.clone(),
                            version: p.version.clone(),
                        },
                    )
                })
                .collect(),
        }
    }
}

/// Reads the interface of the module in `dir`: every `*.tf` and `*.tf.json` file in it
/// (not in sub-folders), in name order.
pub fn extract_module(dir: &Path) -> Result<ModuleInterface, InterfaceError> {
    extract_files(dir, &module_files(dir)?)
}

/// The names and texts of the `*.tf` and `*.tf.json` files directly in `dir`, in
/// name order.
pub fn module_files(dir: &Path) -> Result<Vec<(String, String)>, InterfaceError> {
    let entries = std::fs::read_dir(dir).map_err(|source| InterfaceError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| InterfaceError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_file() && (name.ends_with(".tf") || name.ends_with(".tf.json")) {
            files.push(path);
        }
    }
    files.sort();
    let mut texts = Vec::with_capacity(files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| InterfaceError::Io {
            path: path.clone(),
            source,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        texts.push((name, text));
    }
    Ok(texts)
}

/// Reads the interface of a module from its files' names and texts (already read,
/// from disk or from git), in the order given. `dir` names the folder in errors.
pub fn extract_files(
    dir: &Path,
    files: &[(String, String)],
) -> Result<ModuleInterface, InterfaceError> {
    let (module, mut errors) = read_files(dir, files, true);
    match errors.pop() {
        Some(error) => Err(error),
        None => Ok(module),
    }
}

/// [`extract_files`] for a release already published: a file that cannot be read is
/// left out and its error returned beside what the other files declare, so an old
/// mistake never stops a comparison with it.
pub fn extract_files_lenient(
    dir: &Path,
    files: &[(String, String)],
) -> (ModuleInterface, Vec<InterfaceError>) {
    read_files(dir, files, false)
}

/// Reads `files` in order; stops at the first unreadable one when `strict`.
fn read_files(
    dir: &Path,
    files: &[(String, String)],
    strict: bool,
) -> (ModuleInterface, Vec<InterfaceError>) {
    let mut module = ModuleInterface::default();
    let mut errors = Vec::new();
    for (name, text) in files {
        let error = |e: parse::ParseError| InterfaceError::Parse {
            path: dir.join(name),
            line: e.line,
            column: e.column,
            message: e.message,
        };
        // Each parser reads its whole file before adding anything to `module`: a
        // file that fails leaves nothing half-read behind.
        // `.tf.json`, and OpenTofu's `.tofu.json`.
        let read = if name.ends_with(".json") {
            parse::json_file(&mut module, name, text)
        } else {
            parse::hcl_file(&mut module, name, text)
        };
        match read {
            Ok(()) => module.files.push(name.clone()),
            Err(e) => {
                errors.push(error(e));
                if strict {
                    break;
                }
            }
        }
    }
    module.variables.sort_by(|a, b| a.name.cmp(&b.name));
    module.outputs.sort_by(|a, b| a.name.cmp(&b.name));
    (module, errors)
}
