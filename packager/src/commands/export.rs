use std::path::Path;

use stackpack_bundle::channel::statements_in;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::release::{find_release, verify_release};
use stackpack_bundle::transfer::{export_bundles, pull_bundle};
use stackpack_bundle::verify::Trust;
use stackpack_packager::release::publish::fetch::{pull_release, release_repository};
use stackpack_packager::Error;
use stackpack_packager::Result;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::reference::StackRef;
use stackpack_schema::rollout::SignedChannelStatement;
use stackpack_terminal::ExitStatus;

use crate::cli::{ExportArgs, GlobalArgs};
use crate::commands::{connect, registry_address, Transport};
use crate::output;

pub fn run(args: &ExportArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let written = write(args)?;
    show(
        args,
        written.size,
        &written.manifests,
        &written.extra,
        &written.statements,
    );
    Ok(ExitStatus::Success)
}

/// What an export wrote into its tar.
pub struct Written {
    pub size: u64,
    /// Blobs the export reaches but left out (see [`write_omitting`]).
    pub omitted: Vec<stackpack_schema::digest::Digest>,
    pub manifests: Vec<Descriptor>,
    pub extra: Vec<Descriptor>,
    pub statements: Vec<(Descriptor, SignedChannelStatement)>,
}

/// Writes the tar `args.out` names (also the inside of a kit: `kit.rs`).
pub fn write(args: &ExportArgs) -> Result<Written> {
    write_omitting(args, &Default::default())
}

/// [`write()`], leaving out the blobs in `omit` (a kit made for one customer).
pub fn write_omitting(
    args: &ExportArgs,
    omit: &std::collections::BTreeSet<stackpack_schema::digest::Digest>,
) -> Result<Written> {
    let references = args
        .bundles
        .iter()
        .map(|text| bundle_reference(text))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(channel) = &args.channel {
        stackpack_packager::promote::check_channel(channel)?;
    }
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
    let mut manifests = Vec::new();
    let mut extra = Vec::new();
    let mut statements = Vec::new();
    for reference in &references {
        let subject = match release_parts(&layout, reference)? {
            Some(release) => {
                let index = release.entries[0].digest.clone();
                manifests.extend(release.bundles);
                extra.extend(release.entries);
                index
            }
            None => {
                let bundle = signed_manifest(&layout, reference)?;
                let digest = bundle.digest.clone();
                manifests.push(bundle);
                digest
            }
        };
        if let Some(channel) = &args.channel {
            statements.extend(channel_statements(&layout, reference, &subject, channel)?);
        }
    }
    extra.extend(statements.iter().map(|(d, _)| d.clone()));
    // Two releases (or a release and a bundle named on its own) may share bundles.
    let mut seen = std::collections::BTreeSet::new();
    manifests.retain(|d| seen.insert(d.digest.clone()));
    let mut seen = std::collections::BTreeSet::new();
    extra.retain(|d| seen.insert(d.digest.clone()));
    let exported = export_bundles(&layout, &manifests, &extra, omit, &args.out)
        .map_err(|e| Error::refused_by(e).at(args.out.display()))?;
    Ok(Written {
        size: exported.size,
        omitted: exported.omitted,
        manifests,
        extra,
        statements,
    })
}

/// What an export wrote: one JSON document, or the file's path and a summary.
fn show(
    args: &ExportArgs,
    size: u64,
    manifests: &[Descriptor],
    extra: &[Descriptor],
    statements: &[(
        Descriptor,
        stackpack_schema::rollout::SignedChannelStatement,
    )],
) {
    if args.json {
        output::print_json(&serde_json::json!({
            "file": args.out,
            "size": size,
            "bundles": manifests.iter().map(|d| serde_json::json!({
                "stack": d.annotation(stackpack_schema::media_type::annotation::STACK),
                "version": d.annotation(stackpack_schema::media_type::annotation::VERSION),
                "digest": d.digest,
            })).collect::<Vec<_>>(),
            "releases": extra.iter().filter(|d| is_release(d)).map(|d| serde_json::json!({
                "release": d.annotation(stackpack_schema::media_type::annotation::RELEASE),
                "version": d.annotation(stackpack_schema::media_type::annotation::VERSION),
                "digest": d.digest,
            })).collect::<Vec<_>>(),
            "statements": statements.iter().map(|(d, signed)| serde_json::json!({
                "channel": signed.statement.channel,
                "kind": signed.statement.kind,
                "release": signed.statement.release,
                "version": signed.statement.version.to_string(),
                "subject": signed.statement.digest,
                "keyId": signed.statement.key_id,
                "digest": d.digest,
            })).collect::<Vec<_>>(),
        }));
    } else {
        println!("{}", args.out.display());
        let releases = extra.iter().filter(|d| is_release(d)).count();
        let with_releases = match releases {
            0 => String::new(),
            1 => " and 1 release".to_string(),
            n => format!(" and {n} releases"),
        };
        let with_statements = match (&args.channel, statements.len()) {
            (Some(channel), 1) => format!(", with 1 statement for channel `{channel}`"),
            (Some(channel), n) => format!(", with {n} statements for channel `{channel}`"),
            (None, _) => String::new(),
        };
        output::status(&format!(
            "exported {} bundle{}{with_releases}{with_statements} ({}) to `{}`",
            manifests.len(),
            if manifests.len() == 1 { "" } else { "s" },
            output::human_size(size),
            args.out.display()
        ));
    }
}

/// A release's index entry (not a channel statement, which names its release too).
fn is_release(entry: &Descriptor) -> bool {
    entry.annotation(stackpack_schema::media_type::annotation::KIND)
        == Some(stackpack_bundle::release::RELEASE_KIND)
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
        let release = release_repository(&address, &reference.stack);
        if remote.tag_digest(&release, &version.to_string())?.is_some() {
            let index = pull_release(&remote, &address, &reference.stack, version, &layout)?;
            if let Some(channel) = &args.channel {
                pull_statements(&remote, &release, &index.digest, channel, &layout)?;
            }
            continue;
        }
        let stack_repository = address.stack_repository(&reference.stack);
        let pulled = pull_bundle(
            &remote,
            &stack_repository,
            &reference.stack,
            version,
            &layout,
            None,
        )
        .map_err(|e| match e {
            stackpack_bundle::transfer::TransferError::Remote(r) => Error::from(r),
            other => Error::refused(other.to_string()),
        })?;
        if let Some(channel) = &args.channel {
            pull_statements(
                &remote,
                &stack_repository,
                &pulled.manifest.digest,
                channel,
                &layout,
            )?;
        }
    }
    Ok(layout)
}

/// The subject's statements for `channel`, from the registry into the staging layout.
fn pull_statements(
    remote: &stackpack_bundle::remote::Remote,
    repository: &str,
    subject: &stackpack_schema::digest::Digest,
    channel: &str,
    layout: &ImageLayout,
) -> Result<()> {
    stackpack_packager::promote::pull_statements(
        remote,
        repository,
        subject,
        channel,
        layout,
        &mut |digest, why| {
            output::warning(&format!(
                "skipped `{}@{digest}`: it is not a readable channel statement: {why}",
                repository
            ))
        },
    )?;
    Ok(())
}

/// The statements in `layout` approving `subject` (what `reference` names) for
/// `channel`, each intact (its signature checks against its own key: which keys to
/// trust is the runner's to decide). None is a refusal: an export for a channel
/// without the vendor's approval would be refused by every runner following it.
fn channel_statements(
    layout: &ImageLayout,
    reference: &StackRef,
    subject: &stackpack_schema::digest::Digest,
    channel: &str,
) -> Result<Vec<(Descriptor, SignedChannelStatement)>> {
    let mut found = Vec::new();
    for (descriptor, read) in statements_in(layout, Some(channel))? {
        let signed = match read {
            Ok(signed) if &signed.statement.digest == subject => signed,
            Ok(_) => continue,
            Err(e) => {
                output::warning(&format!(
                    "skipped channel statement `{}`: {e}",
                    descriptor.digest.short()
                ));
                continue;
            }
        };
        if let Err(e) = signed.verify_integrity() {
            output::warning(&format!(
                "skipped channel statement `{}` for `{reference}`: {e}",
                descriptor.digest.short()
            ));
            continue;
        }
        // A runner would refuse it, and the registry refuses such a statement: only
        // a key that signed what a statement approves may approve it.
        let signers: Vec<String> = stackpack_packager::promote::layout_signers(layout, subject)?
            .iter()
            .map(|k| k.key_id())
            .collect();
        if !signers.contains(&signed.statement.key_id) {
            output::warning(&format!(
                "skipped channel statement `{}`: {}",
                descriptor.digest.short(),
                stackpack_schema::rollout::foreign_signer(
                    &reference.to_string(),
                    &signed.statement.key_id,
                    &signers
                )
            ));
            continue;
        }
        found.push((descriptor, signed));
    }
    if found.is_empty() {
        return Err(Error::refused(format!(
            "`{reference}` has no statement approving it for channel `{channel}`"
        ))
        .hint(format!(
            "approve it first with `stackpack promote {reference} --channel {channel}`"
        )));
    }
    Ok(found)
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

/// What exporting a release adds: the bundles it pins, and its own index entry
/// (whose manifests, its signature among them, travel with it).
struct ReleaseParts {
    bundles: Vec<Descriptor>,
    entries: Vec<Descriptor>,
}

/// When `reference` names a release in `layout`: its parts, checked whole (the
/// description, every pin, and a signature; trust is the importer's to decide).
fn release_parts(layout: &ImageLayout, reference: &StackRef) -> Result<Option<ReleaseParts>> {
    let version = reference.version.as_ref().expect("checked above");
    if find_release(layout, &reference.stack, version)?.is_none() {
        return Ok(None);
    }
    let verified = verify_release(layout, &reference.stack, version, &Trust::ReportOnly)?;
    // The release's signature is an entry of its index (see `bundle::release`).
    if verified.signatures.is_empty() {
        return Err(
            Error::refused(format!("release `{reference}` has no signature"))
                .hint("only signed releases are exported; publish it with `stackpack publish`"),
        );
    }
    let entry = layout
        .index()?
        .manifests
        .into_iter()
        .find(|d| d.digest == verified.index_descriptor.digest)
        .unwrap_or_else(|| verified.index_descriptor.clone());
    let bundles = verified
        .description
        .stacks
        .iter()
        .map(|stack| {
            let reference = StackRef {
                stack: stack.name.clone(),
                version: Some(stack.version.clone()),
            };
            signed_manifest(layout, &reference)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(ReleaseParts {
        bundles,
        entries: vec![entry],
    }))
}
