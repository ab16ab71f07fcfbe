use std::path::{Path, PathBuf};

use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::{EntryKind, ImageLayout};
use stackpack_bundle::layout_tar::unpack_layout_tar;
use stackpack_bundle::verify::{verify_bundle, Trust, VerifiedBundle};
use stackpack_packager::keys::read_public_key;
use stackpack_packager::Error;
use stackpack_packager::Result;
use stackpack_schema::bundle::BundleConfig;
use stackpack_schema::reference::StackRef;
use stackpack_terminal::ExitStatus;

use crate::cli::{GlobalArgs, InspectArgs};
use crate::output;

/// Splits `LAYOUT[:STACK@VERSION]`; a layout path may itself contain `:`.
fn parse_target(target: &str) -> (PathBuf, Option<StackRef>) {
    if let Some((path, reference)) = target.rsplit_once(':') {
        if let Ok(reference) = reference.parse::<StackRef>() {
            if reference.version.is_some() {
                return (PathBuf::from(path), Some(reference));
            }
        }
    }
    (PathBuf::from(target), None)
}

/// The layout at `path`: a folder as it is, or a tar file of one (what `stackpack
/// export` writes, plain or gzip), streamed into a staging folder the caller keeps
/// for as long as it reads the layout. The tar is read as the runner's `import` reads
/// it: every blob checked against its name, links and unsafe paths refused.
fn open_layout(path: &Path) -> Result<(ImageLayout, Option<tempfile::TempDir>)> {
    let hint =
        "pass the folder `stackpack build` wrote (`--out`), or the tar `stackpack export` wrote";
    let metadata = std::fs::metadata(path)
        .map_err(|e| Error::usage(format!("cannot read `{}`: {e}", path.display())).hint(hint))?;
    if metadata.is_dir() {
        let layout = ImageLayout::open(path).map_err(|e| Error::usage_by(e).hint(hint))?;
        return Ok((layout, None));
    }
    let staging = tempfile::Builder::new()
        .prefix("stackpack-inspect-")
        .tempdir()
        .map_err(|e| {
            stackpack_packager::error::io("create a staging folder in", &std::env::temp_dir(), e)
        })?;
    let layout = unpack_layout_tar(path, staging.path())?;
    Ok((layout, Some(staging)))
}

pub fn run(args: &InspectArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let (path, reference) = parse_target(&args.target);
    // Kept until the command ends: a tar's staging folder is removed with it.
    let (layout, _staging) = open_layout(&path)?;
    let trusted = args
        .trust
        .iter()
        .map(|p| read_public_key(p))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(reference) = reference else {
        return list(&layout, args.json);
    };
    let version = reference
        .version
        .clone()
        .expect("parse_target requires a version");
    if let Some(missing) = not_held(&layout, &reference.stack, &version)? {
        return Err(missing.at(path.display()));
    }
    let trust = if trusted.is_empty() {
        Trust::ReportOnly
    } else {
        Trust::Keys(trusted)
    };
    let verified = verify_bundle(
        &layout,
        &reference.stack,
        &version,
        &trust,
        &Limits::default(),
    )
    .map_err(|e| {
        Error::refused(format!("bundle `{reference}` failed verification: {e}"))
            .at(path.display())
            .hint(match e {
                stackpack_bundle::verify::VerifyError::Untrusted { .. } => {
                    "pass the vendor's public key with `--trust FILE`"
                }
                stackpack_bundle::verify::VerifyError::NotFound { .. } => {
                    "run `stackpack inspect LAYOUT` to list the bundles it holds"
                }
                stackpack_bundle::verify::VerifyError::NewerFormat { .. } => {
                    "install a newer `stackpack`, one that builds bundles of this format"
                }
                _ => "do not use this bundle: rebuild it, or get it again from its source",
            })
    })?;
    let integrity_ok = verified.signatures.iter().any(|s| s.outcome.is_ok());
    if args.sbom {
        print_sbom(&layout, &verified, &trust, &reference.to_string())?;
        return Ok(ExitStatus::success_if(integrity_ok));
    }
    if args.json {
        output::print_json(&to_json(&verified, &trust));
    } else {
        print_bundle(&verified, &trust);
    }
    Ok(ExitStatus::success_if(integrity_ok))
}

/// `inspect --sbom`: the SBOM beside the bundle, as it is (CycloneDX JSON). With
/// trusted keys, only the SBOM a trusted provenance names is printed.
fn print_sbom(
    layout: &ImageLayout,
    verified: &VerifiedBundle,
    trust: &Trust,
    reference: &str,
) -> Result<()> {
    use std::io::Write as _;
    let digest = &verified.manifest_descriptor.digest;
    let refused = |what: String| {
        Error::refused(format!("bundle `{reference}`: {what}"))
            .hint("publish or build it again with this `stackpack`, which writes an SBOM beside every bundle")
    };
    let found =
        stackpack_bundle::attest::find(layout, digest).map_err(|e| refused(e.to_string()))?;
    let bytes = match trust {
        Trust::Keys(keys) => {
            let checked = stackpack_bundle::attest::check(&found, digest, keys)
                .map_err(|e| refused(format!("its provenance does not hold: {e}")))?;
            if checked.sbom.is_none() {
                return Err(refused(
                    "it carries no SBOM that a trusted provenance names".into(),
                ));
            }
            found.sbom.map(|(_, bytes)| bytes)
        }
        Trust::ReportOnly => {
            if found.sbom.is_some() {
                output::warning("the SBOM is shown unchecked: pass `--trust FILE` to check it against the signed provenance");
            }
            found.sbom.map(|(_, bytes)| bytes)
        }
    };
    let bytes = bytes.ok_or_else(|| refused("it carries no SBOM".into()))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)
        .and_then(|()| out.write_all(b"\n"))
        .map_err(|e| Error::refused(format!("cannot write the SBOM: {e}")))?;
    Ok(())
}

/// A bundle the layout does not hold is the command's mistake (exit 2), not a
/// verification that failed: named with the nearest stack, or the stack's versions,
/// and what the layout holds.
fn not_held(layout: &ImageLayout, stack: &str, version: &semver::Version) -> Result<Option<Error>> {
    let mut held: Vec<(String, semver::Version)> = Vec::new();
    for (kind, _) in layout.entries()? {
        if let EntryKind::Bundle { stack, version } = kind {
            held.push((stack, version));
        }
    }
    if held.iter().any(|(s, v)| s == stack && v == version) {
        return Ok(None);
    }
    let mut stacks: Vec<&str> = held.iter().map(|(s, _)| s.as_str()).collect();
    stacks.sort_unstable();
    stacks.dedup();
    let mut versions: Vec<&semver::Version> = held
        .iter()
        .filter(|(s, _)| s == stack)
        .map(|(_, v)| v)
        .collect();
    versions.sort_by(|a, b| b.cmp_precedence(a));
    let quoted = |names: Vec<String>| names.join(", ");
    let detail = if !versions.is_empty() {
        format!(
            "; its versions there: {}",
            quoted(versions.iter().map(|v| format!("`{v}`")).collect())
        )
    } else {
        let near = stackpack_interface::tfvars::did_you_mean(stack, &stacks)
            .map(|near| format!("; did you mean `{near}`?"))
            .unwrap_or_default();
        match stacks.is_empty() {
            true => format!("{near}; it holds no bundle"),
            false => format!(
                "{near}; its stacks: {}",
                quoted(stacks.iter().map(|s| format!("`{s}`")).collect())
            ),
        }
    };
    Ok(Some(
        Error::usage(format!(
            "bundle `{stack}@{version}` is not in the layout{detail}"
        ))
        .hint("run `stackpack inspect LAYOUT` to list the bundles it holds"),
    ))
}

fn list(layout: &ImageLayout, json: bool) -> Result<ExitStatus> {
    let mut bundles = Vec::new();
    for (kind, descriptor) in layout.entries()? {
        if let EntryKind::Bundle { stack, version } = kind {
            let signatures = layout.signatures_for(&descriptor.digest)?.len();
            bundles.push((stack, version, descriptor, signatures));
        }
    }
    bundles.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp_precedence(&b.1)));
    if json {
        let items: Vec<_> = bundles
            .iter()
            .map(|(stack, version, descriptor, signatures)| {
                serde_json::json!({
                    "stack": stack,
                    "version": version.to_string(),
                    "digest": descriptor.digest,
                    "signatures": signatures,
                })
            })
            .collect();
        output::print_json(&serde_json::json!({ "bundles": items }));
    } else {
        let rows: Vec<Vec<String>> = bundles
            .iter()
            .map(|(stack, version, descriptor, signatures)| {
                vec![
                    stack.clone(),
                    version.to_string(),
                    descriptor.digest.short(),
                    signatures.to_string(),
                ]
            })
            .collect();
        print!(
            "{}",
            output::table(&["STACK", "VERSION", "DIGEST", "SIGNATURES"], &rows)
        );
    }
    Ok(ExitStatus::Success)
}

fn signature_state(check: &stackpack_bundle::verify::SignatureCheck, trust: &Trust) -> String {
    match (&check.outcome, trust) {
        (Ok(true), _) => "valid, trusted".into(),
        (Ok(false), Trust::ReportOnly) => "valid (trust not checked: pass `--trust`)".into(),
        (Ok(false), Trust::Keys(_)) => "valid, NOT trusted".into(),
        (Err(e), _) => format!("INVALID: {e}"),
    }
}

fn print_bundle(bundle: &VerifiedBundle, trust: &Trust) {
    let config = &bundle.config;
    println!("bundle   {}@{}", config.stack, config.version);
    println!("digest   {}", bundle.manifest_descriptor.digest);
    println!(
        "source   {} @ {} ({})",
        if config.source.repository.is_empty() {
            "-"
        } else {
            &config.source.repository
        },
        config.source.commit,
        config.source.branch
    );
    println!("created  {}", config.created);
    println!(
        "engine   {} {}",
        config
            .engine
            .name
            .map_or("terraform or tofu", |name| name.as_str()),
        config.engine.version_constraint.as_deref().unwrap_or("")
    );
    println!(
        "layer    {} ({})",
        bundle.stack_layer.digest.short(),
        output::human_size(bundle.stack_layer.size)
    );
    for check in &bundle.signatures {
        println!(
            "signed   key `{}`: {}",
            check.key_id.as_deref().unwrap_or("?"),
            signature_state(check, trust)
        );
    }
    println!();
    print_contents(config);
}

/// The bundle's inputs, outputs, modules and files, one table each.
fn print_contents(config: &BundleConfig) {
    print_interface(config);
    let modules: Vec<Vec<String>> = config
        .modules
        .iter()
        .map(|m| vec![m.name.clone(), m.path.clone(), m.digest.short()])
        .collect();
    print!("{}", output::table(&["MODULE", "PATH", "DIGEST"], &modules));
    println!();
    print_providers(config);
    print_files(config);
}

/// The inputs and outputs tables.
fn print_interface(config: &BundleConfig) {
    let inputs: Vec<Vec<String>> = config
        .interface
        .inputs
        .iter()
        .map(|input| {
            vec![
                input.name.clone(),
                input.type_constraint.to_string(),
                if input.required {
                    "required".into()
                } else {
                    input
                        .default
                        .as_ref()
                        .map_or("(computed)".into(), |d| d.to_string())
                },
                if input.sensitive { "sensitive" } else { "" }.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        output::table(&["INPUT", "TYPE", "DEFAULT", ""], &inputs)
    );
    println!();
    let outputs: Vec<Vec<String>> = config
        .interface
        .outputs
        .iter()
        .map(|o| {
            vec![
                o.name.clone(),
                if o.sensitive { "sensitive" } else { "" }.into(),
            ]
        })
        .collect();
    print!("{}", output::table(&["OUTPUT", ""], &outputs));
    println!();
}

/// The provider packages the bundle carries, when it carries any.
fn print_providers(config: &BundleConfig) {
    if config.providers.is_empty() {
        return;
    }
    let providers: Vec<Vec<String>> = config
        .providers
        .iter()
        .map(|p| {
            vec![
                p.source.clone(),
                p.version.clone(),
                p.platform.clone(),
                output::human_size(p.size),
                p.hash.clone(),
                p.digest.short(),
            ]
        })
        .collect();
    print!(
        "{}",
        output::table(
            &[
                "PROVIDER",
                "VERSION",
                "PLATFORM",
                "SIZE",
                "LOCKED BY",
                "LAYER"
            ],
            &providers
        )
    );
    println!();
}

/// The file layers, then every file.
fn print_files(config: &BundleConfig) {
    // Files that travel as layers of their own: the layer's digest is the file's,
    // which is what a registry shares between versions and stacks.
    let file_layers: Vec<Vec<String>> = config
        .file_layers()
        .map(|f| vec![f.path.clone(), output::human_size(f.size), f.digest.short()])
        .collect();
    if !file_layers.is_empty() {
        print!(
            "{}",
            output::table(&["FILE LAYER", "SIZE", "DIGEST"], &file_layers)
        );
        println!();
    }
    let files: Vec<Vec<String>> = config
        .files
        .iter()
        .map(|f| {
            vec![
                f.path.clone(),
                output::human_size(f.size),
                f.digest.short(),
                if f.layer { "own layer" } else { "" }.into(),
            ]
        })
        .collect();
    print!("{}", output::table(&["FILE", "SIZE", "DIGEST", ""], &files));
}

fn to_json(bundle: &VerifiedBundle, trust: &Trust) -> serde_json::Value {
    let signatures: Vec<_> = bundle
        .signatures
        .iter()
        .map(|check| {
            serde_json::json!({
                "manifestDigest": check.manifest_digest,
                "keyId": check.key_id,
                "valid": check.outcome.is_ok(),
                "trusted": match (&check.outcome, trust) {
                    (Ok(trusted), Trust::Keys(_)) => Some(*trusted),
                    _ => None,
                },
                "error": check.outcome.as_ref().err(),
                "payload": check.payload,
            })
        })
        .collect();
    serde_json::json!({
        "stack": bundle.config.stack,
        "version": bundle.config.version.to_string(),
        "digest": bundle.manifest_descriptor.digest,
        "manifest": bundle.manifest,
        "config": bundle.config,
        "fileLayers": bundle
            .config
            .file_layers()
            .map(|f| serde_json::json!({
                "path": f.path,
                "size": f.size,
                "digest": f.digest,
                "executable": f.executable,
            }))
            .collect::<Vec<_>>(),
        "signatures": signatures,
        "verified": bundle.signer.is_some(),
    })
}
