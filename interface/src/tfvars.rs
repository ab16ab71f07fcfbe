//! Reading a customer's inputs file (`.tfvars` in native syntax, `.tfvars.json`) into
//! values, each with the line it was set on, so that a finding can name `file:line`.
//!
//! Only literal values are accepted, as the engine does for these files: no references
//! to variables, no function calls.

use std::collections::BTreeMap;

use hcl_edit::expr::{Expression, ObjectKey};
use hcl_edit::template::Element;
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
    /// 1-based, where the parser knows it.
    pub column: Option<usize>,
    pub problem: TfvarsProblem,
    pub message: String,
}

/// The kind of problem, so that each program can word its own hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TfvarsProblem {
    /// Not valid HCL or JSON at all.
    Syntax,
    /// A block where only `name = value` lines belong.
    Block,
    /// An input set twice.
    SetTwice,
    /// A reference or an expression where a literal value belongs.
    NotLiteral,
    /// A `.tfvars.json` file that is not one object.
    NotAnObject,
}

impl TfvarsError {
    fn new(line: usize, problem: TfvarsProblem, message: impl Into<String>) -> TfvarsError {
        TfvarsError {
            line,
            column: None,
            problem,
            message: message.into(),
        }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses `.tfvars` text (native syntax), in file order.
pub fn parse_hcl(text: &str) -> Result<Vec<InputValue>, TfvarsError> {
    let body = hcl_edit::parser::parse_body(text).map_err(|e| TfvarsError {
        line: e.location().line(),
        column: Some(e.location().column()),
        problem: TfvarsProblem::Syntax,
        message: format!("not valid HCL: {}", e.message()),
    })?;
    let mut values: Vec<InputValue> = Vec::new();
    for structure in body.iter() {
        let line = structure.span().map_or(0, |s| line_of(text, s.start));
        let Some(attribute) = structure.as_attribute() else {
            return Err(TfvarsError::new(
                line,
                TfvarsProblem::Block,
                "a block; an inputs file holds only `name = value` lines",
            ));
        };
        let name = attribute.key.as_str().to_string();
        let line = attribute.span().map_or(line, |s| line_of(text, s.start));
        if let Some(first) = values.iter().find(|v| v.name == name) {
            return Err(TfvarsError::new(
                line,
                TfvarsProblem::SetTwice,
                format!("input `{name}` is set twice (first on line {})", first.line),
            ));
        }
        let value = literal(&attribute.value).ok_or_else(|| {
            TfvarsError::new(
                line,
                TfvarsProblem::NotLiteral,
                format!("input `{name}` is not a literal value"),
            )
        })?;
        values.push(InputValue { name, value, line });
    }
    Ok(values)
}

/// Parses `.tfvars.json` text: one object, its keys the inputs, in name order.
pub fn parse_json(text: &str) -> Result<Vec<InputValue>, TfvarsError> {
    let document: Value = serde_json::from_str(text).map_err(|e| TfvarsError {
        line: e.line(),
        column: Some(e.column()),
        problem: TfvarsProblem::Syntax,
        message: format!("not valid JSON: {e}"),
    })?;
    let Value::Object(map) = document else {
        return Err(TfvarsError::new(
            1,
            TfvarsProblem::NotAnObject,
            "not a JSON object: a `.tfvars.json` file holds one JSON object",
        ));
    };
    Ok(map
        .into_iter()
        .map(|(name, value)| {
            let line = key_line(text, &name);
            InputValue { name, value, line }
        })
        .collect())
}

/// A literal value written in HCL: what a `.tfvars` file or a `TF_VAR_` variable may
/// hold. References and function calls are refused, as the engine refuses them in
/// these files; templates without references, heredocs and operators on literals
/// give values.
pub fn literal(expression: &Expression) -> Option<Value> {
    if calls_a_function(expression) {
        return None;
    }
    static_value(expression)
}

/// Parses one HCL value (a `TF_VAR_` variable's text); `None` when it is not a literal.
pub fn parse_literal(text: &str) -> Option<Value> {
    literal(&hcl_edit::parser::parse_expr(text).ok()?)
}

/// Whether a function is called anywhere in `expression` (the evaluator would
/// evaluate `upper("x")`; an inputs file may not call one).
fn calls_a_function(expression: &Expression) -> bool {
    let template_calls = |template: &hcl_edit::template::Template| {
        template.iter().any(|element| match element {
            Element::Interpolation(interpolation) => calls_a_function(&interpolation.expr),
            Element::Directive(_) => true,
            Element::Literal(_) => false,
        })
    };
    match expression {
        Expression::FuncCall(_) => true,
        Expression::Array(items) => items.iter().any(calls_a_function),
        Expression::Object(object) => object.iter().any(|(key, value)| {
            matches!(key, ObjectKey::Expression(e) if calls_a_function(e))
                || calls_a_function(value.expr())
        }),
        Expression::StringTemplate(template) => template_calls(template),
        Expression::HeredocTemplate(heredoc) => template_calls(&heredoc.template),
        Expression::Parenthesis(inner) => calls_a_function(inner.inner()),
        Expression::Conditional(c) => {
            calls_a_function(&c.cond_expr)
                || calls_a_function(&c.true_expr)
                || calls_a_function(&c.false_expr)
        }
        Expression::UnaryOp(op) => calls_a_function(&op.expr),
        Expression::BinaryOp(op) => {
            calls_a_function(&op.lhs_expr) || calls_a_function(&op.rhs_expr)
        }
        // A `for` expression or a traversal in an inputs file: not a literal either.
        Expression::ForExpr(_) | Expression::Traversal(_) | Expression::Variable(_) => true,
        _ => false,
    }
}

/// The closest name, when it is close enough: for "did you mean" hints.
pub fn did_you_mean<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(name, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
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
        let call = parse_hcl("a = upper(\"x\")\n").unwrap_err();
        assert_eq!(call.problem, TfvarsProblem::NotLiteral);
        let nested = parse_hcl("a = { b = [\"${lower(\"X\")}\"] }\n").unwrap_err();
        assert_eq!(nested.problem, TfvarsProblem::NotLiteral);
    }

    #[test]
    fn heredocs_templates_and_operators_on_literals_are_values() {
        let values =
            parse_hcl("a = <<EOT\nhello\nEOT\nb = \"x-${1 + 1}\"\nc = -3\nd = { \"k\" = null }\n")
                .unwrap();
        assert_eq!(values[0].value, json!("hello\n"));
        assert_eq!(values[1].value, json!("x-2"));
        assert_eq!(values[2].value, json!(-3));
        assert_eq!(values[3].value, json!({"k": null}));
        assert_eq!(parse_literal("[1, 2]"), Some(json!([1, 2])));
        assert_eq!(parse_literal("var.x"), None);
    }

    #[test]
    fn near_names_are_suggested() {
        assert_eq!(
            did_you_mean("vpc_cdir", &["vpc_cidr", "region"]),
            Some("vpc_cidr")
        );
        assert_eq!(did_you_mean("zzz", &["vpc_cidr", "region"]), None);
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
