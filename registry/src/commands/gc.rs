//! `stackpack-registry gc`.

use std::time::Duration;

use stackpack_registry::gc;

use crate::cli::GcArgs;
use crate::commands::open_existing;

pub fn run(args: &GcArgs) -> anyhow::Result<()> {
    let state = open_existing(&args.data)?;
    let report = gc::run(
        &state.db,
        &state.storage,
        Duration::from_secs(args.upload_lifetime_secs),
        Duration::from_secs(args.grace_secs),
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("expired uploads     {}", report.expired_uploads);
        println!("stray upload files  {}", report.stray_upload_files);
        println!("blobs deleted       {}", report.blobs_deleted);
        println!("stray blob files    {}", report.stray_blob_files);
        println!("bytes freed         {}", report.bytes_freed);
    }
    Ok(())
}
