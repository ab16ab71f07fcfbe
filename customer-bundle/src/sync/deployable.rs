//! What a pass does differently with a release and with a single stack synced as a
//! release of one ([`single`]): one implementation each, so the pass itself never
//! asks which of the two it holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use semver::Version;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::release::{find_release, releases_in, VerifiedRelease};
use stackpack_bundle::remote::Progress;
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type;
use stackpack_schema::receipt::{ReceiptKind, ReleaseRef};
use stackpack_schema::rollout::ApprovedKind;

use super::single;
use crate::error::Result;
use crate::home::Home;
use crate::installation::Installation;
use crate::ledger::Ledger;
use crate::pull::RemoteBundle;
use crate::release::receipt::StackResult;
use crate::release::run::StackRun;
use crate::release::wiring::{self, StackInputs};
use crate::release::{history, ops, stored};
use crate::store::Imported;

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

    /// The inputs a pass runs it with: a release's folder (`given`, else `default`),
    /// a single stack's file (`given`, else `<default>/<stack>.tfvars`); the
    /// refusal's message when there are none.
    fn inputs(
        &self,
        name: &str,
        given: Option<PathBuf>,
        default: Option<PathBuf>,
    ) -> std::result::Result<PathBuf, String>;

    /// The digest of the store's `name@version` (a release's index, a single
    /// stack's bundle manifest), if the store holds it.
    fn held(&self, store: &ImageLayout, name: &str, version: &Version) -> Result<Option<Digest>>;

    /// The versions of `name` the store holds.
    fn versions_held(&self, store: &ImageLayout, name: &str) -> Result<Vec<Version>>;

    /// The release its stacks' receipts name: the release itself, none for a
    /// single stack (its receipts are its own).
    fn part_of(&self, release: &VerifiedRelease) -> Option<ReleaseRef>;

    /// How a report names it: a release by its name, a single stack marked as one.
    fn named(&self, name: &str) -> String;

    /// The registry folder it is published under (`NS/<folder>/<name>`).
    fn folder(&self) -> &'static str;

    /// The media type of what a channel statement about it approves.
    fn media_type(&self) -> &'static str;

    /// Pulls it from `reference` into the store, verified: the bundles imported, and
    /// the releases (`NAME@VERSION`) it added. `progress` follows a bundle's layers.
    fn pull(
        &self,
        home: &Home,
        reference: &RemoteBundle,
        insecure: bool,
        progress: Option<Progress>,
    ) -> Result<Pulled>;

    /// What `path`, named as its inputs in the desired state, should be and the
    /// hint, when it is not that (a release's folder, a single stack's file).
    fn missing_inputs(&self, path: &Path) -> Option<(&'static str, &'static str)>;
}

/// A release: many stacks, with a release receipt of their runs.
pub struct Release;

/// A single stack, synced as a release of one: its own receipts, no release's.
pub struct Stack;

/// What a pull brought into the store.
pub struct Pulled {
    /// Every bundle imported (or found there already).
    pub imported: Vec<Imported>,
    /// The releases it added, `NAME@VERSION` (none for a single stack).
    pub releases: Vec<String>,
}

/// The implementation for what a target or a pending approval names.
pub fn of(kind: ApprovedKind) -> &'static dyn Deployable {
    match kind {
        ApprovedKind::Release => &Release,
        ApprovedKind::Stack => &Stack,
    }
}

/// The implementation for what a pull reference names: a release's repository is
/// `NS/releases/NAME`, a stack's anything else (`NS/stacks/NAME`, a mirror's path).
pub fn of_reference(reference: &RemoteBundle) -> &'static dyn Deployable {
    let parent = reference
        .repository
        .rsplit_once('/')
        .map(|(parent, _)| parent);
    if parent.is_some_and(|p| p == "releases" || p.ends_with("/releases")) {
        &Release
    } else {
        &Stack
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

    fn inputs(
        &self,
        name: &str,
        given: Option<PathBuf>,
        default: Option<PathBuf>,
    ) -> std::result::Result<PathBuf, String> {
        given.or(default).ok_or_else(|| {
            format!("no inputs folder for release `{name}`: set `inputs` under `[sync]` in `runner.toml`, or for the release in the desired-state file")
        })
    }

    fn held(&self, store: &ImageLayout, name: &str, version: &Version) -> Result<Option<Digest>> {
        Ok(find_release(store, name, version)?.map(|d| d.digest))
    }

    fn versions_held(&self, store: &ImageLayout, name: &str) -> Result<Vec<Version>> {
        Ok(releases_in(store)?
            .into_iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, v, _)| v)
            .collect())
    }

    fn part_of(&self, release: &VerifiedRelease) -> Option<ReleaseRef> {
        Some(crate::release::run::reference(release))
    }

    fn named(&self, name: &str) -> String {
        name.to_string()
    }

    fn folder(&self) -> &'static str {
        "releases"
    }

    fn media_type(&self) -> &'static str {
        media_type::OCI_INDEX
    }

    fn pull(
        &self,
        home: &Home,
        reference: &RemoteBundle,
        insecure: bool,
        _progress: Option<Progress>,
    ) -> Result<Pulled> {
        Ok(Pulled {
            imported: crate::release::pull::pull(home, reference, insecure)?,
            releases: vec![format!("{}@{}", reference.stack, reference.version)],
        })
    }

    fn missing_inputs(&self, path: &Path) -> Option<(&'static str, &'static str)> {
        (!path.is_dir()).then_some(("folder", "the folder holds one `STACK.tfvars` per stack; paths are relative to the desired-state file"))
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

    fn inputs(
        &self,
        name: &str,
        given: Option<PathBuf>,
        default: Option<PathBuf>,
    ) -> std::result::Result<PathBuf, String> {
        given
            .or_else(|| default.map(|d| d.join(format!("{name}.tfvars"))))
            .ok_or_else(|| {
                format!("no inputs for stack `{name}`: set `inputs` under `[sync]` in `runner.toml` (the folder holding `{name}.tfvars`), or `inputs = \"FILE\"` for the stack in the desired-state file")
            })
    }

    fn held(&self, store: &ImageLayout, name: &str, version: &Version) -> Result<Option<Digest>> {
        Ok(store.find_bundle(name, version)?.map(|d| d.digest))
    }

    fn versions_held(&self, store: &ImageLayout, name: &str) -> Result<Vec<Version>> {
        Ok(store.versions(name)?)
    }

    fn part_of(&self, _release: &VerifiedRelease) -> Option<ReleaseRef> {
        None
    }

    fn named(&self, name: &str) -> String {
        format!("{name} (stack)")
    }

    fn folder(&self) -> &'static str {
        "stacks"
    }

    fn media_type(&self) -> &'static str {
        media_type::OCI_MANIFEST
    }

    fn pull(
        &self,
        home: &Home,
        reference: &RemoteBundle,
        insecure: bool,
        progress: Option<Progress>,
    ) -> Result<Pulled> {
        Ok(Pulled {
            imported: crate::pull::pull(home, reference, insecure, progress)?,
            releases: Vec::new(),
        })
    }

    fn missing_inputs(&self, path: &Path) -> Option<(&'static str, &'static str)> {
        (!path.is_file()).then_some(("file", "a single stack's inputs are one `.tfvars` file; paths are relative to the desired-state file"))
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
