//! `stackpack-registry init`: creates a registry in a new data folder, its
//! metadata there (SQLite) or in a PostgreSQL database (`--database`).

use stackpack_registry::db::pg_pool::DatabaseLocation;

use crate::cli::InitArgs;
use crate::commands::location::{self, Given};
use crate::commands::serve_file::ServeFile;
use crate::commands::{place, status, Error, Result};

pub fn run(args: &InitArgs) -> Result<()> {
    let given = Given {
        data: Some(&args.data),
        database: args.database.as_deref(),
        blobs: None,
    };
    let config = location::resolve(given, &ServeFile::default())?;
    let data = &args.data;
    let at = place(&config);
    let existed = data.join(stackpack_registry::DB_FILE).is_file();
    let database = config.database.clone();
    stackpack_registry::open(config).map_err(|error| {
        Error::refused(format!("cannot create a registry: {error}"))
            .caused_by(error)
            .at(at)
    })?;
    match database {
        DatabaseLocation::Postgres(target) => status(&format!(
            "a registry's schema is ready in {target}, its data folder `{}`",
            data.display()
        )),
        DatabaseLocation::Sqlite if existed => status(&format!(
            "a registry already exists in `{}`; its database is up to date",
            data.display()
        )),
        DatabaseLocation::Sqlite => status(&format!("created a registry in `{}`", data.display())),
    }
    Ok(())
}
