//! A single stack is a release of one: a stack assigned on its own (a `kind =
//! stack` promotion, or `[stacks.<name>]` in the desired state) goes through the
//! same pass as a release — the same checks, plan, approval policy and pending
//! approval — as a release that pins just that bundle and wires nothing. Its
//! receipts name no release, and no release receipt is written: the stack's own
//! receipt is what it ran.

use semver::Version;
use stackpack_bundle::release::VerifiedRelease;
use stackpack_schema::media_type;
use stackpack_schema::oci::ImageIndex;
use stackpack_schema::release::{ReleaseDescription, ReleaseStack, RELEASE_FORMAT};

use crate::error::Result;
use crate::home::Home;
use crate::release::wiring::StackInputs;

/// The store's `stack@version`, verified with the trusted keys, as a release of
/// one; its "index" is the bundle manifest (what a `kind = stack` statement
/// approves).
pub fn load(home: &Home, stack: &str, version: &Version) -> Result<VerifiedRelease> {
    let store = home.store()?;
    let bundle = crate::store::verify_in(home, &store, stack, version)?;
    Ok(VerifiedRelease {
        index_descriptor: bundle.manifest_descriptor.clone(),
        index: ImageIndex {
            schema_version: 2,
            media_type: Some(media_type::OCI_INDEX.into()),
            artifact_type: None,
            manifests: vec![bundle.manifest_descriptor.clone()],
            subject: None,
            annotations: None,
        },
        description: ReleaseDescription {
            format: RELEASE_FORMAT,
            name: stack.to_string(),
            version: version.clone(),
            source: bundle.config.source.clone(),
            created: bundle.config.created.clone(),
            stacks: vec![ReleaseStack {
                name: stack.to_string(),
                version: version.clone(),
                digest: bundle.manifest_descriptor.digest.clone(),
                depends_on: vec![],
                inputs_from: Default::default(),
            }],
            services: vec![],
            changes: vec![],
            engine: None,
        },
        signatures: bundle.signatures,
        signer: bundle.signer,
    })
}

/// The stack with its inputs file (none when it needs none and the file is
/// absent).
pub fn stack_inputs(
    home: &Home,
    release: &VerifiedRelease,
    inputs: &std::path::Path,
) -> Result<Vec<StackInputs>> {
    let store = home.store()?;
    let stack = release.description.stacks[0].clone();
    let bundle = crate::store::verify_in(home, &store, &stack.name, &stack.version)?;
    let needs = bundle.config.interface.inputs.iter().any(|i| i.required);
    if needs && !inputs.is_file() {
        return Err(crate::error::Error::refused(format!(
            "nothing was run: stack `{}` needs inputs, and its inputs file `{}` does not exist",
            stack.name,
            inputs.display()
        ))
        .hint(format!(
            "write it (`stackpack-runner check-inputs {}@{} --inputs FILE` checks it), or name the file with `inputs` under `[stacks.{}]` in the desired state",
            stack.name, stack.version, stack.name
        )));
    }
    Ok(vec![StackInputs {
        stack,
        bundle,
        files: inputs
            .is_file()
            .then(|| inputs.to_path_buf())
            .into_iter()
            .collect(),
    }])
}
