//! How `stackpack` talks: errors with a location and a hint, tables, colour only on a
//! terminal and never with `NO_COLOR`.

pub use stackpack_terminal::{detail, human_size, print_json, status, table, warning};

use crate::cli::GlobalArgs;

pub fn init(global: &GlobalArgs) {
    stackpack_terminal::Verbosity::from_flags(global.quiet, global.verbose).set();
}
