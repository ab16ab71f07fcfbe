//! Checking a customer's inputs (`.tfvars`) against a bundle's interface, before the
//! engine sees them: every required input present, no unknown input (with a "did you
//! mean" for near names and for renamed inputs), values of the declared types, and a
//! deprecated alias and its new name never both set. Every finding names the file,
//! the line and the input.
//!
//! The inputs hash in a receipt is computed here too: SHA-256 over the canonical JSON
//! of the inputs, with the value of every sensitive input replaced by the hash of
//! that value alone — never the value itself.

use std::collections::BTreeMap;
use std::path::Path;

use stackpack_interface::tfvars::{self, did_you_mean, TfvarsProblem, Verdict};
use stackpack_interface::{ModuleInterface, Validation, Variable};
use stackpack_schema::digest::Digest;
use stackpack_schema::interface::{Input, Interface};

use super::error::{Error, Result};

/// One value set in an inputs file, or in a `TF_VAR_` environment variable.
#[derive(Clone, Debug)]
pub struct InputValue {
    pub name: String,
    /// The user's own file, as they named it.
    pub file: String,
    pub line: usize,
    pub value: serde_json::Value,
    /// From `TF_VAR_<name>`: checked, but never written to a file or kept.
    pub from_environment: bool,
}

impl InputValue {
    /// `file:line`, or the environment variable it came from.
    pub fn location(&self) -> String {
        if self.from_environment {
            format!("environment variable `TF_VAR_{}`", self.name)
        } else {
            format!("{}:{}", self.file, self.line)
        }
    }
}

/// A problem with the inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// `file:line`, or the file alone for a missing input.
    pub location: String,
    pub input: String,
    pub message: String,
    pub hint: Option<String>,
}

/// The inputs of one run: every file given, later files winning (as `-var-file`
/// does), then `TF_VAR_` variables for inputs no file sets.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// The files, as named, joined with `, ` (where a missing input is reported).
    pub path: String,
    pub values: Vec<InputValue>,
}

impl Inputs {
    /// The value the engine gets for `name`, if set.
    pub fn get(&self, name: &str) -> Option<&InputValue> {
        self.values.iter().find(|v| v.name == name)
    }

    /// Adds the inputs of `later`, which win over the ones already set.
    pub fn merge(&mut self, later: Inputs) {
        for value in later.values {
            self.values.retain(|v| v.name != value.name);
            self.values.push(value);
        }
        if self.path.is_empty() {
            self.path = later.path;
        } else {
            self.path = format!("{}, {}", self.path, later.path);
        }
    }

    /// Adds `TF_VAR_<name>` for every input of the stack that no file sets, as the
    /// engine would read it: a string input takes the text as it is, any other the
    /// text as an HCL value.
    pub fn add_environment(&mut self, interface: &Interface) {
        for input in &interface.inputs {
            if self.get(&input.name).is_some() {
                continue;
            }
            let variable = format!("TF_VAR_{}", input.name);
            let Some(text) = std::env::var_os(&variable) else {
                continue;
            };
            let text = text.to_string_lossy().into_owned();
            let value = if input.type_constraint == stackpack_schema::types::TypeExpr::String {
                serde_json::Value::String(text)
            } else {
                tfvars::parse_literal(&text).unwrap_or(serde_json::Value::String(text))
            };
            self.values.push(InputValue {
                name: input.name.clone(),
                file: String::new(),
                line: 0,
                value,
                from_environment: true,
            });
        }
    }

    /// The values from files as one `.tfvars.json` document: what the engine gets
    /// and what is kept for rollback. `TF_VAR_` values stay in the environment only.
    pub fn to_engine_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .values
            .iter()
            .filter(|v| !v.from_environment)
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        serde_json::to_string_pretty(&serde_json::Value::Object(map)).unwrap_or_default() + "\n"
    }
}

/// Reads every inputs file, in order, later files winning.
pub fn read_all(paths: &[std::path::PathBuf]) -> Result<Inputs> {
    let mut inputs = Inputs::default();
    for path in paths {
        inputs.merge(read(path)?);
    }
    Ok(inputs)
}

/// Reads one `.tfvars` file (attributes with literal values only) or `.tfvars.json`
/// file (one JSON object).
pub fn read(path: &Path) -> Result<Inputs> {
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("cannot read the inputs file `{display}`: {e}")))?;
    if display.ends_with(".json") {
        parse_json(&text, &display)
    } else {
        parse(&text, &display)
    }
}

/// Parses `.tfvars.json` text: one object, each member an input. Lines are those of
/// each member's name.
pub fn parse_json(text: &str, display: &str) -> Result<Inputs> {
    let values = tfvars::parse_json(text).map_err(|e| unreadable(e, display))?;
    Ok(inputs_from(values, display))
}

/// Parses `.tfvars` text; `display` names it in errors.
pub fn parse(text: &str, display: &str) -> Result<Inputs> {
    let values = tfvars::parse_hcl(text).map_err(|e| unreadable(e, display))?;
    Ok(inputs_from(values, display))
}

fn inputs_from(values: Vec<tfvars::InputValue>, display: &str) -> Inputs {
    Inputs {
        path: display.to_string(),
        values: values
            .into_iter()
            .map(|v| InputValue {
                name: v.name,
                file: display.to_string(),
                line: v.line,
                value: v.value,
                from_environment: false,
            })
            .collect(),
    }
}

/// The interface crate's reading error, worded for the customer who wrote the file.
fn unreadable(error: tfvars::TfvarsError, display: &str) -> Error {
    let at = match error.column {
        Some(column) => format!("{display}:{}:{column}", error.line),
        None => format!("{display}:{}", error.line),
    };
    let json = display.ends_with(".json");
    let (message, hint) = match error.problem {
        TfvarsProblem::Syntax | TfvarsProblem::NotAnObject => (
            format!("the inputs file is {}", error.message),
            if json {
                "a `.tfvars.json` file holds one object, such as `{\"region\": \"us-east-1\"}`"
            } else {
                "a `.tfvars` file holds lines such as `name = \"value\"`"
            },
        ),
        TfvarsProblem::Block => (
            "the inputs file holds a block; a `.tfvars` file holds only `name = value` lines"
                .to_string(),
            "write each input as `name = value`; an object value is `name = { key = value }`",
        ),
        TfvarsProblem::SetTwice => (
            error.message,
            "keep one line per input; with several files, the later file wins",
        ),
        TfvarsProblem::NotLiteral => (
            error.message,
            "a `.tfvars` file may not refer to variables or call functions",
        ),
    };
    Error::refused(message).at(at).hint(hint)
}

/// Checks `inputs` against `interface`; returns every finding (empty when fine).
pub fn check(inputs: &Inputs, interface: &Interface) -> Vec<Finding> {
    let mut findings = Vec::new();
    let set: BTreeMap<&str, &InputValue> =
        inputs.values.iter().map(|v| (v.name.as_str(), v)).collect();
    for value in &inputs.values {
        match interface.input(&value.name) {
            Some(input) => check_value(interface, input, value, &set, &mut findings),
            None => findings.push(unknown_input(interface, value)),
        }
    }
    for input in &interface.inputs {
        if !input.required || set.contains_key(input.name.as_str()) {
            continue;
        }
        if input.deprecated.is_some() || input.alias_of.is_some() {
            continue;
        }
        // A required input set through its deprecated alias is present.
        let via_alias = interface.inputs.iter().any(|alias| {
            alias_target(interface, alias).as_deref() == Some(input.name.as_str())
                && set.contains_key(alias.name.as_str())
        });
        if via_alias {
            continue;
        }
        findings.push(Finding {
            location: inputs.path.clone(),
            input: input.name.clone(),
            message: format!("required input `{}` is not set", input.name),
            hint: Some(format!(
                "add `{} = …`{}",
                input.name,
                input
                    .description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )),
        });
    }
    findings
}

/// The input `input` is a deprecated alias of, if any. Renames: an alias names its
/// new input; an input declared deprecated whose description or message names
/// another input is also taken as an alias.
fn alias_target(interface: &Interface, input: &Input) -> Option<String> {
    input.alias_of.clone().or_else(|| {
        let message = input.deprecated.as_deref()?;
        interface
            .inputs
            .iter()
            .find(|other| {
                other.name != input.name && message.contains(&format!("`{}`", other.name))
            })
            .map(|other| other.name.clone())
    })
}

/// A value set for a name the stack does not have, with the nearest name it has.
fn unknown_input(interface: &Interface, value: &InputValue) -> Finding {
    let names: Vec<&str> = interface.inputs.iter().map(|i| i.name.as_str()).collect();
    let hint = did_you_mean(&value.name, &names).map(|near| {
        let renamed = interface
            .input(near)
            .and_then(|input| alias_target(interface, input))
            .map(|to| format!(" (deprecated: renamed to `{to}`)"))
            .unwrap_or_default();
        format!("did you mean `{near}`{renamed}?")
    });
    Finding {
        location: value.location(),
        input: value.name.clone(),
        message: format!("input `{}` is not an input of this stack", value.name),
        hint,
    }
}

/// One value set for `input`: not set beside the input it is an alias of, not null
/// unless the input is nullable, and of the input's type.
fn check_value(
    interface: &Interface,
    input: &Input,
    value: &InputValue,
    set: &BTreeMap<&str, &InputValue>,
    findings: &mut Vec<Finding>,
) {
    if let Some(target) = alias_target(interface, input) {
        if let Some(both) = set.get(target.as_str()) {
            findings.push(Finding {
                location: value.location(),
                input: value.name.clone(),
                message: format!(
                    "input `{}` is a deprecated alias of `{target}`, and both are set (`{target}` at {})",
                    value.name, both.location()
                ),
                hint: Some(format!("remove `{}` and keep `{target}`", value.name)),
            });
        }
    }
    if value.value.is_null() && !input.nullable {
        findings.push(Finding {
            location: value.location(),
            input: value.name.clone(),
            message: format!("input `{}` may not be null", value.name),
            hint: None,
        });
    } else if let Err(problem) = input.type_constraint.check(&value.value) {
        let shown = if input.sensitive {
            "(sensitive value)".to_string()
        } else {
            short(&value.value)
        };
        findings.push(Finding {
            location: value.location(),
            input: value.name.clone(),
            message: format!(
                "input `{}` must be of type `{}`: {problem} (the value is {shown})",
                value.name, input.type_constraint
            ),
            hint: None,
        });
    }
}

/// Evaluates the stack's own `validation` blocks against the inputs, as the engine
/// would before planning, so that a value its rules refuse is caught before any
/// engine runs, at the line of the user's file that set it. A condition this
/// evaluator cannot decide (a function it does not know) is left to the engine.
/// Only inputs the stack has with the types the type check already accepted reach
/// here; `stack` names the stack's folder in hints.
pub fn validate(inputs: &Inputs, module: &ModuleInterface, stack: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (variable, rule, verdict) in verdicts(inputs, module) {
        if verdict != Verdict::Fails {
            continue;
        }
        let set = inputs.get(&variable.name);
        let shown = match set {
            _ if variable.sensitive => "(sensitive value)".to_string(),
            Some(set) => short(&set.value),
            None => "its default".to_string(),
        };
        findings.push(Finding {
            location: set
                .map(InputValue::location)
                .unwrap_or_else(|| inputs.path.clone()),
            input: variable.name.clone(),
            message: format!(
                "input `{}` ({shown}) breaks the stack's rule: {}",
                variable.name,
                rule.error_message
                    .as_deref()
                    .unwrap_or("its validation condition is false")
            ),
            hint: Some(format!(
                "the rule is `{}` at `{stack}/{}`",
                rule.condition, rule.location
            )),
        });
    }
    findings
}

/// Every `validation` rule of an input with a value, with what it says of it.
fn verdicts<'m>(
    inputs: &Inputs,
    module: &'m ModuleInterface,
) -> Vec<(&'m Variable, &'m Validation, Verdict)> {
    let vars = bound(inputs, module);
    let mut out = Vec::new();
    for variable in &module.variables {
        // Terraform does not run a variable's rules on a null value it allows.
        if vars.get(&variable.name).is_none_or(|v| v.is_null()) {
            continue;
        }
        for rule in &variable.validations {
            out.push((
                variable,
                rule,
                tfvars::validation_verdict(module, rule, &vars),
            ));
        }
    }
    out
}

/// A `validation` rule the runner could not decide (a function it does not
/// evaluate, such as `sha1`): the engine checks it when it plans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleLeft {
    pub input: String,
    pub condition: String,
    /// `stack/file:line` of the rule.
    pub location: String,
}

/// The rules of the inputs that have a value which [`validate`] could neither pass
/// nor fail, so that `check-inputs` never claims more than it checked.
pub fn left_to_engine(inputs: &Inputs, module: &ModuleInterface, stack: &str) -> Vec<RuleLeft> {
    verdicts(inputs, module)
        .into_iter()
        .filter(|(_, _, verdict)| *verdict == Verdict::Unknown)
        .map(|(variable, rule, _)| RuleLeft {
            input: variable.name.clone(),
            condition: rule.condition.clone(),
            location: format!("{stack}/{}", rule.location),
        })
        .collect()
}

/// Every input's value as the engine binds it to `var.*`: converted to its type,
/// or its default when not set (inputs with neither are left out).
fn bound(inputs: &Inputs, module: &ModuleInterface) -> BTreeMap<String, serde_json::Value> {
    let mut vars = BTreeMap::new();
    for variable in &module.variables {
        let value = match inputs.get(&variable.name) {
            Some(set) => stackpack_interface::types::convert(&set.value, &variable.type_expr),
            None => match variable.effective_default() {
                Some(default) => default,
                None => continue,
            },
        };
        vars.insert(variable.name.clone(), value);
    }
    vars
}

fn short(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        format!("`{}…`", text.chars().take(40).collect::<String>())
    } else {
        format!("`{text}`")
    }
}

/// The inputs hash for a receipt: HMAC-SHA256 over the canonical JSON of every
/// input, keyed by a secret that never leaves this installation (derived from its
/// receipt-signing key). The same inputs on the same installation give the same hash,
/// so support can see whether inputs changed between two runs; but nobody without
/// the installation's secret (the vendor included, who knows the other inputs) can
/// test guesses of a sensitive value against it.
pub fn inputs_hash(inputs: &Inputs, secret: &[u8]) -> Digest {
    let map: serde_json::Map<String, serde_json::Value> = inputs
        .values
        .iter()
        .map(|value| (value.name.clone(), value.value.clone()))
        .collect();
    let message = stackpack_schema::signature::canonical_json(&serde_json::Value::Object(map));
    Digest::from_sha256_bytes(stackpack_schema::digest::hmac_sha256(secret, &message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runner checks values against the bundle's structured types; here the
    /// types are read from their source text by the shared interface reader.
    fn type_check(value: &serde_json::Value, text: &str) -> std::result::Result<(), String> {
        stackpack_interface::types::from_string(text).check(value)
    }
    use serde_json::json;

    #[test]
    fn types_follow_terraform_conversions() {
        assert!(type_check(&json!("x"), "string").is_ok());
        assert!(type_check(&json!(3), "string").is_ok());
        assert!(type_check(&json!(["a"]), "string").is_err());
        assert!(type_check(&json!("3"), "number").is_ok());
        assert!(type_check(&json!("three"), "number").is_err());
        assert!(type_check(&json!(["a", "b"]), "list(string)").is_ok());
        assert!(type_check(&json!("a"), "list(string)").is_err());
        assert!(type_check(&json!([["a"]]), "list(string)").is_err());
        assert!(type_check(&json!({"a": 1}), "map(number)").is_ok());
        assert!(type_check(&json!({"a": "x"}), "map(number)").is_err());
        let object = "object({\n  name = string\n  size = optional(number)\n})";
        assert!(type_check(&json!({"name": "a"}), object).is_ok());
        assert!(type_check(&json!({"size": 1}), object).is_err());
        assert!(type_check(&json!([1, "a"]), "tuple([number, string])").is_ok());
        assert!(type_check(&json!({"x": 1}), "any").is_ok());
    }

    #[test]
    fn the_inputs_hash_never_holds_a_sensitive_value_but_still_changes_with_it() {
        let mut interface = Interface::default();
        interface.inputs.push(Input {
            name: "password".into(),
            type_constraint: stackpack_schema::types::TypeExpr::String,
            required: true,
            default: None,
            sensitive: true,
            nullable: true,
            ephemeral: false,
            description: None,
            deprecated: None,
            alias_of: None,
            validations: vec![],
        });
        let one = parse("password = \"hunter2\"\n", "a.tfvars").unwrap();
        let two = parse("password = \"hunter3\"\n", "a.tfvars").unwrap();
        let secret = b"this installation's secret";
        assert_ne!(inputs_hash(&one, secret), inputs_hash(&two, secret));
        assert_eq!(inputs_hash(&one, secret), inputs_hash(&one, secret));
        // Without the secret, a guess cannot be tested: the plain hash of the inputs,
        // or the hash under another key, is not what the receipt holds.
        let plain = Digest::of(&stackpack_schema::signature::canonical_json(
            &serde_json::json!({"password": "hunter2"}),
        ));
        assert_ne!(inputs_hash(&one, secret), plain);
        assert_ne!(inputs_hash(&one, secret), inputs_hash(&one, b"a guess"));
        let findings = check(&parse("password = [1]\n", "a.tfvars").unwrap(), &interface);
        assert!(
            findings[0].message.contains("(sensitive value)"),
            "{findings:?}"
        );
        assert!(!findings[0].message.contains("[1]"), "{findings:?}");
    }
}
