//! `no-environment-names`: where a module really names an environment or a customer.
//!
//! A module names one in a value: a string literal or the literal parts of a
//! template (`"${var.name}-production"`), a resource's, data source's or module
//! call's name, a tag. It does not when a provider's schema uses the same word
//! (`dynamic "sandbox_config"`, `sandbox_type = …`: GKE's gVisor sandboxes), when
//! an input or output is named after a provider feature (`sandbox_enabled`), or in
//! prose (`description`, `error_message`, comments). So the lint reads the syntax,
//! not the lines: block types, argument names, references and variable or output
//! names are never looked at.
//!
//! Words are compared as the engine would compare the value: a name matches a whole
//! word, delimited by anything that is not a letter, a digit or `_` (`acme-prod`,
//! `rds:production`, `sandbox/1`), never inside an identifier such as
//! `sandbox_enabled` used as a map key.

use hcl_edit::expr::{ObjectKey, ObjectValue};
use hcl_edit::structure::{Attribute, Block, BlockLabel, Body};
use hcl_edit::template::Element;
use hcl_edit::visit::{self, Visit};
use hcl_edit::{Decorated, Span, Spanned};
use serde_json::Value;

/// Arguments that hold prose for people: never a name the engine compares.
const PROSE: &[&str] = &["description", "error_message", "summary"];

/// Arguments whose keys are values too: a tag's key names something.
const TAGS: &[&str] = &["tags", "tags_all", "labels", "default_tags", "common_tags"];

/// Does `name` occur in `value` as a whole word?
pub(super) fn names_word(value: &str, name: &str) -> bool {
    let value = value.to_lowercase();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    value.match_indices(name).any(|(at, _)| {
        let before = value[..at].chars().next_back();
        let after = value[at + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// One value a module holds, and the byte offset it starts at (`None`: unknown).
pub(super) struct Literal {
    pub text: String,
    pub at: Option<usize>,
}

/// The values of an HCL file (`.tf`): literals, names of resources, data sources and
/// module calls, tag keys. `None` when the file does not parse (the interface
/// reader reports that, with its line).
#[cfg(test)]
pub(super) fn hcl_values(text: &str) -> Option<Vec<Literal>> {
    let body = hcl_edit::parser::parse_body(text).ok()?;
    Some(body_values(&body))
}

/// [`hcl_values`] of a file parsed already.
pub(super) fn body_values(body: &Body) -> Vec<Literal> {
    let mut values = Values::default();
    values.visit_body(body);
    values.found
}

#[derive(Default)]
struct Values {
    found: Vec<Literal>,
    /// Inside an argument whose object keys are values (`tags`).
    in_tags: bool,
}

impl Values {
    fn push(&mut self, text: &str, at: Option<usize>) {
        if !text.is_empty() {
            self.found.push(Literal {
                text: text.to_string(),
                at,
            });
        }
    }
}

impl Visit for Values {
    fn visit_body(&mut self, body: &Body) {
        visit::visit_body(self, body);
    }

    fn visit_block(&mut self, block: &Block) {
        // `resource "type" "name"`, `data "type" "name"`, `module "name"`: the name
        // is the module's; the type is the provider's. Other labels (`variable`,
        // `output`, `dynamic`, `provider`) name an interface or a schema block.
        let name_label = match block.ident.as_str() {
            "resource" | "data" | "ephemeral" => block.labels.get(1),
            "module" => block.labels.first(),
            _ => None,
        };
        if let Some(label) = name_label {
            let at = match label {
                BlockLabel::String(s) => s.span(),
                BlockLabel::Ident(i) => i.span(),
            };
            self.push(label.as_str(), at.map(|s| s.start));
        }
        // A variable's `type` is a schema; its default and validations are values.
        visit::visit_body(self, &block.body);
    }

    fn visit_attr(&mut self, attr: &Attribute) {
        let key = attr.key.as_str();
        if PROSE.contains(&key) || key == "type" {
            return;
        }
        let was = self.in_tags;
        self.in_tags = TAGS.contains(&key);
        self.visit_expr(&attr.value);
        self.in_tags = was;
    }

    fn visit_object_item(&mut self, key: &ObjectKey, value: &ObjectValue) {
        match key {
            ObjectKey::Ident(ident) if self.in_tags => {
                self.push(ident.as_str(), ident.span().map(|s| s.start));
            }
            ObjectKey::Ident(_) => {}
            ObjectKey::Expression(expr) => self.visit_expr(expr),
        }
        // A tag's value is a value; an object inside it is not a tag map.
        let was = self.in_tags;
        self.in_tags = false;
        self.visit_expr(value.expr());
        self.in_tags = was;
    }

    fn visit_string(&mut self, s: &Decorated<String>) {
        self.push(s.as_str(), s.span().map(|r| r.start));
    }

    fn visit_literal(&mut self, s: &Spanned<String>) {
        self.push(s.as_str(), s.span().map(|r| r.start));
    }

    fn visit_element(&mut self, element: &Element) {
        visit::visit_element(self, element);
    }
}

/// The values of a JSON-syntax file (`.tf.json`): every string value outside prose
/// and type arguments, and the names of resources, data sources and module calls.
/// Object keys are argument and block names, never looked at, but for those names.
pub(super) fn json_values(text: &str) -> Option<Vec<Literal>> {
    let json: Value = serde_json::from_str(text).ok()?;
    let mut out = Vec::new();
    let mut push = |s: &str| {
        out.push(Literal {
            text: s.to_string(),
            at: text.find(&format!("\"{s}\"")),
        })
    };
    let Value::Object(top) = &json else {
        return Some(Vec::new());
    };
    for (kind, blocks) in top {
        let Value::Object(blocks) = blocks else {
            continue;
        };
        match kind.as_str() {
            "resource" | "data" | "ephemeral" => {
                for by_name in blocks.values().filter_map(Value::as_object) {
                    for (name, body) in by_name {
                        push(name);
                        json_strings(body, &mut push);
                    }
                }
            }
            "module" => {
                for (name, body) in blocks {
                    push(name);
                    json_strings(body, &mut push);
                }
            }
            _ => json_strings(&Value::Object(blocks.clone()), &mut push),
        }
    }
    Some(out)
}

fn json_strings(value: &Value, push: &mut dyn FnMut(&str)) {
    match value {
        Value::String(s) => push(s),
        Value::Array(items) => items.iter().for_each(|v| json_strings(v, push)),
        Value::Object(map) => {
            for (key, v) in map {
                if PROSE.contains(&key.as_str()) || key == "type" {
                    continue;
                }
                if TAGS.contains(&key.as_str()) {
                    if let Value::Object(tags) = v {
                        tags.keys().for_each(|k| push(k));
                    }
                }
                json_strings(v, push);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        hcl_values(text)
            .unwrap()
            .into_iter()
            .map(|v| v.text)
            .collect()
    }

    #[test]
    fn names_are_whole_words_as_the_engine_compares_values() {
        assert!(names_word("acme-production-vpc", "production"));
        assert!(names_word("rds:production-2015", "production"));
        assert!(names_word("Production", "production"));
        assert!(!names_word("sandbox_enabled", "sandbox"));
        assert!(!names_word("preproduction", "production"));
    }

    #[test]
    fn schema_names_references_and_prose_are_not_values() {
        let text = r#"
variable "sandbox_enabled" {
  description = "Enable GKE Sandbox"
  type        = object({ sandbox = optional(bool) })
  default     = null
}
resource "google_container_node_pool" "pools" {
  dynamic "sandbox_config" {
    for_each = var.sandbox_enabled ? ["gvisor"] : []
    content {
      sandbox_type = sandbox_config.value
    }
  }
  tags = { production = "x-${var.name}" }
}
"#;
        assert_eq!(words(text), ["pools", "gvisor", "production", "x-"]);
    }
}
