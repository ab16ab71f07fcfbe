//! What a stack asks of the engine and of its providers: `required_version`,
//! provider version constraints across the whole tree, and provider sources.

use std::collections::BTreeSet;

use stackpack_interface::constraint::{compare_text, SetChange};
use stackpack_interface::{Location, ModuleInterface};

use super::rule::{finding, Rule};
use crate::check::finding::Finding;
use crate::check::tree::{join, Tree};

/// Providers whose source moved: another provider under the same local name.
pub(super) fn provider_sources(
    old: &ModuleInterface,
    new: &ModuleInterface,
    dir: &str,
    out: &mut Vec<Finding>,
) {
    let show_source = |c: Option<&str>| c.map_or("none".to_string(), |c| format!("`{c}`"));
    for (name, p) in &new.required_providers {
        let Some(prev) = old.required_providers.get(name) else {
            continue;
        };
        // No source means `hashicorp/<name>` on the default registry.
        let full_source = |s: &Option<String>| {
            s.as_deref().map_or_else(
                || format!("hashicorp/{name}"),
                |s| {
                    s.to_lowercase()
                        .trim_start_matches("registry.terraform.io/")
                        .to_string()
                },
            )
        };
        if full_source(&prev.source) != full_source(&p.source) {
            let (before, after) = (
                show_source(prev.source.as_deref()),
                show_source(p.source.as_deref()),
            );
            out.push(
                finding(
                    Rule::ProviderSourceChanged,
                    name,
                    dir,
                    &p.location,
                    format!("provider `{name}` changed its source from {before} to {after}"),
                )
                .with_change(before, after),
            );
        }
    }
}

/// The constraint every module of a tree puts together on the engine, or on one
/// provider: all of them must hold at once.
fn combined(tree: &Tree, pick: &dyn Fn(&ModuleInterface) -> Option<String>) -> Option<String> {
    let mut parts: Vec<String> = tree.modules.values().filter_map(|m| pick(m)).collect();
    parts.sort();
    parts.dedup();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Where a tree's constraint changed: the first module whose own constraint differs.
fn changed_site(
    old: &Tree,
    new: &Tree,
    pick: &dyn Fn(&ModuleInterface) -> Option<String>,
    locate: &dyn Fn(&ModuleInterface) -> Option<Location>,
) -> (String, Location) {
    for (dir, module) in &new.modules {
        let before = old.modules.get(dir).and_then(|m| pick(m));
        if pick(module) != before {
            return (dir.clone(), locate(module).unwrap_or_default());
        }
    }
    for (dir, module) in &old.modules {
        if !new.modules.contains_key(dir) && pick(module).is_some() {
            return (dir.clone(), locate(module).unwrap_or_default());
        }
    }
    (new.root_dir.clone(), locate(new.root()).unwrap_or_default())
}

/// A constraint in a message: quoted, or `none`.
fn show(constraint: &Option<String>) -> String {
    constraint
        .as_deref()
        .map_or("none".to_string(), |c| format!("`{c}`"))
}

/// Modules whose own constraint narrowed while the tree's did not: another module of
/// the tree already required as much (EKS v19.17.0 raised its root's `aws` from
/// `>= 4.47` to `>= 4.57`, which its self-managed node group already asked for). No
/// version allowed before is refused now, so no bump; a note says why.
fn narrowed_but_covered(
    old: &Tree,
    new: &Tree,
    what: &str,
    combined_before: Option<&str>,
    pick: &dyn Fn(&ModuleInterface) -> Option<String>,
    locate: &dyn Fn(&ModuleInterface) -> Option<Location>,
    notes: &mut Vec<String>,
) {
    for (dir, module) in &new.modules {
        let Some(before) = old.modules.get(dir) else {
            continue;
        };
        let (own_before, own_after) = (pick(before), pick(module));
        if compare_text(own_before.as_deref(), own_after.as_deref()) != SetChange::Narrowed {
            continue;
        }
        let at = locate(module).unwrap_or_default();
        notes.push(format!(
            "`{}`: {what} narrowed from `{}` to `{}` here, but the modules of `{}` together already required `{}`: no version allowed before is refused now (patch)",
            join(dir, &at.to_string()),
            own_before.as_deref().unwrap_or("any"),
            own_after.as_deref().unwrap_or("any"),
            new.root_dir,
            combined_before.unwrap_or("any"),
        ));
    }
}

/// Engine and provider constraints, as the whole tree (the stack and every module it
/// vendors) states them: a vendored module that narrows its provider constraint
/// narrows the stack's too. `notes` says where one module narrowed what the tree
/// already required.
pub fn diff_constraints(old: &Tree, new: &Tree, out: &mut Vec<Finding>, notes: &mut Vec<String>) {
    let engine = |m: &ModuleInterface| m.required_version.as_ref().map(|(v, _)| v.clone());
    let engine_at = |m: &ModuleInterface| m.required_version.as_ref().map(|(_, l)| l.clone());
    let (before, after) = (combined(old, &engine), combined(new, &engine));
    let change = compare_text(before.as_deref(), after.as_deref());
    if change == SetChange::Same {
        narrowed_but_covered(
            old,
            new,
            "`required_version`",
            before.as_deref(),
            &engine,
            &engine_at,
            notes,
        );
    } else {
        let (dir, loc) = changed_site(old, new, &engine, &engine_at);
        let (rule, how) = match change {
            SetChange::Narrowed => (
                Rule::EngineConstraintNarrowed,
                "some engine versions allowed before no longer are",
            ),
            _ => (
                Rule::EngineConstraintWidened,
                "every engine version allowed before still is",
            ),
        };
        out.push(
            finding(
                rule,
                "required_version",
                &dir,
                &loc,
                format!(
                    "`required_version` changed from {} to {}: {how}",
                    show(&before),
                    show(&after)
                ),
            )
            .with_change(show(&before), show(&after)),
        );
    }
    provider_constraints(old, new, out, notes);
}

/// Provider constraints across the tree: those the release already used, declared
/// or only implied by its resources (no constraint: every version), that the new
/// tree constrains.
fn provider_constraints(old: &Tree, new: &Tree, out: &mut Vec<Finding>, notes: &mut Vec<String>) {
    let used: BTreeSet<&str> = old
        .modules
        .values()
        .flat_map(|m| {
            m.required_providers
                .keys()
                .map(String::as_str)
                .chain(m.resources.iter().map(|r| r.provider()))
        })
        .collect();
    let names: BTreeSet<&String> = new
        .modules
        .values()
        .flat_map(|m| m.required_providers.keys())
        .filter(|n| used.contains(n.as_str()))
        .collect();
    for name in names {
        let version = |m: &ModuleInterface| {
            m.required_providers
                .get(name)
                .and_then(|p| p.version.clone())
        };
        let version_at =
            |m: &ModuleInterface| m.required_providers.get(name).map(|p| p.location.clone());
        let (before, after) = (combined(old, &version), combined(new, &version));
        let change = compare_text(before.as_deref(), after.as_deref());
        if change == SetChange::Same {
            narrowed_but_covered(
                old,
                new,
                &format!("provider `{name}` constraint"),
                before.as_deref(),
                &version,
                &version_at,
                notes,
            );
            continue;
        }
        let (dir, loc) = changed_site(old, new, &version, &version_at);
        let (rule, how) = match change {
            SetChange::Narrowed => (
                Rule::ProviderConstraintNarrowed,
                "some versions allowed before no longer are",
            ),
            _ => (
                Rule::ProviderConstraintWidened,
                "every version allowed before still is",
            ),
        };
        out.push(
            finding(
                rule,
                name.as_str(),
                &dir,
                &loc,
                format!(
                    "provider `{name}` constraint changed from {} to {}: {how}",
                    show(&before),
                    show(&after)
                ),
            )
            .with_change(show(&before), show(&after)),
        );
    }
}
