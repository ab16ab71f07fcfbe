//! `stackpack-registry migrate`: brings the database to this build's schema and
//! exits, or with `--check` only says where it stands; `--move-blobs-to` moves the
//! blobs into another store. `--to postgres://…` copies a registry onto
//! PostgreSQL and `--database postgres://…` migrates one already there
//! ([`onto_postgres`]).

mod onto_postgres;

use std::path::Path;
use std::sync::Arc;

use stackpack_registry::db::Db;
use stackpack_registry::storage::moving::{self, MoveReport};
use stackpack_registry::storage::{BlobLocation, BlobStore};
use stackpack_registry::SchemaState;

use crate::cli::MigrateArgs;
use crate::commands::{
    blobs_hint, cannot_open, data_folder, open_existing, print_json, refused_in, status, Error,
    ExitStatus, Result,
};

pub fn run(args: &MigrateArgs) -> Result<ExitStatus> {
    if let Some(url) = &args.to {
        return onto_postgres::copy_to(args, data(args)?, url);
    }
    if let Some(url) = &args.database {
        return onto_postgres::migrate_there(args, url);
    }
    let data = data(args)?;
    if args.check {
        let state =
            stackpack_registry::schema_state(data).map_err(|error| cannot_open(data, error))?;
        refuse_newer(state, data_folder(data))?;
        let rerun = format!("stackpack-registry migrate --data {}", data.display());
        return Ok(report_check(args, state, &rerun));
    }
    let from = sqlite_current(data)?;
    let to = stackpack_registry::db::SCHEMA_VERSION;
    if let Some(target) = &args.move_blobs_to {
        let state = open_existing(data)?;
        return move_blobs(args, data, &state.db, target, (from, to));
    }
    report_migrated(args, from, to);
    Ok(ExitStatus::Success)
}

/// `--data`, which clap requires unless `--database` is given.
fn data(args: &MigrateArgs) -> Result<&Path> {
    args.data.as_deref().ok_or_else(|| {
        Error::usage("this needs the registry's data folder")
            .hint("give `--data DIR`, the folder `serve --data` names")
    })
}

/// Brings the SQLite database in `data` to this build's schema; returns the
/// version it was at. One from a newer build is refused and left alone.
fn sqlite_current(data: &Path) -> Result<u32> {
    let state = stackpack_registry::schema_state(data).map_err(|error| cannot_open(data, error))?;
    refuse_newer(state, data_folder(data))?;
    stackpack_registry::migrate(data).map_err(|error| cannot_open(data, error))
}

/// A database a newer build wrote is never changed nor read by this one.
fn refuse_newer(state: SchemaState, at: String) -> Result<()> {
    if let SchemaState::Newer { found, known } = state {
        return Err(Error::refused(format!(
            "the database is at schema version {found}, newer than this build's {known}"
        ))
        .at(at)
        .hint("run the newer `stackpack-registry` that last opened it; this build never changes a newer schema"));
    }
    Ok(())
}

fn report_migrated(args: &MigrateArgs, from: u32, to: u32) {
    if args.json {
        print_json(&serde_json::json!({ "from": from, "to": to }));
    } else if from == to {
        status(&format!("schema version {to} is current; nothing to do"));
    } else {
        status(&format!("migrated from schema version {from} to {to}"));
    }
}

/// `--check`: 0 when current, 3 when migrations are waiting; `rerun` is the
/// command that runs them (never holding a password).
fn report_check(args: &MigrateArgs, state: SchemaState, rerun: &str) -> ExitStatus {
    if args.json {
        print_json(&state);
    }
    match state {
        SchemaState::Behind { found, known } => {
            if !args.json {
                println!(
                    "behind: schema version {found}, this build writes {known}; run `{rerun}`"
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

/// `--move-blobs-to`: every blob into the new store, then the new store recorded
/// in `db`, the registry's own database (SQLite's or PostgreSQL's).
fn move_blobs(
    args: &MigrateArgs,
    data: &Path,
    db: &Db,
    target: &str,
    (from, to): (u32, u32),
) -> Result<ExitStatus> {
    let Some(blobs) = BlobMove::prepare(args, data, db, target)? else {
        return Ok(ExitStatus::Success);
    };
    let report = blobs.run(args, data, db, Record::InThisDatabase)?;
    if args.json {
        print_json(&serde_json::json!({ "from": from, "to": to, "moved": report }));
    } else {
        status(&format!(
            "moved {} blob(s), {} bytes, from `{}` to `{}`; start every replica with `--blobs {}`",
            report.blobs, report.bytes, report.from, report.to, blobs.identity
        ));
    }
    Ok(ExitStatus::Success)
}

/// Where the move records the new store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    /// In the database the blob list was read from: the registry switches stores.
    InThisDatabase,
    /// Nowhere here: `--to` records it in PostgreSQL with the copied rows, and
    /// the registry in the data folder keeps reading its old store.
    Elsewhere,
}

/// The two stores of a move and the new one's identity (`s3://bucket/prefix/`).
struct BlobMove {
    old: Arc<dyn BlobStore>,
    new: Arc<dyn BlobStore>,
    identity: String,
}

/// `--move-blobs-to`'s store, read as `s3://bucket/prefix` (with `--s3-endpoint`
/// and `--s3-region`) or `data-folder`.
fn blob_location(args: &MigrateArgs, text: &str) -> Result<BlobLocation> {
    let parsed = match text {
        "data-folder" => Ok(BlobLocation::DataFolder),
        s3 => BlobLocation::parse(s3, args.s3_endpoint.as_deref(), args.s3_region.as_deref()),
    };
    parsed.map_err(|e| {
        Error::usage(e).hint("as in `--move-blobs-to s3://bucket/registry`, or `data-folder`")
    })
}

impl BlobMove {
    /// Opens both stores; `None` (said on stderr) when the blobs already live in
    /// `target`. A bucket to another bucket is refused.
    fn prepare(args: &MigrateArgs, data: &Path, db: &Db, target: &str) -> Result<Option<BlobMove>> {
        let target = blob_location(args, target)?;
        let recorded = db
            .read_any(|c| {
                stackpack_registry::db::settings::get(c, stackpack_registry::db::settings::BLOBS)
            })
            .map_err(refused_in(data))?
            .unwrap_or_else(|| BlobLocation::DataFolder.identity());
        if recorded == target.identity() {
            status(&format!(
                "the blobs already live in `{recorded}`; nothing to move"
            ));
            return Ok(None);
        }
        let source = blob_location(args, &recorded)?;
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
        let open = |location: &BlobLocation| {
            stackpack_registry::storage::open(location, data, Arc::default()).map_err(|error| {
                let hint = blobs_hint(&error);
                Error::refused(format!("cannot open the blob store: {error}"))
                    .caused_by(error)
                    .hint(hint)
            })
        };
        Ok(Some(BlobMove {
            old: open(&source)?,
            new: open(&target)?,
            identity: target.identity(),
        }))
    }

    /// Copies every blob `db` records, checked against its digest on the way;
    /// records the new store as `record` says.
    fn run(&self, args: &MigrateArgs, data: &Path, db: &Db, record: Record) -> Result<MoveReport> {
        let runtime = tokio::runtime::Runtime::new().map_err(|error| {
            Error::refused(format!("cannot start the runtime: {error}")).caused_by(error)
        })?;
        let show = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
        let progress = |done, total| {
            if show {
                eprint!("\rmoving blobs: {done} of {total}");
            }
        };
        let (old, new) = (self.old.as_ref(), self.new.as_ref());
        let moved = runtime.block_on(async {
            match record {
                Record::InThisDatabase => {
                    moving::move_blobs(db, old, new, &self.identity, progress).await
                }
                Record::Elsewhere => moving::copy_blobs(db, old, new, progress).await,
            }
        });
        if show {
            eprintln!();
        }
        moved.map_err(|error| {
            let hint = match record {
                Record::InThisDatabase => "nothing was switched: the registry still reads its old store; fix the cause and run it again",
                Record::Elsewhere => "nothing was copied into PostgreSQL and the registry in the data folder is as it was; fix the cause and run it again",
            };
            Error::refused_by(error).at(data_folder(data)).hint(hint)
        })
    }
}
