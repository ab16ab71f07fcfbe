//! Signing in and out: `GET /ui/login` shows the form, `POST /ui/login` trades a
//! support token for a session cookie, `GET /ui/logout` ends the session.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::html::{html, page, respond};
use super::{may_read, session};
use crate::auth;
use crate::controllers::read_limited;
use crate::state::SharedState;

/// The sign-in form, with an error above it if there is one.
pub fn form(status: StatusCode, error: Option<&str>) -> Response {
    let body = html! {
        form.login method="post" action="/ui/login" {
            h1 { "Sign in" }
            @if let Some(error) = error {
                p.error role="alert" { (error) }
            }
            label for="token" { "Support token" }
            input id="token" name="token" type="password" autocomplete="off" required;
            button type="submit" { "Sign in" }
            p.muted {
                "An admin creates one with "
                code { "stackpack-registry token create --role support" } "."
            }
        }
    };
    respond(status, page("Sign in", false, body))
}

pub async fn show() -> Response {
    form(StatusCode::OK, None)
}

/// One `application/x-www-form-urlencoded` value.
fn form_value(body: &[u8], name: &str) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let raw = text
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)?
        .1;
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A form posted from another site: its `Origin` names another host.
fn cross_site(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    origin_host != host
}

pub async fn sign_in(State(state): State<SharedState>, headers: HeaderMap, body: Body) -> Response {
    if cross_site(&headers) {
        return form(
            StatusCode::FORBIDDEN,
            Some("this form was sent from another site; open the support page directly"),
        );
    }
    let body = match read_limited(body, &state.config, "the sign-in form").await {
        Ok(body) => body,
        Err(e) => return form(StatusCode::BAD_REQUEST, Some(&e.message)),
    };
    let Some(token) = form_value(&body, "token").filter(|t| !t.trim().is_empty()) else {
        return form(StatusCode::BAD_REQUEST, Some("enter a support token"));
    };
    let hash = auth::hash_token(token.trim());
    let principal = match auth::authenticate_hash(&state.db, &hash, |_| {}) {
        Ok(principal) => principal,
        Err(e) => return form(StatusCode::UNAUTHORIZED, Some(&e.message)),
    };
    if let Err(message) = may_read(&principal) {
        return form(StatusCode::FORBIDDEN, Some(&message));
    }
    let id = match session::open(&state.db, &hash) {
        Ok(id) => id,
        Err(e) => return e.into_response(),
    };
    let secure = state
        .config
        .public_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"));
    (
        [(header::SET_COOKIE, session::set_cookie(&id, secure))],
        Redirect::to("/ui"),
    )
        .into_response()
}

pub async fn sign_out(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    if let Some(id) = session::cookie(&headers) {
        if let Err(e) = session::close(&state.db, &id) {
            return e.into_response();
        }
    }
    (
        [(header::SET_COOKIE, session::clear_cookie())],
        Redirect::to("/ui/login"),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_values_are_decoded() {
        let body = b"other=1&token=spr_a%2Bb+c";
        assert_eq!(form_value(body, "token").as_deref(), Some("spr_a+b c"));
        assert_eq!(form_value(body, "missing"), None);
        assert_eq!(form_value(b"token=%zz", "token"), None);
        assert_eq!(form_value(b"token=%4", "token"), None);
    }
}
