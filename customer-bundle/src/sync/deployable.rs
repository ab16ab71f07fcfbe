//! What a pass does differently with a release and with a single stack synced as a
//! release of one ([`single`]): one implementation each, so the pass itself never
//! asks which of the two it holds.

use std::collections::BTreeMap;
use std::path::Path;

use semver::Version;
use stackpack_bundle::release::VerifiedRelease;
use stackpack_schema::receipt::ReceiptKind;
use stackpack_schema::rollout::ApprovedKind;

use super::single;
use crate::error::Result;
use crate::installation::Installation;
use crate::ledger::Ledger;
use crate::release::receipt::StackResult;
use crate::release::run::StackRun;
use crate::release::wiring::{self, StackInputs};
use crate::release::{history, ops, stored};

/// What a release and a single stack share in a pass.
pub trait Deployable {
    /// The version of `name` in place.
    fn running(&self, ledger: &Ledger, name: &str) -> Result<Option<Version>>;

    /// `name@version` as the store holds it, verified.
    fn load(
        &self,
        installation: &Installation,
        name: &str,
        version: &Version,
    ) -> Result<VerifiedRelease>;

    /// Why an unattended pass leaves `name` alone (another release claims what it
    /// would change), or `None` when it may go on.
    fn held_back(
        &self,
        ledger: &Ledger,
        name: &str,
        release: &VerifiedRelease,
    ) -> Result<Option<String>>;

    /// The stacks with their inputs checked (`inputs` is the folder, or a single
    /// stack's file).
    fn stacks(
        &self,
        installation: &Installation,
        release: &VerifiedRelease,
        inputs: &Path,
    ) -> Result<Vec<StackInputs>>;

    /// The id of the receipt that records what ran: a release's own release receipt
    /// (made when something ran or `placed` says the release is now in place), a
    /// single stack's run receipt.
    fn receipt_id(
        &self,
        installation: &Installation,
        release: &VerifiedRelease,
        started_at: String,
        ran: BTreeMap<String, StackRun>,
        placed: bool,
    ) -> Result<Option<String>>;
}

/// A release: many stacks, with a release receipt of their runs.
pub struct Release;

/// A single stack, synced as a release of one: its own receipts, no release's.
pub struct Stack;

/// The implementation for what a target or a pending approval names.
pub fn of(kind: ApprovedKind) -> &'static dyn Deployable {
    match kind {
        ApprovedKind::Release => &Release,
        ApprovedKind::Stack => &Stack,
    }
}

impl Deployable for Release {
    fn running(&self, ledger: &Ledger, name: &str) -> Result<Option<Version>> {
        history::current(ledger, name)
    }

    fn load(
        &self,
        installation: &Installation,
        name: &str,
        version: &Version,
    ) -> Result<VerifiedRelease> {
        stored::load(installation, name, version)
    }

    fn held_back(
        &self,
        ledger: &Ledger,
        _name: &str,
        release: &VerifiedRelease,
    ) -> Result<Option<String>> {
        Ok(history::check_claims(ledger, &release.description)
            .err()
            .map(|error| error.message))
    }

    fn stacks(
        &self,
        installation: &Installation,
        release: &VerifiedRelease,
        inputs: &Path,
    ) -> Result<Vec<StackInputs>> {
        wiring::check_inputs_dir(installation, &release.description, inputs)
    }

    fn receipt_id(
        &self,
        installation: &Installation,
        release: &VerifiedRelease,
        started_at: String,
        ran: BTreeMap<String, StackRun>,
        placed: bool,
    ) -> Result<Option<String>> {
        if ran.is_empty() && !placed {
            return Ok(None);
        }
        let signed = record(installation, release, started_at, ran)?;
        Ok(Some(signed.receipt.id))
    }
}

impl Deployable for Stack {
    fn running(&self, ledger: &Ledger, name: &str) -> Result<Option<Version>> {
        Ok(ledger.current(name)?.map(|d| d.version))
    }

    fn load(
        &self,
        installation: &Installation,
        name: &str,
        version: &Version,
    ) -> Result<VerifiedRelease> {
        single::load(installation, name, version)
    }

    /// Unattended, a pass does not take a stack out of the release it runs in.
    fn held_back(
        &self,
        ledger: &Ledger,
        name: &str,
        _release: &VerifiedRelease,
    ) -> Result<Option<String>> {
        Ok(history::claimed_by(ledger, name)?.map(|other| {
            format!(
                "stack `{name}` runs as part of release `{}@{}`: a pass does not apply it on its own (destroy the release first, or assign the release)",
                other.name, other.version
            )
        }))
    }

    fn stacks(
        &self,
        installation: &Installation,
        release: &VerifiedRelease,
        inputs: &Path,
    ) -> Result<Vec<StackInputs>> {
        single::stack_inputs(installation, release, inputs)
    }

    fn receipt_id(
        &self,
        _installation: &Installation,
        _release: &VerifiedRelease,
        _started_at: String,
        ran: BTreeMap<String, StackRun>,
        _placed: bool,
    ) -> Result<Option<String>> {
        Ok(ran.values().find_map(|s| s.receipt_id.clone()))
    }
}

/// The release receipt of what ran, every stack of the release listed.
fn record(
    installation: &Installation,
    release: &VerifiedRelease,
    started_at: String,
    mut ran: BTreeMap<String, StackRun>,
) -> Result<crate::release::receipt::SignedReleaseReceipt> {
    let ledger = installation.ledger()?;
    let mut stacks = Vec::new();
    for stack in &release.description.stacks {
        if let Some(run) = ran.remove(&stack.name) {
            stacks.push(run);
            continue;
        }
        let current = ledger.current(&stack.name)?;
        let at = current
            .as_ref()
            .is_some_and(|d| d.digest == stack.digest.to_string());
        stacks.push(StackRun {
            name: stack.name.clone(),
            version: stack.version.clone(),
            result: if at {
                StackResult::Unchanged
            } else {
                StackResult::NotReached
            },
            receipt_id: current
                .as_ref()
                .filter(|_| at)
                .map(|d| d.receipt_id.clone()),
            before: current.map(|d| d.version),
            error: None,
            outputs: None,
        });
    }
    ops::record(
        installation,
        release,
        ReceiptKind::Apply,
        started_at,
        &stacks,
    )
}
