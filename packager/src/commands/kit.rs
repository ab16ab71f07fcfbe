//! `stackpack kit`: one tar for an airgapped customer (the format: `stackpack_bundle::kit`).

use std::path::Path;

use stackpack_packager::keys;
use stackpack_packager::kit::{KitParts, WrittenKit};
use stackpack_packager::{Error, Result};
use stackpack_schema::signature::SigningKey;
use stackpack_terminal::ExitStatus;

use crate::cli::{ExportArgs, GlobalArgs, KitArgs};
use crate::output;

pub fn run(args: &KitArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    // Everything a user can get wrong is checked before the export moves any bytes.
    let key = kit_key(args.key.as_deref())?;
    if let Some(runner) = &args.runner {
        if !runner.is_file() {
            return Err(Error::usage(format!("no runner archive `{}`", runner.display()))
                .hint("pass the `stackpack-runner-<version>-x86_64-linux.tar.gz` that `scripts/dist.sh` writes"));
        }
    }
    let parent = args
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = tempfile::tempdir_in(parent)
        .map_err(|e| stackpack_packager::error::io("write a kit in", parent, e))?;
    let export = ExportArgs {
        bundles: vec![args.release.clone()],
        out: staging.path().join(stackpack_bundle::kit::BUNDLES),
        from: args.from.clone(),
        registry: args.registry.clone(),
        insecure: args.insecure,
        channel: args.channel.clone(),
        json: false,
    };
    let held = match &args.for_customer {
        Some(customer) => held_by(args, customer)?,
        None => Default::default(),
    };
    let exported = super::export::write_omitting(&export, &held)?;
    let parts = KitParts {
        release: args.release.clone(),
        channel: args.channel.clone(),
        runner: args.runner.as_deref(),
        key: key.as_ref(),
        made_for: args.for_customer.clone(),
        omitted: exported.omitted,
    };
    let written = stackpack_packager::kit::write(staging.path(), &parts, &args.out)?;
    show(args, &written);
    Ok(ExitStatus::Success)
}

/// The layers `customer` holds (see `kit::held_layers`), from the registry the kit
/// reads the release from.
fn held_by(
    args: &KitArgs,
    customer: &str,
) -> Result<std::collections::BTreeSet<stackpack_schema::digest::Digest>> {
    let registry = args
        .registry
        .as_deref()
        .expect("clap requires --registry with --for");
    let address = super::registry_address(Some(registry), None)?;
    let remote = super::connect(
        &address.host,
        super::Transport::from_insecure_flag(args.insecure),
    )?;
    let api = stackpack_packager::forecast::api::LedgerApi::new(&address.host, args.insecure);
    output::status(&format!(
        "reading what customer `{customer}` runs from `{}`",
        api.base()
    ));
    let release: stackpack_schema::reference::StackRef =
        args.release
            .parse()
            .map_err(|e: stackpack_schema::reference::ReferenceError| {
                Error::usage(format!("`{}`: {e}", args.release)).hint("give `NAME@VERSION`")
            })?;
    stackpack_packager::kit::held_layers(&api, &remote, &address, &release, customer)
}

/// `--key FILE`, `--key env:VAR` (the PEM itself or a path, as CI secrets are) or
/// `--key awskms:///alias/NAME`: `verify.sh`'s `openssl pkeyutl -rawin` checks an
/// ed25519 and a P-256 signature alike.
fn kit_key(flag: Option<&str>) -> Result<Box<dyn SigningKey>> {
    let Some(flag) = flag else {
        return Err(
            Error::usage("no signing key: a kit's `SHA256SUMS` is always signed")
                .hint("pass `--key FILE` (the key that signs your bundles), `--key env:VAR` or `--key awskms:///alias/NAME`"),
        );
    };
    keys::open_key_source(&keys::key_source(flag)?)
}

fn show(args: &KitArgs, written: &WrittenKit) {
    if args.json {
        output::print_json(&serde_json::json!({
            "file": written.path,
            "size": written.size,
            "release": written.manifest.release,
            "channel": written.manifest.channel,
            "runner": written.manifest.runner,
            "keyId": written.manifest.key_id,
            "madeFor": written.manifest.made_for,
            "omitted": written.manifest.omitted,
            "files": written.files.iter().map(|(name, hex)| serde_json::json!({
                "name": name,
                "sha256": hex,
            })).collect::<Vec<_>>(),
        }));
        return;
    }
    println!("{}", written.path.display());
    let runner = match &written.manifest.runner {
        Some(runner) => format!(", the runner {}", runner.version),
        None => ", no runner (pass `--runner` to carry one)".to_string(),
    };
    if let Some(customer) = &written.manifest.made_for {
        output::status(&format!(
            "made for `{customer}`: {} its runner holds left out",
            stackpack_terminal::words::count(written.manifest.omitted.len() as u64, "layer")
        ));
    }
    output::status(&format!(
        "kit for `{}`{runner}, signed by key `{}` ({}): check it with `sh verify.sh` (sha256sum and openssl), then `stackpack-runner import {}`",
        written.manifest.release,
        written.manifest.key_id,
        output::human_size(written.size),
        written.path.display()
    ));
}
