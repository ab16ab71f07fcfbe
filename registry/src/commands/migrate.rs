//! `stackpack-registry migrate`: brings the database to this build's schema and
//! exits, or with `--check` only says where it stands.

use stackpack_registry::SchemaState;

use crate::cli::MigrateArgs;
use crate::commands::{cannot_open, data_folder, print_json, status, Error, ExitStatus, Result};

pub fn run(args: &MigrateArgs) -> Result<ExitStatus> {
    let data = &args.data;
    let state = stackpack_registry::schema_state(data).map_err(|error| cannot_open(data, error))?;
    if let SchemaState::Newer { found, known } = state {
        return Err(Error::refused(format!(
            "the database is at schema version {found}, newer than this build's {known}"
        ))
        .at(data_folder(data))
        .hint("run the newer `stackpack-registry` that last opened it; this build never changes a newer schema"));
    }
    if args.check {
        return Ok(report_check(args, state));
    }
    let from = stackpack_registry::migrate(data).map_err(|error| cannot_open(data, error))?;
    let to = stackpack_registry::db::SCHEMA_VERSION;
    if args.json {
        print_json(&serde_json::json!({ "from": from, "to": to }));
    } else if from == to {
        status(&format!("schema version {to} is current; nothing to do"));
    } else {
        status(&format!("migrated from schema version {from} to {to}"));
    }
    Ok(ExitStatus::Success)
}

/// `--check`: 0 when current, 3 when migrations are waiting.
fn report_check(args: &MigrateArgs, state: SchemaState) -> ExitStatus {
    if args.json {
        print_json(&state);
    }
    match state {
        SchemaState::Behind { found, known } => {
            if !args.json {
                println!(
                    "behind: schema version {found}, this build writes {known}; run `stackpack-registry migrate --data {}`",
                    args.data.display()
                );
            }
            ExitStatus::Found
        }
        SchemaState::Current { version } | SchemaState::Newer { found: version, .. } => {
            if !args.json {
                println!("current: schema version {version}");
            }
            ExitStatus::Success
        }
    }
}
