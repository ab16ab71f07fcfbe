//! `stackpack-registry init`: creates a registry in a new data folder.

use stackpack_registry::config::Config;

use crate::cli::InitArgs;
use crate::commands::{data_folder, status, Error, Result};

pub fn run(args: &InitArgs) -> Result<()> {
    let data = &args.data;
    let existed = data.join(stackpack_registry::DB_FILE).is_file();
    stackpack_registry::open(Config::new(data)).map_err(|error| {
        Error::refused(format!("cannot create a registry: {error}"))
            .caused_by(error)
            .at(data_folder(data))
    })?;
    if existed {
        status(&format!(
            "a registry already exists in `{}`; its database is up to date",
            data.display()
        ));
    } else {
        status(&format!("created a registry in `{}`", data.display()));
    }
    Ok(())
}
