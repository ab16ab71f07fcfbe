//! `import`, `pull` and `verify`.

use stackpack_terminal::ExitStatus;
use std::io::IsTerminal;

use serde_json::json;
use stackpack_bundle::remote::progress::{Bar, Display};
use stackpack_bundle::remote::Progress;
use stackpack_runner::pull::RemoteBundle;
use stackpack_runner::{store, Result};

use super::{open_home, parse_bundle, print_json, quiet, status, table};
use crate::cli::{GlobalArgs, ImportArgs, PullArgs, VerifyArgs};

pub fn import(global: &GlobalArgs, args: &ImportArgs) -> Result<ExitStatus> {
    let home = open_home(global)?;
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
    let imported = store::import(&home, &args.source)?;
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
    let home = open_home(global)?;
    let bundle: RemoteBundle = args.reference.parse()?;
    status(&format!("pulling `{}`", args.reference));
    if stackpack_runner::release::pull::is_release_reference(&bundle) {
        let imported = stackpack_runner::release::pull::pull(&home, &bundle, args.insecure)?;
        let release = format!("{}@{}", bundle.stack, bundle.version);
        status(&format!(
            "release `{release}` verified and imported with every bundle it pins"
        ));
        show_imported(&imported, &[release], args.json);
        return Ok(ExitStatus::Success);
    }
    // A bar on a terminal, plain lines in CI logs, nothing with `--quiet`.
    let progress: Option<Progress> = (!quiet()).then(|| {
        let display = if std::io::stderr().is_terminal() {
            Display::Terminal
        } else {
            Display::Lines
        };
        Bar::new(bundle.stack.clone(), "pulled", display) as Progress
    });
    let imported = stackpack_runner::pull::pull(&home, &bundle, args.insecure, progress)?;
    show_imported(&imported, &[], args.json);
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
    let home = open_home(global)?;
    let (stack, version) = parse_bundle(&args.bundle)?;
    let layout = home.store()?;
    let bundle = store::verify_in(&home, &layout, &stack, &version)?;
    let key_id = bundle
        .signer
        .as_ref()
        .map(|k| k.key_id())
        .unwrap_or_default();
    if args.json {
        print_json(&json!({
            "stack": stack,
            "version": version.to_string(),
            "verified": true,
            "digest": bundle.manifest_descriptor.digest.to_string(),
            "keyId": key_id,
            "files": bundle.config.files.len(),
            "source": {
                "repository": bundle.config.source.repository,
                "commit": bundle.config.source.commit,
                "branch": bundle.config.source.branch,
            },
            "created": bundle.config.created,
        }));
    } else {
        println!("verified `{stack}@{version}`");
        println!("digest     {}", bundle.manifest_descriptor.digest);
        println!("signed by  {key_id}");
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
    }
    Ok(ExitStatus::Success)
}
