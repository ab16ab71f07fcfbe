//! `GET /api/v1/releases?stack=<stack>`: releases recorded as bundles arrived.

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;

use crate::api::{NewRelease, Release};
use crate::auth::Action;
use crate::controllers::{read_limited, Authorised, Ctx, MayPublish};
use crate::db;
use crate::db::locks::Lock;
use crate::error::{Code, Error, Result};
use crate::state::SharedState;
use crate::timestamp::Timestamp;

#[utoipa::path(
    get,
    path = "/api/v1/releases",
    params(("stack" = Option<String>, Query, description = "Only this stack's releases")),
    responses(
        (status = 200, description = "Releases, by stack then publication time", body = Vec<Release>),
        (status = 401, description = "No or an invalid token"),
        (status = 403, description = "The token's role may not read the ledger"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
pub async fn handle(
    State(state): State<SharedState>,
    ctx: Ctx,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Vec<Release>>> {
    ctx.authorize(Action::LedgerRead)?;
    let stack = query.get("stack").map(String::as_str);
    state
        .db
        .scan_any(|c| db::ledger::releases_with_modules(c, stack))
        .map(Json)
}

/// The repository a release lives in, elsewhere perhaps (`123456789.dkr.ecr…/x`):
/// not empty, not over 255 bytes, no spaces or control characters.
fn check_repository(repository: &str) -> Result<()> {
    if repository.is_empty()
        || repository.len() > 255
        || repository
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::new(
            Code::BadRequest,
            format!("`repository` `{repository}` must be 1 to 255 characters without spaces"),
        ));
    }
    Ok(())
}

#[utoipa::path(
    post,
    path = "/api/v1/releases",
    request_body = NewRelease,
    responses(
        (status = 201, description = "Recorded (or already recorded with the same digest)", body = Release),
        (status = 400, description = "Malformed stack, version or digest"),
        (status = 409, description = "This stable version is recorded with another digest"),
    ),
    security(("bearer" = [])),
    tag = "ledger"
)]
/// Records a release published elsewhere (the registry records its own pushes itself).
pub async fn create(
    State(state): State<SharedState>,
    Authorised { ctx, body, .. }: Authorised<MayPublish>,
) -> Result<impl IntoResponse> {
    let body = read_limited(body, &state.config, "the request body").await?;
    let new: NewRelease = serde_json::from_slice(&body)
        .map_err(|e| Error::new(Code::BadRequest, format!("the body is not a release: {e}")))?;
    check_repository(&new.repository)?;
    ctx.authorize(Action::Push(&new.repository))?;
    let created = new
        .created
        .as_deref()
        .map(|value| {
            db::utc_time(value)
                .and_then(|(utc, _)| utc.parse::<Timestamp>().ok())
                .ok_or_else(|| {
                    Error::new(
                        Code::BadRequest,
                        format!("`created` `{value}` is not an RFC 3339 time"),
                    )
                })
        })
        .transpose()?;
    stackpack_schema::reference::validate_name(&new.stack)
        .map_err(|e| Error::new(Code::BadRequest, e.to_string()))?;
    let version = semver::Version::parse(&new.version).map_err(|_| {
        Error::new(
            Code::BadRequest,
            format!("`{}` is not a semver version", new.version),
        )
    })?;
    let digest = crate::names::parse_digest(&new.digest)
        .map_err(|e| Error::new(Code::BadRequest, e.message))?;
    let modules = new.modules;
    for module in &modules {
        if let Some(v) = &module.version {
            semver::Version::parse(v).map_err(|_| {
                Error::new(
                    Code::BadRequest,
                    format!("module `{}`: `{v}` is not a semver version", module.name),
                )
            })?;
        }
    }
    let release = Release {
        stack: new.stack,
        prerelease: !version.pre.is_empty(),
        version,
        repository: new.repository,
        digest,
        source: new.source,
        created,
        published_at: Timestamp::now(),
        modules,
    };
    // Keyed by the stack, as a manifest PUT recording a release is.
    state.db.write_keyed(&[Lock::Stack(&release.stack)], |tx| {
            if let Some(existing) = db::ledger::release_digest(tx, &release.stack, &release.version)? {
                if existing != release.digest && !release.prerelease {
                    return Err(Error::new(
                        Code::Conflict,
                        format!(
                            "`{}@{}` is already recorded with digest `{existing}`; stable versions never change",
                            release.stack, release.version
                        ),
                    ));
                }
            }
            db::ledger::upsert_release(tx, &release)?;
            db::ledger::set_release_modules(tx, &release)?;
            if let crate::auth::Principal::Token { id, .. } = &ctx.principal {
                db::ledger::note_pusher(tx, &release, id)?;
            }
            Ok(())
        })?;
    Ok((StatusCode::CREATED, Json(release)))
}
