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

/// Why a file could not be parsed, and where in it. The caller knows the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

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

/// An attribute's source text, empty when it is missing.
fn source_attr(body: &Body, key: &str) -> String {
    attr(body, key).map(source_text).unwrap_or_default()
}

fn label(block: &Block, i: usize) -> Option<String> {
    block.labels.get(i).map(|l| l.as_str().to_string())
}

/// The arguments of a `module` block that configure the call rather than feed the
/// module's inputs.
const MODULE_META_ARGUMENTS: [&str; 6] = [
    "source",
    "version",
    "count",
    "for_each",
    "providers",
    "depends_on",
];

/// Parses one native-syntax file into `module`.
pub fn hcl_file(module: &mut ModuleInterface, file: &str, text: &str) -> Result<(), ParseError> {
    let body = crate::parsed::hcl_body(text).map_err(|e| {
        let location = e.location();
        ParseError {
            line: location.line(),
            column: location.column(),
            message: e.message().to_string(),
        }
    })?;
    let ctx = Ctx {
        file,
        text,
        lines: Lines::new(text),
    };
    for block in body.blocks() {
        hcl_block(&ctx, block, module);
    }
    Ok(())
}

/// Reads one top-level block; blocks that do not shape the interface are skipped.
fn hcl_block(ctx: &Ctx, block: &Block, module: &mut ModuleInterface) {
    let location = ctx.loc(block.span());
    match block.ident.as_str() {
        "variable" => {
            if let Some(name) = label(block, 0) {
                let variable = variable(ctx, &name, &block.body, location);
                add_variable(module, variable);
            }
        }
        "output" => hcl_output(ctx, block, location, module),
        "resource" | "data" => hcl_resource(ctx, block, location, module),
        "module" => hcl_module_call(block, location, module),
        "locals" => {
            for a in block.body.attributes() {
                module
                    .locals
                    .insert(a.key.as_str().to_string(), a.value.clone());
            }
        }
        "moved" => module.moved.push(Moved {
            from: source_attr(&block.body, "from"),
            to: source_attr(&block.body, "to"),
            location,
        }),
        "removed" => module.removed.push(Removed {
            from: source_attr(&block.body, "from"),
            destroy: block
                .body
                .get_blocks("lifecycle")
                .find_map(|l| bool_attr(&l.body, "destroy"))
                .unwrap_or(true),
            location,
        }),
        "terraform" => terraform_block(ctx, &block.body, module),
        "provider" => hcl_legacy_provider(block, location, module),
        "check" => hcl_check(ctx, block, module),
        _ => {}
    }
}

/// Adds a variable, with its `validation` conditions among the module's conditions.
fn add_variable(module: &mut ModuleInterface, variable: Variable) {
    module
        .conditions
        .extend(variable.validations.iter().map(|c| Condition {
            text: c.condition.clone(),
            location: c.location.clone(),
        }));
    module.variables.push(variable);
}

fn hcl_output(ctx: &Ctx, block: &Block, location: Location, module: &mut ModuleInterface) {
    let Some(name) = label(block, 0) else {
        return;
    };
    conditions(ctx, &block.body, module);
    module.outputs.push(OutputDecl {
        name,
        sensitive: bool_attr(&block.body, "sensitive").unwrap_or(false),
        description: string_attr(&block.body, "description"),
        deprecated: string_attr(&block.body, "deprecated"),
        value: block.body.get_attribute("value").map(|a| a.value.clone()),
        location,
    });
}

fn hcl_resource(ctx: &Ctx, block: &Block, location: Location, module: &mut ModuleInterface) {
    let (Some(kind), Some(name)) = (label(block, 0), label(block, 1)) else {
        return;
    };
    conditions(ctx, &block.body, module);
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
        location,
    });
}

fn hcl_module_call(block: &Block, location: Location, module: &mut ModuleInterface) {
    let Some(name) = label(block, 0) else {
        return;
    };
    let args = block
        .body
        .attributes()
        .filter(|a| !MODULE_META_ARGUMENTS.contains(&a.key.as_str()))
        .map(|a| (a.key.as_str().to_string(), a.value.clone()))
        .collect();
    module.module_calls.push(ModuleCall {
        name,
        source: string_attr(&block.body, "source"),
        version: string_attr(&block.body, "version"),
        args,
        count: attr(&block.body, "count").cloned(),
        for_each: attr(&block.body, "for_each").cloned(),
        location,
    });
}

/// 0.11–0.12 style: `provider "aws" { version = "~> 2.0" }`. A `required_providers`
/// entry wins over it.
fn hcl_legacy_provider(block: &Block, location: Location, module: &mut ModuleInterface) {
    if let (Some(name), Some(version)) = (label(block, 0), string_attr(&block.body, "version")) {
        module
            .required_providers
            .entry(name)
            .or_insert(ProviderDecl {
                source: None,
                version: Some(version),
                location,
            });
    }
}

/// A `check` block's `assert` conditions.
fn hcl_check(ctx: &Ctx, block: &Block, module: &mut ModuleInterface) {
    for assert in block.body.get_blocks("assert") {
        if let Some(c) = attr(&assert.body, "condition") {
            module.conditions.push(Condition {
                text: source_text(c),
                location: ctx.loc(assert.span()),
            });
        }
    }
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
            let decl = provider_decl(static_value(&a.value).as_ref(), ctx.loc(a.span()));
            module
                .required_providers
                .insert(a.key.as_str().to_string(), decl);
        }
    }
}

/// One `required_providers` entry: a version string (0.13 shorthand) or an object
/// with `source` and `version`.
fn provider_decl(requirement: Option<&Value>, location: Location) -> ProviderDecl {
    match requirement {
        Some(Value::String(version)) => ProviderDecl {
            source: None,
            version: Some(version.clone()),
            location,
        },
        Some(Value::Object(map)) => ProviderDecl {
            source: json_string(map, "source"),
            version: json_string(map, "version"),
            location,
        },
        _ => ProviderDecl {
            source: None,
            version: None,
            location,
        },
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

/// A `.tf.json` file being read. serde_json forgets where keys were, so each item's
/// line is found by searching the text for its key after its section's key.
struct JsonCtx<'a> {
    file: &'a str,
    text: &'a str,
    lines: Lines,
}

/// One named block of a JSON section: `{"NAME": {BODY}}`.
struct NamedBlock<'v> {
    name: &'v String,
    body: &'v serde_json::Map<String, Value>,
    location: Location,
}

impl JsonCtx<'_> {
    fn find_key(&self, key: &str, from: usize) -> (usize, usize) {
        find_key(self.text, &self.lines, key, from)
    }

    fn loc(&self, line: usize) -> Location {
        Location {
            file: self.file.to_string(),
            line,
        }
    }

    /// The named blocks of a section whose key ends at `section_at`. A name whose
    /// body is not an object is skipped.
    fn named_blocks<'v>(&self, section: &'v Value, section_at: usize) -> Vec<NamedBlock<'v>> {
        let mut blocks = Vec::new();
        for map in objects(section) {
            for (name, body) in map {
                let Some(body) = objects(body).into_iter().next() else {
                    continue;
                };
                let (line, _) = self.find_key(name, section_at);
                blocks.push(NamedBlock {
                    name,
                    body,
                    location: self.loc(line),
                });
            }
        }
        blocks
    }
}

/// Parses one `.tf.json` file into `module`.
pub fn json_file(module: &mut ModuleInterface, file: &str, text: &str) -> Result<(), ParseError> {
    // Read as Terraform does or not at all: it reads both of two equal keys.
    if let Some(duplicate) = crate::json_keys::first_duplicate_key(text) {
        return Err(ParseError {
            line: duplicate.line,
            column: duplicate.column,
            message: format!(
                "the key `{}` appears twice in one object: the engine reads both, and this file would run what no check saw; merge the two into one",
                duplicate.key
            ),
        });
    }
    let root: Value = serde_json::from_str(text).map_err(|e| ParseError {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let Some(root) = root.as_object() else {
        return Err(ParseError {
            line: 1,
            column: 1,
            message: "a `.tf.json` file must hold one JSON object".to_string(),
        });
    };
    let ctx = JsonCtx {
        file,
        text,
        lines: Lines::new(text),
    };
    for (section, value) in root {
        let (_, section_at) = ctx.find_key(section, 0);
        json_section(&ctx, section, value, section_at, module);
    }
    Ok(())
}

/// Reads one top-level key; keys that do not shape the interface are skipped.
fn json_section(
    ctx: &JsonCtx,
    section: &str,
    value: &Value,
    section_at: usize,
    module: &mut ModuleInterface,
) {
    match section {
        "variable" => {
            for block in ctx.named_blocks(value, section_at) {
                add_variable(module, json_variable(block));
            }
        }
        "output" => {
            for block in ctx.named_blocks(value, section_at) {
                module.outputs.push(json_output(block));
            }
        }
        "resource" | "data" => json_resources(ctx, section, value, section_at, module),
        "module" => {
            for block in ctx.named_blocks(value, section_at) {
                module.module_calls.push(json_module_call(block));
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
                json_terraform(ctx, map, section_at, module);
            }
        }
        "moved" => {
            for m in objects(value) {
                let (line, _) = ctx.find_key("from", section_at);
                module.moved.push(Moved {
                    from: m.get("from").map(json_condition).unwrap_or_default(),
                    to: m.get("to").map(json_condition).unwrap_or_default(),
                    location: ctx.loc(line),
                });
            }
        }
        "removed" => {
            for m in objects(value) {
                let (line, _) = ctx.find_key("from", section_at);
                module.removed.push(Removed {
                    from: m.get("from").map(json_condition).unwrap_or_default(),
                    destroy: m
                        .get("lifecycle")
                        .map(objects)
                        .unwrap_or_default()
                        .into_iter()
                        .find_map(|l| json_bool(l, "destroy"))
                        .unwrap_or(true),
                    location: ctx.loc(line),
                });
            }
        }
        _ => {}
    }
}

fn json_variable(block: NamedBlock) -> Variable {
    let NamedBlock {
        name,
        body,
        location,
    } = block;
    let type_expr = body.get("type").map(|t| match t {
        Value::String(s) => types::from_string(s),
        other => TypeExpr::Unknown(other.to_string()),
    });
    let validations = body
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
                location: location.clone(),
            })
        })
        .collect();
    Variable {
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
        // JSON has no comments: the annotation lives in the `"//"` key.
        renamed_from: json_string(body, "//")
            .and_then(|c| annotation(&format!("# {c}"), "stackpack:renamed-from")),
        validations,
        location,
    }
}

fn json_output(block: NamedBlock) -> OutputDecl {
    OutputDecl {
        name: block.name.clone(),
        sensitive: json_bool(block.body, "sensitive").unwrap_or(false),
        description: json_string(block.body, "description"),
        deprecated: json_string(block.body, "deprecated"),
        value: block.body.get("value").and_then(json_expr),
        location: block.location,
    }
}

/// `{"resource": {"KIND": {"NAME": {BODY}}}}`, and the same for `data`.
fn json_resources(
    ctx: &JsonCtx,
    section: &str,
    value: &Value,
    section_at: usize,
    module: &mut ModuleInterface,
) {
    for map in objects(value) {
        for (kind, named) in map {
            let (_, kind_at) = ctx.find_key(kind, section_at);
            let kind = if section == "data" {
                format!("data.{kind}")
            } else {
                kind.clone()
            };
            for block in ctx.named_blocks(named, kind_at) {
                module.resources.push(ResourceDecl {
                    kind: kind.clone(),
                    name: block.name.clone(),
                    count: block.body.get("count").and_then(json_expr),
                    for_each: block.body.get("for_each").and_then(json_expr),
                    location: block.location,
                });
            }
        }
    }
}

fn json_module_call(block: NamedBlock) -> ModuleCall {
    let body = block.body;
    let args = body
        .iter()
        .filter(|(k, _)| k.as_str() != "//" && !MODULE_META_ARGUMENTS.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k.clone(), json_expr(v)?)))
        .collect();
    ModuleCall {
        name: block.name.clone(),
        source: json_string(body, "source"),
        version: json_string(body, "version"),
        args,
        count: body.get("count").and_then(json_expr),
        for_each: body.get("for_each").and_then(json_expr),
        location: block.location,
    }
}

/// One `terraform` object: `required_version` and `required_providers`.
fn json_terraform(
    ctx: &JsonCtx,
    map: &serde_json::Map<String, Value>,
    section_at: usize,
    module: &mut ModuleInterface,
) {
    if let Some(v) = json_string(map, "required_version") {
        let (line, _) = ctx.find_key("required_version", section_at);
        module.required_version = Some((v, ctx.loc(line)));
    }
    for providers in map
        .get("required_providers")
        .map(objects)
        .unwrap_or_default()
    {
        for (name, requirement) in providers {
            let (line, _) = ctx.find_key(name, section_at);
            let decl = provider_decl(Some(requirement), ctx.loc(line));
            module.required_providers.insert(name.clone(), decl);
        }
    }
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

    fn json(text: &str) -> ModuleInterface {
        let mut module = ModuleInterface::default();
        json_file(&mut module, "main.tf.json", text).unwrap();
        module
    }

    fn at(line: usize) -> Location {
        Location {
            file: "main.tf.json".into(),
            line,
        }
    }

    #[test]
    fn json_variable_reads_type_default_flags_and_validation() {
        let module = json(
            r#"{
  "variable": {
    "size": {
      "type": "number",
      "default": 3,
      "sensitive": true,
      "nullable": "false",
      "description": "nodes",
      "//": "stackpack:renamed-from = \"count\"",
      "validation": [{"condition": "${var.size > 0}", "error_message": "positive"}]
    },
    "name": {}
  }
}"#,
        );
        let size = module.variable("size").unwrap();
        assert_eq!(size.type_expr, types::from_string("number"));
        assert!(size.type_declared);
        assert_eq!(size.default, DefaultValue::Value(serde_json::json!(3)));
        assert!(size.sensitive);
        assert!(!size.nullable);
        assert_eq!(size.description.as_deref(), Some("nodes"));
        assert_eq!(size.renamed_from.as_deref(), Some("count"));
        assert_eq!(size.location, at(3));
        assert_eq!(size.validations.len(), 1);
        assert_eq!(size.validations[0].condition, "var.size > 0");
        assert_eq!(
            size.validations[0].error_message.as_deref(),
            Some("positive")
        );
        assert_eq!(module.conditions[0].text, "var.size > 0");

        let name = module.variable("name").unwrap();
        assert!(name.is_required());
        assert!(!name.type_declared);
        assert_eq!(name.type_expr, TypeExpr::Any);
        assert_eq!(name.location, at(12));
    }

    #[test]
    fn json_output_reads_sensitive_description_and_deprecated() {
        let module = json(
            r#"{"output": {"endpoint": {"value": "${aws_lb.this.dns_name}", "sensitive": true, "description": "url", "deprecated": "use url"}}}"#,
        );
        let output = module.output("endpoint").unwrap();
        assert!(output.sensitive);
        assert_eq!(output.description.as_deref(), Some("url"));
        assert_eq!(output.deprecated.as_deref(), Some("use url"));
        assert_eq!(output.location, at(1));
    }

    #[test]
    fn json_resources_and_data_keep_count_and_for_each_as_expressions() {
        let module = json(
            r#"{
  "resource": {
    "aws_instance": {
      "node": {"count": "${var.enabled ? 2 : 0}"}
    }
  },
  "data": [
    {"aws_ami": {"base": {"for_each": {"a": 1}}}}
  ]
}"#,
        );
        // serde_json keeps keys sorted: `data` is read before `resource`.
        let addresses: Vec<String> = module.resources.iter().map(|r| r.address()).collect();
        assert_eq!(addresses, vec!["data.aws_ami.base", "aws_instance.node"]);
        let node = &module.resources[1];
        assert_eq!(
            node.count.as_ref().unwrap().to_string().trim(),
            "var.enabled ? 2 : 0"
        );
        assert!(node.for_each.is_none());
        assert_eq!(node.location, at(4));
        let base = &module.resources[0];
        assert!(base.for_each.is_some());
        assert_eq!(base.location, at(8));
    }

    #[test]
    fn json_module_call_keeps_inputs_and_leaves_out_meta_arguments() {
        let module = json(
            r#"{
  "module": {
    "network": {
      "source": "./modules/network",
      "version": "1.0.0",
      "count": 1,
      "providers": {"aws": "aws.east"},
      "depends_on": [],
      "//": "a comment",
      "cidr": "10.0.0.0/16"
    }
  }
}"#,
        );
        let call = &module.module_calls[0];
        assert_eq!(call.name, "network");
        assert_eq!(call.source.as_deref(), Some("./modules/network"));
        assert_eq!(call.version.as_deref(), Some("1.0.0"));
        assert!(call.is_local());
        assert!(call.count.is_some());
        assert_eq!(call.args.keys().collect::<Vec<_>>(), vec!["cidr"]);
        assert_eq!(call.location, at(3));
    }

    #[test]
    fn json_terraform_reads_required_version_and_providers() {
        let module = json(
            r#"{
  "terraform": {
    "required_version": ">= 1.5",
    "required_providers": {
      "aws": {"source": "hashicorp/aws", "version": "~> 5.0"},
      "random": "~> 3.0"
    }
  }
}"#,
        );
        assert_eq!(module.required_version, Some((">= 1.5".to_string(), at(3))));
        let aws = &module.required_providers["aws"];
        assert_eq!(aws.source.as_deref(), Some("hashicorp/aws"));
        assert_eq!(aws.version.as_deref(), Some("~> 5.0"));
        assert_eq!(aws.location, at(5));
        let random = &module.required_providers["random"];
        assert_eq!(random.source, None);
        assert_eq!(random.version.as_deref(), Some("~> 3.0"));
    }

    #[test]
    fn json_moved_and_removed_read_addresses_without_interpolation() {
        let module = json(
            r#"{
  "moved": [{"from": "aws_instance.a", "to": "${aws_instance.b}"}],
  "removed": {"from": "aws_instance.c"}
}"#,
        );
        assert_eq!(
            module.moved,
            vec![Moved {
                from: "aws_instance.a".into(),
                to: "aws_instance.b".into(),
                location: at(2),
            }]
        );
        assert_eq!(
            module.removed,
            vec![Removed {
                from: "aws_instance.c".into(),
                destroy: true,
                location: at(3),
            }]
        );
    }

    #[test]
    fn json_locals_become_expressions() {
        let module = json(r#"{"locals": {"name": "${var.prefix}-x", "n": 2}}"#);
        assert_eq!(module.locals.len(), 2);
        assert_eq!(module.locals["n"].to_string().trim(), "2");
    }

    #[test]
    fn json_that_is_not_an_object_or_not_json_is_a_parse_error_with_a_line() {
        let mut module = ModuleInterface::default();
        let error = json_file(&mut module, "main.tf.json", "[1]").unwrap_err();
        assert_eq!((error.line, error.column), (1, 1));
        assert!(error.message.contains("one JSON object"));
        let error = json_file(&mut module, "main.tf.json", "{\n  \"variable\": ,\n}").unwrap_err();
        assert_eq!(error.line, 2);
    }

    #[test]
    fn hcl_syntax_errors_carry_line_and_column() {
        let mut module = ModuleInterface::default();
        let error = hcl_file(&mut module, "main.tf", "variable \"x\" {\n  type = \n").unwrap_err();
        assert!(error.line >= 2, "{error:?}");
        assert!(!error.message.is_empty());
    }
}
