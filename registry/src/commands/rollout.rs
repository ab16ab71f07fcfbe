//! `stackpack-registry rollout status | show | pause | resume | abort` and
//! `customer set`.

use stackpack_registry::api::{Rollout, RolloutDetail};
use stackpack_registry::controllers::rollouts::{list::rollouts, show::detail};
use stackpack_registry::db::locks::Lock;
use stackpack_registry::{db, rollout};

use crate::cli::{CustomerSetArgs, RolloutIdArgs, RolloutStatusArgs};
use crate::commands::customer::check_name;
use crate::commands::{
    open_registry, print_json, rollout_refused_at, status as say, table, Result,
};
use crate::commands::{refused_at, Error};

/// `customer set ID [--account A] [--region R] [--environment E] [--contact C]
/// [--notes N] [--channel C [--wave W]]`.
pub fn set(args: &CustomerSetArgs) -> Result<()> {
    check_name("customer", &args.id)?;
    if let Some(environment) = args.environment.as_deref().filter(|e| !e.is_empty()) {
        check_name("environment", environment)?;
    }
    let details = db::customers::Details {
        account: args.account.clone(),
        region: args.region.clone(),
        environment: args.environment.clone(),
        contact: args.contact.clone(),
        notes: args.notes.clone(),
    };
    if details.is_empty() && args.channel.is_none() {
        return Err(Error::usage(format!(
            "`customer set {}` names nothing to set",
            args.id
        ))
        .hint("give `--account`, `--region`, `--environment`, `--contact`, `--notes` or `--channel`"));
    }
    if !details.is_empty() {
        let state = open_registry(&args.registry)?;
        let now = db::now_rfc3339();
        let set = state.db.write_keyed(&[Lock::Customer(&args.id)], |tx| {
            db::customers::set_details(tx, &args.id, &details, &now)?;
            Ok(db::customers::details(tx, &args.id)?.unwrap_or_default())
        });
        let set = set.map_err(refused_at(&state.config))?;
        if args.json && args.channel.is_none() {
            print_json(&set);
        } else {
            say(&format!("set the details of customer `{}`", args.id));
        }
    }
    if let Some(channel) = &args.channel {
        return place(args, channel);
    }
    Ok(())
}

/// `customer set --channel C [--wave W]`.
pub fn place(args: &CustomerSetArgs, channel: &str) -> Result<()> {
    check_name("customer", &args.id)?;
    check_name("channel", channel)?;
    if let Some(wave) = &args.wave {
        check_name("wave", wave)?;
    }
    let state = open_registry(&args.registry)?;
    let placement = rollout::place_held(&state.db, &args.id, channel, args.wave.as_deref())
        .map_err(rollout_refused_at(&state.config))?;
    if args.json {
        print_json(&placement);
    } else {
        say(&format!(
            "customer `{}` is in channel `{}`, wave `{}`",
            args.id,
            channel,
            args.wave.as_deref().unwrap_or("(the channel's last)")
        ));
    }
    Ok(())
}

fn wave(r: &Rollout) -> String {
    format!(
        "{} {}/{}",
        r.waves.get(r.wave_index).map(String::as_str).unwrap_or("-"),
        r.wave_index + 1,
        r.waves.len()
    )
}

fn dash(value: Option<&str>) -> String {
    value.unwrap_or("-").to_string()
}

pub fn status(args: &RolloutStatusArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let all = rollouts(&state, args.channel.as_deref(), args.release.as_deref())
        .map_err(rollout_refused_at(&state.config))?;
    if args.json {
        print_json(&all);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                format!("{}@{}", r.release, r.version),
                r.channel.clone(),
                r.state.to_string(),
                wave(r),
                format!("{}/{}", r.succeeded, r.assigned),
                dash(r.wave_opened_at.as_deref()),
                dash(r.next_wave_at.as_deref()),
                dash(r.halted_reason.as_deref()),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "ID",
                "RELEASE",
                "CHANNEL",
                "STATE",
                "WAVE",
                "SUCCEEDED",
                "OPENED",
                "NEXT WAVE AT",
                "HALTED BECAUSE"
            ],
            &rows
        )
    );
    for r in all.iter() {
        if let Some(held_up) = &r.held_up {
            println!("rollout {} halted: {held_up}", r.id);
        }
    }
    if rows.is_empty() {
        say("no rollouts; `stackpack promote RELEASE@VERSION --channel C` starts one");
    }
    Ok(())
}

fn print_detail(d: &RolloutDetail) {
    let r = &d.rollout;
    println!(
        "rollout {}: {}@{} to `{}`, {} (wave {})",
        r.id,
        r.release,
        r.version,
        r.channel,
        r.state,
        wave(r)
    );
    if let Some(reason) = &r.halted_reason {
        println!("halted because {reason}");
    }
    if let Some(held_up) = &r.held_up {
        println!("{held_up}");
    }
    if let Some(next) = &r.next_wave_at {
        println!("next wave at {next} if the gate holds");
    }
    let rows: Vec<Vec<String>> = d
        .assignments
        .iter()
        .map(|a| {
            vec![
                a.customer.clone(),
                a.wave.clone(),
                a.assigned_at.clone(),
                a.gate.to_string(),
                dash(a.gate_reason.as_deref()),
            ]
        })
        .collect();
    println!();
    print!(
        "{}",
        table(&["CUSTOMER", "WAVE", "ASSIGNED AT", "GATE", "WHY"], &rows)
    );
    let events: Vec<Vec<String>> = d
        .events
        .iter()
        .map(|e| {
            vec![
                e.at.clone(),
                e.kind.as_str().to_string(),
                dash(e.customer.as_deref()),
                dash(e.wave.as_deref()),
                dash(e.detail.as_deref()),
            ]
        })
        .collect();
    println!();
    print!(
        "{}",
        table(&["AT", "WHAT", "CUSTOMER", "WAVE", "DETAIL"], &events)
    );
}

pub fn show(args: &RolloutIdArgs) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let d = detail(&state, args.id).map_err(rollout_refused_at(&state.config))?;
    if args.json {
        print_json(&d);
    } else {
        print_detail(&d);
    }
    Ok(())
}

pub fn control(args: &RolloutIdArgs, control: rollout::Control) -> Result<()> {
    let state = open_registry(&args.registry)?;
    let summary = rollout::control_held(&state.db, args.id, control)
        .map_err(rollout_refused_at(&state.config))?;
    if args.json {
        print_json(&summary);
    } else {
        say(&format!(
            "rollout {} ({}@{} to `{}`) is {}{}",
            summary.id,
            summary.release,
            summary.version,
            summary.channel,
            summary.state,
            summary
                .halted_reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    Ok(())
}
