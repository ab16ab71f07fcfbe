//! `DELETE /v2/<name>/manifests/<reference>`: by digest removes the manifest and its
//! tags; by tag removes the tag. Stable `X.Y.Z` tags stay unless an admin asks, and
//! so does every manifest a stable tag needs: the one it points at, and each one an
//! index under a stable tag lists (directly or through nested indexes).

use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::{Action, Role};
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};
use crate::names::{is_stable_version_tag, Reference};

fn stable_denied(tag: &str) -> Error {
    Error::new(
        Code::Denied,
        format!("tag `{tag}` is a stable release and immutable; only an admin token may delete it"),
    )
}

pub async fn handle(ctx: Ctx, name: &str, reference: &str) -> Result<Response> {
    ctx.authorize(Action::Delete(name))?;
    let admin = ctx.principal.role() == Some(Role::Admin);
    let parsed = Reference::parse(reference)?;
    // Held: the repository, and (as they are found) the stacks and releases whose
    // versions a manifest deleted by digest took with it (`db::locks`).
    ctx.state.db.write_keyed(&[Lock::Repository(name)], |tx| {
        match &parsed {
            Reference::Tag(tag) => {
                if is_stable_version_tag(tag) && !admin {
                    return Err(stable_denied(tag));
                }
                if !db::manifests::delete_tag(tx, name, tag)? {
                    return Err(Error::new(
                        Code::ManifestUnknown,
                        format!("tag `{tag}` is not in repository `{name}`"),
                    ));
                }
            }
            Reference::Digest(digest) => {
                let digest = digest.to_string();
                if !admin {
                    if let Some(tag) = db::manifests::tags_depending_on(tx, name, &digest)?
                        .into_iter()
                        .find(|t| is_stable_version_tag(t))
                    {
                        return Err(Error::new(
                            Code::Denied,
                            format!(
                                "manifest `{digest}` is part of stable release `{tag}`, which is immutable; only an admin token may delete it"
                            ),
                        )
                        .with_detail(serde_json::json!({ "tag": tag, "digest": digest })));
                    }
                }
                if !db::manifests::delete(tx, name, &digest)? {
                    return Err(Error::new(
                        Code::ManifestUnknown,
                        format!("manifest `{digest}` is not in repository `{name}`"),
                    ));
                }
                db::ledger::delete_release_by_digest(tx, name, &digest)?;
                db::release_index::delete_by_digest(tx, name, &digest)?;
            }
        }
        Ok(())
    })?;
    Ok(empty(
        StatusCode::ACCEPTED,
        &[("Content-Length", "0".into())],
    ))
}
