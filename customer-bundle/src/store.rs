//! The verified bundle store (an OCI image layout inside the runner home) and
//! `import`: a layout, as a folder or a tar file, is staged, every bundle in it is
//! verified against the trusted keys, and only when all of them pass are their blobs
//! (checked against their digests again while copied) and index entries added to the
//! store. A signature entry goes in before its bundle's entry, so a bundle is never
//! findable in the store without its signature.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use semver::Version;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::{Descriptor, ImageManifest};
use stackpack_schema::receipt::Verification;
use stackpack_schema::signature::PublicKey;

use super::error::{io, Error, Result};
use super::home::Home;
use stackpack_bundle::archive::Limits;
use stackpack_bundle::layout::{self, EntryKind, ImageLayout, MAX_MANIFEST_SIZE};
use stackpack_bundle::verify::{self, Trust, VerifiedBundle, VerifyError};

/// Read the same way by the packager's `inspect`: one reader of layout tars.
pub use stackpack_bundle::layout_tar::{layout_tar_limits, unpack_layout_tar};

/// What an import did with one bundle.
#[derive(Clone, Debug)]
pub struct Imported {
    pub stack: String,
    pub version: Version,
    pub digest: Digest,
    pub key_id: String,
    /// False when the store already held this exact bundle.
    pub added: bool,
    /// Blobs of the bundle already in the store that no longer matched their digest,
    /// replaced by this import.
    pub repaired: usize,
}

/// Verifies `stack@version` in `layout` with the home's trusted keys and policy,
/// turning every failure into an error that says what to do.
pub fn verify_in(
    home: &Home,
    layout: &ImageLayout,
    stack: &str,
    version: &Version,
) -> Result<VerifiedBundle> {
    Ok(verify_recorded(home, layout, stack, version)?.0)
}

/// [`verify_in`], with the record of what was verified (signature, provenance,
/// SBOM) that a receipt carries.
pub fn verify_recorded(
    home: &Home,
    layout: &ImageLayout,
    stack: &str,
    version: &Version,
) -> Result<(VerifiedBundle, Verification)> {
    let keys = trusted(home)?;
    let bundle = verify::verify_bundle(
        layout,
        stack,
        version,
        &Trust::Keys(keys.clone()),
        &Limits::default(),
    )
    .map_err(|e| verify_error(home, layout, stack, version, e))?;
    let verification = crate::attested::check(home, layout, &bundle, &keys)?;
    Ok((bundle, verification))
}

/// The trusted keys; refuses when there are none.
pub fn trusted(home: &Home) -> Result<Vec<PublicKey>> {
    let keys: Vec<PublicKey> = home
        .trusted_keys()?
        .into_iter()
        .map(|(_, k, _)| k)
        .collect();
    if keys.is_empty() {
        return Err(Error::refused("this runner trusts no signing key yet")
            .at(format!("runner home `{}`", home.root.display()))
            .hint("ask your vendor for their public key, then run `stackpack-runner trust add vendor.pub`"));
    }
    Ok(keys)
}

/// A verification failure in the customer's words: what failed, where, and what to do.
pub(crate) fn verify_error(
    home: &Home,
    layout: &ImageLayout,
    stack: &str,
    version: &Version,
    error: VerifyError,
) -> Error {
    let reference = format!("{stack}@{version}");
    let at = format!("runner home `{}`", home.root.display());
    match error {
        VerifyError::NotFound { .. } => {
            let mut versions = layout.versions(stack).unwrap_or_default();
            stackpack_schema::version::sort_by_precedence(&mut versions);
            let hint = if versions.is_empty() {
                "import it with `stackpack-runner import FILE.tar`".to_string()
            } else {
                format!(
                    "the store holds {}",
                    versions.iter().map(|v| format!("`{stack}@{v}`")).collect::<Vec<_>>().join(", ")
                )
            };
            Error::refused(format!("bundle `{reference}` is not in the store")).at(at).hint(hint)
        }
        VerifyError::Untrusted { keys, .. } if removed_key(home, &keys).is_some() => Error::refused(format!(
            "bundle `{reference}` is signed by key {keys}, which was removed from this runner's trusted keys (`stackpack-runner trust remove`); {}",
            trusted_keys_said(home)
        ))
        .at(at)
        .hint("ask your vendor for this version signed by a key you trust; add the removed key back (`trust add`) only if it was removed by mistake"),
        VerifyError::Untrusted { keys, .. } => Error::refused(format!(
            "bundle `{reference}` is signed by key {keys}, which this runner does not trust; {}",
            trusted_keys_said(home)
        ))
        .at(at)
        .hint("ask your vendor for their public key, through a channel you trust, then run `stackpack-runner trust add vendor.pub`"),
        missing @ VerifyError::MissingBlob { .. } => Error::refused(format!(
            "bundle `{reference}` is incomplete: {missing}"
        ))
        .at(at)
        .hint("import it again from the file your vendor sent; if that file is the one refused, it was cut short on its way here: copy it again"),
        // No signature names this manifest's digest: it was changed (and re-hashed)
        // after signing, or travelled without its signatures.
        VerifyError::Unsigned { .. } => Error::refused(format!("no trusted signature matches bundle `{reference}`: it was changed after it was signed, or came without its signatures"))
            .at(at)
            .hint("get a fresh copy from the vendor (`stackpack export` carries the signatures)"),
        newer @ VerifyError::NewerFormat { .. } => Error::refused(format!("bundle `{reference}` failed verification: {newer}"))
            .at(at)
            .hint("install a newer `stackpack-runner` (the vendor's release notes name the version), then import the bundle again"),
        other => Error::refused(format!("bundle `{reference}` failed verification: {other}"))
            .at(at)
            .hint("the bundle was changed after it was signed; get it again from your vendor"),
    }
}

/// The key among `keys` (as the verifier names them: `` `id` ``, comma-separated)
/// that `trust remove` took away, if one was.
pub(crate) fn removed_key(home: &Home, keys: &str) -> Option<String> {
    keys.split(',')
        .map(|k| k.trim().trim_matches('`').to_string())
        .find(|id| home.key_removed(id))
}

/// "it trusts `id`, `id`" (or that it trusts none), for a refusal to name.
fn trusted_keys_said(home: &Home) -> String {
    let ids: Vec<String> = home
        .trusted_keys()
        .unwrap_or_default()
        .into_iter()
        .map(|(id, _, _)| format!("`{id}`"))
        .collect();
    if ids.is_empty() {
        "it trusts no key yet".into()
    } else {
        format!("it trusts {}", ids.join(", "))
    }
}

/// A fresh, empty staging layout inside the home (removed when dropped): where
/// `pull` downloads a bundle and its signatures before [`import_layout`] verifies
/// them and copies them into the store.
pub fn staging(home: &Home) -> Result<(tempfile::TempDir, ImageLayout)> {
    let dir = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&home.root)
        .map_err(|e| io("create a staging folder in", &home.root, e))?;
    let layout = ImageLayout::create(dir.path())?;
    Ok((dir, layout))
}

/// What a staging layout holds beside its bundles and channel statements (its
/// releases), which the module that knows it verifies and adds: verified before the
/// bundles are (it may stage entries for them), and added after every bundle, so it
/// is never findable without what it pins.
pub trait Beside {
    /// Verifies what of it `staged` holds, keeping it for [`Beside::add`]; an error
    /// refuses the whole import.
    fn verify(&mut self, home: &Home, staged: &ImageLayout) -> Result<()>;

    /// Adds what [`Beside::verify`] kept, once every bundle is in the store.
    fn add(&mut self, copier: &mut Copier) -> Result<()>;

    /// The repository a bundle of `stack` pulled from `pulled_from` is signed for:
    /// `pulled_from` itself, unless what is beside it says otherwise.
    fn signed_for(&self, pulled_from: &str, _stack: &str) -> String {
        pulled_from.to_string()
    }
}

/// Imports every bundle of the layout at `source` (a folder, or a tar file of one),
/// and what `beside` finds beside them.
pub fn import(home: &Home, source: &Path, beside: &mut dyn Beside) -> Result<Vec<Imported>> {
    let metadata = std::fs::metadata(source)
        .map_err(|e| Error::usage(format!("cannot read `{}`: {e}", source.display())))?;
    if metadata.is_dir() {
        let staged = ImageLayout::open(source).map_err(|e| {
            Error::refused_by(e).hint(
                "give the folder `stackpack build --out DIR` or `stackpack export` wrote, or a tar of it",
            )
        })?;
        import_layout(home, &staged, beside)
    } else {
        let (staging, _) = staging(home)?;
        let staged = unpack_layout_tar(source, staging.path())?;
        import_layout(home, &staged, beside).map_err(|e| named_as(e, staging.path(), source))
    }
}

/// Imports the layout tar at `source`, which leaves out the blobs `omitted` because
/// this runner holds them (a kit made for this customer): each is copied from the
/// store into the staging layout, hashed on the way, before the import verifies
/// every bundle against its full signed manifest. A blob the store lacks is
/// `missing`'s error, before anything is imported.
pub fn import_filling(
    home: &Home,
    source: &Path,
    omitted: &[Digest],
    missing: impl Fn(&Digest) -> Error,
    beside: &mut dyn Beside,
) -> Result<Vec<Imported>> {
    let (staging, _) = staging(home)?;
    let staged = unpack_layout_tar(source, staging.path())?;
    let store = home.store()?;
    for digest in omitted {
        if !staged.has_blob(digest) && !staged.copy_blob_from(&store, digest)? {
            return Err(missing(digest));
        }
    }
    import_layout(home, &staged, beside).map_err(|e| named_as(e, staging.path(), source))
}

/// `error` with the staging folder (deleted once the import ends) named as the file
/// the user gave.
fn named_as(error: Error, staging: &Path, source: &Path) -> Error {
    let (from, to) = (staging.display().to_string(), source.display().to_string());
    let rename = |text: String| text.replace(&from, &to);
    Error {
        message: rename(error.message),
        location: error.location.map(rename),
        hint: error.hint.map(rename),
        ..error
    }
}

/// Imports a layout a user gave: its blobs are copied into the store, each hashed
/// again on the way (the user's file is not trusted between verification and copy).
pub fn import_layout(
    home: &Home,
    staged: &ImageLayout,
    beside: &mut dyn Beside,
) -> Result<Vec<Imported>> {
    import_staged(home, staged, Arrival::Copy, None, beside)
}

/// Imports the staging layout `pull` just downloaded into: the runner itself hashed
/// every blob against its digest as it arrived, and verification has just read it
/// again, so blobs are moved (renamed) into the store instead of being copied and
/// hashed a third time. Nothing enters the store unless every bundle verifies and
/// is signed for `pulled_from` (the repository path it came from, without the host),
/// or for the vendor repository `[policy] mirrors` says that one copies (as
/// [`Beside::signed_for`] reads it).
pub fn import_pulled(
    home: &Home,
    staged: &ImageLayout,
    pulled_from: &str,
    beside: &mut dyn Beside,
) -> Result<Vec<Imported>> {
    import_staged(home, staged, Arrival::Move, Some(pulled_from), beside)
}

/// Refuses a bundle no trusted signature signs for `expected`: a bundle signed for
/// `acme/stacks/evil` served from `other/stacks/evil` is someone else's copy.
fn check_signed_repository(
    bundle: &VerifiedBundle,
    pulled_from: &str,
    expected: &str,
) -> Result<()> {
    let trusted: Vec<&str> = bundle
        .signatures
        .iter()
        .filter(|check| matches!(check.outcome, Ok(true)))
        .filter_map(|check| check.payload.as_ref())
        .map(|payload| payload.repository.as_str())
        .collect();
    if trusted.contains(&expected) {
        return Ok(());
    }
    let signed_for = trusted
        .iter()
        .map(|r| format!("`{r}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let namespace = pulled_from
        .rsplit_once("/stacks/")
        .map_or(pulled_from, |(namespace, _)| namespace);
    let vendor = trusted
        .first()
        .and_then(|r| r.rsplit_once("/stacks/"))
        .map_or("VENDOR-NAMESPACE", |(namespace, _)| namespace);
    Err(Error::refused(format!(
        "nothing was imported: `{}@{}` was pulled from `{pulled_from}`, and its vendor signed it for {signed_for}",
        bundle.config.stack, bundle.config.version
    ))
    .hint(format!(
        "pull it from the repository it was signed for; if `{namespace}` is a mirror you trust, add `[policy.mirrors]` `\"{namespace}\" = \"{vendor}\"` to `runner.toml`"
    )))
}

/// How blobs go from a staging layout into the store.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// Copied, each checked against its digest while copied.
    Copy,
    /// Renamed: only for a staging layout this runner downloaded and checked itself,
    /// on the same filesystem as the store.
    Move,
}

fn import_staged(
    home: &Home,
    staged: &ImageLayout,
    arrival: Arrival,
    pulled_from: Option<&str>,
    beside: &mut dyn Beside,
) -> Result<Vec<Imported>> {
    // 1. Verify everything before anything enters the store: what is beside the
    // bundles (a release: its signature, its description, that each bundle it
    // pins is the one beside it), then every bundle.
    beside.verify(home, staged)?;
    let statements = verify_statements(home, staged)?;
    let verified = verify_staged(home, staged, arrival, pulled_from, &*beside)?;
    // 2. Refuse a different bundle under a version the store already holds.
    let store = home.store()?;
    for bundle in &verified {
        if let Some(existing) = store.find_bundle(&bundle.config.stack, &bundle.config.version)? {
            if existing.digest != bundle.manifest_descriptor.digest {
                return Err(Error::refused(format!(
                    "nothing was imported: the store already holds a different bundle as `{}@{}` (`{}`, not `{}`)",
                    bundle.config.stack,
                    bundle.config.version,
                    existing.digest.short(),
                    bundle.manifest_descriptor.digest.short()
                ))
                .hint("a version is immutable; ask your vendor why two bundles carry the same version"));
            }
        }
    }
    // 3. Blobs (copied and re-checked, or moved), then index entries.
    let mut copier = Copier {
        from: staged,
        to: &store,
        arrival,
        done: HashSet::new(),
        repaired: 0,
    };
    let imported = verified
        .into_iter()
        .map(|bundle| copier.bundle(bundle))
        .collect::<Result<Vec<_>>>()?;
    // 4. What is beside them last: never findable before every bundle it pins.
    beside.add(&mut copier)?;
    // 5. Channel statements, which point at releases: kept for `sync` to read.
    for (signed, subject) in statements {
        stackpack_bundle::channel::write_statement(&store, &signed, &subject)?;
    }
    Ok(imported)
}

/// Every channel statement of the staging layout (an export made with
/// `stackpack export --channel`), each verified for its own channel with the
/// trusted keys; one that does not verify refuses the whole import. Returns each
/// with the descriptor of what it approves.
fn verify_statements(
    home: &Home,
    staged: &ImageLayout,
) -> Result<
    Vec<(
        stackpack_schema::rollout::SignedChannelStatement,
        stackpack_schema::oci::Descriptor,
    )>,
> {
    use stackpack_bundle::channel;
    let found = channel::statements_in(staged, None)?;
    if found.is_empty() {
        return Ok(vec![]);
    }
    let keys: Vec<_> = home
        .trusted_keys()?
        .into_iter()
        .map(|(_, key, _)| key)
        .collect();
    let mut out = Vec::new();
    for (descriptor, read) in found {
        let signed = read.map_err(|e| {
            Error::refused(format!(
                "nothing was imported: the channel statement `{}` is unreadable: {e}",
                descriptor.digest.short()
            ))
        })?;
        let s = &signed.statement;
        signed.verify(&keys, &s.channel).map_err(|e| {
            let hint = match e {
                stackpack_schema::rollout::StatementError::Signature(
                    stackpack_schema::signature::SignatureError::Untrusted(_),
                ) => "ask your vendor for the key that signs their channel statements, then run `stackpack-runner trust add vendor.pub`",
                _ => "ask your vendor for a new export: this statement was changed after it was signed",
            };
            Error::refused(format!(
                "nothing was imported: the channel statement approving `{}@{}` for channel `{}` is refused: {e}",
                s.release, s.version, s.channel
            ))
            .hint(hint)
        })?;
        let bytes = staged.read_blob(&descriptor.digest, MAX_MANIFEST_SIZE)?;
        let subject = serde_json::from_slice::<stackpack_schema::oci::ImageManifest>(&bytes)
            .ok()
            .and_then(|m| m.subject)
            .ok_or_else(|| {
                Error::refused(format!(
                    "nothing was imported: the channel statement approving `{}@{}` names no subject",
                    s.release, s.version
                ))
            })?;
        out.push((signed, subject));
    }
    Ok(out)
}

/// Every bundle of the staging layout, verified with the trusted keys (and, when
/// pulled, signed for the repository it came from); refuses the whole import when
/// one fails, or when there is none.
fn verify_staged(
    home: &Home,
    staged: &ImageLayout,
    arrival: Arrival,
    pulled_from: Option<&str>,
    beside: &dyn Beside,
) -> Result<Vec<VerifiedBundle>> {
    let keys = trusted(home)?;
    let mut bundles = Vec::new();
    for (kind, _) in staged.entries()? {
        if let EntryKind::Bundle { stack, version } = kind {
            bundles.push((stack, version));
        }
    }
    if bundles.is_empty() {
        return Err(
            Error::refused(format!("`{}` holds no bundle", staged.root().display()))
                .hint("export bundles with `stackpack build --out DIR` or `stackpack export`"),
        );
    }
    let mut verified = Vec::new();
    for (stack, version) in &bundles {
        let trust = Trust::Keys(keys.clone());
        let limits = Limits::default();
        // A pull's staging layout holds only blobs this runner hashed as they
        // arrived; a user's tar or folder is hashed again, every byte.
        let checked = match arrival {
            Arrival::Move => {
                verify::verify_downloaded_bundle(staged, stack, version, &trust, &limits)
            }
            Arrival::Copy => verify::verify_bundle(staged, stack, version, &trust, &limits),
        };
        let bundle = checked
            .map_err(|e| verify_error(home, staged, stack, version, e))
            .map_err(|e| Error {
                message: format!("nothing was imported: {}", e.message),
                ..e
            })?;
        if let Some(pulled_from) = pulled_from {
            let pulled_from = beside.signed_for(pulled_from, stack);
            let expected = home.config.policy.signed_for(&pulled_from);
            check_signed_repository(&bundle, &pulled_from, &expected)?;
        }
        // Its attestations and this runner's policy on them, before it enters the
        // store: a bundle built elsewhere never arrives.
        crate::attested::check(home, staged, &bundle, &keys).map_err(|e| Error {
            message: format!("nothing was imported: {}", e.message),
            ..e
        })?;
        verified.push(bundle);
    }
    Ok(verified)
}

/// Copies (or moves) blobs into the store, a copy checked against its digest. A blob
/// the store already holds is hashed again, and replaced when its content no longer
/// matches: importing a bundle again repairs it.
pub struct Copier<'a> {
    pub(crate) from: &'a ImageLayout,
    pub(crate) to: &'a ImageLayout,
    arrival: Arrival,
    /// Blobs copied or found intact during this import.
    done: HashSet<Digest>,
    /// Blobs replaced since [`Copier::take_repaired`] was last called.
    repaired: usize,
}

impl Copier<'_> {
    /// Copies a verified bundle's blobs and its signatures' into the store, then adds
    /// its index entries: the signatures' first, so the bundle is never findable
    /// without them.
    fn bundle(&mut self, bundle: VerifiedBundle) -> Result<Imported> {
        let (staged, store) = (self.from, self.to);
        let subject = &bundle.manifest_descriptor.digest;
        let stack = bundle.config.stack.clone();
        let version = bundle.config.version.clone();
        let already = store.find_bundle(&stack, &version)?.is_some();
        self.copy(&bundle.manifest_descriptor.digest)?;
        self.copy(&bundle.manifest.config.digest)?;
        for layer in &bundle.manifest.layers {
            self.copy(&layer.digest)?;
        }
        for signature in staged.referrers_for(subject)? {
            let bytes = staged.read_blob(&signature.digest, MAX_MANIFEST_SIZE)?;
            let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) else {
                continue;
            };
            self.copy(&signature.digest)?;
            self.copy(&manifest.config.digest)?;
            for layer in &manifest.layers {
                self.copy(&layer.digest)?;
            }
            let mut entry = Descriptor::new(
                signature.media_type.clone(),
                signature.digest.clone(),
                signature.size,
            );
            entry.artifact_type = signature.artifact_type.clone();
            // Filed by what its own manifest says it is, not by the index entry.
            entry.artifact_type = manifest.artifact_type.clone();
            entry.annotations = Some(layout::referrer_entry_annotations(
                manifest.artifact_type.as_deref(),
                subject,
            ));
            store.add_entry(entry)?;
        }
        let mut entry = bundle.manifest_descriptor.clone();
        entry.annotations = Some(layout::bundle_entry_annotations(&stack, &version));
        store.add_entry(entry)?;
        Ok(Imported {
            stack,
            version,
            digest: subject.clone(),
            key_id: bundle
                .signer
                .as_ref()
                .map(|k| k.key_id())
                .unwrap_or_default(),
            added: !already,
            repaired: self.take_repaired(),
        })
    }

    pub(crate) fn copy(&mut self, digest: &Digest) -> Result<()> {
        if self.done.contains(digest) {
            return Ok(());
        }
        let present = self.to.has_blob(digest);
        if !present || !self.to.blob_is_intact(digest)? {
            if self.arrival == Arrival::Move && self.moved(digest)? {
                self.repaired += usize::from(present);
                self.done.insert(digest.clone());
                return Ok(());
            }
            let mut source = self.from.open_blob(digest)?;
            let mut writer = self.to.blob_writer()?;
            io::copy(&mut source, &mut writer)
                .map_err(|e| io("copy", &self.from.blob_path(digest), e))?;
            if present {
                writer.replace_expecting(digest)?;
                self.repaired += 1;
            } else {
                writer.commit_expecting(digest)?;
            }
        }
        self.done.insert(digest.clone());
        Ok(())
    }

    /// Renames the staged blob into the store (over a damaged one, atomically).
    /// False when the two are on different filesystems: the caller copies instead.
    fn moved(&self, digest: &Digest) -> Result<bool> {
        let from = self.from.blob_path(digest);
        match std::fs::rename(&from, self.to.blob_path(digest)) {
            Ok(()) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => Ok(false),
            Err(e) => Err(io("move a blob into the store from", &from, e)),
        }
    }

    fn take_repaired(&mut self) -> usize {
        std::mem::take(&mut self.repaired)
    }
}
