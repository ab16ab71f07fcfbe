//! The names a ledger question takes (a customer, a stack, a release) checked
//! against what the registry has, at the entry of `fleet`, `customer show` and
//! `release show`, the same from `--data`, over `--url` and on the API: a name it
//! does not have is `NOT_FOUND` with the nearest name and the names it has
//! ([`crate::names::unknown`]), never an empty answer.

use crate::db::sql::{Sql, SqlError};
use crate::error::Result;
use crate::state::AppState;

/// What a name is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Registered, or known from its receipts.
    Customer,
    /// With a bundle pushed here, or in a customer's fleet.
    Stack,
    /// With an index pushed here, or named by a customer's receipts.
    Release,
}

impl Kind {
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::Customer => (
                "customer",
                "customers",
                "`stackpack-registry customer list` shows them all",
            ),
            Kind::Stack => (
                "stack",
                "stacks",
                "a stack is known once `stackpack publish` pushed a bundle of it here",
            ),
            Kind::Release => (
                "release",
                "releases",
                "a release is known once `stackpack publish` pushed its index here",
            ),
        }
    }

    /// Every name of this kind, as column `name`.
    fn sql(self) -> &'static str {
        match self {
            Kind::Customer => "SELECT id AS name FROM customers",
            Kind::Stack => "SELECT stack AS name FROM releases UNION SELECT stack FROM fleet_cells",
            Kind::Release => {
                "SELECT name FROM release_indexes UNION
                 SELECT release_name FROM receipts WHERE release_name IS NOT NULL"
            }
        }
    }
}

/// Every name of `kind` the registry has, sorted by bytes.
fn names<C: Sql<Error = SqlError> + ?Sized>(conn: &C, kind: Kind) -> Result<Vec<String>, SqlError> {
    let rows = conn.query(kind.sql(), &[])?;
    let mut names: Vec<String> = rows
        .iter()
        .map(|r| r.get("name"))
        .collect::<Result<_, _>>()?;
    names.sort();
    names.dedup();
    Ok(names)
}

/// Refuses each `(kind, name)` the registry does not have. `may_list`: whether the
/// asker may see every name (a customer's own token is told only that its name is
/// unknown, never the other customers).
pub fn check(state: &AppState, asked: &[(Kind, Option<&str>)], may_list: bool) -> Result<()> {
    for (kind, name) in asked {
        let Some(name) = name else { continue };
        let known = state.db.read_any(|c| names(c, *kind))?;
        if !known.iter().any(|k| k == name) {
            return Err(refusal(*kind, name, &known, may_list));
        }
    }
    Ok(())
}

/// The refusal of `name`, which a question found the registry does not have: with
/// the nearest name and the names it has ([`check`]'s words).
pub fn unknown(state: &AppState, kind: Kind, name: &str, may_list: bool) -> crate::error::Error {
    match state.db.read_any(|c| names(c, kind)) {
        Ok(known) => refusal(kind, name, &known, may_list),
        Err(error) => error,
    }
}

fn refusal(kind: Kind, name: &str, known: &[String], may_list: bool) -> crate::error::Error {
    let (what, plural, otherwise) = kind.words();
    crate::names::unknown(what, plural, name, may_list.then_some(known), otherwise)
}
