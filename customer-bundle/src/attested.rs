//! What the runner checks of a bundle's attestations before it runs it, and the
//! record of what it verified that goes into each receipt.
//!
//! Beside the signature (checked by `stackpack_bundle::verify`), a bundle may carry a
//! SLSA provenance and an SBOM (see `stackpack_bundle::attest`). Whatever it carries
//! is checked, always: the provenance signed by a trusted key and about this bundle,
//! naming the commit and repository the signed config records; the SBOM the one the
//! provenance names, listing the providers the bundle's lock pins by the same
//! hashes. `[policy] require` makes them mandatory, and `[policy.provenance]` pins
//! the repository and the refs they may come from.

use stackpack_bundle::attest::{self, Checked};
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::verify::VerifiedBundle;
use stackpack_schema::attest::provenance::Provenance;
use stackpack_schema::receipt::{Verification, VerifiedProvenance};
use stackpack_schema::signature::PublicKey;

use crate::error::{Error, Result};
use crate::home::{Home, Requirement};

/// Checks the attestations of `bundle` (already verified in `layout`) against the
/// home's trusted keys and policy; returns what was verified.
pub fn check(
    home: &Home,
    layout: &ImageLayout,
    bundle: &VerifiedBundle,
    trusted: &[PublicKey],
) -> Result<Verification> {
    let digest = &bundle.manifest_descriptor.digest;
    let reference = format!("`{}@{}`", bundle.config.stack, bundle.config.version);
    let refused = |what: String| {
        Error::refused(format!("the attestations of {reference} do not hold: {what}"))
            .hint("ask your vendor to publish the bundle again; if it came through a mirror, pull it from the vendor's registry")
    };
    let found = attest::find(layout, digest).map_err(|e| refused(e.to_string()))?;
    let Checked { provenance, sbom } = attest::check(&found, digest, trusted)
        .map_err(|e| refused(format!("its provenance: {e}")))?;
    if let Some((p, _)) = &provenance {
        matches_config(p, bundle).map_err(refused)?;
    }
    if let Some((_, bom)) = &sbom {
        let differ = bom.provider_mismatches(&bundle.config);
        if !differ.is_empty() {
            return Err(refused(format!(
                "its SBOM lists other hashes for provider {} than the bundle's lock pins",
                differ.join(", ")
            )));
        }
    }
    enforce_policy(
        home,
        bundle,
        provenance.as_ref().map(|(p, _)| p),
        sbom.is_some(),
    )?;
    let signer = bundle.signer.as_ref();
    Ok(Verification {
        key_id: signer.map(PublicKey::key_id).unwrap_or_default(),
        algorithm: signer.map(PublicKey::algorithm).unwrap_or_default().into(),
        provenance: provenance.map(|(p, _)| recorded(&p)),
        sbom: sbom.map(|(digest, _)| digest),
    })
}

/// The provenance must be of this bundle's build: its commit and repository.
fn matches_config(p: &Provenance, bundle: &VerifiedBundle) -> std::result::Result<(), String> {
    let params = &p.build_definition.external_parameters;
    let source = &bundle.config.source;
    if params.commit != source.commit {
        return Err(format!(
            "its provenance names commit `{}`, but the bundle was built from `{}`",
            params.commit, source.commit
        ));
    }
    if params.repository != source.repository {
        return Err(format!(
            "its provenance names repository `{}`, but the bundle was built from `{}`",
            params.repository, source.repository
        ));
    }
    Ok(())
}

fn enforce_policy(
    home: &Home,
    bundle: &VerifiedBundle,
    provenance: Option<&Provenance>,
    has_sbom: bool,
) -> Result<()> {
    let policy = &home.config.policy;
    let reference = format!("`{}@{}`", bundle.config.stack, bundle.config.version);
    let at = format!(
        "`[policy]` in `{}`",
        home.root.join("runner.toml").display()
    );
    for required in &policy.require {
        let missing = match required {
            Requirement::Provenance => provenance.is_none(),
            Requirement::Sbom => !has_sbom,
        };
        if missing {
            return Err(Error::refused(format!(
                "{reference} carries no signed {required}, which this runner's policy requires"
            ))
            .at(&at)
            .hint("ask your vendor for a bundle published with a Stackpack that attests it, or pull it with its referrers (`stackpack-runner pull`, a kit)"));
        }
    }
    let (Some(pins), Some(p)) = (&policy.provenance, provenance) else {
        return Ok(());
    };
    let params = &p.build_definition.external_parameters;
    if let Some(repository) = &pins.repository {
        if &params.repository != repository {
            return Err(Error::refused(format!(
                "{reference} was built from repository `{}`, and this runner accepts only `{repository}`",
                params.repository
            ))
            .at(&at)
            .hint("ask your vendor which repository builds it; change `[policy.provenance] repository` only if you trust that one too"));
        }
    }
    // A prerelease comes from a feature or PR branch: where the operator allows
    // prereleases at all, its ref is not pinned.
    let prerelease_allowed = !bundle.config.version.pre.is_empty() && policy.allow_prereleases;
    if !pins.refs.is_empty() && !prerelease_allowed && !pins.refs.contains(&params.git_ref) {
        return Err(Error::refused(format!(
            "{reference} was built from `{}`, and this runner accepts only {}",
            params.git_ref,
            pins.refs
                .iter()
                .map(|r| format!("`{r}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .at(&at)
        .hint("use a version released from one of those refs"));
    }
    Ok(())
}

fn recorded(p: &Provenance) -> VerifiedProvenance {
    let params = &p.build_definition.external_parameters;
    VerifiedProvenance {
        repository: params.repository.clone(),
        git_ref: params.git_ref.clone(),
        commit: params.commit.clone(),
        builder: p.built_by(),
        builder_id: p.run_details.builder.id.clone(),
    }
}
