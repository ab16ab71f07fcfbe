//! `stackpack-registry backup --data DIR --to FILE`: a consistent copy of the
//! database, taken while the registry serves. It never migrates the database nor
//! writes to it: a backup of an older registry is that registry's own schema.
//!
//! SQLite only. A registry on PostgreSQL is refused with the way to back it up:
//! `pg_dump` is PostgreSQL's own consistent copy (one snapshot, while replicas
//! serve), and running it from here would only add a second place to get its
//! version, flags and credentials wrong.

use stackpack_registry::db::backup::{backup, BackupError};
use stackpack_registry::db::pg_pool::DatabaseLocation;
use stackpack_registry::DB_FILE;

use crate::cli::BackupArgs;
use crate::commands::{data_folder, place, print_json, Error, Result};

pub fn run(args: &BackupArgs) -> Result<()> {
    let config = args.registry.config(None)?;
    if let DatabaseLocation::Postgres(_) = &config.database {
        return Err(Error::usage(
            "`backup` copies a registry's SQLite database; this registry's metadata lives in PostgreSQL",
        )
        .at(place(&config))
        .hint("back it up with PostgreSQL's own `pg_dump` (as in `pg_dump --format=custom --file registry.dump postgres://…`), and keep versioning on the blobs' bucket"));
    }
    let data = &config.data;
    let database = data.join(DB_FILE);
    if !database.is_file() {
        return Err(Error::usage(format!(
            "there is no registry in `{}`: `{}` does not exist",
            data.display(),
            database.display()
        ))
        .hint("check `--data`: the folder `stackpack-registry serve --data` was given"));
    }
    let summary = backup(&database, &args.to).map_err(|error| {
        let hint = match &error {
            BackupError::Exists(_) => "name a new file: a backup never replaces one",
            BackupError::Unsound(_) => {
                "the database itself may be damaged: run `stackpack-registry serve` and read `/healthz`"
            }
            BackupError::Sqlite(_) | BackupError::Io(_) | BackupError::Write { .. } => {
                "check that the target folder exists, is writable and has room"
            }
        };
        let at = match &error {
            BackupError::Exists(path) => format!("`{}`", path.display()),
            _ => data_folder(data),
        };
        Error::refused(format!("cannot back up the registry's database: {error}"))
            .at(at)
            .hint(hint)
    })?;
    if args.json {
        print_json(&summary);
        return Ok(());
    }
    let counts: Vec<String> = summary
        .counts
        .iter()
        .map(|c| format!("{} {}", c.rows, c.table))
        .collect();
    println!(
        "backed up the database to `{}` ({} bytes, schema version {}): {}",
        summary.file.display(),
        summary.bytes,
        summary.schema_version,
        counts.join(", ")
    );
    println!(
        "blobs are not in it: copy `{}` after it (blobs never change once written), or keep versioning on the bucket",
        data.join("blobs").display()
    );
    Ok(())
}
