//! The bundle verified in the store, and a reviewed plan checked against it.

use std::path::Path;

use semver::Version;
use stackpack_schema::receipt::Verification;

use super::request::Ui;
use crate::error::{Error, Result};
use crate::home::Home;
use crate::review;
use crate::store;
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_schema::signature::PrivateKey;

/// Verifies `stack@version` in the store (signature, attestations, policy), saying
/// so; returns the record of what was verified.
pub(super) fn verify(
    home: &Home,
    stack: &str,
    version: &Version,
    ui: &Ui,
) -> Result<(VerifiedBundle, Verification)> {
    let store_layout = home.store()?;
    (ui.status)(&format!("verifying `{stack}@{version}`"));
    let (bundle, verified) = store::verify_recorded(home, &store_layout, stack, version)?;
    (ui.status)(&format!(
        "verified `{stack}@{version}` ({}): {}",
        bundle.manifest_descriptor.digest.short(),
        verified.summary()
    ));
    Ok((bundle, verified))
}

/// Refuses a reviewed plan that is not this installation's, or whose bundle or
/// inputs differ from this run's, before any engine runs.
pub(super) fn check_reviewed(
    path: &Path,
    key: &PrivateKey,
    bundle: &VerifiedBundle,
    inputs_hash: &stackpack_schema::digest::Digest,
) -> Result<(review::Record, Vec<u8>)> {
    let (record, bytes) = review::read(path, key)?;
    let digest = &bundle.manifest_descriptor.digest;
    let hint = "make and review a new plan with `stackpack-runner plan STACK@VERSION --inputs FILE --out FILE`";
    if record.stack != bundle.config.stack
        || record.version != bundle.config.version.to_string()
        || &record.bundle_digest != digest
    {
        return Err(Error::refused(format!(
            "the reviewed plan `{}` was made for `{}@{}` ({}), not for `{}@{}` ({}): nothing was applied",
            path.display(),
            record.stack,
            record.version,
            record.bundle_digest.short(),
            bundle.config.stack,
            bundle.config.version,
            digest.short()
        ))
        .hint(hint));
    }
    if &record.inputs_hash != inputs_hash {
        return Err(Error::refused(format!(
            "the inputs changed since the plan `{}` was reviewed: nothing was applied",
            path.display()
        ))
        .hint(hint));
    }
    Ok((record, bytes))
}
