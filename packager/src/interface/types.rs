//! Type constraints: parsed from HCL, printed in one canonical form, compared by the
//! sets of values they accept, and used to convert a default the way the engine does.

use std::collections::BTreeMap;
use std::fmt;

use hcl_edit::expr::{Expression, ObjectKey};
use serde_json::Value;

use super::eval;

/// A type constraint, normalised: old quoted types (`"list"`) and bare collection
/// keywords (`list`) become their modern spelling (`list(any)`).
#[derive(Clone, Debug, PartialEq)]
pub enum TypeExpr {
    Any,
    String,
    Number,
    Bool,
    List(Box<TypeExpr>),
    Set(Box<TypeExpr>),
    Map(Box<TypeExpr>),
    Tuple(Vec<TypeExpr>),
    Object(BTreeMap<String, ObjectAttr>),
    /// Something we could not read, kept as canonical source text.
    Unknown(String),
}

/// One attribute of an `object(...)` type.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectAttr {
    pub ty: TypeExpr,
    pub optional: bool,
    /// The default of an `optional(T, default)` attribute, evaluated.
    pub default: Option<Value>,
}

impl TypeExpr {
    /// Reads a type constraint expression.
    pub fn parse(expr: &Expression) -> TypeExpr {
        match expr {
            Expression::Variable(ident) => keyword(ident.as_str()),
            // 0.11 syntax: `type = "list"`; also `.tf.json`, where the type is a string.
            Expression::String(s) => from_string(s.value()),
            Expression::Parenthesis(p) => TypeExpr::parse(p.inner()),
            Expression::FuncCall(call) if call.name.namespace.is_empty() => {
                let args: Vec<&Expression> = call.args.iter().collect();
                match (call.name.name.as_str(), args.as_slice()) {
                    ("list", [t]) => TypeExpr::List(Box::new(TypeExpr::parse(t))),
                    ("set", [t]) => TypeExpr::Set(Box::new(TypeExpr::parse(t))),
                    ("map", [t]) => TypeExpr::Map(Box::new(TypeExpr::parse(t))),
                    ("tuple", [Expression::Array(items)]) => {
                        TypeExpr::Tuple(items.iter().map(TypeExpr::parse).collect())
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
                            attrs.insert(name, ObjectAttr::parse(value.expr()));
                        }
                        TypeExpr::Object(attrs)
                    }
                    _ => TypeExpr::Unknown(eval::canonical_text(expr)),
                }
            }
            _ => TypeExpr::Unknown(eval::canonical_text(expr)),
        }
    }

    /// True for the types whose values are collections of one element type.
    fn element(&self) -> Option<&TypeExpr> {
        match self {
            TypeExpr::List(t) | TypeExpr::Set(t) | TypeExpr::Map(t) => Some(t),
            _ => None,
        }
    }

    /// Does every value this type accepts also pass `wider`? (`self` ⊆ `wider`.)
    pub fn accepted_by(&self, wider: &TypeExpr) -> bool {
        use TypeExpr::*;
        match (self, wider) {
            (_, Any) => true,
            (Any, _) => false,
            (a, b) if a == b => true,
            // The engine converts numbers and bools to strings without complaint.
            (Number | Bool, String) => true,
            (List(a), List(b)) | (Set(a), Set(b)) | (Map(a), Map(b)) => a.accepted_by(b),
            // A tuple converts to a list of a type every element fits.
            (Tuple(items), List(b)) => items.iter().all(|t| t.accepted_by(b)),
            (Tuple(a), Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.accepted_by(y))
            }
            (Object(a), Object(b)) => {
                // Every attribute the narrower type knows must still be read the same way.
                a.iter().all(|(name, attr)| match b.get(name) {
                    Some(wide) => {
                        attr.ty.accepted_by(&wide.ty) && (wide.optional || !attr.optional)
                    }
                    // Dropped: callers' values for it are silently discarded.
                    None => false,
                }) && b
                    .iter()
                    .all(|(name, wide)| a.contains_key(name) || wide.optional)
            }
            (Object(a), Map(b)) => a.values().all(|attr| attr.ty.accepted_by(b)),
            _ => false,
        }
    }

    /// Every `optional(T, default)` whose default differs between `self` (old) and
    /// `new`, as (dotted path, old default, new default).
    pub fn changed_optional_defaults(
        &self,
        new: &TypeExpr,
        path: &str,
        out: &mut Vec<(String, Option<Value>, Option<Value>)>,
    ) {
        match (self, new) {
            (TypeExpr::Object(a), TypeExpr::Object(b)) => {
                for (name, old_attr) in a {
                    let Some(new_attr) = b.get(name) else {
                        continue;
                    };
                    let sub = format!("{path}.{name}");
                    if old_attr.optional && new_attr.optional {
                        let od = old_attr.default.as_ref().map(|v| convert(v, &old_attr.ty));
                        let nd = new_attr.default.as_ref().map(|v| convert(v, &new_attr.ty));
                        if od != nd {
                            out.push((sub.clone(), od, nd));
                        }
                    }
                    old_attr
                        .ty
                        .changed_optional_defaults(&new_attr.ty, &sub, out);
                }
            }
            (TypeExpr::Tuple(a), TypeExpr::Tuple(b)) => {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    x.changed_optional_defaults(y, &format!("{path}[{i}]"), out);
                }
            }
            (x, y) => {
                if let (Some(a), Some(b)) = (x.element(), y.element()) {
                    a.changed_optional_defaults(b, &format!("{path}[*]"), out);
                }
            }
        }
    }
}

impl ObjectAttr {
    fn parse(expr: &Expression) -> ObjectAttr {
        if let Expression::FuncCall(call) = expr {
            if call.name.namespace.is_empty() && call.name.name.as_str() == "optional" {
                let args: Vec<&Expression> = call.args.iter().collect();
                if let Some(t) = args.first() {
                    return ObjectAttr {
                        ty: TypeExpr::parse(t),
                        optional: true,
                        default: args.get(1).and_then(|d| eval::static_value(d)),
                    };
                }
            }
        }
        ObjectAttr {
            ty: TypeExpr::parse(expr),
            optional: false,
            default: None,
        }
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
        Ok(expr) => TypeExpr::parse(&expr),
    }
}

impl fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeExpr::Any => f.write_str("any"),
            TypeExpr::String => f.write_str("string"),
            TypeExpr::Number => f.write_str("number"),
            TypeExpr::Bool => f.write_str("bool"),
            TypeExpr::List(t) => write!(f, "list({t})"),
            TypeExpr::Set(t) => write!(f, "set({t})"),
            TypeExpr::Map(t) => write!(f, "map({t})"),
            TypeExpr::Tuple(items) => {
                f.write_str("tuple([")?;
                for (i, t) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str("])")
            }
            TypeExpr::Object(attrs) => {
                f.write_str("object({")?;
                for (i, (name, attr)) in attrs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name} = ")?;
                    match (attr.optional, &attr.default) {
                        (false, _) => write!(f, "{}", attr.ty)?,
                        (true, None) => write!(f, "optional({})", attr.ty)?,
                        (true, Some(d)) => write!(f, "optional({}, {})", attr.ty, d)?,
                    }
                }
                f.write_str("})")
            }
            TypeExpr::Unknown(text) => f.write_str(text),
        }
    }
}

/// Converts a value to a type the way the engine does before comparing: numbers and
/// bools written as strings, sets sorted without duplicates, missing optional object
/// attributes filled with their defaults, integral floats made integers.
pub fn convert(value: &Value, ty: &TypeExpr) -> Value {
    match (ty, value) {
        (_, Value::Null) => Value::Null,
        (TypeExpr::String, Value::Number(n)) => Value::String(n.to_string()),
        (TypeExpr::String, Value::Bool(b)) => Value::String(b.to_string()),
        (TypeExpr::Number, Value::String(s)) => match s.parse::<f64>() {
            Ok(n) => eval::number(n),
            Err(_) => value.clone(),
        },
        (TypeExpr::Bool, Value::String(s)) if s == "true" || s == "false" => {
            Value::Bool(s == "true")
        }
        (TypeExpr::List(t), Value::Array(items)) => {
            Value::Array(items.iter().map(|v| convert(v, t)).collect())
        }
        (TypeExpr::Set(t), Value::Array(items)) => {
            let mut items: Vec<Value> = items.iter().map(|v| convert(v, t)).collect();
            items.sort_by_key(|v| v.to_string());
            items.dedup();
            Value::Array(items)
        }
        (TypeExpr::Tuple(ts), Value::Array(items)) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| ts.get(i).map_or_else(|| normalise(v), |t| convert(v, t)))
                .collect(),
        ),
        (TypeExpr::Map(t), Value::Object(map)) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), convert(v, t)))
                .collect(),
        ),
        (TypeExpr::Object(attrs), Value::Object(map)) => {
            let mut out = serde_json::Map::new();
            for (name, attr) in attrs {
                let v = match map.get(name) {
                    Some(Value::Null) | None if attr.optional => attr
                        .default
                        .as_ref()
                        .map_or(Value::Null, |d| convert(d, &attr.ty)),
                    Some(v) => convert(v, &attr.ty),
                    None => Value::Null,
                };
                out.insert(name.clone(), v);
            }
            Value::Object(out)
        }
        _ => normalise(value),
    }
}

/// Integral floats made integers, recursively.
pub fn normalise(value: &Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(value.clone(), eval::number),
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), normalise(v))).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> TypeExpr {
        TypeExpr::parse(&hcl_edit::parser::parse_expr(text).unwrap())
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
