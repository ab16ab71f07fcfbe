//! The interface rules: comparing an old and a new interface, finding by finding.
//!
//! Each function here looks at one kind of change and says which rule it falls under
//! and what bump it needs before the repository's rule levels are applied. The rules
//! are grouped by what they look at, one module per family, as the [`Rule`](stackpack_schema::rules::Rule) table
//! lists them: [`inputs`], [`types`], [`validations`], [`outputs`], [`resources`],
//! [`constraints`] and module [`calls`]; [`errors`] are the stack's own.

mod calls;
mod constraints;
mod errors;
mod inputs;
mod outputs;
mod resources;
mod rule;
mod show;
mod types;
mod validations;

use stackpack_interface::ModuleInterface;

use crate::check::finding::Finding;

pub use calls::diff_call;
pub use constraints::diff_constraints;
pub use errors::{undeclared_arguments, unreadable};
pub use resources::{diff_addresses, diff_kinds};

/// Compares one module's own interface: inputs, outputs, provider sources.
pub fn diff_module(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    inputs::added_inputs(old, new, dir, out);
    inputs::removed_inputs(old, new, dir, out);
    inputs::changed_inputs(old, new, dir, out);
    outputs::diff_outputs(old, new, dir, out);
    constraints::provider_sources(old, new, dir, out);
}
