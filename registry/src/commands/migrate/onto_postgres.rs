//! `migrate --to postgres://…`: a registry's SQLite database (and with
//! `--move-blobs-to` its blobs) onto PostgreSQL (issue 27); `migrate --database
//! postgres://…`: the schema of a registry already there.
//!
//! The order of `--to` is what makes a failure lose nothing: the SQLite schema
//! brought current, PostgreSQL reached, migrated and found empty, then the blobs
//! copied into the new store (nothing recorded anywhere), then the rows copied in
//! one PostgreSQL transaction that also records the new store and commits only
//! once every table reads back equal. Until that commit the registry in the data
//! folder is exactly as it was and may be started again; after it, PostgreSQL
//! holds everything.

use std::path::Path;

use stackpack_registry::db::copy::{self, CopyError, Summary};
use stackpack_registry::db::pg_pool::{DatabaseLocation, PgTarget};
use stackpack_registry::db::sql::PgError;
use stackpack_registry::db::{pg, settings, Db};
use stackpack_registry::storage::moving::MoveReport;
use stackpack_registry::SchemaState;

use super::{BlobMove, Record};
use crate::cli::MigrateArgs;
use crate::commands::location;
use crate::commands::{open_existing, print_json, status, table, Error, ExitStatus, Result};

const NEWER_HINT: &str = "run the newer `stackpack-registry` that last migrated it; this build never changes a newer schema";

/// `--to URL`: copies the registry in `data` into the empty database at `url`.
pub(super) fn copy_to(args: &MigrateArgs, data: &Path, url: &str) -> Result<ExitStatus> {
    let target = parse_target(url, "--to")?;
    if let Some(blobs) = &args.move_blobs_to {
        super::blob_location(args, blobs)?;
    }
    let from = super::sqlite_current(data)?;
    let mut client = connect(&target)?;
    copy::check_empty(&mut client).map_err(copy_refused(&target))?;
    let moved = match &args.move_blobs_to {
        Some(blobs) => copy_blobs_first(args, data, blobs)?,
        None => None,
    };
    // Read before the copy: nothing may fail after it has committed.
    let blobs = match &moved {
        Some((identity, _)) => identity.clone(),
        None => recorded_blobs(data)?,
    };
    let recorded: Vec<(&str, &str)> = moved
        .iter()
        .map(|(identity, _)| (settings::BLOBS, identity.as_str()))
        .collect();
    let sqlite = data.join(stackpack_registry::DB_FILE);
    let summary =
        copy::copy_recording(&sqlite, &mut client, &recorded).map_err(copy_refused(&target))?;
    drop(client);
    let copied = Copied {
        target: &target,
        data,
        from,
        summary: &summary,
        moved: moved.as_ref().map(|(_, report)| report),
        blobs: &blobs,
    };
    copied.report(args);
    Ok(ExitStatus::Success)
}

/// `--database URL`: brings the schema of the registry there current (or with
/// `--check` says where it stands); then, with `--move-blobs-to`, moves its blobs.
pub(super) fn migrate_there(args: &MigrateArgs, url: &str) -> Result<ExitStatus> {
    let target = parse_target(url, "--database")?;
    if let Some(blobs) = &args.move_blobs_to {
        super::blob_location(args, blobs)?;
    }
    let mut client = connect(&target)?;
    let found = pg::stored_version(&mut client).map_err(pg_failed(&target))?;
    let known = pg::SCHEMA_VERSION;
    let state = SchemaState::of(found, known);
    super::refuse_newer(state, target.to_string())?;
    if args.check {
        let rerun = "stackpack-registry migrate --database <the same URL>";
        return Ok(super::report_check(args, state, rerun));
    }
    // Of several processes migrating at once, each step's advisory lock makes
    // the others wait for it and then find it done.
    let from = pg::migrate(&mut client).map_err(pg_failed(&target))?;
    drop(client);
    if let Some(blobs) = &args.move_blobs_to {
        let data = args.data.as_deref().ok_or_else(|| {
            Error::usage("`--move-blobs-to` needs `--data`: the folder the blobs are read from or written to")
                .hint("give the `--data` folder the replicas serve")
        })?;
        let db = Db::open_postgres(&target, 2).map_err(|e| {
            Error::refused(format!("cannot open the registry: {e}"))
                .caused_by(e)
                .at(&target)
        })?;
        return super::move_blobs(args, data, &db, blobs, (from, known));
    }
    super::report_migrated(args, from, known);
    Ok(ExitStatus::Success)
}

/// A `postgres://` URL, read without ever repeating it (it may hold a password).
fn parse_target(url: &str, flag: &str) -> Result<PgTarget> {
    match location::database(url, flag)? {
        DatabaseLocation::Postgres(target) => Ok(target),
        DatabaseLocation::Sqlite => Err(Error::usage(format!("`{flag}` takes a postgres:// URL"))
            .hint(location::database_hint(flag))),
    }
}

fn connect(target: &PgTarget) -> Result<postgres::Client> {
    target.connect().map_err(|e| {
        Error::refused(format!("cannot connect to {target}: {e}"))
            .caused_by(e)
            .hint("check that PostgreSQL runs there and lets this machine in (`pg_hba.conf`), the user and database in the URL, and the password (in the URL or `PGPASSWORD`)")
    })
}

fn pg_failed(target: &PgTarget) -> impl Fn(PgError) -> Error + '_ {
    move |e| {
        let hint = match &e {
            PgError::Newer { .. } => NEWER_HINT,
            e if e.is_unavailable() => "PostgreSQL went away; run it again once it answers",
            _ => "nothing was changed by the step that failed; fix the cause and run it again",
        };
        Error::refused(format!("{target}: {e}"))
            .caused_by(e)
            .at(target)
            .hint(hint)
    }
}

fn copy_refused(target: &PgTarget) -> impl Fn(CopyError) -> Error + '_ {
    move |error| {
        let hint = match &error {
            CopyError::TargetNotEmpty { .. } => {
                "copy into a new, empty database (`createdb registry`); if this registry was copied there already, start its replicas with `serve --database` instead"
            }
            CopyError::Postgres {
                source: PgError::Newer { .. },
                ..
            } => NEWER_HINT,
            CopyError::Postgres { source, .. } if source.is_unavailable() => {
                "PostgreSQL went away: nothing was committed there and the data folder is as it was; run it again once it answers"
            }
            _ => "nothing was committed to PostgreSQL and the data folder is as it was",
        };
        Error::refused_by(error).at(target).hint(hint)
    }
}

/// `--move-blobs-to` with `--to`: every blob into the new store, recorded
/// nowhere yet (the copy records it in PostgreSQL); `None` when they already
/// live there. Returns the new store's identity and what was copied.
fn copy_blobs_first(
    args: &MigrateArgs,
    data: &Path,
    target: &str,
) -> Result<Option<(String, MoveReport)>> {
    let state = open_existing(data)?;
    let Some(blobs) = BlobMove::prepare(args, data, &state.db, target)? else {
        return Ok(None);
    };
    let report = blobs.run(args, data, &state.db, Record::Elsewhere)?;
    Ok(Some((blobs.identity, report)))
}

/// Where the registry in `data` records its blobs (what the copy carried over
/// when no `--move-blobs-to` replaced it).
fn recorded_blobs(data: &Path) -> Result<String> {
    let path = data.join(stackpack_registry::DB_FILE);
    let read = || -> rusqlite::Result<Option<String>> {
        let conn = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )?;
        settings::get(&conn, settings::BLOBS)
    };
    let recorded = read().map_err(|e| {
        Error::refused(format!("cannot read where the blobs live: {e}"))
            .caused_by(e)
            .at(crate::commands::data_folder(data))
    })?;
    Ok(recorded.unwrap_or_else(|| "data-folder".to_string()))
}

/// What `--to` did, to print.
struct Copied<'a> {
    target: &'a PgTarget,
    data: &'a Path,
    /// The SQLite schema version found before it was brought current.
    from: u32,
    summary: &'a Summary,
    moved: Option<&'a MoveReport>,
    /// Where PostgreSQL now says the blobs live.
    blobs: &'a str,
}

impl Copied<'_> {
    fn report(&self, args: &MigrateArgs) {
        let summary = self.summary;
        if args.json {
            let tables: Vec<_> = summary
                .tables
                .iter()
                .map(
                    |t| serde_json::json!({ "table": t.table, "rows": t.rows, "sha256": t.digest }),
                )
                .collect();
            print_json(&serde_json::json!({
                "from": self.from,
                "to": summary.sqlite_version,
                "target": self.target.to_string(),
                "postgresSchema": summary.postgres_version,
                "tables": tables,
                "emptyNotCopied": summary.empty_sqlite_only,
                "moved": self.moved,
                "blobs": self.blobs,
            }));
            return;
        }
        let rows: Vec<Vec<String>> = summary
            .tables
            .iter()
            .map(|t| vec![t.rows.to_string(), short(&t.digest), t.table.clone()])
            .collect();
        print!("{}", table(&["ROWS", "SHA-256", "TABLE"], &rows));
        self.say_what_next();
    }

    fn say_what_next(&self) {
        let summary = self.summary;
        let rows: u64 = summary.tables.iter().map(|t| t.rows).sum();
        status(&format!(
            "copied {rows} rows in {} tables from `{}` (schema {}) into {} (schema {}); each table's rows and SHA-256 were checked before the commit",
            summary.tables.len(),
            self.data.join(stackpack_registry::DB_FILE).display(),
            summary.sqlite_version,
            self.target,
            summary.postgres_version
        ));
        if let Some(moved) = self.moved {
            status(&format!(
                "copied {} blob(s), {} bytes, from `{}` to `{}` before the database",
                moved.blobs, moved.bytes, moved.from, moved.to
            ));
        }
        let data = self.data.display();
        let blobs = match self.blobs {
            "data-folder" => String::new(),
            bucket => format!(" --blobs {bucket}"),
        };
        status(&format!(
            "next: start every replica with `stackpack-registry serve --data DIR --database <the same URL>{blobs}`; start none on `{data}` again: its database no longer receives the writes"
        ));
        if blobs.is_empty() {
            status(&format!(
                "the blobs stay in `{data}`: serve from this machine with `--data {data}`, or move them into a bucket with `stackpack-registry migrate --database <the same URL> --data {data} --move-blobs-to s3://…`"
            ));
        }
    }
}

/// A digest for the screen: `3f9a…c21e`.
fn short(digest: &str) -> String {
    match (
        digest.get(..4),
        digest.get(digest.len().saturating_sub(4)..),
    ) {
        (Some(head), Some(tail)) if digest.len() > 8 => format!("{head}…{tail}"),
        _ => digest.to_string(),
    }
}
