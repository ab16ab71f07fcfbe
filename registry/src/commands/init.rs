//! `stackpack-registry init`: creates a registry in a new data folder.

use anyhow::Context as _;
use stackpack_registry::config::Config;

use crate::cli::InitArgs;

pub fn run(args: &InitArgs) -> anyhow::Result<()> {
    let data = &args.data;
    let existed = data.join(stackpack_registry::DB_FILE).is_file();
    stackpack_registry::open(Config::new(data))
        .with_context(|| format!("cannot create a registry in `{}`", data.display()))?;
    if existed {
        eprintln!(
            "a registry already exists in `{}`; its database is up to date",
            data.display()
        );
    } else {
        eprintln!("created a registry in `{}`", data.display());
    }
    Ok(())
}
