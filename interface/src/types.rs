//! Reading type constraints from HCL into the shared model
//! ([`stackpack_schema::types`]): every spelling Terraform accepts (0.11's quoted
//! `"list"`, bare `map`, `.tf.json` strings such as `"${map(string)}"`) becomes one
//! normalised [`TypeExpr`].

use std::collections::BTreeMap;

use hcl_edit::expr::{Expression, ObjectKey};
use serde_json::Value;

pub use stackpack_schema::types::{convert, normalise, number, ObjectAttr, TypeExpr};

use super::eval;

/// Reads a type constraint expression.
pub fn parse(expr: &Expression) -> TypeExpr {
    match expr {
        Expression::Variable(ident) => keyword(ident.as_str()),
        // 0.11 syntax: `type = "list"`; also `.tf.json`, where the type is a string.
        Expression::String(s) => from_string(s.value()),
        Expression::Parenthesis(p) => parse(p.inner()),
        Expression::FuncCall(call) if call.name.namespace.is_empty() => {
            let args: Vec<&Expression> = call.args.iter().collect();
            match (call.name.name.as_str(), args.as_slice()) {
                ("list", [t]) => TypeExpr::List(Box::new(parse(t))),
                ("set", [t]) => TypeExpr::Set(Box::new(parse(t))),
                ("map", [t]) => TypeExpr::Map(Box::new(parse(t))),
                ("tuple", [Expression::Array(items)]) => {
                    TypeExpr::Tuple(items.iter().map(parse).collect())
                }
                ("object", [Expression::Object(obj)]) => {
                    let mut attrs = BTreeMap::new();
                    for (key, value) in obj.iter() {
                        let name = match key {
                            ObjectKey::Ident(ident) => ident.as_str().to_string(),
                            ObjectKey::Expression(e) => match eval::static_value(e) {
                                Some(Value::String(s)) => s,
                                _ => eval::canonical_text(e),
                            },
                        };
                        attrs.insert(name, parse_attribute(value.expr()));
                    }
                    TypeExpr::Object(attrs)
                }
                _ => TypeExpr::Unknown(eval::canonical_text(expr)),
            }
        }
        _ => TypeExpr::Unknown(eval::canonical_text(expr)),
    }
}

fn parse_attribute(expr: &Expression) -> ObjectAttr {
    if let Expression::FuncCall(call) = expr {
        if call.name.namespace.is_empty() && call.name.name.as_str() == "optional" {
            let args: Vec<&Expression> = call.args.iter().collect();
            if let Some(t) = args.first() {
                return ObjectAttr {
                    ty: parse(t),
                    optional: true,
                    default: args.get(1).and_then(|d| eval::static_value(d)),
                };
            }
        }
    }
    ObjectAttr {
        ty: parse(expr),
        optional: false,
        default: None,
    }
}

fn keyword(word: &str) -> TypeExpr {
    match word {
        "any" => TypeExpr::Any,
        "string" => TypeExpr::String,
        "number" => TypeExpr::Number,
        "bool" => TypeExpr::Bool,
        "list" => TypeExpr::List(Box::new(TypeExpr::Any)),
        "set" => TypeExpr::Set(Box::new(TypeExpr::Any)),
        "map" => TypeExpr::Map(Box::new(TypeExpr::Any)),
        other => TypeExpr::Unknown(other.to_string()),
    }
}

/// A type written as a string: 0.11's `"string"`, `"list"`, `"map"`, or a `.tf.json`
/// type expression such as `"list(string)"` or `"${map(string)}"`.
pub fn from_string(text: &str) -> TypeExpr {
    let text = text.trim();
    let text = text
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text);
    match hcl_edit::parser::parse_expr(text) {
        Ok(Expression::String(_)) | Err(_) => keyword(text),
        Ok(expr) => parse(&expr),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> TypeExpr {
        parse(&hcl_edit::parser::parse_expr(text).unwrap())
    }

    #[test]
    fn normalises_spellings() {
        assert_eq!(t("\"list\"").to_string(), "list(any)");
        assert_eq!(t("map").to_string(), "map(any)");
        assert_eq!(
            t("object({ b = optional(number, 3), a = string })").to_string(),
            "object({a = string, b = optional(number, 3)})"
        );
        assert_eq!(from_string("${list(string)}").to_string(), "list(string)");
    }

    #[test]
    fn widening_and_narrowing() {
        assert!(t("string").accepted_by(&t("any")));
        assert!(!t("any").accepted_by(&t("string")));
        let old = t("object({a = string})");
        let new = t("object({a = string, b = optional(bool)})");
        assert!(old.accepted_by(&new));
        assert!(!new.accepted_by(&old));
        let required = t("object({a = string, b = bool})");
        assert!(!old.accepted_by(&required));
        assert!(!t("object({a = optional(string)})").accepted_by(&t("object({a = string})")));
    }
}
