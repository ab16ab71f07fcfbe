//! `stackpack-registry token create | list | revoke`.

use stackpack_registry::auth::Role;
use stackpack_registry::{age, db};

use crate::cli::{DataJsonArgs, TokenCreateArgs, TokenRevokeArgs};
use crate::commands::{open_existing, print_table, Refused, UsageError};

fn check_customer(role: Role, customer: Option<&str>) -> Result<(), UsageError> {
    match (role, customer) {
        (Role::Customer, None) => Err(UsageError(
            "a `customer` token needs the customer it reports for".into(),
            Some("add `--customer <id>`".into()),
        )),
        (Role::Customer, Some(id)) => stackpack_schema::reference::validate_name(id)
            .map_err(|e| UsageError(e.to_string(), None)),
        (_, Some(_)) => Err(UsageError(
            format!(
                "`--customer` only applies to `customer` tokens, not `{}`",
                role.as_str()
            ),
            Some("drop `--customer`, or use `--role customer`".into()),
        )),
        _ => Ok(()),
    }
}

fn expiry(expires_in: Option<&str>) -> Result<Option<String>, UsageError> {
    let Some(text) = expires_in else {
        return Ok(None);
    };
    match age::parse_secs(text) {
        Some(secs) => Ok(Some(age::from_now(secs))),
        None => Err(UsageError(
            age::invalid("--expires-in", text),
            Some("give a number and a unit: `s`, `m`, `h`, `d` or `w`".into()),
        )),
    }
}

pub fn create(args: &TokenCreateArgs) -> anyhow::Result<()> {
    let customer = args.customer.as_deref();
    check_customer(args.role, customer)?;
    let expires_at = expiry(args.expires_in.as_deref())?;
    let state = open_existing(&args.data)?;
    let (token, hash, id) = stackpack_registry::auth::new_token();
    let now = db::now_rfc3339();
    state.db.write(|tx| {
        let expires = expires_at.as_deref();
        db::tokens::insert(tx, &id, &hash, args.role, customer, &now, expires)?;
        if let Some(customer) = customer {
            db::ledger::upsert_customer(tx, customer, None, &now)?;
        }
        Ok(())
    })?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({"id": id, "role": args.role.as_str(), "customer": customer,
                "expiresAt": expires_at, "token": token})
        );
    } else {
        println!("{token}");
        eprintln!(
            "created {} token `{id}`{}{}; it is shown only this once",
            args.role.as_str(),
            customer
                .map(|c| format!(" for customer `{c}`"))
                .unwrap_or_default(),
            expires_at
                .as_deref()
                .map(|at| format!(", expiring at `{at}`"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// `active`, `revoked` or `expired`, as of now.
fn status(token: &db::tokens::TokenInfo, now_ns: i64) -> &'static str {
    if token.revoked_at.is_some() {
        return "revoked";
    }
    match token.expires_at.as_deref().map(db::utc_time) {
        Some(Some((_, ns))) if ns > now_ns => "active",
        Some(_) => "expired",
        None => "active",
    }
}

pub fn list(args: &DataJsonArgs) -> anyhow::Result<()> {
    let state = open_existing(&args.data)?;
    let tokens = state.db.scan(db::tokens::list)?;
    let now_ns = db::utc_time(&db::now_rfc3339()).map_or(0, |(_, ns)| ns);
    if args.json {
        let rows: Vec<serde_json::Value> = tokens
            .iter()
            .map(|t| {
                let mut row = serde_json::to_value(t).expect("a token row serialises");
                row["status"] = status(t, now_ns).into();
                row
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = tokens
        .iter()
        .map(|t| {
            let dash = || "-".to_string();
            vec![
                t.id.clone(),
                t.role.to_string(),
                t.customer.clone().unwrap_or_else(dash),
                t.created.clone(),
                t.expires_at.clone().unwrap_or_else(|| "never".into()),
                t.last_used.clone().unwrap_or_else(|| "never".into()),
                status(t, now_ns).to_string(),
            ]
        })
        .collect();
    print_table(
        &[
            "ID",
            "ROLE",
            "CUSTOMER",
            "CREATED",
            "EXPIRES",
            "LAST USED",
            "STATUS",
        ],
        &rows,
    );
    if rows.is_empty() {
        eprintln!("no tokens yet; create one with `stackpack-registry token create`");
    }
    Ok(())
}

pub fn revoke(args: &TokenRevokeArgs) -> anyhow::Result<()> {
    let state = open_existing(&args.data)?;
    let now = db::now_rfc3339();
    let Some(revoked_at) = state
        .db
        .write(|tx| Ok(db::tokens::revoke(tx, &args.id, &now)?))?
    else {
        return Err(Refused(
            format!("no token has the id `{}`", args.id),
            "run `stackpack-registry token list` to see the ids".into(),
        )
        .into());
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({"id": args.id, "revokedAt": revoked_at})
        );
    } else {
        eprintln!(
            "revoked token `{}` (at `{revoked_at}`); it is refused from now on",
            args.id
        );
    }
    Ok(())
}
