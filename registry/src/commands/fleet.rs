//! `stackpack-registry fleet`: support's table of who runs what.

use stackpack_registry::api::Running;

use crate::cli::FleetArgs;
use crate::commands::open_existing;

fn notes(r: &Running) -> String {
    let mut notes = Vec::new();
    if r.behind {
        notes.push(format!(
            "behind {}",
            r.latest_stable.as_deref().unwrap_or("?")
        ));
    }
    if r.prerelease {
        notes.push("prerelease".to_string());
    }
    if r.drifted {
        notes.push("drifted".to_string());
    }
    notes.join(", ")
}

/// Aligned columns, no borders, the widest column last.
fn print_table(headers: [&str; 5], rows: &[[String; 5]]) {
    let mut widths = headers.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            text.push_str(cell);
            if index + 1 < cells.len() {
                text.push_str(&" ".repeat(widths[index] - cell.chars().count() + 2));
            }
        }
        println!("{}", text.trim_end());
    };
    line(headers);
    for row in rows {
        line([&row[0], &row[1], &row[2], &row[3], &row[4]]);
    }
}

pub fn run(args: &FleetArgs) -> anyhow::Result<()> {
    let state = open_existing(&args.data)?;
    let rows: Vec<_> = stackpack_registry::controllers::ledger::running(&state, None)?
        .into_iter()
        .filter(|r| {
            (!args.behind || r.behind)
                && (!args.prerelease || r.prerelease)
                && (!args.drifted || r.drifted)
        })
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.customer.clone(),
                r.stack.clone(),
                r.version.clone(),
                r.since.clone(),
                notes(r),
            ]
        })
        .collect();
    print_table(["CUSTOMER", "STACK", "VERSION", "SINCE", "NOTES"], &table);
    if table.is_empty() {
        eprintln!("no deployments reported yet");
    }
    Ok(())
}
