//! `stackpack-registry customer add | list | history | key add | key revoke`
//! (`customer show` is in `customer_show.rs`).

use stackpack_registry::api::Deployment;
use stackpack_registry::controllers::ledger::customers::{customers_page, history_page};
use stackpack_registry::controllers::ledger::fleet::Flow;
use stackpack_registry::controllers::ledger::{Paging, MAX_LIMIT};
use stackpack_registry::db::locks::Lock;
use stackpack_registry::state::AppState;
use stackpack_registry::{age, db};
use stackpack_schema::receipt::Outcome;

use base64::Engine as _;

use crate::cli::{
    CustomerAddArgs, CustomerHistoryArgs, CustomerKeyAddArgs, CustomerKeyRevokeArgs,
    CustomerListArgs, RegistryArgs,
};
use crate::commands::{
    named_at, open_registry, print_json, refused_at, status, table, Error, JsonArray, Result,
    AGE_HINT,
};

pub fn check_name(what: &str, value: &str) -> Result<()> {
    stackpack_schema::reference::validate_name(value).map_err(|e| {
        Error::usage(format!("{what} `{value}`: {e}"))
            .caused_by(e)
            .hint("use lowercase letters, digits, `.`, `_` and `-`")
    })
}

pub fn add(args: &CustomerAddArgs) -> Result<()> {
    check_name("customer", &args.id)?;
    if let Some(environment) = &args.environment {
        check_name("environment", environment)?;
    }
    let state = open_registry(&args.registry)?;
    let now = db::now_rfc3339();
    let customer = state.db.write_keyed(&[Lock::Customer(&args.id)], |tx| {
        let (name, environment) = (args.name.as_deref(), args.environment.as_deref());
        db::ledger::register_customer(tx, &args.id, name, environment, &now)?;
        Ok(db::ledger::customer(tx, &args.id)?)
    });
    let customer = customer.map_err(refused_at(&state.config))?;
    if args.json {
        print_json(&customer);
    } else {
        status(&format!(
            "registered customer `{}`{}",
            args.id,
            customer
                .and_then(|c| c.environment)
                .map(|e| format!(" in `{e}`"))
                .unwrap_or_default()
        ));
    }
    Ok(())
}

pub fn list(args: &CustomerListArgs) -> Result<()> {
    let Some(age_secs) = age::parse_secs(&args.stale_after) else {
        return Err(Error::usage(age::invalid("--stale-after", &args.stale_after)).hint(AGE_HINT));
    };
    let state = open_registry(&args.registry)?;
    let mut paging = Paging {
        after: None,
        limit: MAX_LIMIT,
    };
    let mut json = args.json.then(JsonArray::start);
    let mut customers = Vec::new();
    loop {
        let (page, next) = customers_page(&state, age_secs, args.silent, &paging)
            .map_err(refused_at(&state.config))?;
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
                c.last_seen.as_ref().map_or_else(
                    || "never".into(),
                    |t| stackpack_terminal::words::time(t.as_str()),
                ),
                stale_word(c.stale).to_string(),
                c.name.clone().unwrap_or_default(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["CUSTOMER", "ENVIRONMENT", "LAST SEEN", "STALE", "NAME"],
            &rows,
        )
    );
    if rows.is_empty() {
        status("no customers; register one with `stackpack-registry customer add`");
    }
    Ok(())
}

fn local_history(registry: &RegistryArgs, id: &str) -> Result<Vec<Deployment>> {
    let state = open_registry(registry)?;
    let mut paging = Paging {
        after: None,
        limit: MAX_LIMIT,
    };
    let mut receipts = Vec::new();
    loop {
        let Some((page, next)) =
            history_page(&state, id, &paging).map_err(refused_at(&state.config))?
        else {
            return Err(unknown_customer(&state, id));
        };
        receipts.extend(page);
        match next {
            Some(next) => paging.after = Some(next),
            None => return Ok(receipts),
        }
    }
}

pub fn history(args: &CustomerHistoryArgs) -> Result<()> {
    check_name("customer", &args.id)?;
    let receipts = match (args.source.local(), &args.source.url) {
        (Some(registry), _) => local_history(registry, &args.id)?,
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
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    };
    if args.json {
        print_json(&receipts);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = receipts
        .iter()
        .map(|d| {
            vec![
                stackpack_terminal::words::time(d.finished_at.as_str()),
                d.stack.clone(),
                d.version.to_string(),
                d.kind.to_string(),
                d.outcome.to_string(),
                d.receipt_id.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["FINISHED", "STACK", "VERSION", "KIND", "OUTCOME", "RECEIPT"],
            &rows,
        )
    );
    for d in receipts.iter().filter(|d| d.outcome == Outcome::Failed) {
        println!(
            "{} {}: {} {} failed: {}",
            d.receipt_id,
            d.stack,
            d.kind,
            d.version,
            d.reason
                .as_deref()
                .unwrap_or(stackpack_registry::reason::NONE_GIVEN)
        );
    }
    if rows.is_empty() {
        status(&format!("customer `{}` has reported nothing yet", args.id));
    }
    Ok(())
}

/// A customer id the registry does not have: the command's mistake (exit 2), in
/// the API's words (the nearest id and the ids there are).
pub fn unknown_customer(state: &AppState, id: &str) -> Error {
    use stackpack_registry::controllers::ledger::known::{unknown, Kind};
    named_at(&state.config)(unknown(state, Kind::Customer, id, true))
}

pub fn add_key(args: &CustomerKeyAddArgs) -> Result<()> {
    let path = args.public_key.display();
    let pem = std::fs::read_to_string(&args.public_key)
        .map_err(|e| Error::usage(format!("cannot read `{path}`: {e}")).caused_by(e))?;
    let key = stackpack_schema::signature::PublicKey::from_pem(&pem).map_err(|e| {
        Error::usage(format!("`{path}` is not a public key: {e}"))
            .caused_by(e)
            .hint("give the runner's `.pub` file (SPKI PEM), never its private key")
    })?;
    let key_id = key.key_id();
    let der = base64::engine::general_purpose::STANDARD.encode(key.to_der());
    let state = open_registry(&args.registry)?;
    let now = db::now_rfc3339();
    let locks = [Lock::Customer(&args.id), Lock::InstallationKey(&key_id)];
    let known = state.db.write_keyed(&locks, |tx| {
        if db::ledger::customer(tx, &args.id)?.is_none() {
            return Ok(false);
        }
        db::ledger::add_installation_key(
            tx,
            &args.id,
            &key_id,
            &der,
            &now,
            db::ledger::PinnedBy::Admin,
        )?;
        Ok(true)
    });
    let known = known.map_err(refused_at(&state.config))?;
    if !known {
        return Err(unknown_customer(&state, &args.id));
    }
    if args.json {
        print_json(&serde_json::json!({"customer": args.id, "keyId": key_id}));
    } else {
        status(&format!("customer `{}` now trusts key `{key_id}`", args.id));
    }
    Ok(())
}

pub fn revoke_key(args: &CustomerKeyRevokeArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let now = db::now_rfc3339();
    let locks = [
        Lock::Customer(&args.id),
        Lock::InstallationKey(&args.key_id),
    ];
    let revoked = state.db.write_keyed(&locks, |tx| {
        Ok(db::ledger::revoke_installation_key(
            tx,
            &args.id,
            &args.key_id,
            &now,
        )?)
    });
    if !revoked.map_err(refused_at(&state.config))? {
        return Err(Error::refused(format!(
            "customer `{}` has no key `{}`",
            args.id, args.key_id
        ))
        .hint("the key id is in the customer's receipts (`customer history --json`)"));
    }
    if args.json {
        print_json(
            &serde_json::json!({"customer": args.id, "keyId": args.key_id, "revokedAt": now}),
        );
    } else {
        status(&format!(
            "revoked key `{}` of customer `{}`; receipts signed with it are refused",
            args.key_id, args.id
        ));
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
