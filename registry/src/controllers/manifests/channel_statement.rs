//! A channel statement arriving (`stackpack promote`): an image manifest with
//! `artifactType` [`CHANNEL_STATEMENT_ARTIFACT`](media_type::CHANNEL_STATEMENT_ARTIFACT)
//! whose one layer is the vendor's signed statement and whose `subject` is what it
//! approves. Read here (its layer is already uploaded), recorded as a promotion that
//! starts a rollout in the manifest's own transaction ([`crate::rollout::promote`]).
//!
//! A statement that does not verify, is of a newer format, approves another digest
//! than its subject, or sits in another release's repository is refused with
//! `MANIFEST_INVALID` and nothing is stored: a registry that kept it as a plain
//! referrer would show a promotion that never schedules. One signed by a key that
//! did not sign what it approves is refused with `DENIED`, before anything of it is
//! stored (so the vendor's own promotion of that version still goes through).

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
    refuse_foreign_signer(ctx, repository, &signed).await?;
    Ok(Some(signed))
}

/// Only a key that signed what the statement approves may approve it: otherwise
/// anyone with a publisher token and a key of their own could start a rollout
/// runners refuse and take the version from the vendor's own promotion.
async fn refuse_foreign_signer(
    ctx: &Ctx,
    repository: &str,
    signed: &SignedChannelStatement,
) -> Result<()> {
    let s = &signed.statement;
    // (What the registry does not hold at all is refused by `rollout::promote`,
    // naming it.)
    let Some(signers) = signers(ctx, repository, &signed.statement).await? else {
        return Ok(());
    };
    if !signers.contains(&s.key_id) {
        let what = format!("{}@{}", s.release, s.version);
        return Err(Error::new(
            Code::Denied,
            format!(
                "channel statement in `{repository}`: {}; {}",
                stackpack_schema::rollout::foreign_signer(&what, &s.key_id, &signers),
                stackpack_schema::rollout::FOREIGN_SIGNER_HINT
            ),
        ));
    }
    Ok(())
}

/// The ids of the keys whose signatures of what `statement` approves verify here:
/// the release description's (signature entries of the release index) or the
/// bundle's (its signature referrers). `None` when the repository holds no release
/// index (or manifest) at that digest.
async fn signers(
    ctx: &Ctx,
    repository: &str,
    statement: &stackpack_schema::rollout::ChannelStatement,
) -> Result<Option<Vec<String>>> {
    use stackpack_schema::oci::{ImageIndex, ImageManifest};
    let digest = statement.digest.to_string();
    let kind = statement.kind;
    // Each candidate signature manifest, with the digest it must sign.
    let candidates = ctx.state.db.read_any(|c| {
        let mut found = Vec::new();
        match kind {
            ApprovedKind::Release => {
                let Some(stored) = crate::db::manifests::get_by_digest(c, repository, &digest)?
                else {
                    return Ok(None);
                };
                let Ok(index) = serde_json::from_slice::<ImageIndex>(&stored.content) else {
                    return Ok(None);
                };
                let Some(description) = index.manifests.first() else {
                    return Ok(None);
                };
                for entry in index.manifests.iter().skip(1) {
                    if entry.artifact_type.as_deref() == Some(media_type::SIGNATURE_ARTIFACT) {
                        let child = entry.digest.to_string();
                        if let Some(m) = crate::db::manifests::get_by_digest(c, repository, &child)?
                        {
                            found.push((m.content, description.digest.clone()));
                        }
                    }
                }
            }
            ApprovedKind::Stack => {
                if !crate::db::manifests::exists(c, repository, &digest)? {
                    return Ok(None);
                }
                let signature = Some(media_type::SIGNATURE_ARTIFACT);
                for r in crate::db::manifests::referrers(c, repository, &digest, signature)? {
                    let child = r.digest.to_string();
                    if let Some(m) = crate::db::manifests::get_by_digest(c, repository, &child)? {
                        found.push((m.content, statement.digest.clone()));
                    }
                }
            }
        }
        Ok(Some(found))
    })?;
    let Some(candidates) = candidates else {
        return Ok(None);
    };
    let mut ids = Vec::new();
    for (bytes, signed) in candidates {
        let Ok(manifest) = serde_json::from_slice::<ImageManifest>(&bytes) else {
            continue;
        };
        let Some(layer) = manifest
            .layers
            .iter()
            .find(|l| l.media_type == media_type::SIGNATURE_LAYER)
        else {
            continue;
        };
        let blob = crate::storage::read_small(
            ctx.state.blobs.as_ref(),
            &layer.digest,
            layer.size,
            SIGNATURE_LIMIT,
        )
        .await;
        let Some(blob) = blob.ok().flatten() else {
            continue;
        };
        let Ok(envelope) = stackpack_schema::signature::SignatureEnvelope::from_bytes(&blob) else {
            continue;
        };
        if envelope.payload.manifest_digest != signed {
            continue;
        }
        if let Ok(key) = envelope.verify_integrity() {
            ids.push(key.key_id());
        }
    }
    ids.sort();
    ids.dedup();
    Ok(Some(ids))
}

/// The largest signature layer read (they are a few hundred bytes).
const SIGNATURE_LIMIT: u64 = 64 * 1024;
