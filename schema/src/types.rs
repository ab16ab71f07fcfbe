//! Terraform/OpenTofu type constraints as one structured, serialisable model, shared
//! by every program: the packager reads them from HCL (in `stackpack-interface`),
//! records them in the bundle config as JSON, and the runner checks a customer's
//! values against the same model. No program prints a type to text and parses it
//! back.
//!
//! In JSON a primitive is its keyword (`"string"`), a collection names its element
//! (`{"list": "string"}`), and an object lists its attributes with whether each is
//! optional and its default (`{"object": {"size": {"type": "number", "optional":
//! true, "default": 3}}}`). Sets stay sets.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A type constraint, normalised: old quoted types (`"list"`) and bare collection
/// keywords (`list`) become their modern spelling (`list(any)`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// Something we could not read, kept as canonical source text. Accepts any value:
    /// the engine checks it again.
    Unknown(String),
}

/// One attribute of an `object(...)` type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObjectAttr {
    #[serde(rename = "type")]
    pub ty: TypeExpr,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// The default of an `optional(T, default)` attribute, evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

impl ObjectAttr {
    pub fn required(ty: TypeExpr) -> ObjectAttr {
        ObjectAttr {
            ty,
            optional: false,
            default: None,
        }
    }
}

impl TypeExpr {
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

    /// Checks a value against this type with the engine's conversions (a number or
    /// bool converts to a string, a numeric string to a number, `"true"` to a bool).
    /// The error names the path inside the value (`pools[1].size`).
    pub fn check(&self, value: &Value) -> Result<(), String> {
        conforms(value, self, "")
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
            Ok(n) => number(n),
            Err(_) => value.clone(),
        },
        (TypeExpr::Bool, Value::String(s)) if s == "true" || s == "false" => {
            Value::Bool(s == "true")
        }
        (TypeExpr::List(t), Value::Array(items)) => {
            let t = element_type(t, items.iter());
            Value::Array(items.iter().map(|v| convert(v, &t)).collect())
        }
        (TypeExpr::Set(t), Value::Array(items)) => {
            let t = element_type(t, items.iter());
            let mut items: Vec<Value> = items.iter().map(|v| convert(v, &t)).collect();
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
        (TypeExpr::Map(t), Value::Object(map)) => {
            let t = element_type(t, map.values());
            Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), convert(v, &t)))
                    .collect(),
            )
        }
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

/// The element type of a collection: as declared, or for `any` the one type the
/// engine unifies the elements to (`list(any)` of `1` and `"two"` holds two strings).
fn element_type<'a>(declared: &TypeExpr, items: impl Iterator<Item = &'a Value>) -> TypeExpr {
    match declared {
        TypeExpr::Any => unify(&items.collect::<Vec<_>>()).unwrap_or(TypeExpr::Any),
        t => t.clone(),
    }
}

/// The single type values convert to, as the engine unifies them: primitives of
/// mixed kinds become strings (numbers and bools alone do not mix), objects with the
/// same attributes unify attribute by attribute, objects with different ones become
/// a map of their unified values. `None` when nothing is known to unify (tuples,
/// values that do not mix): they are left as they are.
fn unify(values: &[&Value]) -> Option<TypeExpr> {
    let values: Vec<&Value> = values.iter().copied().filter(|v| !v.is_null()).collect();
    let kind = |v: &Value| match v {
        Value::Bool(_) => Some(TypeExpr::Bool),
        Value::Number(_) => Some(TypeExpr::Number),
        Value::String(_) => Some(TypeExpr::String),
        _ => None,
    };
    match values.first()? {
        Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            let kinds: Vec<TypeExpr> = values.iter().map(|v| kind(v)).collect::<Option<_>>()?;
            if kinds.iter().all(|k| *k == kinds[0]) {
                Some(kinds[0].clone())
            } else if kinds.contains(&TypeExpr::String) {
                Some(TypeExpr::String)
            } else {
                None
            }
        }
        Value::Object(first) => {
            let objects: Vec<&serde_json::Map<String, Value>> = values
                .iter()
                .map(|v| v.as_object())
                .collect::<Option<_>>()?;
            let same_keys = objects
                .iter()
                .all(|o| o.len() == first.len() && o.keys().all(|k| first.contains_key(k)));
            if same_keys {
                let attrs = first
                    .keys()
                    .map(|k| {
                        let of_key: Vec<&Value> = objects.iter().filter_map(|o| o.get(k)).collect();
                        let ty = unify(&of_key).unwrap_or(TypeExpr::Any);
                        let attr = ObjectAttr {
                            ty,
                            optional: false,
                            default: None,
                        };
                        (k.clone(), attr)
                    })
                    .collect();
                Some(TypeExpr::Object(attrs))
            } else {
                let all: Vec<&Value> = objects.iter().flat_map(|o| o.values()).collect();
                Some(TypeExpr::Map(Box::new(unify(&all)?)))
            }
        }
        _ => None,
    }
}

/// Integral floats made integers, recursively.
pub fn normalise(value: &Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(value.clone(), number),
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), normalise(v))).collect())
        }
        other => other.clone(),
    }
}

/// A number as the engine prints it: integral values without a fraction.
pub fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn conforms(value: &Value, ty: &TypeExpr, path: &str) -> Result<(), String> {
    let here = |what: &str| {
        if path.is_empty() {
            format!("expected {what}, found {}", kind(value))
        } else {
            format!("`{path}`: expected {what}, found {}", kind(value))
        }
    };
    match (ty, value) {
        (_, Value::Null) | (TypeExpr::Any | TypeExpr::Unknown(_), _) => Ok(()),
        (TypeExpr::String, Value::String(_) | Value::Number(_) | Value::Bool(_)) => Ok(()),
        (TypeExpr::String, _) => Err(here("a string")),
        (TypeExpr::Number, Value::Number(_)) => Ok(()),
        (TypeExpr::Number, Value::String(s)) if s.trim().parse::<f64>().is_ok() => Ok(()),
        (TypeExpr::Number, _) => Err(here("a number")),
        (TypeExpr::Bool, Value::Bool(_)) => Ok(()),
        (TypeExpr::Bool, Value::String(s)) if s == "true" || s == "false" => Ok(()),
        (TypeExpr::Bool, _) => Err(here("a bool")),
        (TypeExpr::List(element) | TypeExpr::Set(element), Value::Array(items)) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| conforms(item, element, &format!("{path}[{i}]"))),
        (TypeExpr::List(_), _) => Err(here("a list")),
        (TypeExpr::Set(_), _) => Err(here("a set")),
        (TypeExpr::Tuple(types), Value::Array(items)) if types.len() == items.len() => items
            .iter()
            .zip(types)
            .enumerate()
            .try_for_each(|(i, (item, ty))| conforms(item, ty, &format!("{path}[{i}]"))),
        (TypeExpr::Tuple(types), _) => Err(here(&format!("a list of {} elements", types.len()))),
        (TypeExpr::Map(element), Value::Object(map)) => map
            .iter()
            .try_for_each(|(k, v)| conforms(v, element, &child(path, k))),
        (TypeExpr::Map(_), _) => Err(here("a map")),
        (TypeExpr::Object(attributes), Value::Object(map)) => {
            for (name, attribute) in attributes {
                let at = child(path, name);
                match map.get(name) {
                    Some(v) => conforms(v, &attribute.ty, &at)?,
                    None if attribute.optional => {}
                    None => return Err(format!("attribute `{at}` is required")),
                }
            }
            Ok(())
        }
        (TypeExpr::Object(_), _) => Err(here("an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(attrs: &[(&str, TypeExpr, bool, Option<Value>)]) -> TypeExpr {
        TypeExpr::Object(
            attrs
                .iter()
                .map(|(name, ty, optional, default)| {
                    let attr = ObjectAttr {
                        ty: ty.clone(),
                        optional: *optional,
                        default: default.clone(),
                    };
                    (name.to_string(), attr)
                })
                .collect(),
        )
    }

    #[test]
    fn the_json_form_is_structured_and_round_trips() {
        let ty = TypeExpr::List(Box::new(object(&[
            ("family", TypeExpr::String, false, None),
            ("max", TypeExpr::Number, true, Some(json!(4))),
            (
                "zones",
                TypeExpr::Set(Box::new(TypeExpr::String)),
                true,
                None,
            ),
        ])));
        let text = serde_json::to_value(&ty).unwrap();
        assert_eq!(
            text,
            json!({"list": {"object": {
                "family": {"type": "string"},
                "max": {"type": "number", "optional": true, "default": 4},
                "zones": {"type": {"set": "string"}, "optional": true}
            }}})
        );
        assert_eq!(serde_json::from_value::<TypeExpr>(text).unwrap(), ty);
        assert_eq!(
            ty.to_string(),
            "list(object({family = string, max = optional(number, 4), zones = optional(set(string))}))"
        );
    }

    #[test]
    fn values_are_checked_with_the_engines_conversions() {
        assert!(TypeExpr::String.check(&json!(3)).is_ok());
        assert!(TypeExpr::Number.check(&json!("3.5")).is_ok());
        assert!(TypeExpr::Bool.check(&json!("true")).is_ok());
        assert_eq!(
            TypeExpr::Number.check(&json!("three")).unwrap_err(),
            "expected a number, found a string"
        );
        let pools = TypeExpr::List(Box::new(object(&[
            ("family", TypeExpr::String, false, None),
            ("max", TypeExpr::Number, true, None),
        ])));
        assert!(pools.check(&json!([{"family": "a100"}])).is_ok());
        assert_eq!(
            pools
                .check(&json!([{"family": "a100"}, {"max": 2}]))
                .unwrap_err(),
            "attribute `[1].family` is required"
        );
        assert_eq!(
            pools
                .check(&json!([{"family": "a100", "max": []}]))
                .unwrap_err(),
            "`[0].max`: expected a number, found a list"
        );
    }

    #[test]
    fn a_set_is_converted_sorted_without_duplicates() {
        let ty = TypeExpr::Set(Box::new(TypeExpr::String));
        assert_eq!(convert(&json!(["b", "a", "b"]), &ty), json!(["a", "b"]));
    }
}
