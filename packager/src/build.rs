//! Turning a stack's plan into a signed bundle in an image layout.
//!
//! Blobs are written first (layer, config, manifest, signature), each visible only
//! once whole; then the bundle and its signature enter `index.json` in one atomic
//! update. A failure at any point leaves the layout as it was, apart from
//! unreferenced blobs that nothing lists.

use semver::Version;
use stackpack_bundle::layout::{
    bundle_entry_annotations, signature_entry_annotations, ImageLayout,
};
use stackpack_schema::bundle::{tree_digest, BundleConfig, Engine, FileEntry, ModuleEntry, Source};
use stackpack_schema::interface::Interface;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::signature::SigningKey;

use crate::error::{Error, Result};
use crate::pack;
use crate::plan::{Plan, StackPlan};
use crate::repository::Repository;

/// What a build made.
#[derive(Clone, Debug)]
pub struct BuiltBundle {
    pub stack: String,
    pub version: Version,
    pub manifest: Descriptor,
    pub layer: Descriptor,
    pub signature: Descriptor,
    /// The SBOM and the Sigstore bundles (provenance, signature) beside it.
    pub attestations: Vec<Descriptor>,
    pub config: BundleConfig,
}

impl BuiltBundle {
    /// Every layer's bytes: the stack layer, the file layers (each counted once, as
    /// the registry stores them) and the provider packages.
    pub fn size(&self) -> u64 {
        let mut file_layers: Vec<(&stackpack_schema::Digest, u64)> = self
            .config
            .files
            .iter()
            .filter(|f| f.layer)
            .map(|f| (&f.digest, f.size))
            .collect();
        file_layers.sort();
        file_layers.dedup();
        self.layer.size
            + file_layers.iter().map(|(_, size)| size).sum::<u64>()
            + self.config.providers.iter().map(|p| p.size).sum::<u64>()
    }
}

/// RFC 3339 UTC of a Unix time.
pub fn rfc3339(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The repository path a stack is published under, without the registry host.
pub fn stack_repository(namespace: Option<&str>, stack: &str) -> String {
    match namespace
        .map(|n| n.trim_matches('/'))
        .filter(|n| !n.is_empty())
    {
        Some(namespace) => format!("{namespace}/stacks/{stack}"),
        None => format!("stacks/{stack}"),
    }
}

/// Builds, signs and stores one planned stack.
pub fn build_stack(
    repo: &Repository,
    plan: &Plan,
    stack_plan: &StackPlan,
    version: &Version,
    namespace: Option<&str>,
    key: &dyn SigningKey,
    layout: &ImageLayout,
) -> Result<BuiltBundle> {
    let stack = &stack_plan.stack;
    let created = rfc3339(plan.commit_time);

    // Read first: a file that cannot be read refuses the stack before anything is
    // written to the layout.
    let interface: Interface = crate::check::Tree::load(&repo.root, &stack.path)
        .map_err(crate::discover::unparsable)?
        .to_schema();

    let StackLayer {
        files,
        file_layers,
        layer,
    } = write_stack_layer(stack_plan, layout)?;

    // The config.
    let modules = module_entries(stack_plan, &files);
    // Provider packages, checked against the lock file before anything is signed.
    let providers =
        crate::providers::collect(&repo.root, &stack.path, &interface, &repo.config.providers)?;
    let provider_layers = crate::providers::write_layers(&providers, layout)?;
    let commit = if plan.dirty {
        format!("{}-dirty", plan.commit)
    } else {
        plan.commit.clone()
    };
    let config = BundleConfig {
        format: BundleConfig::required_format(&files),
        stack: stack.name.clone(),
        version: version.clone(),
        source: Source {
            repository: repo.source_address()?,
            commit,
            branch: plan.branch.clone(),
        },
        created: created.clone(),
        engine: Engine {
            name: stack.config.engine,
            version_constraint: interface.required_version.clone(),
        },
        entrypoint: stack.path.clone(),
        interface,
        modules,
        files,
        providers: providers.into_iter().map(|p| p.package).collect(),
        allowed_breaking: stack_plan.allowed_breaking.clone(),
        witness: stack_plan.witness.clone(),
        changes: stack_plan.changes.clone(),
    };
    let layers = std::iter::once(layer.clone())
        .chain(file_layers)
        .chain(provider_layers)
        .collect();
    let manifest = write_manifest(&config, layers, layout)?;
    let signature = stackpack_bundle::sign::sign_manifest(
        &manifest,
        &stack_repository(namespace, &stack.name),
        version,
        &created,
        key,
        layout,
    )?;
    add_to_index(&manifest, &signature, &stack.name, version, layout)?;
    let attestations = crate::attest::attest_bundle(
        &config,
        &manifest,
        &stack_repository(namespace, &config.stack),
        key,
        layout,
    )?;

    Ok(BuiltBundle {
        stack: stack.name.clone(),
        version: version.clone(),
        manifest,
        layer,
        signature,
        attestations,
        config,
    })
}

/// The stack layer as written to the layout, with the files it holds.
struct StackLayer {
    files: Vec<FileEntry>,
    /// Large incompressible files that travel beside it as layers of their own.
    file_layers: Vec<Descriptor>,
    layer: Descriptor,
}

/// Streams the stack layer into the layout, and large incompressible files beside it
/// as layers of their own; refuses when the files changed since they were planned.
fn write_stack_layer(stack_plan: &StackPlan, layout: &ImageLayout) -> Result<StackLayer> {
    let writer = layout.blob_writer()?;
    let pack::PackedStack {
        entries: files,
        file_layers,
        out: writer,
    } = pack::write_stack(
        &stack_plan.files,
        writer,
        stackpack_bundle::gzip::default_threads(),
        layout,
    )?;
    if files != stack_plan.entries {
        return Err(Error::refused(format!(
            "files of stack `{}` changed during the build",
            stack_plan.stack.name
        ))
        .hint("run the build again when nothing else writes to the repository"));
    }
    let (layer_digest, layer_size) = writer.commit()?;
    Ok(StackLayer {
        files,
        file_layers,
        layer: Descriptor::new(media_type::STACK_LAYER, layer_digest, layer_size),
    })
}

/// The local modules the stack vendors, each with the digest of its files and, when
/// a module package holds exactly those files, that package's version.
fn module_entries(stack_plan: &StackPlan, files: &[FileEntry]) -> Vec<ModuleEntry> {
    stack_plan
        .stack
        .modules
        .iter()
        .map(|module| {
            let prefix = format!("{}/", module.path);
            let digest = tree_digest(
                files
                    .iter()
                    .filter(|f| f.path.starts_with(&prefix))
                    .map(|f| (f.path.as_str(), &f.digest)),
            );
            // Only a module package with exactly these files lends its version.
            let version = stack_plan
                .module_versions
                .iter()
                .find(|(path, tree, _)| *path == module.path && *tree == digest)
                .map(|(_, _, version)| version.to_string());
            ModuleEntry {
                name: module.name.clone(),
                path: module.path.clone(),
                version,
                digest,
            }
        })
        .collect()
}

/// Writes the config and the bundle's manifest over it and `layers`; returns the
/// manifest's descriptor.
fn write_manifest(
    config: &BundleConfig,
    layers: Vec<Descriptor>,
    layout: &ImageLayout,
) -> Result<Descriptor> {
    let (config_digest, config_size) = layout.write_blob(&config.to_bytes())?;
    let mut annotations = Annotations::new();
    annotations.insert(annotation::VERSION.into(), config.version.to_string());
    annotations.insert(annotation::REVISION.into(), config.source.commit.clone());
    annotations.insert(annotation::SOURCE.into(), config.source.repository.clone());
    annotations.insert(annotation::CREATED.into(), config.created.clone());
    annotations.insert(annotation::TITLE.into(), config.stack.clone());
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::BUNDLE_ARTIFACT.into()),
        config: Descriptor::new(media_type::BUNDLE_CONFIG, config_digest, config_size),
        layers,
        subject: None,
        annotations: Some(annotations),
    };
    let (manifest_digest, manifest_size) = layout.write_blob(&manifest.to_bytes())?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, manifest_digest, manifest_size);
    descriptor.artifact_type = Some(media_type::BUNDLE_ARTIFACT.into());
    Ok(descriptor)
}

/// Adds the bundle and its signature to `index.json` in one atomic update, in place
/// of any entry with either digest or the bundle's reference.
fn add_to_index(
    manifest: &Descriptor,
    signature: &Descriptor,
    stack: &str,
    version: &Version,
    layout: &ImageLayout,
) -> Result<()> {
    let mut bundle_entry = manifest.clone();
    bundle_entry.annotations = Some(bundle_entry_annotations(stack, version));
    let mut signature_entry = signature.clone();
    signature_entry.annotations = Some(signature_entry_annotations(&manifest.digest));
    layout.update_index(|index| {
        let bundle_ref = bundle_entry
            .annotation(annotation::REF_NAME)
            .map(str::to_string);
        index.manifests.retain(|existing| {
            existing.digest != bundle_entry.digest
                && existing.digest != signature_entry.digest
                && (bundle_ref.is_none()
                    || existing.annotation(annotation::REF_NAME) != bundle_ref.as_deref())
        });
        index.manifests.push(bundle_entry);
        index.manifests.push(signature_entry);
    })?;
    Ok(())
}
