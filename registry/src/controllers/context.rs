//! The request context: who is asking (credentials resolved), the challenge realm,
//! headers and query, and the authorisation checks handlers make with them.
//!
//! A handler takes [`Ctx`] as an extractor; one that reads a body takes
//! [`Authorised`] instead, which settles who is asking, and whether they may ever
//! send such a body, before a byte of it is read.

use std::collections::HashMap;
use std::marker::PhantomData;

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Uri};

use crate::auth::{self, Action, Principal, Role};
use crate::controllers::body::discard;
use crate::db::locks::Lock;
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
pub fn note_use(state: &SharedState, id: &str) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (state, id) = (state.clone(), id.to_string());
    runtime.spawn_blocking(move || {
        let now = crate::db::now_rfc3339();
        if let Err(e) = state.db.write_keyed(&[Lock::Token(&id)], |tx| {
            Ok(crate::db::tokens::touch(tx, &id, &now)?)
        }) {
            tracing::debug!("could not record the use of token `{id}`: {}", e.message);
        }
    });
}

/// Builds the request context: credentials resolved, the challenge realm known.
pub fn context(state: &SharedState, headers: &HeaderMap, uri: &Uri) -> Result<Ctx> {
    let authenticated = auth::authenticate(&state.db, headers, |id| note_use(state, id));
    context_of(state, headers, uri, authenticated)
}

/// The request context once its credentials are resolved (`authenticated`): a
/// refused token answers `401` with the challenge, as every request's does.
pub fn context_of(
    state: &SharedState,
    headers: &HeaderMap,
    uri: &Uri,
    authenticated: Result<auth::Principal>,
) -> Result<Ctx> {
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
    let principal = match authenticated {
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

impl FromRequestParts<SharedState> for Ctx {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &SharedState) -> Result<Ctx> {
        context(state, &parts.headers, &parts.uri)
    }
}

/// Who may send a body to an endpoint, checked before the body is read: whatever
/// the body will name, a caller without the right role is refused at once (no
/// token gets `401`, not a parse error about a body it should not have sent).
pub trait Permit {
    fn check(ctx: &Ctx) -> Result<()>;
}

/// Runners (and admins) reporting receipts.
pub struct MayReport;

impl Permit for MayReport {
    fn check(ctx: &Ctx) -> Result<()> {
        ctx.authorize_role(&[Role::Customer, Role::Admin], Action::Report(""))
    }
}

/// Publishers (and admins) recording releases.
pub struct MayPublish;

impl Permit for MayPublish {
    fn check(ctx: &Ctx) -> Result<()> {
        ctx.authorize_role(&[Role::Publisher, Role::Admin], Action::Push(""))
    }
}

/// Admins only.
pub struct MayAdminister;

impl Permit for MayAdminister {
    fn check(ctx: &Ctx) -> Result<()> {
        ctx.authorize(Action::Admin)
    }
}

/// The request context and the still unread body of a caller that passed `P`. A
/// refused caller's body is drained in the background, so a client still sending
/// reads the refusal instead of a broken pipe. Take it last among the extractors.
pub struct Authorised<P> {
    pub ctx: Ctx,
    pub body: Body,
    permit: PhantomData<P>,
}

impl<P: Permit> FromRequest<SharedState> for Authorised<P> {
    type Rejection = Error;

    async fn from_request(request: Request, state: &SharedState) -> Result<Self> {
        let (mut parts, body) = request.into_parts();
        let checked = Ctx::from_request_parts(&mut parts, state)
            .await
            .and_then(|ctx| P::check(&ctx).map(|()| ctx));
        match checked {
            Ok(ctx) => Ok(Authorised {
                ctx,
                body,
                permit: PhantomData,
            }),
            Err(refused) => {
                discard(body);
                Err(refused)
            }
        }
    }
}
