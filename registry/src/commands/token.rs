//! `stackpack-registry token create`.

use stackpack_registry::auth::Role;
use stackpack_registry::db;

use crate::cli::TokenCreateArgs;
use crate::commands::{open_existing, UsageError};

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

pub fn create(args: &TokenCreateArgs) -> anyhow::Result<()> {
    let customer = args.customer.as_deref();
    check_customer(args.role, customer)?;
    let state = open_existing(&args.data)?;
    let (token, hash, id) = stackpack_registry::auth::new_token();
    let now = db::now_rfc3339();
    state.db.write(|tx| {
        db::tokens::insert(tx, &id, &hash, args.role.as_str(), customer, &now)?;
        if let Some(customer) = customer {
            db::ledger::upsert_customer(tx, customer, None, &now)?;
        }
        Ok(())
    })?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({"id": id, "role": args.role.as_str(), "customer": customer, "token": token})
        );
    } else {
        println!("{token}");
        eprintln!(
            "created {} token `{id}`{}; it is shown only this once",
            args.role.as_str(),
            customer
                .map(|c| format!(" for customer `{c}`"))
                .unwrap_or_default()
        );
    }
    Ok(())
}
