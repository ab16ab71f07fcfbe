//! How a value or a default appears in a finding's message.

use serde_json::Value;
use stackpack_interface::{DefaultValue, Variable};

pub(super) fn show(value: &Option<Value>) -> String {
    match value {
        Some(v) => format!("`{v}`"),
        None => "no default".to_string(),
    }
}

pub(super) fn show_default(d: &DefaultValue, v: &Variable) -> String {
    match d {
        DefaultValue::Required => "no default".to_string(),
        DefaultValue::Value(_) => show(&v.effective_default()),
        DefaultValue::Expression(e) => format!("`{e}`"),
    }
}
