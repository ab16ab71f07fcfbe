//! What changed in a release since its last stable version, and the bump that
//! follows: the largest of its parts' bumps.

use semver::Version;
use stackpack_schema::release::{
    ReleaseChange, ReleaseChangeKind, ReleaseDescription, ReleaseEngine, ReleaseService,
    ReleaseStack,
};
use stackpack_schema::version::Bump;

use crate::release::wiring::wiring_changes;

/// Every change from `previous` to the new stacks and services.
pub(crate) fn release_changes(
    previous: &ReleaseDescription,
    stacks: &[ReleaseStack],
    services: &[ReleaseService],
) -> Vec<ReleaseChange> {
    let mut changes = Vec::new();
    let change = |part: &str, kind, bump, detail: String| ReleaseChange {
        part: part.to_string(),
        kind,
        bump,
        detail,
    };
    for before in &previous.stacks {
        match stacks.iter().find(|s| s.name == before.name) {
            None => changes.push(change(
                &before.name,
                ReleaseChangeKind::StackRemoved,
                Bump::Major,
                format!(
                    "stack `{}` ({}) left the release",
                    before.name, before.version
                ),
            )),
            Some(now) if now.digest != before.digest => changes.push(change(
                &now.name,
                ReleaseChangeKind::StackChanged,
                stack_bump(&before.version, &now.version),
                format!("{} → {}", before.version, now.version),
            )),
            Some(_) => {}
        }
    }
    for now in stacks {
        if previous.stack(&now.name).is_none() {
            changes.push(change(
                &now.name,
                ReleaseChangeKind::StackAdded,
                Bump::Minor,
                format!("stack `{}` ({}) joined the release", now.name, now.version),
            ));
        }
    }
    changes.extend(wiring_changes(&previous.stacks, stacks));
    for before in &previous.services {
        match services.iter().find(|s| s.name == before.name) {
            None => changes.push(change(
                &before.name,
                ReleaseChangeKind::ServiceRemoved,
                Bump::Major,
                format!("service `{}` left the release", before.name),
            )),
            Some(now) if now.digest != before.digest => changes.push(change(
                &now.name,
                ReleaseChangeKind::ServiceChanged,
                Bump::Patch,
                format!("{} → {}", before.digest.short(), now.digest.short()),
            )),
            Some(_) => {}
        }
    }
    for now in services {
        if previous.service(&now.name).is_none() {
            changes.push(change(
                &now.name,
                ReleaseChangeKind::ServiceAdded,
                Bump::Minor,
                format!("service `{}` joined the release", now.name),
            ));
        }
    }
    changes
}

/// The change of the engine the release carries, if any: one added is a minor
/// change, one removed a major one (customers must then bring their own), one
/// changed bumps as its version did (a rebuild of one version is a patch).
pub(crate) fn engine_change(
    release: &str,
    before: Option<&ReleaseEngine>,
    now: Option<&ReleaseEngine>,
) -> Option<ReleaseChange> {
    let (kind, bump, detail) = match (before, now) {
        (None, None) => return None,
        (Some(before), Some(now)) if before.digest == now.digest => return None,
        (None, Some(now)) => (
            ReleaseChangeKind::EngineAdded,
            Bump::Minor,
            format!("the release carries `{}` {}", now.name, now.version),
        ),
        (Some(before), None) => (
            ReleaseChangeKind::EngineRemoved,
            Bump::Major,
            format!(
                "the release no longer carries `{}` {}: customers bring their own",
                before.name, before.version
            ),
        ),
        (Some(before), Some(now)) => (
            ReleaseChangeKind::EngineChanged,
            if before.name != now.name {
                Bump::Major
            } else {
                stack_bump(&before.version, &now.version)
            },
            format!(
                "`{}` {} → `{}` {}",
                before.name, before.version, now.name, now.version
            ),
        ),
    };
    Some(ReleaseChange {
        part: release.to_string(),
        kind,
        bump,
        detail,
    })
}

/// The bump a release takes: the largest of its changes', a patch when only the
/// graph's order moved.
pub(crate) fn release_bump(changes: &[ReleaseChange]) -> Bump {
    changes.iter().map(|c| c.bump).max().unwrap_or(Bump::Patch)
}

/// A stack's bump, read from the semver difference between its two versions; a
/// version that went down is treated as breaking.
fn stack_bump(before: &Version, now: &Version) -> Bump {
    if now.major != before.major || now < before {
        Bump::Major
    } else if now.minor != before.minor {
        Bump::Minor
    } else {
        Bump::Patch
    }
}

/// True when two descriptions pin the same parts the same way: stacks (digests,
/// order, dependencies, wiring) and services (names and digests).
pub(crate) fn same_parts(
    previous: &ReleaseDescription,
    stacks: &[ReleaseStack],
    services: &[ReleaseService],
) -> bool {
    let service_pins = |list: &[ReleaseService]| -> Vec<(String, String)> {
        list.iter()
            .map(|s| (s.name.clone(), s.digest.to_string()))
            .collect()
    };
    let stack_pins = |list: &[ReleaseStack]| -> Vec<ReleaseStack> {
        list.iter()
            .map(|s| ReleaseStack {
                version: Version::new(0, 0, 0),
                ..s.clone()
            })
            .collect()
    };
    stack_pins(&previous.stacks) == stack_pins(stacks)
        && service_pins(&previous.services) == service_pins(services)
}
