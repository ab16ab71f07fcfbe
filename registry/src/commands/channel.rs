//! `stackpack-registry channel set | list`.

use stackpack_registry::controllers::rollouts::channels::all;
use stackpack_registry::rollout;

use crate::cli::{ChannelSetArgs, DataJsonArgs};
use crate::commands::{
    open_registry, print_json, refused_at, rollout_refused_at, status, table, Error, Result,
    AGE_HINT,
};

pub fn set(args: &ChannelSetArgs) -> Result<()> {
    let soak = match &args.soak {
        Some(text) => Some(rollout::parse_soak(text).ok_or_else(|| {
            Error::usage(stackpack_registry::age::invalid("--soak", text)).hint(AGE_HINT)
        })?),
        None => None,
    };
    let state = open_registry(&args.registry)?;
    let config = rollout::set_channel_held(&state.db, &args.name, args.waves.clone(), soak)
        .map_err(rollout_refused_at(&state.config))?;
    if args.json {
        print_json(&serde_json::json!({
            "name": args.name,
            "waves": config.waves,
            "soakSeconds": config.soak_seconds,
        }));
    } else {
        status(&format!(
            "channel `{}`: waves {}, soak {} s",
            args.name,
            config
                .waves
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(" → "),
            config.soak_seconds
        ));
    }
    Ok(())
}

pub fn list(args: &DataJsonArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let channels = all(&state).map_err(refused_at(&state.config))?;
    if args.json {
        print_json(&channels);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = channels
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                c.waves.join(","),
                format!("{}s", c.soak_seconds),
                c.customers.to_string(),
                if c.configured { "" } else { "defaults" }.to_string(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(&["CHANNEL", "WAVES", "SOAK", "CUSTOMERS", "NOTE"], &rows)
    );
    if rows.is_empty() {
        status("no channels; put a customer in one with `stackpack-registry customer set ID --channel stable`");
    }
    Ok(())
}
