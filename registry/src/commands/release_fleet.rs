//! `stackpack-registry fleet --release NAME`: per customer, the release version it
//! runs and its mixed stacks, from `--data` or over `--url`.

use stackpack_registry::api::{MixedStack, ReleaseFleetRow};
use stackpack_registry::controllers::ledger::release_fleet::{
    check_names, rows, ReleaseFleetQuery,
};

use crate::cli::FleetArgs;
use crate::commands::fleet::encode;
use crate::commands::{ask_registry, print_json, status, table, Result};

/// One mixed stack in words: `cluster 0.3.0, release pins 0.3.1 (applied on its own)`.
pub fn mixed_words(m: &MixedStack) -> String {
    let running = m
        .running
        .as_ref()
        .map_or_else(|| "nothing".to_string(), ToString::to_string);
    match &m.expected {
        Some(expected) => format!(
            "{} {running}, release pins {expected} ({})",
            m.stack,
            m.reason.as_str()
        ),
        None => format!("{} {running} ({})", m.stack, m.reason.as_str()),
    }
}

fn fetch(args: &FleetArgs, name: &str) -> Result<Vec<ReleaseFleetRow>> {
    match (args.source.local(), &args.source.url) {
        (Some(registry), _) => {
            let query = ReleaseFleetQuery {
                customer: args.customer.clone(),
                environment: args.environment.clone(),
            };
            ask_registry(registry, |state| {
                check_names(state, name, &query, true)?;
                rows(state, name, &query)
            })
        }
        (None, Some(url)) => {
            let mut path = format!("/api/v1/releases/{}/fleet", encode(name));
            let filters: Vec<String> = [
                ("customer", &args.customer),
                ("environment", &args.environment),
            ]
            .into_iter()
            .filter_map(|(key, value)| Some(format!("{key}={}", encode(value.as_ref()?))))
            .collect();
            if !filters.is_empty() {
                path = format!("{path}?{}", filters.join("&"));
            }
            crate::commands::remote::get_json(
                url,
                args.source.token.as_deref(),
                &path,
                "a release fleet",
            )
        }
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    }
}

pub fn run(args: &FleetArgs, name: &str) -> Result<()> {
    let rows = fetch(args, name)?;
    if args.json {
        print_json(&rows);
        return Ok(());
    }
    let dash = || "-".to_string();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut mixed: Vec<String> = r.mixed.iter().map(mixed_words).collect();
            if !r.recorded {
                mixed.push("(version not recorded in this registry)".into());
            }
            vec![
                r.customer.clone(),
                r.environment.clone().unwrap_or_else(dash),
                r.version.to_string(),
                if mixed.is_empty() {
                    "-".into()
                } else {
                    mixed.join("; ")
                },
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["CUSTOMER", "ENVIRONMENT", "VERSION", "MIXED"], &cells)
    );
    if rows.is_empty() {
        status(&format!(
            "no customer reported a deployment of release `{name}`"
        ));
    }
    Ok(())
}
