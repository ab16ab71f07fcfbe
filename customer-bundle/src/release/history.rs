//! What the ledger says of releases: which release each stack belongs to, which
//! version of a release is in place, and which one a rollback returns to.

use semver::Version;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::release::ReleaseDescription;

use super::receipt::SignedReleaseReceipt;
use crate::error::{Error, Result};
use crate::ledger::Ledger;

/// The release `stack` is installed as part of, if any: the one its current
/// deployment's receipt names.
pub fn claimed_by(
    ledger: &Ledger,
    stack: &str,
) -> Result<Option<stackpack_schema::receipt::ReleaseRef>> {
    let Some(current) = ledger.current(stack)? else {
        return Ok(None);
    };
    Ok(ledger
        .receipt(&current.receipt_id)?
        .and_then(|r| r.receipt.release))
}

/// Refuses a release containing a stack installed as part of another release.
pub fn check_claims(ledger: &Ledger, description: &ReleaseDescription) -> Result<()> {
    for stack in &description.stacks {
        if let Some(other) = claimed_by(ledger, &stack.name)? {
            if other.name != description.name {
                return Err(Error::refused(format!(
                    "nothing was applied: stack `{}` is installed as part of release `{}@{}`, and release `{}@{}` contains it too",
                    stack.name, other.name, other.version, description.name, description.version
                ))
                .hint(format!(
                    "a stack belongs to one release in a runner home: destroy release `{}` first (`stackpack-runner destroy {}`), or apply `{}` alone",
                    other.name, other.name, other.name
                )));
            }
        }
    }
    Ok(())
}

/// The versions of `release` as they were put in place, oldest at the bottom: an
/// apply puts one on top (replacing the top when it is the same version), a
/// rollback takes the top off, a destroy clears them. The top is what runs; the one
/// below is where a rollback goes.
pub fn stack_of_versions(receipts: &[SignedReleaseReceipt]) -> Vec<SignedReleaseReceipt> {
    let mut applied: Vec<SignedReleaseReceipt> = Vec::new();
    for signed in receipts.iter().rev() {
        let r = &signed.receipt;
        match r.kind {
            ReceiptKind::Destroy if r.outcome == Outcome::Succeeded => applied.clear(),
            ReceiptKind::Apply if r.outcome == Outcome::Succeeded => {
                if applied
                    .last()
                    .is_some_and(|top| top.receipt.version == r.version)
                {
                    applied.pop();
                }
                applied.push(signed.clone());
            }
            ReceiptKind::Rollback if r.outcome == Outcome::Succeeded => {
                while applied
                    .last()
                    .is_some_and(|top| top.receipt.version != r.version)
                {
                    applied.pop();
                }
                if applied.is_empty() {
                    applied.push(signed.clone());
                } else {
                    *applied.last_mut().expect("not empty") = signed.clone();
                }
            }
            _ => {}
        }
    }
    applied
}

/// The version of `release` in place, if any.
pub fn current(ledger: &Ledger, release: &str) -> Result<Option<Version>> {
    let receipts = ledger.release_receipts(Some(release))?;
    Ok(stack_of_versions(&receipts)
        .pop()
        .map(|r| r.receipt.version))
}

/// Refuses, before anything runs, a release that pins an older version of a stack
/// than the one installed, unless downgrades are allowed.
pub fn check_downgrades(
    ledger: &Ledger,
    description: &ReleaseDescription,
    allowed: bool,
) -> Result<()> {
    if allowed {
        return Ok(());
    }
    for stack in &description.stacks {
        let Some(current) = ledger.current(&stack.name)? else {
            continue;
        };
        if stack.version.cmp_precedence(&current.version) == std::cmp::Ordering::Less {
            return Err(Error::refused(format!(
                "nothing was applied: release `{}@{}` pins `{}@{}`, older than the installed `{}`",
                description.name, description.version, stack.name, stack.version, current.version
            ))
            .hint(format!(
                "run `stackpack-runner rollback {}` to go back to the previous release, or pass `--allow-downgrade`",
                description.name
            )));
        }
    }
    Ok(())
}
