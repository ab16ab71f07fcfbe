//! How `stackpack` talks: errors with a location and a hint, tables, colour only on a
//! terminal and never with `NO_COLOR`.

use stackpack_packager::Error;
pub use stackpack_terminal::{detail, human_size, paint, print_json, status, table, warning};

use crate::cli::GlobalArgs;

pub fn init(global: &GlobalArgs) {
    stackpack_terminal::Verbosity::from_flags(global.quiet, global.verbose).set();
}

/// Prints an error as `error: …`, `--> where`, `hint: …`; returns the exit code.
pub fn report_error(error: &anyhow::Error) -> u8 {
    if let Some(error) = error.downcast_ref::<Error>() {
        stackpack_terminal::print_error(
            &error.message,
            error.location.as_deref(),
            error.hint.as_deref(),
        );
        return error.exit_code();
    }
    eprintln!("{} {error}", paint("1;31", "error:"));
    for cause in error.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    1
}
