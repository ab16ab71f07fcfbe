use std::path::Path;

use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::transfer::{export_bundles, pull_bundle};
use stackpack_packager::Error;
use stackpack_packager::Result;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::reference::StackRef;
use stackpack_terminal::ExitStatus;

use crate::cli::{ExportArgs, GlobalArgs};
use crate::commands::{connect, registry_address, Transport};
use crate::output;

pub fn run(args: &ExportArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let references = args
        .bundles
        .iter()
        .map(|text| bundle_reference(text))
        .collect::<Result<Vec<_>, _>>()?;
    // A registry's bundles are pulled into a temporary layout first.
    let staging;
    let layout = match &args.registry {
        Some(registry) => {
            staging = tempfile::tempdir().map_err(|e| {
                stackpack_packager::error::io(
                    "create a staging folder in",
                    &std::env::temp_dir(),
                    e,
                )
            })?;
            pull_into(staging.path(), registry, args, &references)?
        }
        None => local_layout(args)?,
    };
    let manifests = references
        .iter()
        .map(|reference| signed_manifest(&layout, reference))
        .collect::<Result<Vec<_>, _>>()?;
    let size = export_bundles(&layout, &manifests, &args.out)
        .map_err(|e| Error::refused_by(e).at(args.out.display()))?;
    if args.json {
        output::print_json(&serde_json::json!({
            "file": args.out,
            "size": size,
            "bundles": references.iter().zip(&manifests).map(|(r, d)| serde_json::json!({
                "stack": r.stack,
                "version": r.version.as_ref().map(|v| v.to_string()),
                "digest": d.digest,
            })).collect::<Vec<_>>(),
        }));
    } else {
        println!("{}", args.out.display());
        output::status(&format!(
            "exported {} bundle{} ({}) to `{}`",
            manifests.len(),
            if manifests.len() == 1 { "" } else { "s" },
            output::human_size(size),
            args.out.display()
        ));
    }
    Ok(ExitStatus::Success)
}

/// `STACK@VERSION`; a version is required, since an export is a fixed set.
fn bundle_reference(text: &str) -> Result<StackRef, Error> {
    const HINT: &str = "name bundles as `STACK@VERSION`, such as `data-plane@1.4.0`";
    let reference: StackRef = text
        .parse()
        .map_err(|e: stackpack_schema::reference::ReferenceError| Error::usage_by(e).hint(HINT))?;
    if reference.version.is_none() {
        return Err(Error::usage(format!("`{text}` has no version")).hint(HINT));
    }
    Ok(reference)
}

/// Pulls the bundles from `registry` into a new layout in `staging`.
fn pull_into(
    staging: &Path,
    registry: &str,
    args: &ExportArgs,
    references: &[StackRef],
) -> Result<ImageLayout> {
    let address = registry_address(Some(registry), None)?;
    let remote = connect(&address.host, Transport::from_insecure_flag(args.insecure))?;
    let layout = ImageLayout::create(staging)?;
    for reference in references {
        let version = reference.version.as_ref().expect("checked above");
        output::status(&format!("pulling `{reference}` from `{address}`"));
        pull_bundle(
            &remote,
            &address.stack_repository(&reference.stack),
            &reference.stack,
            version,
            &layout,
            None,
        )
        .map_err(|e| match e {
            stackpack_bundle::transfer::TransferError::Remote(r) => Error::from(r),
            other => Error::refused(other.to_string()),
        })?;
    }
    Ok(layout)
}

/// `--from`, or the layout `stackpack build` writes by default.
fn local_layout(args: &ExportArgs) -> Result<ImageLayout, Error> {
    let path = args
        .from
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from(".stackpack/bundles"));
    ImageLayout::open(&path).map_err(|e| {
        Error::usage_by(e)
            .hint("pass the layout `stackpack build` wrote with `--from DIR`, or `--registry`")
    })
}

/// The bundle's manifest in `layout`; only signed bundles are exported.
fn signed_manifest(layout: &ImageLayout, reference: &StackRef) -> Result<Descriptor, Error> {
    let version = reference.version.as_ref().expect("checked above");
    let descriptor = layout
        .find_bundle(&reference.stack, version)?
        .ok_or_else(|| {
            Error::usage(format!(
                "bundle `{reference}` is not in `{}`",
                layout.root().display()
            ))
            .hint("list what is there with `stackpack inspect DIR`")
        })?;
    if layout.signatures_for(&descriptor.digest)?.is_empty() {
        return Err(
            Error::refused(format!("bundle `{reference}` has no signature"))
                .hint("only signed bundles are exported; rebuild it with `stackpack build --key`"),
        );
    }
    Ok(descriptor)
}
