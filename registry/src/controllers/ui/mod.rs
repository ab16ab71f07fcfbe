//! The support pages under `/ui`: the fleet matrix with its filters, one page per
//! customer, one per stack version and one per release version, rendered on the server from the same
//! queries as the ledger API. Reading only: after signing in every page is a `GET`
//! that changes nothing, so there is nothing for a forged cross-site request to do,
//! and the `SameSite=Strict` cookie is not even sent with one.

pub mod customer;
pub mod customers;
pub mod fleet;
pub mod forecast;
pub mod html;
pub mod login;
pub mod release;
pub mod rollouts;
pub mod session;
pub mod stack;
pub mod stack_version;
pub mod support_bundle;
pub mod why;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use crate::auth::{self, Action, Principal};
use crate::error::{Code, Error};
use crate::state::SharedState;

/// Who is looking at a page: a support or admin token behind a live session.
pub struct Viewer {
    pub principal: Principal,
}

/// Why a page cannot be shown to this request.
pub enum Refusal {
    /// No live session: sign in first.
    SignIn,
    /// The session's token stopped working (revoked, expired) or may not read.
    Refused(String),
    /// The session could not be looked up (the database failed): the cookie stays,
    /// a retry may well work.
    Failed(Error),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::SignIn => Redirect::to("/ui/login").into_response(),
            Refusal::Failed(error) => error.into_response(),
            Refusal::Refused(message) => {
                let mut response = login::form(StatusCode::UNAUTHORIZED, Some(&message));
                response.headers_mut().insert(
                    header::SET_COOKIE,
                    session::clear_cookie()
                        .parse()
                        .expect("a valid header value"),
                );
                response
            }
        }
    }
}

/// The viewer behind the request's session cookie.
pub fn viewer(state: &SharedState, headers: &HeaderMap) -> Result<Viewer, Refusal> {
    let id = session::cookie(headers).ok_or(Refusal::SignIn)?;
    let hash = session::token_hash(&state.db, &id)
        .map_err(Refusal::Failed)?
        .ok_or(Refusal::SignIn)?;
    let principal = match auth::authenticate_hash(&state.db, &hash, |_| {}) {
        Ok(principal) => principal,
        Err(e) => {
            // Its token no longer works; if the close fails, the check above
            // refuses the session again next time anyway.
            let _ = session::close(&state.db, &id);
            return Err(Refusal::Refused(format!(
                "{}; sign in with a current token",
                e.message
            )));
        }
    };
    may_read(&principal).map_err(Refusal::Refused)?;
    Ok(Viewer { principal })
}

/// Only tokens that read the whole ledger may use the support pages.
pub fn may_read(principal: &Principal) -> Result<(), String> {
    auth::authorize(principal, Action::LedgerRead, false, "").map_err(|_| {
        let role = principal.role().map_or("anonymous", |r| r.as_str());
        format!("a `{role}` token cannot open the support pages; they need a `support` or `admin` token")
    })
}

/// A ledger error as a page.
pub fn failed(e: Error) -> Response {
    let status = match e.code {
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::BadRequest => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    html::error_page(status, &e.message, true)
}

/// `GET /`: the support pages are the registry's only page.
pub async fn root() -> Redirect {
    Redirect::to("/ui")
}
