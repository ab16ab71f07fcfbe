//! `PUT /v2/<name>/manifests/<reference>`: checks and stores a manifest.
//!
//! The body must be a manifest of the type `Content-Type` names, at most the
//! configured size (4 MiB by default); every blob it references must already be in
//! the repository, and every manifest an index lists too. A digest reference must
//! match the body. A stable `X.Y.Z` tag never moves to another digest. A bundle
//! manifest (`artifactType` `application/vnd.stackpack.bundle.v1`) is also recorded
//! as a stack version (`releases`) in the ledger, from its config blob, in the same
//! transaction; a release index is recorded as a release ([`super::release_index`]);
//! a channel statement as a promotion that starts a rollout
//! ([`super::channel_statement`]).

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use stackpack_schema::media_type;
use stackpack_schema::oci::Descriptor;
use stackpack_schema::rollout::SignedChannelStatement;
use stackpack_schema::Digest;

use crate::api::{Release, ReleaseModule, Source};
use crate::auth::Action;
use crate::config::TagPolicy;
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::locks::Lock;
use crate::db::sql::{Conn, Sql};
use crate::error::{Code, Error, Result};
use crate::names::{is_prerelease_version_tag, is_stable_version_tag, Reference};
use crate::timestamp::Timestamp;

use super::checked::check;
use super::checked::invalid;

async fn read_body(ctx: &Ctx, body: Body) -> Result<Vec<u8>> {
    let limit = ctx.state.config.max_manifest_bytes;
    if let Some(length) = ctx
        .header(header::CONTENT_LENGTH)
        .and_then(|v| v.parse::<u64>().ok())
    {
        if length > limit {
            crate::controllers::drain(body, crate::controllers::DRAIN_CAP).await;
            return Err(Error::too_large("the manifest", limit));
        }
    }
    let mut bytes = Vec::new();
    let mut stream = body.into_data_stream();
    let idle = ctx.state.config.idle_timeout;
    while let Some(chunk) = crate::controllers::body::next_chunk(
        &mut stream,
        idle,
        Code::ManifestInvalid,
        "the manifest",
    )
    .await?
    {
        if bytes.len() as u64 + chunk.len() as u64 > limit {
            crate::controllers::drain(Body::from_stream(stream), crate::controllers::DRAIN_CAP)
                .await;
            return Err(Error::too_large("the manifest", limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The part of a bundle config the ledger reads. Loose on purpose: a newer config
/// format with more fields still records its release.
#[derive(Deserialize)]
struct BundleConfigHead {
    stack: String,
    version: String,
    #[serde(default)]
    source: Option<SourceHead>,
    #[serde(default)]
    created: Option<String>,
    #[serde(default)]
    modules: Vec<ModuleHead>,
}

#[derive(Deserialize)]
struct ModuleHead {
    name: String,
    path: String,
    #[serde(default)]
    version: Option<String>,
    digest: String,
}

#[derive(Deserialize)]
struct SourceHead {
    repository: Option<String>,
    commit: Option<String>,
    branch: Option<String>,
}

async fn read_release(
    ctx: &Ctx,
    name: &str,
    digest: &Digest,
    config: &Descriptor,
) -> Option<Release> {
    if config.media_type != media_type::BUNDLE_CONFIG || config.size > 4 * 1024 * 1024 {
        return None;
    }
    let bytes = crate::storage::read_small(
        ctx.state.blobs.as_ref(),
        &config.digest,
        config.size,
        4 * 1024 * 1024,
    )
    .await
    .ok()??;
    let head: BundleConfigHead = match serde_json::from_slice(&bytes) {
        Ok(head) => head,
        Err(e) => {
            tracing::warn!(repository = name, %digest, error = %e, "bundle config unreadable; no release recorded");
            return None;
        }
    };
    let version = semver::Version::parse(&head.version).ok()?;
    let source = head.source.map(|s| Source {
        repository: s.repository,
        commit: s.commit,
        branch: s.branch,
    });
    let modules = head
        .modules
        .into_iter()
        .map(|m| ReleaseModule {
            name: m.name,
            path: m.path,
            version: m.version,
            digest: m.digest,
        })
        .collect();
    // A `created` that is not a time is left out rather than stored: it could not
    // be read back as one.
    let created = head.created.and_then(|text| match text.parse::<Timestamp>() {
        Ok(created) => Some(created),
        Err(e) => {
            tracing::warn!(repository = name, %digest, error = %e, "bundle config `created` left out");
            None
        }
    });
    let release = Release {
        stack: head.stack,
        prerelease: !version.pre.is_empty(),
        version,
        repository: name.to_string(),
        digest: digest.clone(),
        source: source.unwrap_or_default(),
        created,
        published_at: Timestamp::now(),
        modules,
    };
    Some(release)
}

/// Every blob the manifest needs (`blobs`, their digests `keys`) is in the
/// repository with the size it says, and every manifest an index lists is stored. The blobs are held shared until the
/// push commits: gc deletes none of them meanwhile, and pushes naming one go on
/// beside each other (`db::locks`).
fn check_references<C: Sql + ?Sized>(
    tx: &C,
    name: &str,
    blobs: &[Descriptor],
    keys: &[String],
    manifests: &[String],
) -> Result<()>
where
    Error: From<C::Error>,
{
    let named: Vec<Lock> = keys.iter().map(|d| Lock::Blob(d)).collect();
    tx.share_all(&named)?;
    for (blob, key) in blobs.iter().zip(keys) {
        match db::blobs::size_in_repo(tx, name, key)? {
            None => {
                return Err(Error::new(
                    Code::ManifestBlobUnknown,
                    format!("blob `{key}` is not in repository `{name}`; push it first"),
                )
                .with_detail(serde_json::json!({ "digest": key })))
            }
            Some(size) if size != blob.size => {
                return Err(invalid(format!(
                    "blob `{key}` has {size} bytes, but the manifest says {}",
                    blob.size
                )))
            }
            Some(_) => {}
        }
    }
    for child in manifests {
        if !db::manifests::exists(tx, name, child)? {
            return Err(Error::new(
                Code::ManifestBlobUnknown,
                format!("manifest `{child}` is not in repository `{name}`; push it first"),
            )
            .with_detail(serde_json::json!({ "digest": child })));
        }
    }
    Ok(())
}

/// Refuses to move an immutable tag (stable `X.Y.Z` always; others by policy) to
/// another digest.
fn check_tag_move<C: Sql + ?Sized>(
    ctx: &Ctx,
    tx: &C,
    name: &str,
    tag: &str,
    key: &str,
) -> Result<()>
where
    Error: From<C::Error>,
{
    let policy = if is_stable_version_tag(tag) {
        TagPolicy::Immutable
    } else if is_prerelease_version_tag(tag) {
        ctx.state.config.prerelease_tags
    } else {
        ctx.state.config.other_tags
    };
    match db::manifests::tag_digest(tx, name, tag)? {
        Some(current) if current != key && policy == TagPolicy::Immutable => Err(Error::new(
            Code::Denied,
            format!("tag `{tag}` already points at `{current}` and is immutable"),
        )
        .with_detail(serde_json::json!({ "tag": tag, "digest": current }))),
        _ => Ok(()),
    }
}

/// Records a stack version the push carries: the release, its modules, and the
/// token that pushed it.
fn record_stack_version<C: Sql + ?Sized>(
    tx: &C,
    release: &crate::api::Release,
    principal: &crate::auth::Principal,
) -> Result<(), C::Error> {
    db::ledger::upsert_release(tx, release)?;
    db::ledger::set_release_modules(tx, release)?;
    if let crate::auth::Principal::Token { id, .. } = principal {
        db::ledger::note_pusher(tx, release, id)?;
    }
    Ok(())
}

/// What a push holds on PostgreSQL, beside pushes to others: its repository (and
/// the stack and release it records); a channel statement its channel too, where
/// it starts a rollout (and the rollouts it supersedes, as it reaches them: see
/// `db::locks`).
fn push_locks<'a>(
    name: &'a str,
    release: &'a Option<Release>,
    release_index: &'a Option<db::release_index::NewReleaseIndex>,
    statement: &'a Option<SignedChannelStatement>,
) -> Vec<Lock<'a>> {
    let mut locks = vec![Lock::Repository(name)];
    locks.extend(release.as_ref().map(|r| Lock::Stack(&r.stack)));
    locks.extend(
        release_index
            .as_ref()
            .map(|r| Lock::Release(&r.release.name)),
    );
    locks.extend(
        statement
            .as_ref()
            .map(|s| Lock::Channel(&s.statement.channel)),
    );
    locks
}

/// The log's line for a stack version or a release a push recorded.
fn log_recorded(
    key: &str,
    release: Option<&Release>,
    release_index: Option<&db::release_index::NewReleaseIndex>,
) {
    if let Some(release) = release {
        tracing::info!(stack = %release.stack, version = %release.version, digest = %key, "stack version recorded");
    }
    if let Some(index) = release_index {
        let r = &index.release;
        tracing::info!(release = %r.name, version = %r.version, digest = %key, "release recorded");
    }
}

pub async fn handle(
    ctx: Ctx,
    name: &str,
    reference: &str,
    body: &mut Option<Body>,
) -> Result<Response> {
    ctx.authorize(Action::Push(name))?;
    let reference = Reference::parse(reference)?;
    let bytes = read_body(&ctx, body.take().unwrap_or_default()).await?;
    let checked = check(ctx.header(header::CONTENT_TYPE), &bytes)?;
    let digest = Digest::of(&bytes);
    if let Reference::Digest(expected) = &reference {
        if expected != &digest {
            return Err(Error::new(
                Code::DigestInvalid,
                format!("the manifest has digest `{digest}`, not `{expected}`"),
            ));
        }
    }
    let release = match (&checked.artifact_type, &checked.config) {
        (Some(artifact), Some(config)) if artifact == media_type::BUNDLE_ARTIFACT => {
            read_release(&ctx, name, &digest, config).await
        }
        _ => None,
    };
    let release_index =
        super::release_index::read(&ctx, name, &reference, &digest, &checked).await?;
    let statement = super::channel_statement::read(&ctx, name, &checked).await?;
    let key = digest.to_string();
    let blob_keys: Vec<String> = checked.blobs.iter().map(|d| d.digest.to_string()).collect();
    let manifest_keys: Vec<String> = checked
        .manifests
        .iter()
        .map(|d| d.digest.to_string())
        .collect();
    let subject = checked.subject.as_ref().map(|s| s.digest.to_string());
    let store = |tx: &Conn<'_>| {
        check_references(tx, name, &checked.blobs, &blob_keys, &manifest_keys)?;
        if let Reference::Tag(tag) = &reference {
            check_tag_move(&ctx, tx, name, tag, &key)?;
        }
        let now = db::now_unix();
        db::manifests::insert(
            tx,
            &db::manifests::NewManifest {
                repo: name,
                digest: &key,
                media_type: &checked.media_type,
                artifact_type: checked.artifact_type.as_deref(),
                subject: subject.as_deref(),
                annotations: checked.annotations.as_deref(),
                content: &bytes,
                blobs: &blob_keys,
                manifests: &manifest_keys,
            },
            now,
        )?;
        if let Reference::Tag(tag) = &reference {
            db::manifests::set_tag(tx, name, tag, &key, now)?;
        }
        if let Some(release) = &release {
            record_stack_version(tx, release, &ctx.principal)?;
        }
        if let Some(release) = &release_index {
            db::release_index::record(tx, release)?;
        }
        match &statement {
            Some(signed) => Ok(Some(crate::rollout::promote(
                tx,
                name,
                signed,
                crate::rollout::now_ns(),
            )?)),
            None => Ok(None),
        }
    };
    let locks = push_locks(name, &release, &release_index, &statement);
    let promoted = ctx.state.db.write_keyed(&locks, store)?;
    log_recorded(&key, release.as_ref(), release_index.as_ref());
    if let (Some(signed), Some(promoted)) = (&statement, &promoted) {
        let s = &signed.statement;
        tracing::info!(release = %s.release, version = %s.version, channel = %s.channel,
            rollout = promoted.rollout, new = promoted.created, "promotion recorded");
    }
    let mut headers = vec![
        ("Location", format!("/v2/{name}/manifests/{key}")),
        ("Docker-Content-Digest", key.clone()),
        ("Content-Length", "0".to_string()),
    ];
    if let Some(subject) = subject {
        headers.push(("OCI-Subject", subject));
    }
    Ok(empty(StatusCode::CREATED, &headers))
}
