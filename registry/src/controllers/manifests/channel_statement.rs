//! A channel statement arriving (`stackpack promote`): an image manifest with
//! `artifactType` [`CHANNEL_STATEMENT_ARTIFACT`](media_type::CHANNEL_STATEMENT_ARTIFACT)
//! whose one layer is the vendor's signed statement and whose `subject` is what it
//! approves. Read here (its layer is already uploaded), recorded as a promotion that
//! starts a rollout in the manifest's own transaction ([`crate::rollout::promote`]).
//!
//! A statement that does not verify, is of a newer format, approves another digest
//! than its subject, or sits in another release's repository is refused with
//! `MANIFEST_INVALID` and nothing is stored: a registry that kept it as a plain
//! referrer would show a promotion that never schedules.

use stackpack_bundle::channel::STATEMENT_LIMIT;
use stackpack_schema::media_type;
use stackpack_schema::rollout::{ApprovedKind, SignedChannelStatement};

use super::checked::Checked;
use super::release_index::release_name;
use crate::controllers::Ctx;
use crate::error::{Code, Error, Result};

fn refused(repository: &str, message: impl std::fmt::Display) -> Error {
    Error::new(
        Code::ManifestInvalid,
        format!("channel statement in `{repository}`: {message}"),
    )
}

/// The statement `checked` carries, when it is a channel statement artifact.
pub async fn read(
    ctx: &Ctx,
    repository: &str,
    checked: &Checked,
) -> Result<Option<SignedChannelStatement>> {
    if checked.artifact_type.as_deref() != Some(media_type::CHANNEL_STATEMENT_ARTIFACT)
        || !media_type::is_image_manifest(&checked.media_type)
    {
        return Ok(None);
    }
    let layer = checked
        .blobs
        .iter()
        .find(|d| d.media_type == media_type::CHANNEL_STATEMENT_LAYER)
        .ok_or_else(|| {
            refused(
                repository,
                format!("it has no `{}` layer", media_type::CHANNEL_STATEMENT_LAYER),
            )
        })?;
    if layer.size > STATEMENT_LIMIT {
        return Err(refused(
            repository,
            format!(
                "its statement is {} bytes, more than the {STATEMENT_LIMIT} read",
                layer.size
            ),
        ));
    }
    let stored = crate::storage::read_small(
        ctx.state.blobs.as_ref(),
        &layer.digest,
        layer.size,
        STATEMENT_LIMIT,
    )
    .await;
    let bytes = stored.ok().flatten().ok_or_else(|| {
        Error::new(
            Code::ManifestBlobUnknown,
            format!(
                "blob `{}` is not in repository `{repository}`; push it first",
                layer.digest
            ),
        )
        .with_detail(serde_json::json!({ "digest": layer.digest.to_string() }))
    })?;
    if bytes.len() as u64 > STATEMENT_LIMIT {
        return Err(refused(repository, "its statement is too large"));
    }
    let signed = SignedChannelStatement::from_bytes(&bytes).map_err(|e| {
        refused(
            repository,
            format!("{e}; promote with a `stackpack` that writes this registry's format"),
        )
    })?;
    // Its signature is checked once, by `rollout::promote`, which every statement
    // goes through before anything of it is stored.
    let s = &signed.statement;
    if checked.subject.as_ref().map(|d| &d.digest) != Some(&s.digest) {
        return Err(refused(
            repository,
            format!(
                "it approves digest `{}`, but its subject is {}",
                s.digest,
                checked
                    .subject
                    .as_ref()
                    .map_or("missing".to_string(), |d| format!("`{}`", d.digest))
            ),
        ));
    }
    if s.kind == ApprovedKind::Release && release_name(repository) != Some(s.release.as_str()) {
        return Err(refused(
            repository,
            format!(
                "it approves release `{}`; push it to `…/releases/{}`",
                s.release, s.release
            ),
        ));
    }
    Ok(Some(signed))
}
