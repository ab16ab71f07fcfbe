//! The releases part of `status`: each release run here, the version in place, its
//! stacks (any not at the release's version is "mixed") and its services.

use serde_json::json;
use stackpack_runner::ledger::Ledger;
use stackpack_runner::release::history;
use stackpack_runner::Result;
use stackpack_schema::receipt::{Outcome, ReceiptKind};

use super::table;

/// `status`: each release run here, its stacks (any not at the release's version
/// is "mixed") and its services.
pub fn releases_status(ledger: &Ledger) -> Result<serde_json::Value> {
    let mut names: Vec<String> = ledger
        .release_receipts(None)?
        .into_iter()
        .map(|r| r.receipt.release)
        .collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let receipts = ledger.release_receipts(Some(&name))?;
        let last = receipts.first().expect("a name from a receipt").clone();
        let current = history::current(ledger, &name)?;
        let Some(version) = current.clone().or(Some(last.receipt.version.clone())) else {
            continue;
        };
        let stacks_of = receipts
            .iter()
            .find(|r| r.receipt.version == version)
            .unwrap_or(&last);
        let mut stacks = Vec::new();
        let mut mixed = false;
        for s in &stacks_of.receipt.stacks {
            let installed = ledger.current(&s.name)?;
            let claimed = history::claimed_by(ledger, &s.name)?;
            let at_release = installed.as_ref().is_some_and(|d| d.version == s.version)
                && claimed.as_ref().is_some_and(|c| c.name == name);
            mixed |= current.is_some() && !at_release;
            stacks.push(json!({
                "stack": s.name,
                "version": s.version.to_string(),
                "installed": installed.map(|d| d.version.to_string()),
                "state": if at_release { "at-release" } else { "mixed" },
            }));
        }
        out.push(json!({
            "release": name,
            "version": current.map(|v| v.to_string()),
            "state": if stacks_of.receipt.kind == ReceiptKind::Destroy
                && stacks_of.receipt.outcome == Outcome::Succeeded {
                "destroyed"
            } else if mixed { "mixed" } else { "applied" },
            "lastRun": {
                "kind": last.receipt.kind,
                "outcome": last.receipt.outcome,
                "version": last.receipt.version.to_string(),
                "receipt": last.receipt.id,
                "finishedAt": last.receipt.finished_at,
            },
            "stacks": stacks,
            "services": stacks_of.receipt.services.iter().map(|s| json!({
                "name": s.name,
                "digest": s.digest.to_string(),
            })).collect::<Vec<_>>(),
        }));
    }
    Ok(serde_json::Value::Array(out))
}

/// The releases part of `status`, for people.
pub fn releases_text(releases: &serde_json::Value) -> String {
    let mut out = String::new();
    for release in releases.as_array().into_iter().flatten() {
        out.push_str(&format!(
            "\nrelease `{}` {} ({}; last run: {} {} of {})\n",
            release["release"].as_str().unwrap_or_default(),
            release["version"].as_str().unwrap_or("-"),
            release["state"].as_str().unwrap_or_default(),
            release["lastRun"]["kind"].as_str().unwrap_or_default(),
            release["lastRun"]["outcome"].as_str().unwrap_or_default(),
            release["lastRun"]["version"].as_str().unwrap_or_default(),
        ));
        let rows: Vec<Vec<String>> = release["stacks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                vec![
                    s["stack"].as_str().unwrap_or_default().into(),
                    s["version"].as_str().unwrap_or_default().into(),
                    s["installed"].as_str().unwrap_or("-").into(),
                    s["state"].as_str().unwrap_or_default().into(),
                ]
            })
            .collect();
        out.push_str(&table(
            &["STACK", "RELEASE PINS", "INSTALLED", "STATE"],
            &rows,
        ));
        for service in release["services"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "service {} {}\n",
                service["name"].as_str().unwrap_or_default(),
                service["digest"].as_str().unwrap_or_default()
            ));
        }
    }
    out
}
