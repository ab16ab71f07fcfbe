//! `stackpack-registry fleet`: support's matrix of who runs what, read from the
//! registry's `--data` folder on its host, or over the HTTP API with `--url`.

use stackpack_registry::api::FleetRow;
use stackpack_registry::controllers::ledger::fleet::{
    check_names, each_page as each_page_of, FleetQuery, Flow,
};
use stackpack_registry::controllers::ledger::MAX_LIMIT;
use stackpack_schema::receipt::Outcome;

use crate::cli::FleetArgs;
use crate::commands::{
    named_at, open_registry, refused_at, status, table, Error, JsonArray, Result, AGE_HINT,
};

fn notes(r: &FleetRow) -> String {
    let mut notes = Vec::new();
    if r.behind > 0 {
        notes.push(format!(
            "behind {} (latest {})",
            r.behind,
            r.latest_stable
                .as_ref()
                .map_or_else(|| "?".to_string(), ToString::to_string)
        ));
    }
    if r.prerelease {
        notes.push("prerelease".to_string());
    }
    if r.drifted {
        notes.push("drifted".to_string());
    }
    if !r.registered {
        notes.push("not registered: known only from its receipts".to_string());
    }
    if r.stale {
        notes.push(match &r.last_seen {
            Some(seen) => format!(
                "silent since {}",
                stackpack_terminal::words::time(seen.as_str())
            ),
            None => "never reported".to_string(),
        });
    }
    notes.join(", ")
}

fn query(args: &FleetArgs) -> Result<FleetQuery> {
    let Some(stale_after_secs) = stackpack_registry::age::parse_secs(&args.stale_after) else {
        return Err(Error::usage(stackpack_registry::age::invalid(
            "--stale-after",
            &args.stale_after,
        ))
        .hint(AGE_HINT));
    };
    let version = |flag: &str, text: &Option<String>| match text {
        Some(text) => semver::Version::parse(text).map(Some).map_err(|e| {
            Error::usage(format!(
                "`{flag}` takes a version such as `2.0.0`, not `{text}`: {e}"
            ))
            .caused_by(e)
        }),
        None => Ok(None),
    };
    Ok(FleetQuery {
        below: version("--below", &args.below)?,
        module: args.module.clone(),
        module_below: version("--module-below", &args.module_below)?,
        version: args.version.clone(),
        digest: args.digest.clone(),
        customer: args.customer.clone(),
        environment: args.environment.clone(),
        stack: args.stack.clone(),
        behind: args.behind,
        prerelease: args.prerelease,
        drifted: args.drifted,
        silent: args.silent,
        failed: args.failed,
        stale_after_secs,
    })
}

/// Percent-encodes a query value.
pub use stackpack_bundle::remote::http::percent_encode as encode;

fn query_string(args: &FleetArgs) -> String {
    let mut pairs = vec![("staleAfter", args.stale_after.clone())];
    for (key, value) in [
        ("customer", &args.customer),
        ("environment", &args.environment),
        ("stack", &args.stack),
        ("below", &args.below),
        ("version", &args.version),
        ("digest", &args.digest),
        ("module", &args.module),
        ("moduleBelow", &args.module_below),
    ] {
        if let Some(value) = value {
            pairs.push((key, value.clone()));
        }
    }
    for (key, on) in [
        ("behind", args.behind),
        ("prerelease", args.prerelease),
        ("drifted", args.drifted),
        ("silent", args.silent),
        ("failed", args.failed),
    ] {
        if on {
            pairs.push((key, "true".into()));
        }
    }
    let pairs: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    pairs.join("&")
}

/// Hands every page of the answer to `each`, from `--data` or over `--url`.
fn each_page(args: &FleetArgs, each: impl FnMut(Vec<FleetRow>) -> Result<Flow>) -> Result<()> {
    let filters = query(args)?;
    match (args.source.local(), &args.source.url) {
        (Some(registry), _) => {
            // The library stops at the first error of `each` or of its own; which
            // one it was is told apart by where it was kept.
            let mut failed = None;
            let mut each = each;
            let state = open_registry(registry)?;
            check_names(&state, &filters, true).map_err(named_at(&state.config))?;
            each_page_of(&state, &filters, |rows| {
                each(rows).or_else(|error| {
                    failed = Some(error);
                    Ok(Flow::Stop)
                })
            })
            .map_err(refused_at(&state.config))?;
            failed.map_or(Ok(()), Err)
        }
        (None, Some(url)) => crate::commands::remote::each_page(
            url,
            args.source.token.as_deref(),
            &format!("/api/v1/fleet?{}&limit={MAX_LIMIT}", query_string(args)),
            "a fleet matrix",
            each,
        ),
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    }
}

pub fn run(args: &FleetArgs) -> Result<()> {
    if let Some(release) = &args.release {
        return crate::commands::release_fleet::run(args, release);
    }
    if args.json {
        // Streamed page by page: the whole fleet is hundreds of megabytes.
        let mut out = JsonArray::start();
        each_page(args, |rows| {
            out.push(&rows)?;
            Ok(Flow::Go)
        })?;
        return out.finish();
    }
    let mut rows = Vec::new();
    each_page(args, |page| {
        rows.extend(page);
        Ok(Flow::Go)
    })?;
    // "Failed" means the last attempt failed, whatever step: a sync pass that
    // failed before any plan (pull, verification, inputs) left no stack row.
    let syncs = if args.failed {
        failed_syncs(args)?
    } else {
        Vec::new()
    };
    if !rows.is_empty() {
        print_rows(&rows);
    }
    if !syncs.is_empty() {
        if !rows.is_empty() {
            println!();
        }
        println!("sync passes that failed:");
        for sync in &syncs {
            println!("{}", sync.line());
        }
    }
    if rows.is_empty() && syncs.is_empty() {
        print_rows(&rows);
        status("no customer matches; `stackpack-registry customer list` shows them all");
    }
    Ok(())
}

/// The releases whose last sync pass failed (of `--customer`, when given).
fn failed_syncs(args: &FleetArgs) -> Result<Vec<stackpack_registry::api::CustomerSync>> {
    let customer = args.customer.as_deref();
    match (args.source.local(), &args.source.url) {
        (Some(registry), _) => crate::commands::ask_registry(registry, |state| {
            stackpack_registry::controllers::ledger::fleet::failed_syncs(state, customer)
        }),
        (None, Some(url)) => crate::commands::remote::get_json(
            url,
            args.source.token.as_deref(),
            &format!(
                "/api/v1/fleet/failed-syncs{}",
                customer
                    .map(|c| format!("?customer={}", encode(c)))
                    .unwrap_or_default()
            ),
            "the failed sync passes",
        ),
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    }
}

fn print_rows(rows: &[FleetRow]) {
    let dash = || "-".to_string();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let last = r.last_attempt.as_ref();
            vec![
                r.customer.clone(),
                r.environment.clone().unwrap_or_else(dash),
                r.stack.clone().unwrap_or_else(dash),
                r.version.as_ref().map_or_else(dash, ToString::to_string),
                last.map(|a| format!("{} {} {}", a.kind, a.version, a.outcome))
                    .unwrap_or_else(dash),
                last.map(|a| stackpack_terminal::words::time(a.finished_at.as_str()))
                    .unwrap_or_else(dash),
                notes(r),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "CUSTOMER",
                "ENVIRONMENT",
                "STACK",
                "VERSION",
                "LAST ATTEMPT",
                "WHEN",
                "NOTES",
            ],
            &cells,
        )
    );
    print_reasons(rows);
}

/// Under a table of fleet rows, one line per row whose last attempt failed, with
/// why (the reason its receipt gives, as the API's `lastAttempt.reason` and the
/// pages say it): "umbrella network: apply 0.2.0 failed: `aws_vpc.main`: …".
pub fn print_reasons(rows: &[FleetRow]) {
    for r in rows {
        let Some(a) = r
            .last_attempt
            .as_ref()
            .filter(|a| a.outcome == Outcome::Failed)
        else {
            continue;
        };
        let reason = a
            .reason
            .as_deref()
            .unwrap_or(stackpack_registry::reason::NONE_GIVEN);
        println!(
            "{} {}: {} {} failed: {reason}",
            r.customer,
            r.stack.as_deref().unwrap_or("-"),
            a.kind,
            a.version
        );
    }
}
