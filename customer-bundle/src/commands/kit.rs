//! `import` of a kit: what was checked, imported and installed.

use serde_json::json;
use stackpack_runner::kit::{self, RunnerOutcome};
use stackpack_runner::Result;
use stackpack_terminal::ExitStatus;

use super::{open_installation, print_json, status};
use crate::cli::{GlobalArgs, ImportArgs};

pub fn import(global: &GlobalArgs, args: &ImportArgs) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    status(&format!(
        "checking the kit `{}` (signature, every file's sum) before anything of it is used",
        args.source.display()
    ));
    let done = kit::import(&home, &args.source, args.upgrade_runner)?;
    status(&format!(
        "kit for `{}` signed by trusted key `{}`; every file matches its signed sum",
        done.manifest.release, done.signer_key_id
    ));
    let runner_line = runner_line(&done.runner);
    if args.json {
        print_json(&json!({
            "kit": {
                "release": done.manifest.release,
                "channel": done.manifest.channel,
                "keyId": done.signer_key_id,
            },
            "runner": runner_json(&done.runner),
            "imported": done.imported.iter().map(|i| json!({
                "stack": i.stack,
                "version": i.version.to_string(),
                "digest": i.digest.to_string(),
                "keyId": i.key_id,
                "added": i.added,
                "repairedBlobs": i.repaired,
            })).collect::<Vec<_>>(),
        }));
    } else {
        super::import::show_imported(&done.imported, &[], false);
    }
    if let Some(line) = runner_line {
        status(&line);
    }
    Ok(ExitStatus::Success)
}

fn runner_line(outcome: &RunnerOutcome) -> Option<String> {
    match outcome {
        RunnerOutcome::NoneCarried => None,
        RunnerOutcome::Offered { carried, running } => Some(format!(
            "the kit carries stackpack-runner {carried} (this one is {running}); `stackpack-runner import KIT --upgrade-runner` installs it"
        )),
        RunnerOutcome::Installed { version, from, path } => Some(format!(
            "installed stackpack-runner {version} at `{}` (was {from})",
            path.display()
        )),
        RunnerOutcome::AlreadyCurrent { version } => Some(format!(
            "the kit's runner is {version}, the one already running: nothing to upgrade"
        )),
    }
}

fn runner_json(outcome: &RunnerOutcome) -> serde_json::Value {
    match outcome {
        RunnerOutcome::NoneCarried => serde_json::Value::Null,
        RunnerOutcome::Offered { carried, running } => {
            json!({"outcome": "offered", "carried": carried, "running": running})
        }
        RunnerOutcome::Installed {
            version,
            from,
            path,
        } => {
            json!({"outcome": "installed", "version": version, "from": from, "path": path})
        }
        RunnerOutcome::AlreadyCurrent { version } => {
            json!({"outcome": "already-current", "version": version})
        }
    }
}
