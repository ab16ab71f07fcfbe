//! The version and inputs a run resolves to, from the request or the ledger, and the
//! policy on them (no unwanted prerelease, no accidental downgrade).

use std::path::PathBuf;

use semver::Version;
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use super::request::{Request, Target};
use crate::error::{Error, Result};
use crate::home::Home;
use crate::ledger::Ledger;

/// The version and inputs a run resolved to, and what ran before.
pub(super) struct Resolved {
    pub(super) version: Version,
    pub(super) inputs: Vec<PathBuf>,
    pub(super) previous: Option<Version>,
}

/// The version to run and the inputs to run it with, from the request or the ledger.
pub(super) fn resolve(ledger: &Ledger, request: &Request) -> Result<Resolved> {
    let stack = &request.stack;
    let current = ledger.current(stack)?;
    let installed = current.as_ref().map(|d| d.version.clone());
    let current_or_refuse = || current.clone().ok_or_else(|| not_deployed(stack));
    Ok(match &request.target {
        Target::Plan { version, inputs }
        | Target::Apply {
            version, inputs, ..
        } => Resolved {
            version: version.clone(),
            inputs: inputs.clone(),
            previous: installed,
        },
        Target::Drift | Target::Destroy => {
            let current = current_or_refuse()?;
            Resolved {
                version: current.version.clone(),
                inputs: vec![PathBuf::from(&current.inputs_file)],
                previous: Some(current.version),
            }
        }
        Target::Rollback { inputs } => {
            let current = current_or_refuse()?;
            // An upgrade that failed part-way left some of the newer version in the
            // state while the version in place is still the current one: going back
            // means re-applying that, the last version that applied cleanly, not the
            // one before it.
            let failed_upgrade = ledger.last_attempt(stack)?.is_some_and(|last| {
                last.receipt.kind == ReceiptKind::Apply
                    && last.receipt.outcome == Outcome::Failed
                    && last.receipt.version != current.version
            });
            let target = if failed_upgrade {
                Some(current.clone())
            } else {
                ledger.rollback_target(stack)?
            };
            let target = target.ok_or_else(|| {
                Error::refused(format!(
                    "stack `{stack}` has no earlier version to roll back to from `{}`",
                    current.version
                ))
                .hint(format!(
                    "to go to another version, run `stackpack-runner apply {stack}@VERSION --allow-downgrade`"
                ))
            })?;
            Resolved {
                version: target.version,
                inputs: if inputs.is_empty() {
                    vec![PathBuf::from(&target.inputs_file)]
                } else {
                    inputs.clone()
                },
                previous: Some(current.version),
            }
        }
    })
}

/// Stable-only customers get no prerelease; nobody downgrades by accident.
pub(super) fn check_policy(home: &Home, request: &Request, resolved: &Resolved) -> Result<()> {
    let stack = &request.stack;
    let version = &resolved.version;
    if !version.pre.is_empty() && !home.config.policy.allow_prereleases {
        return Err(Error::refused(format!(
            "`{stack}@{version}` is a prerelease, and this runner's policy allows stable versions only"
        ))
        .at(format!("`{}`", home.root.join("runner.toml").display()))
        .hint("set `allow-prereleases = true` under `[policy]` in `runner.toml` to allow prereleases"));
    }
    if let (
        Target::Apply {
            allow_downgrade: false,
            ..
        },
        Some(installed),
    ) = (&request.target, &resolved.previous)
    {
        if version.cmp_precedence(installed) == std::cmp::Ordering::Less {
            return Err(Error::refused(format!(
                "`{stack}@{version}` is older than the installed `{installed}`: refusing to downgrade"
            ))
            .hint(format!(
                "run `stackpack-runner rollback {stack}` to go back, or pass `--allow-downgrade`"
            )));
        }
    }
    Ok(())
}

pub(super) fn not_deployed(stack: &str) -> Error {
    Error::refused(format!(
        "stack `{stack}` is not deployed by this runner: it was never applied, or was destroyed"
    ))
    .hint(format!(
        "apply it first with `stackpack-runner apply {stack}@VERSION --inputs FILE`"
    ))
}
