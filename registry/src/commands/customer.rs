//! `stackpack-registry customer add | list | history | key add | key revoke`.

use stackpack_registry::api::Deployment;
use stackpack_registry::controllers::ledger::customers::{customers_page, history_page};
use stackpack_registry::controllers::ledger::fleet::Flow;
use stackpack_registry::controllers::ledger::{Paging, MAX_LIMIT};
use stackpack_registry::{age, db};

use base64::Engine as _;

use crate::cli::{
    CustomerAddArgs, CustomerHistoryArgs, CustomerKeyAddArgs, CustomerKeyRevokeArgs,
    CustomerListArgs,
};
use crate::commands::{open_existing, print_table, JsonArray, Refused, UsageError};

fn check_name(what: &str, value: &str) -> Result<(), UsageError> {
    stackpack_schema::reference::validate_name(value).map_err(|e| {
        UsageError(
            format!("{what} `{value}`: {e}"),
            Some("use lowercase letters, digits, `.`, `_` and `-`".into()),
        )
    })
}

pub fn add(args: &CustomerAddArgs) -> anyhow::Result<()> {
    check_name("customer", &args.id)?;
    if let Some(environment) = &args.environment {
        check_name("environment", environment)?;
    }
    let state = open_existing(&args.data)?;
    let now = db::now_rfc3339();
    let customer = state.db.write(|tx| {
        let (name, environment) = (args.name.as_deref(), args.environment.as_deref());
        db::ledger::register_customer(tx, &args.id, name, environment, &now)?;
        Ok(db::ledger::customer(tx, &args.id)?)
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&customer)?);
    } else {
        eprintln!(
            "registered customer `{}`{}",
            args.id,
            customer
                .and_then(|c| c.environment)
                .map(|e| format!(" in `{e}`"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

pub fn list(args: &CustomerListArgs) -> anyhow::Result<()> {
    let Some(age_secs) = age::parse_secs(&args.stale_after) else {
        return Err(UsageError(
            age::invalid("--stale-after", &args.stale_after),
            Some("give a number and a unit: `s`, `m`, `h`, `d` or `w`".into()),
        )
        .into());
    };
    let state = open_existing(&args.data)?;
    let mut paging = Paging {
        after: None,
        limit: MAX_LIMIT,
    };
    let mut json = if args.json {
        Some(JsonArray::start()?)
    } else {
        None
    };
    let mut customers = Vec::new();
    loop {
        let (page, next) = customers_page(&state, age_secs, args.silent, &paging)?;
        match &mut json {
            Some(out) => out.push(&page)?,
            None => customers.extend(page),
        }
        match next {
            Some(next) => paging.after = Some(next),
            None => break,
        }
    }
    if let Some(out) = json {
        return out.finish();
    }
    let dash = || "-".to_string();
    let rows: Vec<Vec<String>> = customers
        .iter()
        .map(|c| {
            vec![
                c.id.clone(),
                c.environment.clone().unwrap_or_else(dash),
                c.last_seen.clone().unwrap_or_else(|| "never".into()),
                stale_word(c.stale).to_string(),
                c.name.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print_table(
        &["CUSTOMER", "ENVIRONMENT", "LAST SEEN", "STALE", "NAME"],
        &rows,
    );
    if rows.is_empty() {
        eprintln!("no customers; register one with `stackpack-registry customer add`");
    }
    Ok(())
}

fn local_history(data: &std::path::Path, id: &str) -> anyhow::Result<Vec<Deployment>> {
    let state = open_existing(data)?;
    let mut paging = Paging {
        after: None,
        limit: MAX_LIMIT,
    };
    let mut receipts = Vec::new();
    loop {
        let Some((page, next)) = history_page(&state, id, &paging)? else {
            return Err(unknown_customer(id));
        };
        receipts.extend(page);
        match next {
            Some(next) => paging.after = Some(next),
            None => return Ok(receipts),
        }
    }
}

pub fn history(args: &CustomerHistoryArgs) -> anyhow::Result<()> {
    check_name("customer", &args.id)?;
    let receipts = match (&args.source.data, &args.source.url) {
        (Some(data), _) => local_history(data, &args.id)?,
        (None, Some(url)) => {
            let mut receipts = Vec::new();
            crate::commands::remote::each_page(
                url,
                args.source.token.as_deref(),
                &format!("/api/v1/customers/{}/history?limit={MAX_LIMIT}", args.id),
                "a customer's history",
                |page: Vec<Deployment>| {
                    receipts.extend(page);
                    Ok(Flow::Go)
                },
            )?;
            receipts
        }
        (None, None) => unreachable!("clap requires `--data` or `--url`"),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&receipts)?);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = receipts
        .iter()
        .map(|d| {
            vec![
                d.finished_at.clone(),
                d.stack.clone(),
                d.version.clone(),
                d.kind.to_string(),
                d.outcome.to_string(),
                d.receipt_id.clone(),
            ]
        })
        .collect();
    print_table(
        &["FINISHED", "STACK", "VERSION", "KIND", "OUTCOME", "RECEIPT"],
        &rows,
    );
    if rows.is_empty() {
        eprintln!("customer `{}` has reported nothing yet", args.id);
    }
    Ok(())
}

fn unknown_customer(id: &str) -> anyhow::Error {
    Refused(
        format!("customer `{id}` is not known"),
        "run `stackpack-registry customer list` to see the ids".into(),
    )
    .into()
}

pub fn add_key(args: &CustomerKeyAddArgs) -> anyhow::Result<()> {
    let path = args.public_key.display();
    let pem = std::fs::read_to_string(&args.public_key)
        .map_err(|e| UsageError(format!("cannot read `{path}`: {e}"), None))?;
    let key = stackpack_schema::signature::PublicKey::from_pem(&pem).map_err(|e| {
        UsageError(
            format!("`{path}` is not a public key: {e}"),
            Some("give the runner's `.pub` file (SPKI PEM), never its private key".into()),
        )
    })?;
    let key_id = key.key_id();
    let der = base64::engine::general_purpose::STANDARD.encode(key.to_der());
    let state = open_existing(&args.data)?;
    let now = db::now_rfc3339();
    let known = state.db.write(|tx| {
        if db::ledger::customer(tx, &args.id)?.is_none() {
            return Ok(false);
        }
        db::ledger::add_installation_key(tx, &args.id, &key_id, &der, &now)?;
        Ok(true)
    })?;
    if !known {
        return Err(unknown_customer(&args.id));
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({"customer": args.id, "keyId": key_id})
        );
    } else {
        eprintln!("customer `{}` now trusts key `{key_id}`", args.id);
    }
    Ok(())
}

pub fn revoke_key(args: &CustomerKeyRevokeArgs) -> anyhow::Result<()> {
    let state = open_existing(&args.data)?;
    let now = db::now_rfc3339();
    let revoked = state.db.write(|tx| {
        Ok(db::ledger::revoke_installation_key(
            tx,
            &args.id,
            &args.key_id,
            &now,
        )?)
    })?;
    if !revoked {
        return Err(Refused(
            format!("customer `{}` has no key `{}`", args.id, args.key_id),
            "the key id is in the customer's receipts (`customer history --json`)".into(),
        )
        .into());
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({"customer": args.id, "keyId": args.key_id, "revokedAt": now})
        );
    } else {
        eprintln!(
            "revoked key `{}` of customer `{}`; receipts signed with it are refused",
            args.key_id, args.id
        );
    }
    Ok(())
}

fn stale_word(stale: Option<bool>) -> &'static str {
    if stale == Some(true) {
        "stale"
    } else {
        ""
    }
}
