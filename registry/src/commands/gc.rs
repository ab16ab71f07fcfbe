//! `stackpack-registry gc`.

use std::time::Duration;

use stackpack_registry::{gc, lease};

use crate::cli::GcArgs;
use stackpack_registry::config::Config;

use crate::commands::{data_folder, open_existing_with, print_json, refused_in, Error, Result};

pub fn run(args: &GcArgs) -> Result<()> {
    let mut config = Config::new(&args.data);
    config.blobs = args
        .blob_store
        .location()
        .map_err(|e| Error::usage(e).hint("as in `--blobs s3://bucket/registry`"))?;
    let state = open_existing_with(config)?;
    stackpack_registry::check_blob_location(&state.db, &state.config.blobs)
        .map_err(|error| crate::commands::cannot_open(&args.data, error))?;
    let held = lease::hold(&state.db, lease::GC, || {
        gc::run(
            &state.db,
            state.blobs.as_ref(),
            Duration::from_secs(args.upload_lifetime_secs),
            Duration::from_secs(args.grace_secs),
        )
    })
    .map_err(refused_in(&args.data))?;
    let report = match held {
        Ok(report) => report.map_err(refused_in(&args.data))?,
        Err(other) => {
            let until = stackpack_registry::rollout::format_ns(other.until_ns);
            return Err(Error::refused(format!(
                "gc is already running: {} holds its lease until {until}",
                other.holder
            ))
            .at(data_folder(&args.data))
            .hint("wait for it to finish; the lease of a process that died lapses on its own"));
        }
    };
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
