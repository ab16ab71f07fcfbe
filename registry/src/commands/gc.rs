//! `stackpack-registry gc`.

use std::time::Duration;

use stackpack_registry::gc;

use crate::cli::GcArgs;
use stackpack_registry::config::Config;

use crate::commands::{open_existing_with, print_json, refused_in, Error, Result};

pub fn run(args: &GcArgs) -> Result<()> {
    let mut config = Config::new(&args.data);
    config.blobs = args
        .blob_store
        .location()
        .map_err(|e| Error::usage(e).hint("as in `--blobs s3://bucket/registry`"))?;
    let state = open_existing_with(config)?;
    let report = gc::run(
        &state.db,
        state.blobs.as_ref(),
        Duration::from_secs(args.upload_lifetime_secs),
        Duration::from_secs(args.grace_secs),
    )
    .map_err(refused_in(&args.data))?;
    if args.json {
        print_json(&report);
    } else {
        println!("expired uploads     {}", report.expired_uploads);
        println!("stray upload files  {}", report.stray_upload_files);
        println!("blobs deleted       {}", report.blobs_deleted);
        println!("stray blob files    {}", report.stray_blob_files);
        println!("bytes freed         {}", report.bytes_freed);
    }
    Ok(())
}
