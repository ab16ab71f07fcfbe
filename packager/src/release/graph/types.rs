//! What a wiring can know of types. A Terraform output declares no type, so an
//! output's type is known only when its `value` tells it without a plan: a literal,
//! a string template, or `var.NAME` of an input with a declared type. Anything else
//! (a resource attribute, a function call) is unknown, and an unknown type is
//! accepted: the engine checks the value when the downstream stack is planned.

use hcl_edit::expr::{Expression, TraversalOperator};
use serde_json::Value;
use stackpack_interface::types::TypeExpr;
use stackpack_interface::{eval, ModuleInterface, OutputDecl};

/// The type of `output`'s value, when its expression tells it.
pub fn output_type(module: &ModuleInterface, output: &OutputDecl) -> Option<TypeExpr> {
    expression_type(module, output.value.as_ref()?)
}

fn expression_type(module: &ModuleInterface, expr: &Expression) -> Option<TypeExpr> {
    match expr {
        Expression::Parenthesis(p) => expression_type(module, p.inner()),
        // A template always renders a string, whatever it interpolates.
        Expression::StringTemplate(_) | Expression::HeredocTemplate(_) => Some(TypeExpr::String),
        Expression::Traversal(t) => {
            let (Expression::Variable(root), [op]) = (&t.expr, t.operators.as_slice()) else {
                return None;
            };
            let TraversalOperator::GetAttr(name) = op.value() else {
                return None;
            };
            let variable = module
                .variable(name.as_str())
                .filter(|_| root.as_str() == "var")?;
            let known = variable.type_declared
                && !matches!(variable.type_expr, TypeExpr::Any | TypeExpr::Unknown(_));
            known.then(|| variable.type_expr.clone())
        }
        _ => match eval::static_value(expr)? {
            Value::String(_) => Some(TypeExpr::String),
            Value::Number(_) => Some(TypeExpr::Number),
            Value::Bool(_) => Some(TypeExpr::Bool),
            // A literal collection's type is what the input converts it to: left to
            // the engine, as an unknown.
            _ => None,
        },
    }
}

/// Does a value of type `output` convert to the input's type constraint `input`?
/// Primitives convert to each other when the value allows (`"3"` to a number), which
/// only the value can tell: accepted here, checked by the engine.
pub fn fits(output: &TypeExpr, input: &TypeExpr) -> bool {
    use TypeExpr::*;
    let primitive = |t: &TypeExpr| matches!(t, String | Number | Bool);
    match (output, input) {
        (_, Any | Unknown(_)) | (Any | Unknown(_), _) => true,
        (a, b) if primitive(a) && primitive(b) => true,
        (List(a) | Set(a), List(b) | Set(b)) | (Map(a), Map(b)) => fits(a, b),
        (Tuple(items), List(b) | Set(b)) => items.iter().all(|t| fits(t, b)),
        (a, b) => a.accepted_by(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(text: &str) -> ModuleInterface {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.tf"), text).unwrap();
        stackpack_interface::extract_module(dir.path()).unwrap()
    }

    #[test]
    fn literals_templates_and_typed_inputs_tell_a_type_and_nothing_else_does() {
        let m = module(
            r#"
variable "ids" { type = list(string) }
variable "loose" {}
output "name" { value = "net" }
output "count" { value = 3 }
output "label" { value = "net-${var.loose}" }
output "ids" { value = var.ids }
output "loose" { value = var.loose }
output "id" { value = terraform_data.x.id }
"#,
        );
        let ty = |name: &str| output_type(&m, m.output(name).unwrap()).map(|t| t.to_string());
        assert_eq!(ty("name").as_deref(), Some("string"));
        assert_eq!(ty("count").as_deref(), Some("number"));
        assert_eq!(ty("label").as_deref(), Some("string"));
        assert_eq!(ty("ids").as_deref(), Some("list(string)"));
        assert_eq!(ty("loose"), None);
        assert_eq!(ty("id"), None);
    }

    #[test]
    fn collections_do_not_fit_primitives_and_primitives_fit_each_other() {
        let list = TypeExpr::List(Box::new(TypeExpr::String));
        assert!(!fits(&list, &TypeExpr::String));
        assert!(!fits(&TypeExpr::String, &list));
        assert!(fits(&TypeExpr::Number, &TypeExpr::String));
        assert!(fits(&TypeExpr::String, &TypeExpr::Number));
        assert!(fits(&list, &TypeExpr::Set(Box::new(TypeExpr::String))));
        assert!(fits(&list, &TypeExpr::Any));
    }
}
