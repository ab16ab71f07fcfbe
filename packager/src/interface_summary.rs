//! A summary of a stack's interface (inputs, outputs, kinds of resource) for its bundle
//! config. The full extractor with file:line positions and the rules that compare
//! interfaces live in the interface checker; this reads what the config records.

use std::path::Path;

use stackpack_schema::interface::{Input, Interface, Output};

use crate::error::{Error, Result};

/// The interface declared by the `.tf` files directly in `dir`.
pub fn read_interface(root: &Path, dir: &str) -> Result<Interface> {
    let mut interface = Interface::default();
    let mut names: Vec<String> = std::fs::read_dir(root.join(dir))
        .map_err(|e| Error::usage(format!("cannot read `{dir}`: {e}")).at(dir))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tf"))
        .collect();
    names.sort();
    for name in names {
        let display = format!("{dir}/{name}");
        let text = std::fs::read_to_string(root.join(&display))
            .map_err(|e| Error::usage(format!("cannot read `{display}`: {e}")).at(&display))?;
        let body: hcl::Body = hcl::from_str(&text)
            .map_err(|e| Error::usage(format!("`{display}` cannot be parsed: {e}")).at(&display))?;
        for block in body.blocks() {
            let labels: Vec<&str> = block.labels().iter().map(|l| l.as_str()).collect();
            let attribute = |key: &str| {
                block
                    .body()
                    .attributes()
                    .find(|a| a.key() == key)
                    .map(|a| a.expr().clone())
            };
            let flag = |key: &str| matches!(attribute(key), Some(hcl::Expression::Bool(true)));
            let text_of = |key: &str| match attribute(key) {
                Some(hcl::Expression::String(s)) => Some(s),
                _ => None,
            };
            match (block.identifier(), labels.as_slice()) {
                ("variable", [name]) => {
                    let default = attribute("default");
                    interface.inputs.push(Input {
                        name: name.to_string(),
                        type_constraint: attribute("type")
                            .map(|t| hcl::format::to_string(&t).unwrap_or_default())
                            .unwrap_or_else(|| "any".to_string()),
                        required: default.is_none(),
                        default: default.and_then(|d| static_value(&d)),
                        sensitive: flag("sensitive"),
                        nullable: !matches!(
                            attribute("nullable"),
                            Some(hcl::Expression::Bool(false))
                        ),
                        ephemeral: flag("ephemeral"),
                        description: text_of("description"),
                        deprecated: text_of("deprecated"),
                        alias_of: None,
                        validations: block
                            .body()
                            .blocks()
                            .filter(|b| b.identifier() == "validation")
                            .filter_map(|b| {
                                b.body()
                                    .attributes()
                                    .find(|a| a.key() == "condition")
                                    .and_then(|a| hcl::format::to_string(a.expr()).ok())
                            })
                            .collect(),
                    });
                }
                ("output", [name]) => interface.outputs.push(Output {
                    name: name.to_string(),
                    sensitive: flag("sensitive"),
                    description: text_of("description"),
                }),
                ("resource", [kind, _]) => interface.resource_kinds.push(kind.to_string()),
                ("data", [kind, _]) => interface.resource_kinds.push(format!("data.{kind}")),
                ("terraform", []) => {
                    if let Some(hcl::Expression::String(v)) = attribute("required_version") {
                        interface.required_version = Some(v);
                    }
                }
                _ => {}
            }
        }
    }
    interface.inputs.sort_by(|a, b| a.name.cmp(&b.name));
    interface.outputs.sort_by(|a, b| a.name.cmp(&b.name));
    interface.resource_kinds.sort();
    interface.resource_kinds.dedup();
    Ok(interface)
}

/// A literal expression as JSON; `None` when it needs evaluation.
fn static_value(expression: &hcl::Expression) -> Option<serde_json::Value> {
    use hcl::Expression as E;
    Some(match expression {
        E::Null => serde_json::Value::Null,
        E::Bool(b) => serde_json::Value::Bool(*b),
        E::Number(n) => serde_json::to_value(n).ok()?,
        E::String(s) => serde_json::Value::String(s.clone()),
        E::Array(items) => {
            serde_json::Value::Array(items.iter().map(static_value).collect::<Option<Vec<_>>>()?)
        }
        E::Object(object) => {
            let mut map = serde_json::Map::new();
            for (key, value) in object {
                let key = match key {
                    hcl::ObjectKey::Identifier(id) => id.to_string(),
                    hcl::ObjectKey::Expression(E::String(s)) => s.clone(),
                    _ => return None,
                };
                map.insert(key, static_value(value)?);
            }
            serde_json::Value::Object(map)
        }
        _ => return None,
    })
}
