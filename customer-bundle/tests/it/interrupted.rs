//! A runner stopped mid-apply never leaves an engine running unrecorded: SIGTERM (or
//! Ctrl-C) stops the engine gracefully, records a `failed` receipt, then exits 143
//! (or 130) as a shell reports the signal; SIGKILL takes
//! the engine down through its parent-death signal, the stack stays locked until the
//! engine has stopped, and the next `status` says the run was interrupted.
//!
//! The engine here is a stand-in (a shell script around the real Terraform, named as
//! such) that is slow to apply and slow to stop, so the signals land mid-run; the
//! stack is the small vendor's `data-plane` (built-in resources: the signals, locks
//! and records are the runner's, whatever the stack manages).

use crate::common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{fake_engine, Run, Runner, Vendor};

/// Applies slowly; on SIGINT or SIGTERM takes four seconds to stop, then says so.
/// `trapped` in its marker once it listens for them.
const SLOW_ENGINE: &str = r#"
if [ "$1" = apply ]; then
  stopped="$(dirname "$0")/engine.stopped"
  trap 'sleep 4; echo "$1 stopped" > "$stopped"; exit 1' INT TERM
  echo trapped >> "$0.ran"
  i=0
  while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi
exec "$REAL" "$@""#;

fn wait_for(what: &str, deadline: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A runner applying `data-plane` with the slow engine, once the engine is applying.
fn applying(scratch: &Path) -> (Vendor, Runner, Child, String, std::path::PathBuf) {
    applying_with(scratch, SLOW_ENGINE)
}

/// [`applying`] with a stand-in engine of `body`.
fn applying_with(
    scratch: &Path,
    body: &str,
) -> (Vendor, Runner, Child, String, std::path::PathBuf) {
    let vendor = Vendor::small();
    let built = vendor.build();
    let version = built
        .iter()
        .find(|(s, _)| s == "data-plane")
        .unwrap()
        .1
        .clone();
    let tar = vendor.export_tar("bundles.tar");
    let (engine, ran) = fake_engine(scratch, "slow-engine", body);
    let runner = Runner::with_engine("globex", &engine).without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["import", tar.to_str().unwrap()]).ok();
    let reference = format!("data-plane@{version}");
    let inputs = vendor.inputs("globex");
    let child = runner
        .command(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `trapped`, not `apply`: a signal before the engine's trap is set would
    // end it without a word, and the test would wait for a stop it never says.
    wait_for(
        "the engine to start applying",
        Duration::from_secs(120),
        || {
            std::fs::read_to_string(&ran)
                .unwrap_or_default()
                .lines()
                .any(|l| l == "trapped")
        },
    );
    (
        vendor,
        runner,
        child,
        reference,
        scratch.join("engine.stopped"),
    )
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: a signal to our own child.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

#[test]
fn sigterm_mid_apply_stops_the_engine_gracefully_records_a_failed_receipt_and_exits_143() {
    let scratch = tempfile::tempdir().unwrap();
    let (vendor, runner, child, reference, stopped) = applying(scratch.path());
    signal(&child, libc::SIGTERM);
    // 143 (128 + SIGTERM), as a shell reports a program SIGTERM stopped.
    let run = Run::from(child.wait_with_output().unwrap()).code(143);
    assert!(
        run.stderr.contains("interrupted by SIGTERM"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("outcome `failed`"), "{}", run.stderr);
    // The engine was asked once (SIGINT) and had finished stopping before the runner
    // exited.
    assert_eq!(
        std::fs::read_to_string(&stopped).unwrap().trim(),
        "apply stopped"
    );
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = receipts["receipts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["receipt"]["receipt"]["kind"], "apply");
    assert_eq!(last["receipt"]["receipt"]["outcome"], "failed");
    // Nothing is left half-recorded, and the stack is free again.
    let status = runner.run(&["status", "--json"]).ok().json();
    assert!(
        status["interrupted"].as_array().unwrap().is_empty(),
        "{status}"
    );
    let inputs = vendor.inputs("globex");
    let again = runner
        .run(&["plan", &reference, "--inputs", inputs.to_str().unwrap()])
        .ok();
    assert!(!again.stderr.contains("busy"), "{}", again.stderr);
}

/// Issue 39 §6: Ctrl-C mid-apply ends with 130 (128 + SIGINT), as a shell reports a
/// program Ctrl-C stopped, so a script tells "stopped" from "failed" — and only
/// after the engine has stopped and the run is recorded as a `failed` receipt.
#[test]
fn sigint_mid_apply_exits_130_after_the_engine_stopped_and_a_failed_receipt_is_recorded() {
    let scratch = tempfile::tempdir().unwrap();
    let (_vendor, runner, child, _reference, stopped) = applying(scratch.path());
    signal(&child, libc::SIGINT);
    let run = Run::from(child.wait_with_output().unwrap()).code(130);
    assert!(
        run.stderr.contains("interrupted by SIGINT"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("outcome `failed`"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(&stopped).unwrap().trim(),
        "apply stopped"
    );
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = receipts["receipts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["receipt"]["receipt"]["kind"], "apply");
    assert_eq!(last["receipt"]["receipt"]["outcome"], "failed");
}

#[test]
fn sigkill_mid_apply_takes_the_engine_down_keeps_the_lock_until_it_stops_and_is_reported() {
    let scratch = tempfile::tempdir().unwrap();
    let (vendor, runner, mut child, reference, stopped) = applying(scratch.path());
    child.kill().unwrap();
    child.wait().unwrap();
    // The engine is still stopping (it takes four seconds, so a loaded machine still
    // starts the next command in time): the stack stays locked.
    let inputs = vendor.inputs("globex");
    let busy = runner
        .run(&["plan", &reference, "--inputs", inputs.to_str().unwrap()])
        .code(1);
    assert!(busy.stderr.contains("is busy"), "{}", busy.stderr);
    // The engine got the parent-death signal and stopped; it did not run on.
    wait_for("the engine to stop", Duration::from_secs(30), || {
        stopped.exists()
    });
    assert_eq!(
        std::fs::read_to_string(&stopped).unwrap().trim(),
        "apply stopped"
    );
    // The next command says what happened, and where the work folder is.
    let status = runner.run(&["status"]).ok();
    assert!(
        status
            .stderr
            .contains("interrupted, state unknown — run plan"),
        "{}",
        status.stderr
    );
    let json = runner.run(&["status", "--json"]).ok().json();
    let interrupted = json["interrupted"].as_array().unwrap();
    assert_eq!(interrupted.len(), 1, "{json}");
    assert_eq!(interrupted[0]["kind"], "apply");
    let work = interrupted[0]["workFolder"].as_str().unwrap();
    assert!(
        Path::new(work).is_dir(),
        "the work folder `{work}` was not kept"
    );
    assert!(
        json["stacks"].as_array().unwrap().is_empty(),
        "nothing counts as deployed: {json}"
    );
    // Issue 23, item 15: a row says the stack's run was interrupted, not "nothing
    // has been applied".
    assert_eq!(json["notDeployed"][0]["state"], "interrupted", "{json}");
    let table = runner.run(&["status"]).ok();
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.starts_with("data-plane") && l.contains("interrupted")),
        "{}",
        table.stdout
    );
}

/// Issue 23, item 15: after a first apply stopped with SIGINT (a `failed` receipt),
/// `status` shows the stack as interrupted with what its state holds, instead of
/// "nothing has been applied by this runner yet".
#[test]
fn status_shows_a_stack_whose_first_apply_was_interrupted_with_what_its_state_holds() {
    let scratch = tempfile::tempdir().unwrap();
    let (_vendor, runner, child, _reference, _stopped) = applying(scratch.path());
    signal(&child, libc::SIGINT);
    Run::from(child.wait_with_output().unwrap()).code(130);
    let json = runner.run(&["status", "--json"]).ok().json();
    assert!(json["stacks"].as_array().unwrap().is_empty(), "{json}");
    let row = &json["notDeployed"][0];
    assert_eq!(row["stack"], "data-plane", "{json}");
    assert_eq!(row["state"], "interrupted", "{json}");
    assert_eq!(row["lastAttempt"]["kind"], "apply", "{json}");
    assert_eq!(row["lastAttempt"]["outcome"], "failed", "{json}");
    let table = runner.run(&["status"]).ok();
    assert!(
        !table.stderr.contains("nothing has been applied"),
        "{}",
        table.stderr
    );
    let line = table
        .stdout
        .lines()
        .find(|l| l.starts_with("data-plane"))
        .unwrap_or_else(|| panic!("no row for the stack: {}", table.stdout));
    assert!(line.contains("interrupted ("), "{line}");
    assert!(line.contains("apply"), "{line}");
}

/// True while `pid` runs (a zombie waiting for its parent to reap it is not running).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (name) STATE …`
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn sigkill_of_the_runner_leaves_none_of_the_engines_children_running() {
    let scratch = tempfile::tempdir().unwrap();
    // A provisioner's command as the engine would start it: a background child that
    // outlives its parent (it ignores SIGINT, and no parent-death signal reaches it).
    let engine = r#"
if [ "$1" = apply ]; then
  sleep 600 &
  echo $! > "$(dirname "$0")/provisioner.pid"
  stopped="$(dirname "$0")/engine.stopped"
  trap 'echo "$1 stopped" > "$stopped"; exit 1' INT TERM
  echo trapped >> "$0.ran"
  i=0
  while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi
exec "$REAL" "$@""#;
    let (_vendor, _runner, mut child, _reference, stopped) = applying_with(scratch.path(), engine);
    let pid_file = scratch.path().join("provisioner.pid");
    wait_for("the provisioner to start", Duration::from_secs(30), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<i32>().is_ok())
    });
    let provisioner: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(running(provisioner));
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for("the engine to stop", Duration::from_secs(30), || {
        stopped.exists()
    });
    wait_for(
        "the provisioner's command to be killed",
        Duration::from_secs(60),
        || !running(provisioner),
    );
}
