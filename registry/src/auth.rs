//! Bearer tokens and roles.
//!
//! A token is `spr_` and 43 characters of URL-safe base64 (32 random bytes). The
//! database keeps only its SHA-256; a presented token is hashed, looked up by hash,
//! and the stored hash compared in constant time. Clients may present a token as
//! `Authorization: Bearer <token>` or as the password of Basic auth (any user name),
//! which is what `skopeo --creds` and `oras -u/-p` send. A request without a token
//! that needs one gets `401` with a `WWW-Authenticate: Bearer realm=…/v2/token`
//! challenge; the token endpoint hands the presented token back, so docker-style
//! clients that follow the challenge end up sending it as a bearer token.

use axum::http::{header, HeaderMap};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;

use crate::db::{self, Db};
use crate::error::{Code, Error};
use crate::timestamp::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Push and pull.
    Publisher,
    /// Pull.
    Reader,
    /// Read the ledger.
    Support,
    /// Pull, and report deployments for its own customer id.
    Customer,
    /// Everything.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Publisher => "publisher",
            Role::Reader => "reader",
            Role::Support => "support",
            Role::Customer => "customer",
            Role::Admin => "admin",
        }
    }

    pub const ALL: [Role; 5] = [
        Role::Publisher,
        Role::Reader,
        Role::Support,
        Role::Customer,
        Role::Admin,
    ];
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| format!("`{text}` is not a role"))
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is asking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    Anonymous,
    Token {
        id: String,
        role: Role,
        customer: Option<String>,
    },
}

/// What is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action<'a> {
    Pull(&'a str),
    Push(&'a str),
    Delete(&'a str),
    /// The `/v2/` check and the catalog: any valid token.
    Base,
    LedgerRead,
    /// Read what one customer runs.
    CustomerRead(&'a str),
    /// Report a deployment for a customer.
    Report(&'a str),
    Admin,
}

impl Principal {
    pub fn role(&self) -> Option<Role> {
        match self {
            Principal::Anonymous => None,
            Principal::Token { role, .. } => Some(*role),
        }
    }

    fn allows(&self, action: Action<'_>, anonymous_pull: bool) -> bool {
        let Principal::Token { role, customer, .. } = self else {
            return anonymous_pull && matches!(action, Action::Pull(_) | Action::Base);
        };
        let own = |id: &str| customer.as_deref() == Some(id);
        match (role, action) {
            (Role::Admin, _) => true,
            (_, Action::Base) => true,
            (Role::Publisher, Action::Pull(_) | Action::Push(_) | Action::Delete(_)) => true,
            (Role::Reader, Action::Pull(_)) => true,
            (Role::Customer, Action::Pull(_)) => true,
            (Role::Customer, Action::Report(id) | Action::CustomerRead(id)) => own(id),
            (Role::Support, Action::LedgerRead | Action::CustomerRead(_)) => true,
            _ => false,
        }
    }
}

/// A fresh token and the hash to store.
pub fn new_token() -> (String, Vec<u8>, String) {
    let mut bytes = [0u8; 32];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    let token = format!(
        "spr_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = hash_token(&token);
    let id = hex::encode(&hash[..6]);
    (token, hash, id)
}

pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The token in an `Authorization` header, if any: bearer, or a Basic password.
pub fn presented_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    let rest = rest.trim();
    if scheme.eq_ignore_ascii_case("bearer") {
        Some(rest.to_string())
    } else if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(rest)
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (_, password) = decoded.split_once(':')?;
        Some(password.to_string())
    } else {
        None
    }
}

/// Resolves the request's credentials. A token that is presented but unknown is an
/// error, never anonymous. `note_use` gets a valid token's id when its last-used
/// time is due to be written (at most every [`db::tokens::LAST_USED_SECS`]).
pub fn authenticate(
    db: &Db,
    headers: &HeaderMap,
    note_use: impl FnOnce(&str),
) -> Result<Principal, Error> {
    let Some(token) = presented_token(headers).filter(|t| !t.is_empty()) else {
        return Ok(Principal::Anonymous);
    };
    authenticate_hash(db, &hash_token(&token), note_use)
}

/// Resolves a token known by its hash (a support page's session keeps only that):
/// refused as soon as the token is revoked or expires.
pub fn authenticate_hash(
    db: &Db,
    hash: &[u8],
    note_use: impl FnOnce(&str),
) -> Result<Principal, Error> {
    let row = db.read_any(|c| db::tokens::by_hash(c, hash))?;
    principal_of(row, hash, note_use)
}

/// The principal of the token row found by `hash` (`None`: no token has it), or why
/// there is none; a use is noted when one is due.
pub fn principal_of(
    row: Option<db::tokens::TokenRow>,
    hash: &[u8],
    note_use: impl FnOnce(&str),
) -> Result<Principal, Error> {
    match row {
        Some(row) if bool::from(row.hash.ct_eq(hash)) => {
            usable(&row)?;
            if use_is_due(row.last_used.as_ref()) {
                note_use(&row.id);
            }
            Ok(principal(row))
        }
        _ => Err(Error::new(Code::Unauthorized, "the token is not valid")),
    }
}

/// Refuses a revoked or expired token, saying which (never showing the token).
fn usable(row: &db::tokens::TokenRow) -> Result<(), Error> {
    if row.revoked_at.is_some() {
        return Err(Error::new(
            Code::Unauthorized,
            format!("token `{}` was revoked", row.id),
        ));
    }
    let Some(expires_at) = &row.expires_at else {
        return Ok(());
    };
    if expires_at.at() <= time::OffsetDateTime::now_utc() {
        return Err(Error::new(
            Code::Unauthorized,
            format!("token `{}` expired at `{expires_at}`", row.id),
        ));
    }
    Ok(())
}

fn use_is_due(last_used: Option<&Timestamp>) -> bool {
    let Some(last_used) = last_used else {
        return true;
    };
    time::OffsetDateTime::now_utc() - last_used.at()
        >= time::Duration::seconds(db::tokens::LAST_USED_SECS)
}

fn principal(row: db::tokens::TokenRow) -> Principal {
    Principal::Token {
        id: row.id,
        role: row.role,
        customer: row.customer,
    }
}

/// The scope string of a challenge, docker style.
pub fn scope(action: Action<'_>) -> Option<String> {
    match action {
        Action::Pull(repo) => Some(format!("repository:{repo}:pull")),
        Action::Push(repo) => Some(format!("repository:{repo}:pull,push")),
        Action::Delete(repo) => Some(format!("repository:{repo}:delete")),
        _ => None,
    }
}

/// `Ok` when `principal` may do `action`; else `401` with a challenge (no or a bad
/// token) or `403 DENIED` (a valid token without the right).
pub fn authorize(
    principal: &Principal,
    action: Action<'_>,
    anonymous_pull: bool,
    realm: &str,
) -> Result<(), Error> {
    if principal.allows(action, anonymous_pull) {
        return Ok(());
    }
    match principal {
        Principal::Anonymous => Err(unauthorized(action, realm)),
        Principal::Token { .. } => Err(Error::new(
            Code::Denied,
            "this token does not allow the request",
        )),
    }
}

pub fn unauthorized(action: Action<'_>, realm: &str) -> Error {
    let mut challenge = format!("Bearer realm=\"{realm}\",service=\"stackpack-registry\"");
    if let Some(scope) = scope(action) {
        challenge.push_str(&format!(",scope=\"{scope}\""));
    }
    Error::new(Code::Unauthorized, "authentication required")
        .with_header(header::WWW_AUTHENTICATE, &challenge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_hashed() {
        let (a, hash, id) = new_token();
        let (b, _, _) = new_token();
        assert_ne!(a, b);
        assert!(a.starts_with("spr_") && a.len() == 47);
        assert_eq!(hash, hash_token(&a));
        assert_eq!(id.len(), 12);
    }

    #[test]
    fn basic_and_bearer_are_both_read() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(presented_token(&headers).as_deref(), Some("abc"));
        let basic = base64::engine::general_purpose::STANDARD.encode("user:s3cret");
        headers.insert(
            header::AUTHORIZATION,
            format!("Basic {basic}").parse().unwrap(),
        );
        assert_eq!(presented_token(&headers).as_deref(), Some("s3cret"));
    }

    #[test]
    fn customers_report_only_for_themselves() {
        let customer = Principal::Token {
            id: "x".into(),
            role: Role::Customer,
            customer: Some("globex".into()),
        };
        assert!(customer.allows(Action::Report("globex"), false));
        assert!(!customer.allows(Action::Report("initech"), false));
        assert!(customer.allows(Action::Pull("a"), false));
        assert!(!customer.allows(Action::Push("a"), false));
        assert!(!Principal::Anonymous.allows(Action::Pull("a"), false));
        assert!(Principal::Anonymous.allows(Action::Pull("a"), true));
    }
}
