//! `sync`: thin over `stackpack_runner::sync` (`pending` and `approve` have files
//! of their own).

use std::time::Duration;

use serde_json::json;
use stackpack_runner::home::{self, SyncSource};
use stackpack_runner::installation::Installation;
use stackpack_runner::release::run::ReleaseUi;
use stackpack_runner::sync::deployable;
use stackpack_runner::sync::pass::{self, Outcome, Pass};
use stackpack_runner::sync::registry::Registry;
use stackpack_runner::{Error, Result};
use stackpack_schema::rollout::{ApprovedKind, SyncReleaseReport};
use stackpack_terminal::ExitStatus;

use super::{open_installation, print_json, quiet, status, table, verbose};
use crate::cli::{GlobalArgs, SourceArg, SyncArgs};

fn status_line(line: &str) {
    status(line)
}

pub(super) fn ui() -> ReleaseUi<'static> {
    ReleaseUi {
        verbose: verbose(),
        quiet: quiet(),
        status: &status_line,
    }
}

/// `runner.toml`'s pass, with the flags' overrides.
fn pass_of(installation: &Installation, args: &SyncArgs) -> Result<Pass> {
    let mut pass = Pass::from_home(installation);
    if let Some(source) = args.source {
        pass.source = match source {
            SourceArg::Registry => SyncSource::Registry,
            SourceArg::Desired => SyncSource::Desired,
            SourceArg::Store => SyncSource::Store,
        };
    } else if installation.config.sync.source.is_none() {
        if args.registry.is_some() {
            pass.source = SyncSource::Registry;
        } else if args.desired.is_some() {
            pass.source = SyncSource::Desired;
        }
    }
    if let Some(desired) = &args.desired {
        pass.desired = Some(desired.clone());
    }
    if let Some(inputs) = &args.inputs {
        pass.inputs = Some(inputs.clone());
    }
    let address = args
        .registry
        .as_ref()
        .or(installation.config.sync.registry.as_ref());
    if let Some(address) = address {
        let insecure = args.insecure || installation.config.sync.insecure;
        pass.registry = Some(Registry::new(address, insecure, args.token.clone())?);
    }
    Ok(pass)
}

pub fn sync(global: &GlobalArgs, args: &SyncArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let Some(every) = &args.every else {
        let outcome = pass::run_pass(&installation, &pass_of(&installation, args)?, &ui())?;
        show(&outcome, args.json);
        return Ok(ExitStatus::success_if(!outcome.failed()));
    };
    let interval = home::parse_age(every)
        .filter(|s| *s > 0)
        .map(|s| Duration::from_secs(s as u64))
        .ok_or_else(|| {
            Error::usage(format!("`--every {every}` is not a duration"))
                .hint("write it as `1h`, `30m`, `1d` or `90s`")
        })?;
    // Between passes SIGTERM and SIGINT end the loop (exit 0); during a pass, an
    // engine run records them as it always does, and the loop ends after the pass.
    let _guard = stackpack_runner::interrupt::Guard::install();
    let mut backoff: Option<Duration> = None;
    loop {
        let failed = match pass_of(&installation, args)
            .and_then(|p| pass::run_pass(&installation, &p, &ui()))
        {
            Ok(outcome) => {
                show(&outcome, args.json);
                outcome.failed()
            }
            Err(error) => {
                stackpack_terminal::report(&error);
                true
            }
        };
        let wait = if failed {
            let next = backoff
                .map(|b| (b * 2).min(interval))
                .unwrap_or_else(|| (interval / 16).max(Duration::from_secs(1)));
            backoff = Some(next);
            next
        } else {
            backoff = None;
            jitter(interval)
        };
        status(&format!("next pass in {}s", wait.as_secs()));
        if sleep_unless_stopped(wait) {
            status("stopping: signal received between passes");
            return Ok(ExitStatus::Success);
        }
    }
}

/// `interval` ±10%, so a fleet started together does not call at once.
fn jitter(interval: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().wrapping_mul(2_654_435_761);
    let fraction = (nanos % 2001) as f64 / 10_000.0 - 0.1;
    interval.mul_f64(1.0 + fraction)
}

/// Sleeps `wait`, waking early when a signal arrived; true when it did.
fn sleep_unless_stopped(wait: Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    while std::time::Instant::now() < deadline {
        if stackpack_runner::interrupt::received().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200).min(deadline - std::time::Instant::now()));
    }
    stackpack_runner::interrupt::received().is_some()
}

pub(super) fn version(v: &Option<semver::Version>) -> String {
    v.as_ref()
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".into())
}

pub(super) fn detail(r: &SyncReleaseReport) -> String {
    let mut text = r.message.clone().unwrap_or_default();
    if let Some(p) = &r.pending {
        if text.is_empty() {
            text = format!("approve with `stackpack-runner approve {}`", p.id);
        }
    }
    if text.is_empty() {
        if let Some(receipt) = &r.receipt_id {
            text = format!("release receipt `{receipt}`");
        }
    }
    text
}

fn show(outcome: &Outcome, json: bool) {
    let report = &outcome.report;
    if json {
        print_json(&json!({
            "report": report,
            "receiptsSent": outcome.sent,
            "unreported": outcome.unreported,
        }));
        return;
    }
    if let Some(interrupted) = &report.interrupted {
        status(&format!("an earlier run was interrupted: {interrupted}"));
    }
    if report.releases.is_empty() {
        println!("nothing is assigned to this runner");
        return;
    }
    let rows: Vec<Vec<String>> = report
        .releases
        .iter()
        .map(|r| {
            vec![
                named(r.kind, &r.release),
                version(&r.assigned),
                version(&r.running),
                r.state.to_string(),
                detail(r),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["RELEASE", "ASSIGNED", "RUNNING", "STATE", "DETAIL"],
            &rows
        )
    );
}

/// A release by its name; a single stack marked as one.
pub(super) fn named(kind: ApprovedKind, name: &str) -> String {
    deployable::of(kind).named(name)
}
