//! The request context: who is asking (credentials resolved), the challenge realm,
//! headers and query, and the authorisation checks handlers make with them.

use std::collections::HashMap;

use axum::http::{header, HeaderMap, Uri};

use crate::auth::{self, Action, Principal};
use crate::error::{Code, Error, Result};
use crate::state::SharedState;

/// What a handler knows about its request besides the body.
pub struct Ctx {
    pub state: SharedState,
    pub principal: Principal,
    pub headers: HeaderMap,
    pub query: HashMap<String, String>,
    realm: String,
}

impl Ctx {
    /// Checks that the caller may do `action`.
    pub fn authorize(&self, action: Action<'_>) -> Result<()> {
        auth::authorize(
            &self.principal,
            action,
            self.state.config.anonymous_pull,
            &self.realm,
        )
    }

    /// Refuses, before any body is read, a caller whose role may never do `action`
    /// whatever the body names: no token gets `401` at once, not a parse error.
    pub fn authorize_role(&self, roles: &[auth::Role], action: Action<'_>) -> Result<()> {
        match self.principal.role() {
            Some(role) if roles.contains(&role) => Ok(()),
            _ => auth::authorize(&self.principal, action, false, &self.realm).and(Err(Error::new(
                Code::Denied,
                "this token does not allow the request",
            ))),
        }
    }

    pub fn query(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

fn parse_query(uri: &Uri) -> HashMap<String, String> {
    axum::extract::Query::<HashMap<String, String>>::try_from_uri(uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// Writes a token's last-used time in the background: the request never waits for
/// it, and a failure only leaves the time older.
fn note_use(state: &SharedState, id: &str) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (state, id) = (state.clone(), id.to_string());
    runtime.spawn_blocking(move || {
        let now = crate::db::now_rfc3339();
        if let Err(e) = state
            .db
            .write(|tx| Ok(crate::db::tokens::touch(tx, &id, &now)?))
        {
            tracing::debug!("could not record the use of token `{id}`: {}", e.message);
        }
    });
}

/// Builds the request context: credentials resolved, the challenge realm known.
pub fn context(state: &SharedState, headers: &HeaderMap, uri: &Uri) -> Result<Ctx> {
    let realm = match &state.config.public_url {
        Some(url) => format!("{}/v2/token", url.trim_end_matches('/')),
        None => {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("localhost");
            format!("http://{host}/v2/token")
        }
    };
    let principal = match auth::authenticate(&state.db, headers, |id| note_use(state, id)) {
        Ok(principal) => principal,
        Err(e) if e.code == Code::Unauthorized => {
            let mut refused = auth::unauthorized(Action::Base, &realm)
                .with_detail(serde_json::json!({"reason": e.message}));
            refused.message = format!(
                "{}; ask the registry's admin for a new token (`stackpack-registry token create`)",
                e.message
            );
            return Err(refused);
        }
        Err(e) => return Err(e),
    };
    Ok(Ctx {
        state: state.clone(),
        principal,
        headers: headers.clone(),
        query: parse_query(uri),
        realm,
    })
}
