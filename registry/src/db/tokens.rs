//! API tokens. Only the SHA-256 of a token is stored; the token itself is shown once.
//! Written against [`Sql`], so the same functions run on SQLite and PostgreSQL.

use super::sql::{from_rows, Decode, FromRow, Row, Sql};
use crate::auth::Role;
use crate::timestamp::Timestamp;

pub struct TokenRow {
    pub id: String,
    pub hash: Vec<u8>,
    pub role: Role,
    pub customer: Option<String>,
    /// `None` never expires.
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    pub last_used: Option<Timestamp>,
}

/// `last_used` is written at most this often per token, so that using a token
/// costs no write on nearly every request.
pub const LAST_USED_SECS: i64 = 60;

/// What `token list` shows: never the token or its hash.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    pub id: String,
    /// What `token create --name` called it; `None` for a token made without one.
    pub name: Option<String>,
    pub role: Role,
    pub customer: Option<String>,
    pub created: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    /// When a request last presented it (to within a minute); `None` if never.
    pub last_used: Option<Timestamp>,
}

/// A token to store: everything but its id and hash is what `token create` was told.
pub struct NewToken<'a> {
    pub role: Role,
    pub name: Option<&'a str>,
    pub customer: Option<&'a str>,
    pub created: &'a str,
    pub expires_at: Option<&'a str>,
}

pub fn insert<C: Sql + ?Sized>(
    conn: &C,
    id: &str,
    hash: &[u8],
    new: &NewToken<'_>,
) -> Result<(), C::Error> {
    conn.execute(
        "INSERT INTO tokens (id, hash, role, name, customer, created, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            id.into(),
            hash.into(),
            new.role.as_str().into(),
            new.name.into(),
            new.customer.into(),
            new.created.into(),
            new.expires_at.into(),
        ],
    )?;
    Ok(())
}

/// Whether a token (revoked or not) already has this name: names are unique, so
/// `token list` never shows two tokens one could mistake for each other.
pub fn name_taken<C: Sql + ?Sized>(conn: &C, name: &str) -> Result<bool, C::Error> {
    // `COUNT` rather than `EXISTS`: an integer on both backends (PostgreSQL's
    // `EXISTS` is a boolean).
    let row = conn.query_one(
        "SELECT COUNT(*) AS n FROM tokens WHERE name = $1",
        &[name.into()],
    )?;
    Ok(row.get::<i64>("n")? > 0)
}

pub fn by_hash<C: Sql + ?Sized>(conn: &C, hash: &[u8]) -> Result<Option<TokenRow>, C::Error> {
    let row = conn.query_opt(
        "SELECT id, hash, role, customer, expires_at, revoked_at, last_used FROM tokens
         WHERE hash = $1",
        &[hash.into()],
    )?;
    Ok(row.as_ref().map(TokenRow::from_row).transpose()?)
}

impl FromRow for TokenRow {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(TokenRow {
            id: r.get("id")?,
            hash: r.get("hash")?,
            role: r.parsed("role")?,
            customer: r.get("customer")?,
            expires_at: r.get("expires_at")?,
            revoked_at: r.get("revoked_at")?,
            last_used: r.get("last_used")?,
        })
    }
}

impl FromRow for TokenInfo {
    fn from_row(r: &Row) -> Result<Self, Decode> {
        Ok(TokenInfo {
            id: r.get("id")?,
            name: r.get("name")?,
            role: r.parsed("role")?,
            customer: r.get("customer")?,
            created: r.get("created")?,
            expires_at: r.get("expires_at")?,
            revoked_at: r.get("revoked_at")?,
            last_used: r.get("last_used")?,
        })
    }
}

/// Every token, oldest first, without its hash.
pub fn list<C: Sql + ?Sized>(conn: &C) -> Result<Vec<TokenInfo>, C::Error> {
    let rows = conn.query(
        "SELECT id, role, customer, created, expires_at, revoked_at, last_used, name
         FROM tokens ORDER BY created, id",
        &[],
    )?;
    Ok(from_rows(&rows)?)
}

/// Marks a token revoked (keeping the first revocation time). Returns the token's
/// revocation time, or `None` when no token has that id.
pub fn revoke<C: Sql + ?Sized>(conn: &C, id: &str, now: &str) -> Result<Option<String>, C::Error> {
    conn.execute(
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
        &[id.into(), now.into()],
    )?;
    let row = conn.query_opt("SELECT revoked_at FROM tokens WHERE id = $1", &[id.into()])?;
    Ok(row.map(|r| r.get("revoked_at")).transpose()?)
}

pub fn count<C: Sql + ?Sized>(conn: &C) -> Result<u64, C::Error> {
    Ok(conn
        .query_one("SELECT COUNT(*) AS n FROM tokens", &[])?
        .get("n")?)
}

/// Records that token `id` was used at `now`.
pub fn touch<C: Sql + ?Sized>(conn: &C, id: &str, now: &str) -> Result<(), C::Error> {
    conn.execute(
        "UPDATE tokens SET last_used = $2 WHERE id = $1",
        &[id.into(), now.into()],
    )?;
    Ok(())
}
