//! Reading a customer's inputs file (`.tfvars` in native syntax, `.tfvars.json`) into
//! values, each with the line it was set on, so that a finding can name `file:line`.
//!
//! Only literal values are accepted, as the engine does for these files: no references
//! to variables, no function calls.

use std::collections::BTreeMap;

use hcl_edit::Span;
use serde_json::Value;

use super::eval::{static_value, Evaluator};
use super::{ModuleInterface, Validation};

/// One input set in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct InputValue {
    pub name: String,
    pub value: Value,
    /// 1-based.
    pub line: usize,
}

/// Why an inputs file could not be read, and where in it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct TfvarsError {
    pub line: usize,
    pub message: String,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses `.tfvars` text (native syntax), in file order.
pub fn parse_hcl(text: &str) -> Result<Vec<InputValue>, TfvarsError> {
    let body = hcl_edit::parser::parse_body(text).map_err(|e| TfvarsError {
        line: e.location().line(),
        message: format!("not valid HCL: {}", e.message()),
    })?;
    let mut values: Vec<InputValue> = Vec::new();
    for structure in body.iter() {
        let line = structure.span().map_or(0, |s| line_of(text, s.start));
        let Some(attribute) = structure.as_attribute() else {
            return Err(TfvarsError {
                line,
                message: "a block; an inputs file holds only `name = value` lines".into(),
            });
        };
        let name = attribute.key.as_str().to_string();
        let line = attribute.span().map_or(line, |s| line_of(text, s.start));
        if let Some(first) = values.iter().find(|v| v.name == name) {
            return Err(TfvarsError {
                line,
                message: format!("input `{name}` is set twice (first on line {})", first.line),
            });
        }
        let value = static_value(&attribute.value).ok_or_else(|| TfvarsError {
            line,
            message: format!("input `{name}` is not a literal value"),
        })?;
        values.push(InputValue { name, value, line });
    }
    Ok(values)
}

/// Parses `.tfvars.json` text: one object, its keys the inputs, in name order.
pub fn parse_json(text: &str) -> Result<Vec<InputValue>, TfvarsError> {
    let document: Value = serde_json::from_str(text).map_err(|e| TfvarsError {
        line: e.line(),
        message: format!("not valid JSON: {e}"),
    })?;
    let Value::Object(map) = document else {
        return Err(TfvarsError {
            line: 1,
            message: "a `.tfvars.json` file holds one JSON object".into(),
        });
    };
    Ok(map
        .into_iter()
        .map(|(name, value)| {
            let line = key_line(text, &name);
            InputValue { name, value, line }
        })
        .collect())
}

/// The line of the first `"name":` in a JSON text (1 when it cannot be found).
fn key_line(text: &str, name: &str) -> usize {
    let quoted = serde_json::to_string(name).unwrap_or_default();
    let mut from = 0;
    while let Some(found) = text[from..].find(&quoted) {
        let at = from + found;
        let rest = text[at + quoted.len()..].trim_start();
        if rest.starts_with(':') {
            return line_of(text, at);
        }
        from = at + quoted.len();
    }
    1
}

/// What a `validation` condition says about some inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    Fails,
    /// The condition needs what only the engine knows (a function we do not evaluate,
    /// an input without a value): the engine checks it at plan time.
    Unknown,
}

/// Evaluates one `validation` condition of `module` with `inputs` bound to `var.*`
/// (values already converted to their types, defaults filled in).
pub fn validation_verdict(
    module: &ModuleInterface,
    validation: &Validation,
    inputs: &BTreeMap<String, Value>,
) -> Verdict {
    let Ok(condition) = hcl_edit::parser::parse_expr(&validation.condition) else {
        return Verdict::Unknown;
    };
    match Evaluator::new(inputs, &module.locals).eval(&condition) {
        Some(Value::Bool(true)) => Verdict::Holds,
        Some(Value::Bool(false)) => Verdict::Fails,
        _ => Verdict::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn native_inputs_keep_their_lines() {
        let values = parse_hcl("# c\na = \"x\"\n\nb = [1, 2]\nc = { d = true }\n").unwrap();
        let got: Vec<_> = values.iter().map(|v| (v.name.as_str(), v.line)).collect();
        assert_eq!(got, [("a", 2), ("b", 4), ("c", 5)]);
        assert_eq!(values[2].value, json!({"d": true}));
    }

    #[test]
    fn references_and_repeats_are_refused() {
        assert_eq!(parse_hcl("a = 1\nb = var.x\n").unwrap_err().line, 2);
        assert_eq!(parse_hcl("a = 1\na = 2\n").unwrap_err().line, 2);
    }

    #[test]
    fn validations_hold_fail_or_are_unknown() {
        let module = crate::extract_files(
            std::path::Path::new("m"),
            &[(
                "v.tf".into(),
                "variable \"n\" {\n  type = number\n  validation {\n    condition = var.n > 2\n    error_message = \"x\"\n  }\n  validation {\n    condition = can(formatdate(\"YYYY\", var.n))\n    error_message = \"y\"\n  }\n}\n".into(),
            )],
        )
        .unwrap();
        let v = &module.variables[0];
        let inputs = |n: i64| BTreeMap::from([("n".to_string(), json!(n))]);
        assert_eq!(
            validation_verdict(&module, &v.validations[0], &inputs(3)),
            Verdict::Holds
        );
        assert_eq!(
            validation_verdict(&module, &v.validations[0], &inputs(1)),
            Verdict::Fails
        );
        assert_eq!(
            validation_verdict(&module, &v.validations[1], &inputs(1)),
            Verdict::Unknown
        );
    }

    #[test]
    fn json_inputs_keep_their_lines() {
        let values = parse_json("{\n  \"a\": \"x\",\n  \"b\": {\"a\": 1}\n}\n").unwrap();
        let got: Vec<_> = values.iter().map(|v| (v.name.as_str(), v.line)).collect();
        assert_eq!(got, [("a", 2), ("b", 3)]);
    }
}
