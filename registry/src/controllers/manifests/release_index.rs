//! A release index arriving in `<namespace>/releases/<name>`: read its description
//! so the ledger can record the release with its parts, in the manifest's own
//! transaction.
//!
//! An index that says it is a release (`artifactType`
//! `application/vnd.stackpack.release.v1`) in a `releases/` repository but cannot be
//! read as one (no description first, a description that does not parse, a name or
//! version other than where it is pushed, a part it pins but does not list) is
//! refused with `MANIFEST_INVALID`, not stored as a plain index: it would be served
//! to runners as a release while support's ledger knew nothing of it, and the one
//! writer (the packager's `publish`) hears why at once. Any other index, there or
//! elsewhere, is stored as the OCI index it is.

use stackpack_schema::media_type;
use stackpack_schema::oci::ImageManifest;
use stackpack_schema::release::{ReleaseDescription, RELEASE_FORMAT};
use stackpack_schema::Digest;

use super::checked::Checked;
use crate::api::{ReleaseServicePart, ReleaseStackPart, ReleaseVersion};
use crate::controllers::Ctx;
use crate::db;
use crate::db::release_index::NewReleaseIndex;
use crate::error::{Code, Error, Result};
use crate::names::Reference;
use crate::timestamp::Timestamp;

/// The largest release description read: hundreds of stacks and services fit in a
/// few kilobytes each.
pub const DESCRIPTION_CAP: u64 = 1024 * 1024;

/// The release a repository holds: `acme/releases/data-plane` → `data-plane`.
pub fn release_name(repository: &str) -> Option<&str> {
    let (head, name) = repository.rsplit_once('/')?;
    (head == "releases" || head.ends_with("/releases")).then_some(name)
}

fn refused(repository: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        Code::ManifestInvalid,
        format!("release index in `{repository}`: {message}"),
    )
}

/// The release the index `checked` records, when it is one; `Err` when it says it
/// is a release but is not a valid one.
pub async fn read(
    ctx: &Ctx,
    repository: &str,
    reference: &Reference,
    digest: &Digest,
    checked: &Checked,
) -> Result<Option<NewReleaseIndex>> {
    if !media_type::is_index(&checked.media_type)
        || checked.artifact_type.as_deref() != Some(media_type::RELEASE_ARTIFACT)
    {
        return Ok(None);
    }
    let Some(name) = release_name(repository) else {
        return Ok(None);
    };
    let description = description(ctx, repository, checked).await?;
    if description.name != name {
        return Err(refused(
            repository,
            format!(
                "its description names release `{}`; push it to `…/releases/{}`",
                description.name, description.name
            ),
        ));
    }
    if let Reference::Tag(tag) = reference {
        if *tag != description.version.to_string() {
            return Err(refused(
                repository,
                format!(
                    "tag `{tag}` but its description says version `{}`",
                    description.version
                ),
            ));
        }
    }
    let listed: Vec<&Digest> = checked.manifests.iter().map(|d| &d.digest).collect();
    let pinned = description
        .stacks
        .iter()
        .map(|s| (&s.name, &s.digest))
        .chain(description.services.iter().map(|s| (&s.name, &s.digest)));
    for (part, pinned) in pinned {
        if !listed.contains(&pinned) {
            return Err(refused(
                repository,
                format!(
                    "its description pins `{part}` at `{pinned}`, which the index does not list"
                ),
            ));
        }
    }
    Ok(Some(NewReleaseIndex {
        release: ReleaseVersion {
            name: description.name,
            prerelease: !description.version.pre.is_empty(),
            version: description.version,
            repository: repository.to_string(),
            digest: digest.clone(),
            published_at: Timestamp::now(),
        },
        stacks: description
            .stacks
            .into_iter()
            .map(|s| ReleaseStackPart {
                stack: s.name,
                version: s.version,
                digest: s.digest,
            })
            .collect(),
        services: description
            .services
            .into_iter()
            .map(|s| ReleaseServicePart {
                service: s.name,
                reference: s.reference,
                digest: s.digest,
            })
            .collect(),
    }))
}

/// The description the index's first entry carries in its config blob.
async fn description(ctx: &Ctx, repository: &str, checked: &Checked) -> Result<ReleaseDescription> {
    let first = checked.manifests.first().ok_or_else(|| {
        refused(
            repository,
            "it lists no manifests; its first must be the release description",
        )
    })?;
    if first.artifact_type.as_deref() != Some(media_type::RELEASE_DESCRIPTION_ARTIFACT) {
        return Err(refused(
            repository,
            format!(
                "its first entry `{}` is not a release description (`artifactType` `{}`)",
                first.digest,
                media_type::RELEASE_DESCRIPTION_ARTIFACT
            ),
        ));
    }
    let key = first.digest.to_string();
    let stored = ctx
        .state
        .db
        .read_any(|c| db::manifests::get_by_digest(c, repository, &key))?
        .ok_or_else(|| {
            Error::new(
                Code::ManifestBlobUnknown,
                format!("manifest `{key}` is not in repository `{repository}`; push it first"),
            )
            .with_detail(serde_json::json!({ "digest": key }))
        })?;
    let manifest: ImageManifest = serde_json::from_slice(&stored.content).map_err(|e| {
        refused(
            repository,
            format!("its description `{key}` is not an image manifest: {e}"),
        )
    })?;
    let config = &manifest.config;
    if config.media_type != media_type::RELEASE_CONFIG {
        return Err(refused(
            repository,
            format!(
                "its description's config is `{}`, not `{}`",
                config.media_type,
                media_type::RELEASE_CONFIG
            ),
        ));
    }
    if config.size > DESCRIPTION_CAP {
        return Err(refused(
            repository,
            format!(
                "its description is {} bytes, more than the {DESCRIPTION_CAP} read",
                config.size
            ),
        ));
    }
    // The size is the stored blob's: the description manifest was checked against
    // its blobs when it was pushed.
    let cannot_read = |why: String| {
        Error::new(
            Code::ManifestBlobUnknown,
            format!(
                "the release description `{}` cannot be read: {why}",
                config.digest
            ),
        )
    };
    let bytes = crate::storage::read_small(
        ctx.state.blobs.as_ref(),
        &config.digest,
        config.size,
        DESCRIPTION_CAP,
    )
    .await
    .map_err(|e| cannot_read(e.to_string()))?
    .ok_or_else(|| cannot_read("it is not stored".into()))?;
    let description: ReleaseDescription = serde_json::from_slice(&bytes).map_err(|e| {
        refused(
            repository,
            format!(
                "its description `{}` is not a release description: {e}",
                config.digest
            ),
        )
    })?;
    if description.format > RELEASE_FORMAT {
        return Err(refused(
            repository,
            format!(
                "its description is format {}, newer than this registry's {RELEASE_FORMAT}; upgrade stackpack-registry",
                description.format
            ),
        ));
    }
    Ok(description)
}
