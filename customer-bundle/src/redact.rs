//! Sensitive inputs kept out of the engine's output the runner relays and keeps.
//!
//! The engine is trusted to hide a sensitive value in its own summaries, but not in
//! everything it prints: Terraform quotes the line of the inputs file a failed
//! validation rule points at (`"db_password": "…"`), and older versions print
//! `var.db_password is "…"`. So the runner does not rely on the engine's version:
//! every line it relays to the terminal or writes to the engine log has each
//! sensitive value it passed replaced first.

use serde_json::Value;
use stackpack_schema::interface::Interface;

/// What a sensitive value is replaced with.
pub const REDACTED: &str = "(sensitive value)";

/// Texts shorter than this are not replaced: a two-letter value would blank every
/// word holding those letters, and hides nothing worth hiding.
const SHORTEST: usize = 4;

/// The texts to replace, longest first (so a value is replaced whole, before a part
/// of it that is another value).
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    texts: Vec<String>,
}

impl Secrets {
    /// The sensitive inputs of `interface`, as set in the engine's inputs document
    /// (`inputs_json`, what the runner writes for `-var-file`) or in a `TF_VAR_`
    /// variable the engine inherits.
    pub fn of_inputs(interface: &Interface, inputs_json: &str) -> Secrets {
        let document: Value = serde_json::from_str(inputs_json).unwrap_or_default();
        let mut secrets = Secrets::default();
        for input in interface.inputs.iter().filter(|i| i.sensitive) {
            if let Some(value) = document.get(&input.name) {
                secrets.add(value);
            }
            if let Some(text) = std::env::var_os(format!("TF_VAR_{}", input.name)) {
                let text = text.to_string_lossy().into_owned();
                if let Ok(value) = serde_json::from_str::<Value>(&text) {
                    secrets.add(&value);
                }
                secrets.add_text(&text);
            }
        }
        secrets
    }

    /// Adds every string and number inside `value`, in each form the engine may
    /// print it: as it is, escaped as in JSON and HCL strings, and line by line.
    pub fn add(&mut self, value: &Value) {
        match value {
            Value::String(text) => self.add_text(text),
            Value::Number(number) => self.add_text(&number.to_string()),
            Value::Array(items) => items.iter().for_each(|item| self.add(item)),
            Value::Object(members) => members.values().for_each(|item| self.add(item)),
            Value::Null | Value::Bool(_) => {}
        }
    }

    fn add_text(&mut self, text: &str) {
        let escaped = serde_json::to_string(text).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        let forms = [text, escaped]
            .into_iter()
            .chain(text.lines().map(str::trim));
        for form in forms {
            if form.chars().count() >= SHORTEST && !self.texts.iter().any(|t| t == form) {
                self.texts.push(form.to_string());
            }
        }
        self.texts
            .sort_by_key(|t| std::cmp::Reverse(t.chars().count()));
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// `line` with every secret replaced by [`REDACTED`].
    pub fn redact(&self, line: &str) -> String {
        let mut line = line.to_string();
        for text in &self.texts {
            if line.contains(text.as_str()) {
                line = line.replace(text.as_str(), REDACTED);
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_form_of_a_sensitive_value_is_replaced() {
        let mut secrets = Secrets::default();
        secrets.add(&json!({"password": "pa\"ss word", "pin": 123456, "list": ["first line\nsecond line"], "ok": true}));
        assert_eq!(
            secrets.redact(r#"  1: "db": "pa\"ss word""#),
            format!(r#"  1: "db": "{REDACTED}""#)
        );
        assert_eq!(secrets.redact("is pa\"ss word"), format!("is {REDACTED}"));
        assert_eq!(secrets.redact("pin = 123456"), format!("pin = {REDACTED}"));
        assert_eq!(secrets.redact("second line"), REDACTED);
        assert_eq!(secrets.redact("true story"), "true story");
    }

    #[test]
    fn short_values_are_left_alone_so_output_stays_readable() {
        let mut secrets = Secrets::default();
        secrets.add(&json!("ab"));
        assert!(secrets.is_empty());
        assert_eq!(secrets.redact("abba"), "abba");
    }
}
