//! Where a registry is: its data folder, the database its metadata lives in (the
//! folder's SQLite or a PostgreSQL database its replicas share) and, for the
//! commands that touch blobs, its blob store. Read the same way for `serve` and
//! every other command: the command line over the `--config` file, so an operator
//! runs `token create --config /etc/stackpack/registry.toml` with the file the
//! replicas read.

use std::path::Path;

use stackpack_registry::config::Config;
use stackpack_registry::db::pg_pool::{BadUrl, DatabaseLocation};

use crate::cli::{BlobArgs, RegistryArgs};
use crate::commands::serve_file::ServeFile;
use crate::commands::{Error, Result};

/// What the command line says of the registry's place; `None` where it says nothing.
pub struct Given<'a> {
    pub data: Option<&'a Path>,
    pub database: Option<&'a str>,
    /// `None` for a command that never touches blobs: the file's `blobs` is then
    /// not read (nor the bucket checked), only its rows are.
    pub blobs: Option<&'a BlobArgs>,
}

/// The data folder, database and blob store, each from the command line, else
/// from `file`, else the default (SQLite in the data folder, blobs beside it).
///
/// The data folder is needed but by a command that touches no blobs on a registry
/// whose metadata lives in PostgreSQL: `token create --database URL` runs from any
/// machine that reaches the database.
pub fn resolve(given: Given<'_>, file: &ServeFile) -> Result<Config> {
    let database = match given.database.or(file.database.as_deref()) {
        Some(text) => self::database(text, "--database")?,
        None => DatabaseLocation::Sqlite,
    };
    let data = given
        .data
        .map(Path::to_path_buf)
        .or_else(|| file.data.clone());
    let rows_only = given.blobs.is_none() && matches!(database, DatabaseLocation::Postgres(_));
    let data = match data {
        Some(data) => data,
        None if rows_only => Default::default(),
        None => {
            return Err(Error::usage("no data folder given").hint(
                "give `--data DIR` (or `--database URL` for a registry on PostgreSQL), or \
                 `--config FILE` naming a file with `data = \"DIR\"`",
            ))
        }
    };
    let mut config = Config::new(data);
    config.database = database;
    if let Some(args) = given.blobs {
        let blobs = BlobArgs {
            blobs: args.blobs.clone().or_else(|| file.blobs.clone()),
            s3_endpoint: args
                .s3_endpoint
                .clone()
                .or_else(|| file.s3_endpoint.clone()),
            s3_region: args.s3_region.clone().or_else(|| file.s3_region.clone()),
        };
        config.blobs = blobs
            .location()
            .map_err(|e| Error::usage(e).hint("as in `--blobs s3://bucket/registry`"))?;
    }
    Ok(config)
}

/// A database URL given with `flag` (or the file's `database`), parsed here rather
/// than by clap, whose error would repeat the value, and with it a password in the
/// URL.
pub fn database(text: &str, flag: &str) -> Result<DatabaseLocation> {
    text.parse()
        .map_err(|e: BadUrl| Error::usage(e.to_string()).hint(database_hint(flag)))
}

/// How a database URL given with `flag` is written.
pub fn database_hint(flag: &str) -> String {
    format!(
        "as in `{flag} postgres://registry@db.internal:5432/registry`, the password in the URL or in PGPASSWORD"
    )
}

impl RegistryArgs {
    /// Where the registry these options name is; `blobs` for a command that reads
    /// or deletes blobs (`gc`), `None` for one that only reads and writes rows.
    pub fn config(&self, blobs: Option<&BlobArgs>) -> Result<Config> {
        let file = ServeFile::read(self.config.as_deref())?;
        let given = Given {
            data: self.data.as_deref(),
            database: self.database.as_deref(),
            blobs,
        };
        resolve(given, &file)
    }
}
