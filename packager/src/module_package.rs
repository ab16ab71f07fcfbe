//! OpenTofu module packages: every module folder, published on its own.
//!
//! Each folder matched by the `modules` globs of `stackpack.toml` becomes an OCI
//! image manifest with `artifactType` `application/vnd.opentofu.modulepkg`, the OCI
//! empty config, and exactly one `archive/zip` layer holding the module's tracked
//! files with paths relative to the module folder, in
//! `<namespace>/modules/<module>`. So `source = "oci://HOST/NAMESPACE/modules/network?tag=1.2.0"`
//! works in OpenTofu 1.10 and later.
//!
//! The zip is deterministic: entries sorted by path, every time 1980-01-01 00:00
//! (the earliest a zip can say), mode 0644 (0755 for files git records as
//! executable), deflate at level 6, no extra fields, no folder entries. The same
//! files give the same bytes on any machine.
//!
//! Versions follow the stacks' rules, per module: `0.1.0` first, then the last stable
//! bumped by what the interface checker requires since it (the previous stable's
//! `org.opencontainers.image.revision` names the commit to compare with), raised by
//! `--bump`; `X.Y.Z-<slug>.<n>` on branches. A module whose files hash to the same
//! tree as its latest version on the channel (the `dev.stackpack.tree-digest`
//! annotation, over repository-relative paths as in a bundle's module entries) gets
//! no new version.
//!
//! A module that uses local modules outside its own folder (`source = "../x"`)
//! cannot work as a standalone package: it is skipped with a warning, never an error.
//!
//! Pushing is as safe as for stacks: blobs first, then the manifest by digest, and
//! the tag last, read back after writing. A stable tag is never overwritten; a
//! prerelease number taken by a concurrent publisher moves to the next one.
//! Module packages are not signed: OpenTofu does not check signatures on them, and
//! the bundles that vendor the same files are.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use semver::Version;
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::{RegistryAddress, Remote};
use stackpack_schema::bundle::{tree_digest, FileEntry};
use stackpack_schema::digest::Digest;
use stackpack_schema::media_type::{self, annotation};
use stackpack_schema::oci::{Annotations, Descriptor, ImageManifest};
use stackpack_schema::version::{self, Bump};

use crate::build::rfc3339;
use crate::check::{self, Finding, RuleConfig};
use crate::config::StackConfig;
use crate::discover::{self, Stack};
use crate::error::{Error, Result};
use crate::pack::{self, SourceFile};
use crate::plan::{dirty_channel, latest_on_channel, Plan, PlanOptions};
use crate::publish::{claim_tag, Artifact, Claimed, Destination};
use crate::repository::Repository;

/// Our annotation on a module package's manifest: [`tree_digest`] of its files.
pub const TREE_DIGEST_ANNOTATION: &str = "dev.stackpack.tree-digest";

/// The first version of a module.
fn initial_version() -> Version {
    StackConfig::default().initial_version()
}

/// The plan for one module folder.
#[derive(Clone, Debug)]
pub struct ModulePlan {
    /// The folder's name: the repository is `<namespace>/modules/<name>`.
    pub module: String,
    /// Repository-relative folder (`modules/network`).
    pub path: String,
    /// Tracked files, repository-relative paths, sorted.
    pub files: Vec<SourceFile>,
    pub entries: Vec<FileEntry>,
    pub tree_digest: Digest,
    /// Uncommitted changes are packed (`--allow-dirty`); the revision says `-dirty`.
    pub dirty: bool,
    /// Why the module is not published on its own (it uses modules outside its
    /// folder, or has no files). A warning, not an error.
    pub skipped: Option<String>,
    pub changed: bool,
    pub reason: String,
    /// The latest version on this channel and its manifest digest.
    pub previous: Option<(Version, Digest)>,
    pub last_stable: Option<Version>,
    /// The version a publish gets (`None` when unchanged or skipped).
    pub next: Option<Version>,
    pub bump: Bump,
    pub findings: Vec<Finding>,
}

impl ModulePlan {
    /// The version these files have once the publish is done: the one about to be
    /// published, or the latest when unchanged; `None` when skipped.
    pub fn version(&self) -> Option<&Version> {
        if self.skipped.is_some() {
            return None;
        }
        self.next
            .as_ref()
            .or(self.previous.as_ref().map(|(v, _)| v))
    }
}

/// Tells every planned stack the module versions, so the bundles it builds record
/// the version of each module they vendor. A prerelease number taken by a
/// concurrent publisher between planning and pushing moves the module to the next
/// number, which the bundle then does not name.
pub fn record_versions(plan: &mut Plan, modules: &[ModulePlan]) {
    let versions: Vec<(String, Digest, Version)> = modules
        .iter()
        .filter_map(|m| Some((m.path.clone(), m.tree_digest.clone(), m.version()?.clone())))
        .collect();
    for stack in &mut plan.stacks {
        stack.module_versions = versions.clone();
    }
}

/// What happened to one module.
#[derive(Clone, Debug)]
pub struct PublishedModule {
    pub module: String,
    pub path: String,
    /// The version now in the registry for these files (new or existing).
    pub version: Option<Version>,
    pub digest: Option<Digest>,
    pub published: bool,
    /// Not published on its own; `reason` says why.
    pub skipped: bool,
    pub bump: Bump,
    pub reason: String,
    pub bytes_sent: u64,
    pub collisions: usize,
}

/// Plans every module folder: files, tree digest, whether it changed since its
/// latest version on the plan's channel in the registry, and the next version.
/// Reads only; refusals (a smaller `--bump` than required, uncommitted changes)
/// happen here, before anything is pushed.
pub fn plan_modules(
    repo: &Repository,
    plan: &Plan,
    options: &PlanOptions,
    remote: &Remote,
    address: &RegistryAddress,
) -> Result<Vec<ModulePlan>> {
    let rules = RuleConfig::from_table(&repo.config.rules).map_err(|message| {
        Error::usage(format!("`stackpack.toml` `[rules]`: {message}"))
            .at(repo.root.join("stackpack.toml").display())
    })?;
    // With `--stack`, only the modules those stacks use.
    let wanted: Option<Vec<&str>> = (!options.stacks.is_empty()).then(|| {
        repo.stacks
            .iter()
            .filter(|s| options.stacks.contains(&s.name))
            .flat_map(|s| s.modules.iter().map(|m| m.path.as_str()))
            .collect()
    });
    let mut plans = Vec::new();
    for path in discover::expand_globs(&repo.root, &repo.config.modules) {
        if wanted.as_ref().is_some_and(|w| !w.contains(&path.as_str())) {
            continue;
        }
        plans.push(plan_module(
            repo, plan, options, remote, address, &rules, path,
        )?);
    }
    Ok(plans)
}

fn plan_module(
    repo: &Repository,
    plan: &Plan,
    options: &PlanOptions,
    remote: &Remote,
    address: &RegistryAddress,
    rules: &RuleConfig,
    path: String,
) -> Result<ModulePlan> {
    let module = path.rsplit('/').next().unwrap_or(&path).to_string();
    if let Some(why) = standalone_problem(repo, &module, &path) {
        return Ok(ModulePlan::skipped(module, path, why));
    }
    let dirty = uncommitted(repo, options, &module, &path)?;
    let files = module_files(repo, &module, &path)?;
    if files.is_empty() {
        let why = format!("`{path}` has no tracked files");
        return Ok(ModulePlan::skipped(module, path, why));
    }
    let entries = pack::hash_files(&files)?;
    let digest = tree_digest(entries.iter().map(|e| (e.path.as_str(), &e.digest)));

    let repository = address.module_repository(&module);
    let existing: Vec<Version> = remote
        .tags(&repository)?
        .iter()
        .filter_map(|t| Version::parse(t).ok())
        .collect();
    let last_stable = version::latest_stable(&existing).cloned();
    let previous = match latest_on_channel(&existing, &plan.channel) {
        Some(v) => published_package(remote, &repository, &v)?.map(|p| (v, p)),
        None => None,
    };
    let (changed, reason) = change_since(previous.as_ref(), &digest);
    let (required, findings) = match (&last_stable, changed) {
        (Some(last), true) => {
            required_bump(repo, &repository, remote, &module, &path, last, rules)?
        }
        _ => (Bump::Patch, Vec::new()),
    };
    if changed {
        refuse_smaller_bump(&module, options.bump, required, &findings)?;
    }
    let bump = options.bump.map_or(required, |b| b.max(required));
    // As for stacks: uncommitted changes never get a plain version, since the
    // package matches no commit.
    let channel = if dirty {
        dirty_channel(&plan.channel)
    } else {
        plan.channel.clone()
    };
    Ok(ModulePlan {
        next: changed.then(|| version::next_version(&existing, bump, &initial_version(), &channel)),
        module,
        path,
        files,
        entries,
        tree_digest: digest,
        dirty,
        skipped: None,
        changed,
        reason,
        previous: previous.map(|(v, p)| (v, p.digest)),
        last_stable,
        bump,
        findings,
    })
}

impl ModulePlan {
    /// A module not published on its own, and why.
    fn skipped(module: String, path: String, why: String) -> ModulePlan {
        ModulePlan {
            module,
            path,
            files: Vec::new(),
            entries: Vec::new(),
            tree_digest: tree_digest(std::iter::empty()),
            dirty: false,
            reason: why.clone(),
            skipped: Some(why),
            changed: false,
            previous: None,
            last_stable: None,
            next: None,
            bump: Bump::Patch,
            findings: Vec::new(),
        }
    }
}

/// Whether the module has uncommitted changes: refused unless `--allow-dirty`.
fn uncommitted(repo: &Repository, options: &PlanOptions, module: &str, path: &str) -> Result<bool> {
    let dirty = repo.git.dirty_files(&[path])?;
    if !dirty.is_empty() && !options.allow_dirty {
        return Err(Error::refused(format!(
            "module `{module}` has uncommitted changes: `{}`{}",
            dirty[0],
            if dirty.len() > 1 { ", …" } else { "" }
        ))
        .at(repo.root.display())
        .hint("commit or stash them: module packages are built from commits (`--allow-dirty` packs them anyway, for local tries only)"));
    }
    Ok(!dirty.is_empty())
}

/// Whether the files differ from the latest version on the channel, and the reason
/// the plan shows.
fn change_since(previous: Option<&(Version, PublishedPackage)>, digest: &Digest) -> (bool, String) {
    match previous {
        None => (true, "first release".to_string()),
        Some((v, package)) if package.tree_digest.as_ref() == Some(digest) => {
            (false, format!("unchanged: same files as `{v}`"))
        }
        Some((v, _)) => (true, format!("files changed since `{v}`")),
    }
}

/// Refuses a `--bump` smaller than the interface changes require, naming them.
fn refuse_smaller_bump(
    module: &str,
    requested: Option<Bump>,
    required: Bump,
    findings: &[Finding],
) -> Result<()> {
    let Some(requested) = requested.filter(|r| *r < required) else {
        return Ok(());
    };
    let reasons: String = findings
        .iter()
        .filter(|f| f.bump > Some(requested))
        .map(|f| {
            format!(
                "\n  --> `{}`: {}\n      rule: {}",
                f.location(),
                f.message,
                f.rule
            )
        })
        .collect();
    Err(Error::refused(format!(
        "module `{module}` needs a {required} release, but `--bump {requested}` was asked for{reasons}"
    ))
    .hint(format!("publish with `--bump {required}`, or undo the change")))
}

/// Why a module cannot stand alone, if it cannot: it uses a local module outside
/// its own folder (which a package could not carry), or its calls do not resolve,
/// or its name cannot be a repository name.
fn standalone_problem(repo: &Repository, module: &str, path: &str) -> Option<String> {
    if let Err(e) = stackpack_schema::reference::validate_name(module) {
        return Some(format!(
            "not published on its own: its folder name cannot name a repository ({e})"
        ));
    }
    let used = match discover::local_modules(&repo.root, path) {
        Ok(used) => used,
        Err(e) => {
            return Some(format!(
                "not published on its own: {}{}",
                e.message,
                e.location.map(|l| format!(" (`{l}`)")).unwrap_or_default()
            ))
        }
    };
    let prefix = format!("{path}/");
    let outside: Vec<String> = used
        .iter()
        .filter(|m| !m.path.starts_with(&prefix))
        .map(|m| format!("`{}`", m.path))
        .collect();
    (!outside.is_empty()).then(|| {
        format!(
            "not published on its own: it uses local module{} {} outside its folder, which a standalone package cannot carry",
            if outside.len() == 1 { "" } else { "s" },
            outside.join(", ")
        )
    })
}

/// The module's tracked files (engine caches and state left out), with
/// repository-relative paths. Links inside the repository are packed as their
/// target, as in bundles.
pub fn module_files(repo: &Repository, module: &str, path: &str) -> Result<Vec<SourceFile>> {
    let as_stack = Stack {
        name: module.to_string(),
        path: path.to_string(),
        config: StackConfig::default(),
        modules: Vec::new(),
    };
    pack::collect_files(&repo.git, &as_stack)
}

/// What our earlier publish left on a module's manifest.
struct PublishedPackage {
    digest: Digest,
    tree_digest: Option<Digest>,
    revision: Option<String>,
}

fn published_package(
    remote: &Remote,
    repository: &str,
    version: &Version,
) -> Result<Option<PublishedPackage>> {
    let Some((bytes, digest)) = remote.pull_manifest(repository, &version.to_string())? else {
        return Ok(None);
    };
    let manifest: ImageManifest = serde_json::from_slice(&bytes).map_err(|e| {
        Error::refused(format!(
            "the manifest of `{repository}:{version}` is invalid: {e}"
        ))
    })?;
    Ok(Some(PublishedPackage {
        digest,
        tree_digest: manifest
            .annotation(TREE_DIGEST_ANNOTATION)
            .and_then(|d| d.parse().ok()),
        revision: manifest
            .annotation(annotation::REVISION)
            .map(str::to_string),
    }))
}

/// What the interface changes since `last` (a stable version) require.
fn required_bump(
    repo: &Repository,
    repository: &str,
    remote: &Remote,
    module: &str,
    path: &str,
    last: &Version,
    rules: &RuleConfig,
) -> Result<(Bump, Vec<Finding>)> {
    let Some(package) = published_package(remote, repository, last)? else {
        return Ok((Bump::Patch, Vec::new()));
    };
    let Some(revision) = package.revision else {
        return Ok((Bump::Patch, Vec::new()));
    };
    let commit = revision.trim_end_matches("-dirty");
    if repo.git.resolve(commit).is_none() {
        return Err(Error::refused(format!(
            "cannot compare module `{module}` with its last release `{last}`: its commit `{}` is not in this clone",
            &commit[..12.min(commit.len())]
        ))
        .hint("fetch the full history (`git fetch --unshallow`, or `fetch-depth: 0` in GitHub Actions)"));
    }
    let report = check::required_bump_with(&repo.root, path, commit, rules).map_err(|e| {
        Error::refused(format!(
            "cannot check the interface of module `{module}`: {e}"
        ))
        .at(path)
    })?;
    Ok((report.bump, report.findings))
}

/// Writes the module's deterministic zip to `out`. Paths in the zip are relative to
/// `module_path`. Returns every file's entry (repository-relative paths), checked
/// against what was read while zipping.
pub fn write_zip<W: Write + Seek>(
    files: &[SourceFile],
    module_path: &str,
    out: W,
) -> Result<(Vec<FileEntry>, W)> {
    let prefix = format!("{module_path}/");
    let zip_error = |e: zip::result::ZipError| {
        Error::refused(format!("cannot write the package of `{module_path}`: {e}"))
    };
    let mut zip = zip::ZipWriter::new(out);
    let mut entries = Vec::with_capacity(files.len());
    let mut sorted: Vec<&SourceFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    for file in sorted {
        let Some(name) = file.path.strip_prefix(&prefix) else {
            return Err(Error::refused(format!(
                "`{}` is not inside module `{module_path}`",
                file.path
            )));
        };
        let read_error = |e: io::Error| {
            Error::refused(format!("cannot read `{}`: {e}", file.path)).at(&file.path)
        };
        let handle = File::open(&file.source).map_err(read_error)?;
        let size = handle.metadata().map_err(read_error)?.len();
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(6))
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(if file.executable { 0o755 } else { 0o644 })
            .large_file(size >= u32::MAX as u64);
        zip.start_file(name, options).map_err(zip_error)?;
        let mut reader = stackpack_bundle::archive::HashingReader::new(
            io::BufReader::with_capacity(1 << 20, handle).take(size),
        );
        io::copy(&mut reader, &mut zip).map_err(read_error)?;
        if reader.hasher.len() != size {
            return Err(Error::refused(format!(
                "`{}` changed while it was being packed",
                file.path
            ))
            .at(&file.path)
            .hint("run publish again when nothing else writes to the repository"));
        }
        entries.push(FileEntry {
            path: file.path.clone(),
            digest: reader.hasher.finish(),
            size,
            executable: file.executable,
            layer: false,
        });
    }
    let out = zip.finish().map_err(zip_error)?;
    Ok((entries, out))
}

/// A module package built into a layout.
#[derive(Clone, Debug)]
pub struct BuiltPackage {
    pub manifest: Descriptor,
    pub layer: Descriptor,
}

/// Builds the zip, the empty config and the manifest into `layout`.
pub fn build_package(
    repo: &Repository,
    plan: &Plan,
    module: &ModulePlan,
    version: &Version,
    layout: &ImageLayout,
) -> Result<BuiltPackage> {
    let temporary = tempfile::tempfile_in(layout.root()).map_err(|e| {
        Error::refused(format!(
            "cannot write in `{}`: {e}",
            layout.root().display()
        ))
    })?;
    let (entries, mut zip_file) = write_zip(&module.files, &module.path, temporary)?;
    if entries != module.entries {
        return Err(Error::refused(format!(
            "files of module `{}` changed during the build",
            module.module
        ))
        .hint("run publish again when nothing else writes to the repository"));
    }
    let write_error = |e: io::Error| {
        Error::refused(format!(
            "cannot write the package of `{}`: {e}",
            module.path
        ))
    };
    zip_file.rewind().map_err(write_error)?;
    let mut writer = layout.blob_writer()?;
    io::copy(&mut zip_file, &mut writer).map_err(write_error)?;
    let (zip_digest, zip_size) = writer.commit()?;
    let mut layer = Descriptor::new(media_type::ZIP_ARCHIVE, zip_digest, zip_size);
    // Tools such as ORAS name the file they pull after the layer's title.
    let mut layer_annotations = Annotations::new();
    layer_annotations.insert(annotation::TITLE.into(), format!("{}.zip", module.module));
    layer.annotations = Some(layer_annotations);
    layout.write_blob(media_type::EMPTY_BLOB)?;

    let created = rfc3339(plan.commit_time);
    let revision = if module.dirty {
        format!("{}-dirty", plan.commit)
    } else {
        plan.commit.clone()
    };
    let mut annotations = Annotations::new();
    annotations.insert(annotation::VERSION.into(), version.to_string());
    annotations.insert(annotation::REVISION.into(), revision);
    annotations.insert(annotation::SOURCE.into(), repo.source_address()?);
    annotations.insert(annotation::CREATED.into(), created);
    annotations.insert(annotation::TITLE.into(), module.module.clone());
    annotations.insert(
        TREE_DIGEST_ANNOTATION.into(),
        module.tree_digest.to_string(),
    );
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::OPENTOFU_MODULE_ARTIFACT.into()),
        config: Descriptor::empty(),
        layers: vec![layer.clone()],
        subject: None,
        annotations: Some(annotations),
    };
    let (digest, size) = layout.write_blob(&manifest.to_bytes())?;
    let mut descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    descriptor.artifact_type = Some(media_type::OPENTOFU_MODULE_ARTIFACT.into());
    Ok(BuiltPackage {
        manifest: descriptor,
        layer,
    })
}

/// The index-entry annotations of a module package in a layout.
fn module_entry_annotations(module: &str, version: &Version) -> Annotations {
    let mut annotations = Annotations::new();
    annotations.insert(
        annotation::REF_NAME.into(),
        format!("modules/{module}:{version}"),
    );
    annotations.insert(annotation::KIND.into(), "module".into());
    annotations.insert(annotation::STACK.into(), module.into());
    annotations.insert(annotation::VERSION.into(), version.to_string());
    annotations
}

impl PublishedModule {
    /// An unchanged or skipped module: its latest version, if any, stays.
    fn unchanged(module: &ModulePlan) -> Self {
        PublishedModule {
            module: module.module.clone(),
            path: module.path.clone(),
            version: module.previous.as_ref().map(|(v, _)| v.clone()),
            digest: module.previous.as_ref().map(|(_, d)| d.clone()),
            published: false,
            skipped: module.skipped.is_some(),
            bump: module.bump,
            reason: module.reason.clone(),
            bytes_sent: 0,
            collisions: 0,
        }
    }

    fn claimed(module: &ModulePlan, claimed: Claimed) -> Self {
        PublishedModule {
            module: module.module.clone(),
            path: module.path.clone(),
            version: Some(claimed.version),
            digest: Some(claimed.digest),
            published: true,
            skipped: false,
            bump: module.bump,
            reason: module.reason.clone(),
            bytes_sent: claimed.bytes_sent,
            collisions: claimed.collisions,
        }
    }
}

/// Publishes the planned modules.
pub fn publish_modules(
    repo: &Repository,
    plan: &Plan,
    modules: &[ModulePlan],
    destination: &Destination<'_>,
) -> Result<Vec<PublishedModule>> {
    modules
        .iter()
        .map(|module| match &module.next {
            None => Ok(PublishedModule::unchanged(module)),
            Some(first_version) => {
                let package = ModulePackage {
                    repo,
                    plan,
                    module,
                    layout: destination.layout,
                };
                publish_module(&package, destination, first_version.clone())
            }
        })
        .collect()
}

fn publish_module(
    package: &ModulePackage<'_>,
    destination: &Destination<'_>,
    first_version: Version,
) -> Result<PublishedModule> {
    let name = &package.module.module;
    let options = destination.claim(
        destination.address.module_repository(name),
        name,
        format!("module `{name}`"),
    );
    let claimed = claim_tag(&options, package, first_version)?;
    Ok(PublishedModule::claimed(package.module, claimed))
}

/// One planned module, as the tag-claim loop builds and pushes it.
struct ModulePackage<'a> {
    repo: &'a Repository,
    plan: &'a Plan,
    module: &'a ModulePlan,
    layout: &'a ImageLayout,
}

impl Artifact for ModulePackage<'_> {
    type Built = BuiltPackage;

    /// The zip does not depend on the version; the manifest does (its annotation).
    fn build(&self, version: &Version) -> Result<BuiltPackage> {
        build_package(self.repo, self.plan, self.module, version, self.layout)
    }

    fn manifest<'b>(&self, built: &'b BuiltPackage) -> &'b Descriptor {
        &built.manifest
    }

    /// Names the claimed version in the layout's index, replacing older entries
    /// for the same manifest or name.
    fn claimed(&self, built: &BuiltPackage, version: &Version) -> Result<()> {
        let mut entry = built.manifest.clone();
        entry.annotations = Some(module_entry_annotations(&self.module.module, version));
        let name = entry.annotation(annotation::REF_NAME).map(str::to_string);
        self.layout.update_index(|index| {
            index.manifests.retain(|existing| {
                existing.digest != entry.digest
                    && existing.annotation(annotation::REF_NAME) != name.as_deref()
            });
            index.manifests.push(entry);
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &std::path::Path) -> Vec<SourceFile> {
        std::fs::write(dir.join("main.tf"), "variable \"x\" {}\n").unwrap();
        std::fs::write(dir.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.tf"), "output \"y\" { value = 1 }\n").unwrap();
        vec![
            SourceFile {
                path: "modules/m/sub/a.tf".into(),
                source: dir.join("sub/a.tf"),
                executable: false,
            },
            SourceFile {
                path: "modules/m/main.tf".into(),
                source: dir.join("main.tf"),
                executable: false,
            },
            SourceFile {
                path: "modules/m/run.sh".into(),
                source: dir.join("run.sh"),
                executable: true,
            },
        ]
    }

    #[test]
    fn the_same_files_zip_to_the_same_bytes_sorted_and_relative() {
        let dir = tempfile::tempdir().unwrap();
        let files = files(dir.path());
        let (entries, first) = write_zip(&files, "modules/m", io::Cursor::new(Vec::new())).unwrap();
        let mut reversed = files.clone();
        reversed.reverse();
        let (_, second) = write_zip(&reversed, "modules/m", io::Cursor::new(Vec::new())).unwrap();
        assert_eq!(first.get_ref(), second.get_ref());
        let mut expected = pack::hash_files(&files).unwrap();
        expected.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(entries, expected);

        let mut archive = zip::ZipArchive::new(io::Cursor::new(first.into_inner())).unwrap();
        let names: Vec<String> = archive
            .file_names()
            .map(|n| n.unwrap().into_owned())
            .collect();
        assert_eq!(names, vec!["main.tf", "run.sh", "sub/a.tf"]);
        let run = archive.by_name("run.sh").unwrap();
        assert_eq!(run.unix_mode().map(|m| m & 0o777), Some(0o755));
        assert_eq!(run.compression(), zip::CompressionMethod::Deflated);
        assert_eq!(run.last_modified(), Some(zip::DateTime::default()));
    }

    #[test]
    fn a_file_outside_the_module_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = files(dir.path());
        files[0].path = "modules/other/a.tf".into();
        assert!(write_zip(&files, "modules/m", io::Cursor::new(Vec::new())).is_err());
    }
}
