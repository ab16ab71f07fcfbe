//! `stackpack-registry alert add | list | remove`: the webhooks told when a
//! customer's stack fails, drifts or falls behind, or the customer goes silent.
//! The server delivers; these commands only change and read the list.

use stackpack_registry::db::locks::Lock;
use stackpack_registry::{alerts, db};

use crate::cli::{AlertAddArgs, AlertRemoveArgs, DataJsonArgs};
use crate::commands::{open_registry, print_json, refused_at, status, table, Error, Result};

pub fn add(args: &AlertAddArgs) -> Result<()> {
    alerts::check_webhook(&args.webhook)
        .map_err(|e| Error::usage(e).hint("give the webhook's whole address, `https://…`"))?;
    let events = alerts::parse_events(&args.on)
        .map_err(|e| Error::usage(e).hint("as in `--on failed,drifted,silent`"))?;
    let names: Vec<&str> = events.iter().map(|e| e.as_str()).collect();
    let state = open_registry(&args.registry)?;
    let now = db::now_rfc3339();
    let id = state
        .db
        .write_keyed(&[Lock::Setting(alerts::SETTING)], |tx| {
            Ok(db::alerts::add(tx, &args.webhook, &names, "cli", &now)?)
        })
        .map_err(refused_at(&state.config))?;
    if args.json {
        print_json(&serde_json::json!({"id": id, "webhook": args.webhook, "events": names}));
    } else {
        status(&format!(
            "alert {id}: `{}` is told of {}",
            args.webhook,
            names.join(", ")
        ));
    }
    Ok(())
}

pub fn list(args: &DataJsonArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let list = state
        .db
        .read_any(|c| db::alerts::list(c))
        .map_err(refused_at(&state.config))?;
    if args.json {
        print_json(&list);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|a| {
            let standing = match (&a.last_error, &a.last_error_at) {
                (Some(error), Some(at)) => format!("failing since {at}: {error}"),
                (Some(error), None) => format!("failing: {error}"),
                _ => match &a.last_ok_at {
                    Some(at) => format!("ok, last delivered {at}"),
                    None => "ok, nothing delivered yet".to_string(),
                },
            };
            vec![
                a.id.to_string(),
                a.events.join(","),
                a.source.clone(),
                a.delivered.to_string(),
                a.pending.to_string(),
                a.webhook.clone(),
                standing,
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "ID",
                "EVENTS",
                "FROM",
                "DELIVERED",
                "WAITING",
                "WEBHOOK",
                "STATE"
            ],
            &rows
        )
    );
    if rows.is_empty() {
        status("no alert yet; add one with `stackpack-registry alert add --webhook URL --on failed,drifted`");
    }
    Ok(())
}

pub fn remove(args: &AlertRemoveArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let removed = state
        .db
        .write_keyed(&[Lock::Setting(alerts::SETTING)], |tx| {
            Ok(db::alerts::remove(tx, args.id)?)
        })
        .map_err(refused_at(&state.config))?;
    if !removed {
        return Err(Error::refused(format!("there is no alert `{}`", args.id))
            .hint("see the alerts with `stackpack-registry alert list`"));
    }
    if args.json {
        print_json(&serde_json::json!({"id": args.id, "removed": true}));
    } else {
        status(&format!("removed alert {}", args.id));
    }
    Ok(())
}
