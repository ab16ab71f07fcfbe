//! `stackpack-registry migrate`: brings the database to this build's schema and
//! exits, or with `--check` only says where it stands.

use stackpack_registry::SchemaState;

use crate::cli::MigrateArgs;
use stackpack_registry::storage::moving;

use crate::commands::{
    blobs_hint, cannot_open, data_folder, open_existing, print_json, refused_in, status, Error,
    ExitStatus, Result,
};

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
    if let Some(target) = &args.move_blobs_to {
        return move_blobs(args, target, (from, to));
    }
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

/// `--move-blobs-to`: every blob into the new store, then the new store recorded.
fn move_blobs(args: &MigrateArgs, target: &str, (from, to): (u32, u32)) -> Result<ExitStatus> {
    use stackpack_registry::storage::BlobLocation;
    let data = &args.data;
    let parse = |text: &str| match text {
        "data-folder" => Ok(BlobLocation::DataFolder),
        s3 => BlobLocation::parse(s3, args.s3_endpoint.as_deref(), args.s3_region.as_deref()),
    };
    let target = parse(target).map_err(|e| {
        Error::usage(e).hint("as in `--move-blobs-to s3://bucket/registry`, or `data-folder`")
    })?;
    let state = open_existing(data)?;
    let recorded = state
        .db
        .read_any(|c| {
            stackpack_registry::db::settings::get(c, stackpack_registry::db::settings::BLOBS)
        })
        .map_err(refused_in(data))?
        .unwrap_or_else(|| BlobLocation::DataFolder.identity());
    if recorded == target.identity() {
        status(&format!(
            "the blobs already live in `{recorded}`; nothing to move"
        ));
        return Ok(ExitStatus::Success);
    }
    let source = parse(&recorded).map_err(Error::usage)?;
    if matches!(
        (&source, &target),
        (BlobLocation::S3(_), BlobLocation::S3(_))
    ) {
        return Err(Error::usage(format!(
            "moving from bucket `{recorded}` to another bucket is not done here"
        ))
        .hint(
            "copy the objects with your S3 tools, then move to `data-folder` and back, or ask us",
        ));
    }
    let metrics = state.metrics.clone();
    let open = |location: &BlobLocation| {
        stackpack_registry::storage::open(location, data, metrics.clone()).map_err(|error| {
            let hint = blobs_hint(&error);
            Error::refused(format!("cannot open the blob store: {error}"))
                .caused_by(error)
                .hint(hint)
        })
    };
    let (old, new) = (open(&source)?, open(&target)?);
    let runtime = tokio::runtime::Runtime::new().map_err(|error| {
        Error::refused(format!("cannot start the runtime: {error}")).caused_by(error)
    })?;
    let show = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let report = runtime
        .block_on(moving::move_blobs(
            &state.db,
            old.as_ref(),
            new.as_ref(),
            &target.identity(),
            |done, total| {
                if show {
                    eprint!("\rmoving blobs: {done} of {total}");
                }
            },
        ))
        .map_err(|error| {
            Error::refused_by(error)
                .at(data_folder(data))
                .hint("nothing was switched: the registry still reads its old store; fix the cause and run it again")
        })?;
    if show {
        eprintln!();
    }
    if args.json {
        print_json(&serde_json::json!({ "from": from, "to": to, "moved": report }));
    } else {
        status(&format!(
            "moved {} blob(s), {} bytes, from `{}` to `{}`; start every replica with `--blobs {}`",
            report.blobs,
            report.bytes,
            report.from,
            report.to,
            target.identity()
        ));
    }
    Ok(ExitStatus::Success)
}
