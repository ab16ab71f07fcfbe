//! How a release's wiring changed since its last version: a wiring removed or
//! pointing at another output breaks the downstream input (major), a new wiring is
//! a compatible addition (minor). Kept apart so `check`'s graph findings can share it.

use stackpack_schema::release::{ReleaseChange, ReleaseChangeKind, ReleaseStack};
use stackpack_schema::version::Bump;

/// The wiring changes from `previous` to `next`, for stacks present in both (a stack
/// added or removed is its own change).
pub fn wiring_changes(previous: &[ReleaseStack], next: &[ReleaseStack]) -> Vec<ReleaseChange> {
    let mut changes = Vec::new();
    for now in next {
        let Some(before) = previous.iter().find(|s| s.name == now.name) else {
            continue;
        };
        for (input, wire) in &before.inputs_from {
            let detail = match now.inputs_from.get(input) {
                Some(same) if same == wire => continue,
                Some(other) => format!(
                    "input `{}.{input}` was wired from `{wire}`, now from `{other}`",
                    now.name
                ),
                None => format!(
                    "input `{}.{input}` is no longer wired from `{wire}`",
                    now.name
                ),
            };
            changes.push(ReleaseChange {
                part: now.name.clone(),
                kind: ReleaseChangeKind::WiringBroken,
                bump: Bump::Major,
                detail,
            });
        }
        for (input, wire) in &now.inputs_from {
            if !before.inputs_from.contains_key(input) {
                changes.push(ReleaseChange {
                    part: now.name.clone(),
                    kind: ReleaseChangeKind::WiringChanged,
                    bump: Bump::Minor,
                    detail: format!("input `{}.{input}` is now wired from `{wire}`", now.name),
                });
            }
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use semver::Version;
    use stackpack_schema::digest::Digest;

    fn stack(name: &str, wires: &[(&str, &str)]) -> ReleaseStack {
        ReleaseStack {
            name: name.into(),
            version: Version::new(1, 0, 0),
            digest: Digest::of(name.as_bytes()),
            depends_on: vec![],
            inputs_from: wires
                .iter()
                .map(|(i, w)| (i.to_string(), w.parse().unwrap()))
                .collect(),
        }
    }

    #[test]
    fn removed_or_repointed_wiring_is_major_and_a_new_one_minor() {
        let before = [stack(
            "cluster",
            &[("vpc_id", "network.vpc_id"), ("subnet", "network.subnet")],
        )];
        let after = [stack(
            "cluster",
            &[("vpc_id", "network.other"), ("zone", "network.zone")],
        )];
        let changes = wiring_changes(&before, &after);
        let kinds: Vec<(ReleaseChangeKind, Bump)> =
            changes.iter().map(|c| (c.kind, c.bump)).collect();
        assert_eq!(
            kinds,
            [
                (ReleaseChangeKind::WiringBroken, Bump::Major),
                (ReleaseChangeKind::WiringBroken, Bump::Major),
                (ReleaseChangeKind::WiringChanged, Bump::Minor),
            ]
        );
        assert!(changes[1].detail.contains("now from `network.other`"));
        assert!(wiring_changes(&before, &before).is_empty());
    }
}
