//! `stackpack-registry gc`.

use std::time::Duration;

use stackpack_registry::{gc, lease};

use crate::cli::GcArgs;

use crate::commands::{
    cannot_open_at, open_registry_with, place, print_json, refused_at, Error, Result,
};

/// Runs one gc, holding gc's lease in the registry's database: on PostgreSQL that
/// lease is shared by every replica's host, so of two `gc`s on one registry (and
/// its replicas' sweeps) one runs at a time.
pub fn run(args: &GcArgs) -> Result<()> {
    let state = open_registry_with(args.registry.config(Some(&args.blob_store))?)?;
    stackpack_registry::check_blob_location(&state.db, &state.config.blobs)
        .map_err(|error| cannot_open_at(&state.config, error))?;
    let held = lease::hold(&state.db, lease::GC, || {
        gc::run(
            &state.db,
            state.blobs.as_ref(),
            Duration::from_secs(args.upload_lifetime_secs),
            Duration::from_secs(args.grace_secs),
        )
    })
    .map_err(refused_at(&state.config))?;
    let report = match held {
        Ok(report) => report.map_err(refused_at(&state.config))?,
        Err(other) => {
            let until = stackpack_registry::rollout::format_ns(other.until_ns);
            return Err(Error::refused(format!(
                "gc is already running: {} holds its lease until {until}",
                other.holder
            ))
            .at(place(&state.config))
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
