//! `GET /v2/<name>/tags/list?n=<n>&last=<tag>`: tags in lexical order, with a
//! `Link: <…>; rel="next"` header when more follow.

use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::Action;
use crate::controllers::Ctx;
use crate::db;
use crate::error::{Code, Error, Result};

/// The `n` query parameter: absent, or a count up to 10,000.
pub fn page_size(n: Option<&str>) -> Result<Option<u64>> {
    match n {
        None | Some("") => Ok(None),
        Some(n) => n.parse::<u64>().map(|n| Some(n.min(10_000))).map_err(|_| {
            Error::new(Code::BadRequest, format!("`n={n}` is not a count"))
                .with_status(axum::http::StatusCode::BAD_REQUEST)
        }),
    }
}

pub async fn handle(ctx: Ctx, name: &str) -> Result<Response> {
    ctx.authorize(Action::Pull(name))?;
    let n = page_size(ctx.query("n"))?;
    let last = ctx.query("last");
    let (exists, mut tags) = ctx.state.db.read_any(|c| {
        Ok((
            db::manifests::repo_exists(c, name)?,
            db::manifests::list_tags(c, name, last, n.map(|n| n + 1))?,
        ))
    })?;
    if !exists {
        return Err(Error::new(
            Code::NameUnknown,
            format!("repository `{name}` is not known"),
        )
        .with_detail(serde_json::json!({ "name": name })));
    }
    let mut more = false;
    if let Some(n) = n {
        if tags.len() as u64 > n {
            tags.truncate(n as usize);
            more = true;
        }
    }
    let mut response = axum::Json(json!({ "name": name, "tags": tags })).into_response();
    if let (true, Some(n), Some(last)) = (more, n, tags.last()) {
        let link = format!("</v2/{name}/tags/list?n={n}&last={last}>; rel=\"next\"");
        if let Ok(value) = link.parse() {
            response.headers_mut().insert("Link", value);
        }
    }
    Ok(response)
}
