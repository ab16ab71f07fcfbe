//! `stackpack-registry release list` and `release show NAME@VERSION`: the releases
//! recorded as their indexes were pushed, and one version's snapshot, from `--data`
//! or over `--url`.

use stackpack_registry::api::{ReleaseSnapshot, ReleaseVersion};
use stackpack_registry::controllers::ledger::release_versions::{all, snapshot};

use crate::cli::{ReleaseListArgs, ReleaseShowArgs};
use crate::commands::fleet::encode;
use crate::commands::release_fleet::mixed_words;
use crate::commands::remote::get_json;
use crate::commands::{ask_registry, on_registry, print_json, status, table, Error, Result};

pub fn list(args: &ReleaseListArgs) -> Result<()> {
    let versions: Vec<ReleaseVersion> = match (args.source.local(), &args.source.url) {
        (Some(registry), _) => {
            let mut versions = on_registry(registry, all)?;
            if let Some(name) = &args.name {
                versions.retain(|v| v.name == *name);
            }
            versions
        }
        (None, Some(url)) => {
            let Some(name) = &args.name else {
                return Err(Error::usage("`release list --url` needs the release's NAME")
                    .hint("give it, as in `release list data-plane --url …`; `--data` on the registry's host lists every release"));
            };
            get_json(
                url,
                args.source.token.as_deref(),
                &format!("/api/v1/releases/{}", encode(name)),
                "a list of release versions",
            )?
        }
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    };
    if args.json {
        print_json(&versions);
        return Ok(());
    }
    let cells: Vec<Vec<String>> = versions
        .iter()
        .map(|v| {
            vec![
                v.name.clone(),
                v.version.to_string(),
                v.published_at.to_string(),
                v.digest.short(),
                v.repository.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["RELEASE", "VERSION", "PUBLISHED", "INDEX", "REPOSITORY"],
            &cells
        )
    );
    if versions.is_empty() {
        status("no release recorded; a release is recorded when `stackpack publish` pushes its index here");
    }
    Ok(())
}

pub fn show(args: &ReleaseShowArgs) -> Result<()> {
    let Some((name, version)) = args.release.split_once('@') else {
        return Err(
            Error::usage(format!("`{}` is not `NAME@VERSION`", args.release))
                .hint("as in `release show data-plane@1.4.0`; `release list` shows the versions"),
        );
    };
    let snapshot: ReleaseSnapshot = match (args.source.local(), &args.source.url) {
        (Some(registry), _) => ask_registry(registry, |state| snapshot(state, name, version))?,
        (None, Some(url)) => get_json(
            url,
            args.source.token.as_deref(),
            &format!("/api/v1/releases/{}/{}", encode(name), encode(version)),
            "a release snapshot",
        )?,
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    };
    if args.json {
        print_json(&snapshot);
        return Ok(());
    }
    print_snapshot(&snapshot);
    Ok(())
}

fn print_snapshot(s: &ReleaseSnapshot) {
    let r = &s.release;
    println!("release {} {}  index {}", r.name, r.version, r.digest);
    println!("published {} to {}\n", r.published_at, r.repository);
    let stacks: Vec<Vec<String>> = s
        .stacks
        .iter()
        .map(|p| vec![p.stack.clone(), p.version.to_string(), p.digest.to_string()])
        .collect();
    print!("{}", table(&["STACK", "VERSION", "BUNDLE"], &stacks));
    if !s.services.is_empty() {
        let services: Vec<Vec<String>> = s
            .services
            .iter()
            .map(|p| vec![p.service.clone(), p.digest.to_string(), p.reference.clone()])
            .collect();
        println!();
        print!("{}", table(&["SERVICE", "DIGEST", "REFERENCE"], &services));
    }
    println!();
    if s.customers.is_empty() {
        println!("no customer runs this version");
        return;
    }
    let customers: Vec<Vec<String>> = s
        .customers
        .iter()
        .map(|c| {
            let mixed: Vec<String> = c.mixed.iter().map(mixed_words).collect();
            vec![
                c.customer.clone(),
                c.environment.clone().unwrap_or_else(|| "-".into()),
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
        table(&["CUSTOMER", "ENVIRONMENT", "MIXED"], &customers)
    );
}
