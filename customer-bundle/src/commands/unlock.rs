//! `unlock STACK [--lock-id ID]`: break a stuck state lock (runbook: `docs/runner.md`,
//! "A stuck state lock").

use std::io::{BufRead, IsTerminal, Write};

use serde_json::json;
use stackpack_runner::unlock::{self, Inspection};
use stackpack_runner::{Error, Result};
use stackpack_terminal::ExitStatus;

use super::{open_installation, parse_stack, print_json, status, verbose};
use crate::cli::{GlobalArgs, UnlockArgs};

pub fn unlock(global: &GlobalArgs, args: &UnlockArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let home = &installation.home;
    let stack = parse_stack(&args.stack)?;
    let inspection = unlock::inspect(home, &stack)?;
    if inspection.info.is_none() && inspection.record_readable {
        if args.json {
            print_json(&json!({"stack": stack, "unlocked": false, "locked": false}));
        } else {
            println!("the state of `{stack}` is not locked: nothing to unlock");
        }
        return Ok(ExitStatus::Success);
    }
    show_holder(&inspection);
    let lock_id = match (&args.lock_id, &inspection.info) {
        (Some(id), _) => id.clone(),
        (None, _) if std::io::stdin().is_terminal() => ask_for_id(&stack)?,
        (None, info) => {
            let id = info.as_ref().map_or("ID", |info| info.id.as_str());
            return Err(Error::refused(
                "there is no terminal to type the lock's id on, and `--lock-id` was not given: nothing was unlocked",
            )
            .hint(format!("check that no run holds it, then pass `--lock-id {id}`")));
        }
    };
    if args.force && inspection.run.as_ref().is_some_and(|r| r.may_be_running()) {
        status("warning: `--force`: breaking a lock whose run may still be alive; if it is, two runs now write one state");
    }
    let unlocked = unlock::break_lock(&installation, inspection, &lock_id, args.force, verbose())?;
    if args.json {
        print_json(&json!({
            "stack": stack,
            "lockId": unlocked.lock_id,
            "unlocked": true,
            "receiptId": unlocked.receipt_id,
        }));
    } else {
        println!(
            "unlocked the state of `{stack}` (lock `{}`)",
            unlocked.lock_id
        );
        match &unlocked.receipt_id {
            Some(id) => status(&format!("recorded receipt `{id}`")),
            None => status(&format!(
                "no receipt: this home has never deployed `{stack}`, so it cannot say which version runs"
            )),
        }
    }
    Ok(ExitStatus::Success)
}

/// Who holds the lock, from the lock's own record, on stderr.
fn show_holder(inspection: &Inspection) {
    let Some(info) = &inspection.info else {
        status(&format!(
            "the lock's record cannot be read from {}; the engine's error named its id",
            inspection.state
        ));
        return;
    };
    status(&format!("state `{}` is locked:", inspection.state));
    for (name, value) in [
        ("id", &info.id),
        ("who", &info.who),
        ("operation", &info.operation),
        ("since", &info.created),
        ("engine", &info.version),
    ] {
        status(&format!("  {name:<10} {value}"));
    }
    if let Some(run) = inspection.run.as_ref().filter(|r| r.running) {
        status(&format!(
            "  {:<10} home `{}` on `{}`, process {}, since {}",
            "run", run.home, run.host, run.pid, run.since
        ));
    }
    status("make sure the run named above has stopped (on its machine, if it is another)");
}

fn ask_for_id(stack: &str) -> Result<String> {
    eprint!("type the lock's id to break the lock on `{stack}`: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    let answer = answer.trim().to_string();
    if answer.is_empty() {
        return Err(Error::refused("no lock id was typed: nothing was unlocked"));
    }
    Ok(answer)
}
