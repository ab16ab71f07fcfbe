//! `stackpack-registry customer show ID`: what exactly one customer runs, as one
//! snapshot (its stacks with their last attempts, its release with the mixed stacks
//! and the services' digests), with its details (`customer set`), from `--data` or
//! over `--url`. Both read the same document, `GET /api/v1/customers/{id}`; nothing
//! is worked out here.

use stackpack_registry::api::{CustomerRelease, FleetRow};
use stackpack_registry::controllers::ledger::customers::{detail, CustomerDetail};
use stackpack_registry::controllers::ledger::known::{unknown, Kind};

use crate::cli::CustomerShowArgs;
use crate::commands::customer::check_name;
use crate::commands::fleet::encode;
use crate::commands::release_fleet::mixed_words;
use crate::commands::remote::get_json;
use crate::commands::{ask_registry, print_json, table, Result};

pub fn run(args: &CustomerShowArgs) -> Result<()> {
    check_name("customer", &args.id)?;
    let snapshot: CustomerDetail = match (args.source.local(), &args.source.url) {
        (Some(registry), _) => ask_registry(registry, |state| {
            detail(state, &args.id)?.ok_or_else(|| unknown(state, Kind::Customer, &args.id, true))
        })?,
        (None, Some(url)) => get_json(
            url,
            args.source.token.as_deref(),
            &format!("/api/v1/customers/{}", encode(&args.id)),
            "a customer",
        )?,
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    };
    if args.json {
        print_json(&snapshot);
        return Ok(());
    }
    print_header(&snapshot);
    print_stacks(&snapshot.stacks);
    if snapshot.releases.is_empty() && !snapshot.stacks.is_empty() {
        println!("\nno release: every stack was applied on its own");
    }
    for release in &snapshot.releases {
        print_release(release);
    }
    print_syncs(&snapshot.syncs);
    print_verified(&snapshot.verified);
    Ok(())
}

/// What each stack's runner verified before the apply in place.
fn print_verified(runs: &[stackpack_registry::api::VerifiedRun]) {
    if runs.is_empty() {
        return;
    }
    println!("\nverified before apply:");
    for r in runs {
        println!("  {}@{}: {}", r.stack, r.version, r.summary);
    }
}

/// What the runner's last sync pass did per release (the customer page's rollout
/// table): a failure before any plan has no receipt, so it is only here.
fn print_syncs(syncs: &[stackpack_registry::api::CustomerSync]) {
    if syncs.is_empty() {
        return;
    }
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = syncs
        .iter()
        .map(|s| {
            vec![
                s.release.clone(),
                s.assigned.as_ref().map_or_else(dash, ToString::to_string),
                s.running.as_ref().map_or_else(dash, ToString::to_string),
                s.state.as_str().to_string(),
                stackpack_terminal::words::time(&s.reported_at),
                s.message.clone().unwrap_or_else(dash),
            ]
        })
        .collect();
    println!("\nlast sync pass, per release:");
    print!(
        "{}",
        table(
            &["RELEASE", "ASSIGNED", "RUNNING", "STATE", "REPORTED", "DETAIL"],
            &rows
        )
    );
}

fn print_header(s: &CustomerDetail) {
    let c = &s.customer;
    let name = c
        .name
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    println!("customer {}{name}", c.id);
    println!(
        "environment {}  last seen {}",
        c.environment.as_deref().unwrap_or("-"),
        c.last_seen
            .as_ref()
            .map_or_else(|| "never".into(), ToString::to_string)
    );
    if c.account.is_some() || c.region.is_some() {
        println!(
            "account {}  region {}",
            c.account.as_deref().unwrap_or("-"),
            c.region.as_deref().unwrap_or("-")
        );
    }
    if let Some(contact) = &c.contact {
        println!("contact {contact}");
    }
    if let Some(notes) = &c.notes {
        println!("notes {notes}");
    }
    if let Some(p) = s.rollout.as_ref().filter(|p| p.channel.is_some()) {
        println!(
            "channel {}  wave {}  last sync {}",
            p.channel.as_deref().unwrap_or("-"),
            p.wave.as_deref().unwrap_or("(the channel's last)"),
            p.last_sync.as_deref().unwrap_or("never")
        );
    }
}

fn print_stacks(stacks: &[FleetRow]) {
    println!();
    if stacks.is_empty() {
        println!("no stack reported yet");
        return;
    }
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = stacks
        .iter()
        .map(|r| {
            let attempt = r.last_attempt.as_ref();
            vec![
                r.stack.clone().unwrap_or_default(),
                r.version.as_ref().map_or_else(dash, ToString::to_string),
                r.digest.as_ref().map_or_else(dash, |d| d.short()),
                attempt.map_or_else(dash, |a| a.kind.to_string()),
                attempt.map_or_else(dash, |a| a.outcome.to_string()),
                attempt.map_or_else(dash, |a| a.finished_at.to_string()),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["STACK", "VERSION", "BUNDLE", "ATTEMPT", "OUTCOME", "FINISHED"],
            &rows
        )
    );
    crate::commands::fleet::print_reasons(stacks);
}

fn print_release(r: &CustomerRelease) {
    let s = &r.standing;
    println!();
    println!(
        "release {} {}  index {}",
        s.release,
        s.version,
        s.digest.short()
    );
    if !s.recorded {
        println!("(this version is not recorded in this registry: its stacks and services are unknown here)");
    }
    if s.mixed.is_empty() {
        println!("runs exactly this release");
    } else {
        for m in &s.mixed {
            println!("mixed: {}", mixed_words(m));
        }
    }
    if !r.services.is_empty() {
        let services: Vec<Vec<String>> = r
            .services
            .iter()
            .map(|p| vec![p.service.clone(), p.digest.short(), p.reference.clone()])
            .collect();
        println!();
        print!("{}", table(&["SERVICE", "DIGEST", "REFERENCE"], &services));
    }
}
