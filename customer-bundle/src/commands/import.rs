//! `import`, `pull` and `verify`.

use stackpack_terminal::ExitStatus;
use std::io::IsTerminal;

use serde_json::json;
use stackpack_bundle::remote::progress::{Bar, Display};
use stackpack_bundle::remote::Progress;
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_runner::pull::RemoteBundle;
use stackpack_runner::release::stored::Staged;
use stackpack_runner::sync::deployable;
use stackpack_runner::{store, Result};
use stackpack_schema::receipt::Verification;

use super::{open_installation, parse_bundle, print_json, quiet, status, table};
use crate::cli::{GlobalArgs, ImportArgs, PullArgs, VerifyArgs};

pub fn import(global: &GlobalArgs, args: &ImportArgs) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    if args.upgrade_runner {
        return Err(stackpack_runner::Error::usage(format!(
            "`{}` is not a kit: `--upgrade-runner` takes a kit made by `stackpack kit --runner`",
            args.source.display()
        ))
        .hint("import it without `--upgrade-runner`"));
    }
    status(&format!(
        "verifying the bundles in `{}`",
        args.source.display()
    ));
    let releases_before = store_releases(&home)?;
    let imported = store::import(&home, &args.source, &mut Staged::default())?;
    let releases: Vec<String> = store_releases(&home)?
        .into_iter()
        .filter(|release| !releases_before.contains(release))
        .collect();
    for release in &releases {
        status(&format!(
            "release `{release}` verified and imported with every bundle it pins"
        ));
    }
    show_imported(&imported, &releases, args.json);
    Ok(ExitStatus::Success)
}

/// `NAME@VERSION` of every release in the store.
fn store_releases(home: &stackpack_runner::home::Home) -> Result<Vec<String>> {
    Ok(stackpack_bundle::release::releases_in(&home.store()?)?
        .into_iter()
        .map(|(name, version, _)| format!("{name}@{version}"))
        .collect())
}

pub fn pull(global: &GlobalArgs, args: &PullArgs) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let bundle: RemoteBundle = args.reference.parse()?;
    status(&format!("pulling `{}`", args.reference));
    // A bar on a terminal, plain lines in CI logs, nothing with `--quiet`.
    let progress: Option<Progress> = (!quiet()).then(|| {
        let display = if std::io::stderr().is_terminal() {
            Display::Terminal
        } else {
            Display::Lines
        };
        Bar::new(bundle.stack.clone(), "pulled", display) as Progress
    });
    let pulled = deployable::of_reference(&bundle).pull(&home, &bundle, args.insecure, progress)?;
    for release in &pulled.releases {
        status(&format!(
            "release `{release}` verified and imported with every bundle it pins"
        ));
    }
    show_imported(&pulled.imported, &pulled.releases, args.json);
    Ok(ExitStatus::Success)
}

/// The bundles imported, and the releases (`NAME@VERSION`) new in the store.
pub(super) fn show_imported(imported: &[store::Imported], releases: &[String], json: bool) {
    if json {
        print_json(&json!({
            "releases": releases,
            "imported": imported.iter().map(|i| json!({
                "stack": i.stack,
                "version": i.version.to_string(),
                "digest": i.digest.to_string(),
                "keyId": i.key_id,
                "added": i.added,
                "repairedBlobs": i.repaired,
            })).collect::<Vec<_>>()
        }));
    } else {
        let rows: Vec<Vec<String>> = imported
            .iter()
            .map(|i| {
                vec![
                    i.stack.clone(),
                    i.version.to_string(),
                    match (i.added, i.repaired) {
                        (true, _) => "imported".into(),
                        (false, 0) => "already in store".into(),
                        (false, n) => format!("repaired ({n} damaged blob(s) replaced)"),
                    },
                    i.key_id.clone(),
                    i.digest.short(),
                ]
            })
            .collect();
        print!(
            "{}",
            table(
                &["STACK", "VERSION", "RESULT", "SIGNED BY", "DIGEST"],
                &rows
            )
        );
    }
}

pub fn verify(global: &GlobalArgs, args: &VerifyArgs) -> Result<ExitStatus> {
    let home = open_installation(global)?;
    let (stack, version) = parse_bundle(&args.bundle)?;
    let layout = home.store()?;
    let (bundle, verified) = store::verify_recorded(&home, &layout, &stack, &version)?;
    if args.json {
        print_json(&json!({
            "stack": stack,
            "version": version.to_string(),
            "verified": true,
            "digest": bundle.manifest_descriptor.digest.to_string(),
            "keyId": verified.key_id,
            "files": bundle.config.files.len(),
            "source": {
                "repository": bundle.config.source.repository,
                "commit": bundle.config.source.commit,
                "branch": bundle.config.source.branch,
            },
            "created": bundle.config.created,
            "verification": verified,
            "summary": verified.summary(),
        }));
    } else if args.explain {
        explain(&home, &bundle, &verified);
    } else {
        println!("verified `{stack}@{version}`");
        println!("digest     {}", bundle.manifest_descriptor.digest);
        println!("signed by  {} ({})", verified.key_id, verified.algorithm);
        println!(
            "files      {} (each matches its signed digest)",
            bundle.config.files.len()
        );
        println!(
            "source     {} {} ({})",
            bundle.config.source.repository,
            bundle.config.source.commit,
            bundle.config.source.branch
        );
        println!("proof      {}", verified.summary());
    }
    Ok(ExitStatus::Success)
}

/// `verify --explain`: each link of the chain, in the order it was checked.
fn explain(home: &stackpack_runner::home::Home, bundle: &VerifiedBundle, verified: &Verification) {
    let config = &bundle.config;
    println!(
        "verified `{}@{}`, step by step:",
        config.stack, config.version
    );
    println!(
        "1. signature   by trusted key `{}` ({}), for this manifest and version",
        verified.key_id, verified.algorithm
    );
    println!(
        "2. contents    manifest {}, its config, {} layer(s) and {} file(s): each matches its signed digest",
        bundle.manifest_descriptor.digest,
        bundle.manifest.layers.len(),
        config.files.len()
    );
    match &verified.provenance {
        Some(p) => {
            println!(
                "3. provenance  SLSA v1, signed by the same trusted key: {} at `{}` on `{}`, built by {} (`{}`)",
                p.repository, p.commit, p.git_ref, p.builder, p.builder_id
            );
            println!(
                "                its commit and repository are the ones the signed config records"
            );
        }
        None => println!("3. provenance  none: the bundle carries no signed provenance"),
    }
    match &verified.sbom {
        Some(d) => println!(
            "4. SBOM        {d}, the one the provenance names; its {} provider(s) match the lock's hashes",
            config.providers.len()
        ),
        None => println!("4. SBOM        none"),
    }
    let policy = &home.config.policy;
    let required: Vec<String> = policy.require.iter().map(|r| r.to_string()).collect();
    let mut rules = vec![if required.is_empty() {
        "no attestation required".to_string()
    } else {
        format!("requires {}: met", required.join(" and "))
    }];
    if let Some(pins) = &policy.provenance {
        if let Some(r) = &pins.repository {
            rules.push(format!("repository pinned to `{r}`: met"));
        }
        if !pins.refs.is_empty() {
            rules.push(format!("refs pinned to `{}`: met", pins.refs.join("`, `")));
        }
    }
    println!("5. policy      {}", rules.join("; "));
}
