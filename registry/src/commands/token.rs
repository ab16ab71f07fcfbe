//! `stackpack-registry token create | list | revoke`.

use stackpack_registry::auth::Role;
use stackpack_registry::db::locks::Lock;
use stackpack_registry::names::{self, MAX_TOKEN_NAME_CHARS};
use stackpack_registry::{age, db};

use crate::cli::{DataJsonArgs, TokenCreateArgs, TokenRevokeArgs};
use crate::commands::{
    open_registry, print_json, refused_at, status, table, Error, Result, AGE_HINT,
};

fn check_customer(role: Role, customer: Option<&str>) -> Result<()> {
    match (role, customer) {
        (Role::Customer, None) => Err(Error::usage(
            "a `customer` token needs the customer it reports for",
        )
        .hint("add `--customer <id>`")),
        (Role::Customer, Some(id)) => {
            stackpack_schema::reference::validate_name(id).map_err(Error::usage_by)
        }
        (_, Some(_)) => Err(Error::usage(format!(
            "`--customer` only applies to `customer` tokens, not `{}`",
            role.as_str()
        ))
        .hint("drop `--customer`, or use `--role customer`")),
        _ => Ok(()),
    }
}

fn expiry(expires_in: Option<&str>) -> Result<Option<String>> {
    let Some(text) = expires_in else {
        return Ok(None);
    };
    match age::parse_secs(text) {
        Some(secs) => Ok(Some(age::from_now(secs))),
        None => Err(Error::usage(age::invalid("--expires-in", text)).hint(AGE_HINT)),
    }
}

pub fn create(args: &TokenCreateArgs) -> Result<()> {
    let customer = args.customer.as_deref();
    check_customer(args.role, customer)?;
    let name = args.name.as_deref();
    if let Some(name) = name {
        names::validate_token_name(name).map_err(|e| {
            Error::usage_by(e).hint(format!(
                "name it with printable characters, at most {MAX_TOKEN_NAME_CHARS}: `--name ci`"
            ))
        })?;
    }
    let expires_at = expiry(args.expires_in.as_deref())?;
    let state = open_registry(&args.registry)?;
    let (token, hash, id) = stackpack_registry::auth::new_token();
    let now = db::now_rfc3339();
    let new = db::tokens::NewToken {
        role: args.role,
        name,
        customer,
        created: &now,
        expires_at: expires_at.as_deref(),
    };
    // Held: the name (taken once) or the new id, and the customer it may add.
    let mut locks = vec![Lock::Token(name.unwrap_or(&id))];
    locks.extend(customer.map(Lock::Customer));
    let created = state
        .db
        .write_keyed(&locks, |tx| {
            if let Some(name) = name {
                if db::tokens::name_taken(tx, name)? {
                    return Ok(false);
                }
            }
            db::tokens::insert(tx, &id, &hash, &new)?;
            if let Some(customer) = customer {
                db::ledger::upsert_customer(tx, customer, None, &now)?;
            }
            Ok(true)
        })
        .map_err(refused_at(&state.config))?;
    if !created {
        return Err(Error::refused(format!(
            "a token named `{}` already exists in this registry",
            name.unwrap_or_default()
        ))
        .hint("pick another `--name`; `stackpack-registry token list` shows the names taken"));
    }
    let label = name.map(|n| format!(" `{n}`")).unwrap_or_default();
    if args.json {
        print_json(
            &serde_json::json!({"id": id, "name": name, "role": args.role.as_str(),
            "customer": customer, "expiresAt": expires_at, "token": token}),
        );
    } else {
        println!("{token}");
        status(&format!(
            "created {} token{label} (id `{id}`){}{}; it is shown only this once",
            args.role.as_str(),
            customer
                .map(|c| format!(" for customer `{c}`"))
                .unwrap_or_default(),
            expires_at
                .as_deref()
                .map(|at| format!(", expiring at `{at}`"))
                .unwrap_or_default()
        ));
    }
    Ok(())
}

/// `active`, `revoked` or `expired`, as of now.
fn token_status(token: &db::tokens::TokenInfo, now: time::OffsetDateTime) -> &'static str {
    if token.revoked_at.is_some() {
        return "revoked";
    }
    match &token.expires_at {
        Some(expires_at) if expires_at.at() > now => "active",
        Some(_) => "expired",
        None => "active",
    }
}

pub fn list(args: &DataJsonArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let tokens = state
        .db
        .scan_any(|c| db::tokens::list(c))
        .map_err(refused_at(&state.config))?;
    let now = time::OffsetDateTime::now_utc();
    if args.json {
        let rows: Vec<serde_json::Value> = tokens
            .iter()
            .map(|t| {
                let mut row = serde_json::to_value(t).expect("a token row serialises");
                row["status"] = token_status(t, now).into();
                row
            })
            .collect();
        print_json(&rows);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tokens
        .iter()
        .map(|t| {
            let dash = || "-".to_string();
            vec![
                t.id.clone(),
                t.name.clone().unwrap_or_else(dash),
                t.role.to_string(),
                t.customer.clone().unwrap_or_else(dash),
                t.created.to_string(),
                t.expires_at
                    .as_ref()
                    .map_or_else(|| "never".into(), ToString::to_string),
                t.last_used
                    .as_ref()
                    .map_or_else(|| "never".into(), ToString::to_string),
                token_status(t, now).to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "ID",
                "NAME",
                "ROLE",
                "CUSTOMER",
                "CREATED",
                "EXPIRES",
                "LAST USED",
                "STATUS",
            ],
            &rows,
        )
    );
    if rows.is_empty() {
        status("no tokens yet; create one with `stackpack-registry token create`");
    }
    Ok(())
}

pub fn revoke(args: &TokenRevokeArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let now = db::now_rfc3339();
    let Some(revoked_at) = state
        .db
        .write_keyed(&[Lock::Token(&args.id)], |tx| {
            Ok(db::tokens::revoke(tx, &args.id, &now)?)
        })
        .map_err(refused_at(&state.config))?
    else {
        return Err(Error::refused(format!("no token has the id `{}`", args.id))
            .hint("run `stackpack-registry token list` to see the ids"));
    };
    if args.json {
        print_json(&serde_json::json!({"id": args.id, "revokedAt": revoked_at}));
    } else {
        status(&format!(
            "revoked token `{}` (at `{revoked_at}`); it is refused from now on",
            args.id
        ));
    }
    Ok(())
}
