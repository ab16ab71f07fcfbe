//! Walking parsed files (native HCL through `hcl-edit`, JSON syntax through
//! `serde_json`) into a [`ModuleInterface`].

use hcl_edit::expr::Expression;
use hcl_edit::structure::{Block, Body};
use hcl_edit::Span;
use serde_json::Value;

use super::eval::{canonical_text, static_value};
use super::types::{self, TypeExpr};
use super::{
    Condition, DefaultValue, Location, ModuleCall, ModuleInterface, Moved, OutputDecl,
    ProviderDecl, Removed, ResourceDecl, Validation, Variable,
};

/// (line, column, message)
pub type ParseError = (usize, usize, String);

/// Byte offset → 1-based line.
struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    fn line(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
    lines: Lines,
}

impl Ctx<'_> {
    fn loc(&self, span: Option<std::ops::Range<usize>>) -> Location {
        Location {
            file: self.file.to_string(),
            line: span.map_or(0, |s| self.lines.line(s.start)),
        }
    }
}

fn attr<'b>(body: &'b Body, key: &str) -> Option<&'b Expression> {
    body.get_attribute(key).map(|a| &a.value)
}

fn string_attr(body: &Body, key: &str) -> Option<String> {
    attr(body, key).map(|e| match static_value(e) {
        Some(Value::String(s)) => s,
        _ => e.to_string().trim().to_string(),
    })
}

fn bool_attr(body: &Body, key: &str) -> Option<bool> {
    attr(body, key).and_then(|e| match static_value(e)? {
        Value::Bool(b) => Some(b),
        Value::String(s) => s.parse().ok(),
        _ => None,
    })
}

fn source_text(expr: &Expression) -> String {
    expr.to_string().trim().to_string()
}

fn label(block: &Block, i: usize) -> Option<String> {
    block.labels.get(i).map(|l| l.as_str().to_string())
}

/// Parses one native-syntax file into `module`.
pub fn hcl_file(module: &mut ModuleInterface, file: &str, text: &str) -> Result<(), ParseError> {
    let body = hcl_edit::parser::parse_body(text).map_err(|e| {
        let loc = e.location();
        (loc.line(), loc.column(), e.message().to_string())
    })?;
    let ctx = Ctx {
        file,
        text,
        lines: Lines::new(text),
    };
    for block in body.blocks() {
        let loc = ctx.loc(block.span());
        match block.ident.as_str() {
            "variable" => {
                if let Some(name) = label(block, 0) {
                    let v = variable(&ctx, &name, &block.body, loc.clone());
                    module
                        .conditions
                        .extend(v.validations.iter().map(|c| Condition {
                            text: c.condition.clone(),
                            location: c.location.clone(),
                        }));
                    module.variables.push(v);
                }
            }
            "output" => {
                if let Some(name) = label(block, 0) {
                    conditions(&ctx, &block.body, module);
                    module.outputs.push(OutputDecl {
                        name,
                        sensitive: bool_attr(&block.body, "sensitive").unwrap_or(false),
                        description: string_attr(&block.body, "description"),
                        deprecated: string_attr(&block.body, "deprecated"),
                        location: loc,
                    });
                }
            }
            "resource" | "data" => {
                if let (Some(kind), Some(name)) = (label(block, 0), label(block, 1)) {
                    conditions(&ctx, &block.body, module);
                    let kind = if block.ident.as_str() == "data" {
                        format!("data.{kind}")
                    } else {
                        kind
                    };
                    module.resources.push(ResourceDecl {
                        kind,
                        name,
                        count: attr(&block.body, "count").cloned(),
                        for_each: attr(&block.body, "for_each").cloned(),
                        location: loc,
                    });
                }
            }
            "module" => {
                if let Some(name) = label(block, 0) {
                    let args = block
                        .body
                        .attributes()
                        .filter(|a| {
                            !matches!(
                                a.key.as_str(),
                                "source"
                                    | "version"
                                    | "count"
                                    | "for_each"
                                    | "providers"
                                    | "depends_on"
                            )
                        })
                        .map(|a| (a.key.as_str().to_string(), a.value.clone()))
                        .collect();
                    module.module_calls.push(ModuleCall {
                        name,
                        source: string_attr(&block.body, "source"),
                        version: string_attr(&block.body, "version"),
                        args,
                        count: attr(&block.body, "count").cloned(),
                        for_each: attr(&block.body, "for_each").cloned(),
                        location: loc,
                    });
                }
            }
            "locals" => {
                for a in block.body.attributes() {
                    module
                        .locals
                        .insert(a.key.as_str().to_string(), a.value.clone());
                }
            }
            "moved" => module.moved.push(Moved {
                from: attr(&block.body, "from")
                    .map(source_text)
                    .unwrap_or_default(),
                to: attr(&block.body, "to").map(source_text).unwrap_or_default(),
                location: loc,
            }),
            "removed" => module.removed.push(Removed {
                from: attr(&block.body, "from")
                    .map(source_text)
                    .unwrap_or_default(),
                location: loc,
            }),
            "terraform" => terraform_block(&ctx, &block.body, module),
            "provider" => {
                // 0.11–0.12 style: `provider "aws" { version = "~> 2.0" }`.
                if let (Some(name), Some(version)) =
                    (label(block, 0), string_attr(&block.body, "version"))
                {
                    module
                        .required_providers
                        .entry(name)
                        .or_insert(ProviderDecl {
                            source: None,
                            version: Some(version),
                            location: loc,
                        });
                }
            }
            "check" => {
                for assert in block.body.get_blocks("assert") {
                    if let Some(c) = attr(&assert.body, "condition") {
                        module.conditions.push(Condition {
                            text: source_text(c),
                            location: ctx.loc(assert.span()),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn conditions(ctx: &Ctx, body: &Body, module: &mut ModuleInterface) {
    let mut blocks: Vec<&Block> = body
        .get_blocks("precondition")
        .chain(body.get_blocks("postcondition"))
        .collect();
    for lifecycle in body.get_blocks("lifecycle") {
        blocks.extend(lifecycle.body.get_blocks("precondition"));
        blocks.extend(lifecycle.body.get_blocks("postcondition"));
    }
    for b in blocks {
        if let Some(c) = attr(&b.body, "condition") {
            module.conditions.push(Condition {
                text: source_text(c),
                location: ctx.loc(b.span()),
            });
        }
    }
}

fn terraform_block(ctx: &Ctx, body: &Body, module: &mut ModuleInterface) {
    if let Some(a) = body.get_attribute("required_version") {
        if let Some(v) = string_attr(body, "required_version") {
            module.required_version = Some((v, ctx.loc(a.span())));
        }
    }
    for rp in body.get_blocks("required_providers") {
        for a in rp.body.attributes() {
            let loc = ctx.loc(a.span());
            let decl = match static_value(&a.value) {
                Some(Value::String(version)) => ProviderDecl {
                    source: None,
                    version: Some(version),
                    location: loc,
                },
                Some(Value::Object(map)) => ProviderDecl {
                    source: map
                        .get("source")
                        .and_then(|v| v.as_str())
                        .map(str::to_string),
                    version: map
                        .get("version")
                        .and_then(|v| v.as_str())
                        .map(str::to_string),
                    location: loc,
                },
                _ => ProviderDecl {
                    source: None,
                    version: None,
                    location: loc,
                },
            };
            module
                .required_providers
                .insert(a.key.as_str().to_string(), decl);
        }
    }
}

fn variable(ctx: &Ctx, name: &str, body: &Body, location: Location) -> Variable {
    let type_attr = attr(body, "type");
    let type_expr = type_attr.map_or(TypeExpr::Any, types::parse);
    let default = match attr(body, "default") {
        None => DefaultValue::Required,
        Some(e) => match static_value(e) {
            Some(v) => DefaultValue::Value(v),
            None => DefaultValue::Expression(canonical_text(e)),
        },
    };
    let validations = body
        .get_blocks("validation")
        .filter_map(|b| {
            let c = attr(&b.body, "condition")?;
            Some(Validation {
                condition: source_text(c),
                canonical: canonical_text(c),
                error_message: string_attr(&b.body, "error_message"),
                location: ctx.loc(b.span()),
            })
        })
        .collect();
    let renamed_from = renamed_from(ctx, location.line, body.span());
    Variable {
        name: name.to_string(),
        type_declared: type_attr.is_some(),
        type_expr,
        default,
        nullable: bool_attr(body, "nullable").unwrap_or(true),
        sensitive: bool_attr(body, "sensitive").unwrap_or(false),
        ephemeral: bool_attr(body, "ephemeral").unwrap_or(false),
        description: string_attr(body, "description"),
        deprecated: string_attr(body, "deprecated"),
        renamed_from,
        validations,
        location,
    }
}

/// The `stackpack:renamed-from` annotation in the comment lines right above a block or
/// anywhere inside it.
fn renamed_from(
    ctx: &Ctx,
    first_line: usize,
    body_span: Option<std::ops::Range<usize>>,
) -> Option<String> {
    let lines: Vec<&str> = ctx.text.lines().collect();
    let last_line = body_span.map_or(first_line, |s| ctx.lines.line(s.end.saturating_sub(1)));
    let mut candidates: Vec<&str> = Vec::new();
    // Comment lines directly above.
    let mut i = first_line.saturating_sub(1);
    while i > 0 {
        let l = lines.get(i - 1).map_or("", |l| l.trim());
        if l.starts_with('#') || l.starts_with("//") {
            candidates.push(l);
            i -= 1;
        } else {
            break;
        }
    }
    for l in lines
        .iter()
        .take(last_line)
        .skip(first_line.saturating_sub(1))
    {
        candidates.push(l);
    }
    candidates
        .iter()
        .find_map(|l| annotation(l, "stackpack:renamed-from"))
}

/// The value of `marker = "value"` (or `marker value`) inside a comment line.
pub fn annotation(line: &str, marker: &str) -> Option<String> {
    let comment_start = line.find('#').or_else(|| line.find("//"))?;
    let rest = &line[comment_start..];
    let after = &rest[rest.find(marker)? + marker.len()..];
    let after = after.trim_start().trim_start_matches(['=', ':']).trim();
    let value = after.trim_matches('"');
    let value: String = value
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!value.is_empty()).then_some(value)
}

// ---------------------------------------------------------------------------------
// JSON syntax

/// Where `"key"` first appears at or after `from`; its line, and the offset after it.
fn find_key(text: &str, lines: &Lines, key: &str, from: usize) -> (usize, usize) {
    let needle = format!("\"{key}\"");
    match text[from.min(text.len())..].find(&needle) {
        Some(i) => (lines.line(from + i), from + i + needle.len()),
        None => (lines.line(from), from),
    }
}

/// A JSON block body may be one object or an array of them.
fn objects(value: &Value) -> Vec<&serde_json::Map<String, Value>> {
    match value {
        Value::Object(m) => vec![m],
        Value::Array(items) => items.iter().filter_map(|v| v.as_object()).collect(),
        _ => Vec::new(),
    }
}

/// A JSON value as an HCL expression: strings are templates (`"${var.x ? 1 : 0}"`).
fn json_expr(value: &Value) -> Option<Expression> {
    if let Value::String(s) = value {
        let t = s.trim();
        if let Some(inner) = t.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
            if !inner.contains("${") {
                return hcl_edit::parser::parse_expr(inner).ok();
            }
        }
    }
    hcl_edit::parser::parse_expr(&serde_json::to_string(value).ok()?).ok()
}

fn json_string(map: &serde_json::Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(|v| v.as_str()).map(str::to_string)
}

fn json_bool(map: &serde_json::Map<String, Value>, key: &str) -> Option<bool> {
    match map.get(key)? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn json_condition(value: &Value) -> String {
    let s = value
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| value.to_string());
    s.trim()
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .map(|t| t.trim().to_string())
        .unwrap_or(s)
}

/// Parses one `.tf.json` file into `module`.
pub fn json_file(module: &mut ModuleInterface, file: &str, text: &str) -> Result<(), ParseError> {
    let root: Value =
        serde_json::from_str(text).map_err(|e| (e.line(), e.column(), e.to_string()))?;
    let lines = Lines::new(text);
    let Some(root) = root.as_object() else {
        return Err((
            1,
            1,
            "a `.tf.json` file must hold one JSON object".to_string(),
        ));
    };
    let loc = |line: usize| Location {
        file: file.to_string(),
        line,
    };
    for (section, value) in root {
        let (_, section_at) = find_key(text, &lines, section, 0);
        match section.as_str() {
            "variable" => {
                for map in objects(value) {
                    for (name, body) in map {
                        let (line, _) = find_key(text, &lines, name, section_at);
                        let Some(body) = objects(body).into_iter().next() else {
                            continue;
                        };
                        let type_expr = body.get("type").map(|t| match t {
                            Value::String(s) => types::from_string(s),
                            other => TypeExpr::Unknown(other.to_string()),
                        });
                        let validations: Vec<Validation> = body
                            .get("validation")
                            .map(objects)
                            .unwrap_or_default()
                            .into_iter()
                            .filter_map(|v| {
                                let condition = json_condition(v.get("condition")?);
                                Some(Validation {
                                    canonical: super::eval::canonical_source(&condition),
                                    condition,
                                    error_message: json_string(v, "error_message"),
                                    location: loc(line),
                                })
                            })
                            .collect();
                        module
                            .conditions
                            .extend(validations.iter().map(|v| Condition {
                                text: v.condition.clone(),
                                location: v.location.clone(),
                            }));
                        module.variables.push(Variable {
                            name: name.clone(),
                            type_declared: type_expr.is_some(),
                            type_expr: type_expr.unwrap_or(TypeExpr::Any),
                            default: body
                                .get("default")
                                .map_or(DefaultValue::Required, |d| DefaultValue::Value(d.clone())),
                            nullable: json_bool(body, "nullable").unwrap_or(true),
                            sensitive: json_bool(body, "sensitive").unwrap_or(false),
                            ephemeral: json_bool(body, "ephemeral").unwrap_or(false),
                            description: json_string(body, "description"),
                            deprecated: json_string(body, "deprecated"),
                            renamed_from: json_string(body, "//").and_then(|c| {
                                annotation(&format!("# {c}"), "stackpack:renamed-from")
                            }),
                            validations,
                            location: loc(line),
                        });
                    }
                }
            }
            "output" => {
                for map in objects(value) {
                    for (name, body) in map {
                        let (line, _) = find_key(text, &lines, name, section_at);
                        let Some(body) = objects(body).into_iter().next() else {
                            continue;
                        };
                        module.outputs.push(OutputDecl {
                            name: name.clone(),
                            sensitive: json_bool(body, "sensitive").unwrap_or(false),
                            description: json_string(body, "description"),
                            deprecated: json_string(body, "deprecated"),
                            location: loc(line),
                        });
                    }
                }
            }
            "resource" | "data" => {
                for map in objects(value) {
                    for (kind, named) in map {
                        let (_, kind_at) = find_key(text, &lines, kind, section_at);
                        for named in objects(named) {
                            for (name, body) in named {
                                let (line, _) = find_key(text, &lines, name, kind_at);
                                let Some(body) = objects(body).into_iter().next() else {
                                    continue;
                                };
                                module.resources.push(ResourceDecl {
                                    kind: if section == "data" {
                                        format!("data.{kind}")
                                    } else {
                                        kind.clone()
                                    },
                                    name: name.clone(),
                                    count: body.get("count").and_then(json_expr),
                                    for_each: body.get("for_each").and_then(json_expr),
                                    location: loc(line),
                                });
                            }
                        }
                    }
                }
            }
            "module" => {
                for map in objects(value) {
                    for (name, body) in map {
                        let (line, _) = find_key(text, &lines, name, section_at);
                        let Some(body) = objects(body).into_iter().next() else {
                            continue;
                        };
                        module.module_calls.push(ModuleCall {
                            name: name.clone(),
                            source: json_string(body, "source"),
                            version: json_string(body, "version"),
                            args: body
                                .iter()
                                .filter(|(k, _)| {
                                    !matches!(
                                        k.as_str(),
                                        "source"
                                            | "version"
                                            | "count"
                                            | "for_each"
                                            | "providers"
                                            | "depends_on"
                                            | "//"
                                    )
                                })
                                .filter_map(|(k, v)| Some((k.clone(), json_expr(v)?)))
                                .collect(),
                            count: body.get("count").and_then(json_expr),
                            for_each: body.get("for_each").and_then(json_expr),
                            location: loc(line),
                        });
                    }
                }
            }
            "locals" => {
                for map in objects(value) {
                    for (name, v) in map {
                        if let Some(e) = json_expr(v) {
                            module.locals.insert(name.clone(), e);
                        }
                    }
                }
            }
            "terraform" => {
                for map in objects(value) {
                    if let Some(v) = json_string(map, "required_version") {
                        let (line, _) = find_key(text, &lines, "required_version", section_at);
                        module.required_version = Some((v, loc(line)));
                    }
                    for rp in map
                        .get("required_providers")
                        .map(objects)
                        .unwrap_or_default()
                    {
                        for (name, req) in rp {
                            let (line, _) = find_key(text, &lines, name, section_at);
                            let decl = match req {
                                Value::String(v) => ProviderDecl {
                                    source: None,
                                    version: Some(v.clone()),
                                    location: loc(line),
                                },
                                Value::Object(m) => ProviderDecl {
                                    source: json_string(m, "source"),
                                    version: json_string(m, "version"),
                                    location: loc(line),
                                },
                                _ => ProviderDecl {
                                    source: None,
                                    version: None,
                                    location: loc(line),
                                },
                            };
                            module.required_providers.insert(name.clone(), decl);
                        }
                    }
                }
            }
            "moved" => {
                for m in objects(value) {
                    let (line, _) = find_key(text, &lines, "from", section_at);
                    module.moved.push(Moved {
                        from: m.get("from").map(json_condition).unwrap_or_default(),
                        to: m.get("to").map(json_condition).unwrap_or_default(),
                        location: loc(line),
                    });
                }
            }
            "removed" => {
                for m in objects(value) {
                    let (line, _) = find_key(text, &lines, "from", section_at);
                    module.removed.push(Removed {
                        from: m.get("from").map(json_condition).unwrap_or_default(),
                        location: loc(line),
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_annotations() {
        assert_eq!(
            annotation(
                "# stackpack:renamed-from = \"old_name\"",
                "stackpack:renamed-from"
            ),
            Some("old_name".into())
        );
        assert_eq!(
            annotation("  // stackpack:renamed-from old", "stackpack:renamed-from"),
            Some("old".into())
        );
        assert_eq!(
            annotation("description = \"x\"", "stackpack:renamed-from"),
            None
        );
    }

    #[test]
    fn lines_are_one_based() {
        let l = Lines::new("a\nb\nc");
        assert_eq!(l.line(0), 1);
        assert_eq!(l.line(2), 2);
        assert_eq!(l.line(4), 3);
    }
}
