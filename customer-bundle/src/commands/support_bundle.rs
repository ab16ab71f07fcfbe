//! `support-bundle -o FILE`: what the vendor's support needs, secrets left out
//! (runbook: `docs/runner.md`, "A support bundle").

use stackpack_runner::support_bundle;
use stackpack_runner::Result;
use stackpack_terminal::{human_size, ExitStatus};

use super::{open_installation, print_json, status};
use crate::cli::{GlobalArgs, SupportBundleArgs};

pub fn support_bundle(global: &GlobalArgs, args: &SupportBundleArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let written = support_bundle::write(&installation, &args.out)?;
    if args.json {
        print_json(&written);
    } else {
        println!(
            "wrote `{}` ({}, {})",
            written.path.display(),
            human_size(written.bytes),
            stackpack_terminal::words::count(written.entries.len() as u64, "file")
        );
        if written.redactions > 0 {
            status(&format!(
                "{} place(s) held a value this home knows is secret: replaced by `(redacted)`",
                written.redactions
            ));
        }
        status("read it before you send it: `tar -tzvf` lists what is inside");
    }
    Ok(ExitStatus::Success)
}
