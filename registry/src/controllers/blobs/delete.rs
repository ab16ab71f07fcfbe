//! `DELETE /v2/<name>/blobs/<digest>`: removes the repository's link to a blob that
//! no manifest in the repository needs. The bytes go at the next `gc`.

use axum::http::StatusCode;
use axum::response::Response;

use crate::auth::Action;
use crate::controllers::{empty, Ctx};
use crate::db;
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};
use crate::names::parse_digest;

pub async fn handle(ctx: Ctx, name: &str, digest: &str) -> Result<Response> {
    ctx.authorize(Action::Delete(name))?;
    let digest = parse_digest(digest)?.to_string();
    // Keyed by the repository, whose manifest PUTs check the links this removes, and
    // by the blob, which an upload may be linking meanwhile.
    let locks = [Lock::Repository(name), Lock::Blob(&digest)];
    ctx.state.db.write_keyed(&locks, |tx| {
        if db::blobs::referenced_in_repo(tx, name, &digest)? {
            return Err(Error::new(
                Code::Denied,
                format!("blob `{digest}` is still referenced by a manifest in `{name}`"),
            ));
        }
        if !db::blobs::unlink(tx, name, &digest)? {
            return Err(Error::new(
                Code::BlobUnknown,
                format!("blob `{digest}` is not in repository `{name}`"),
            ));
        }
        Ok(())
    })?;
    Ok(empty(
        StatusCode::ACCEPTED,
        &[
            ("Docker-Content-Digest", digest),
            ("Content-Length", "0".into()),
        ],
    ))
}
