//! `stackpack-registry adoption`: how many customers ran each version of each stack
//! over time, from `--data` on the registry's host or over the HTTP API with `--url`.

use stackpack_registry::api::Adoption;
use stackpack_registry::controllers::ledger::adoption::{adoption, Bucket};

use crate::cli::AdoptionArgs;
use crate::commands::fleet::encode;
use crate::commands::{on_registry, print_json, status, table, Result};

pub fn run(args: &AdoptionArgs) -> Result<()> {
    let bucket = Bucket::parse(&args.bucket).expect("clap admits only `day` and `week`");
    let answer: Vec<Adoption> = match (args.source.local(), &args.source.url) {
        (Some(registry), _) => on_registry(registry, |state| {
            adoption(state, args.stack.as_deref(), bucket)
        })?,
        (None, Some(url)) => {
            let mut path = format!("/api/v1/adoption?bucket={}", bucket.as_str());
            if let Some(stack) = &args.stack {
                path.push_str(&format!("&stack={}", encode(stack)));
            }
            crate::commands::remote::get_json(url, args.source.token.as_deref(), &path, "adoption")?
        }
        (None, None) => unreachable!("clap requires `--data`, `--database`, `--config` or `--url`"),
    };
    if args.json {
        print_json(&answer);
        return Ok(());
    }
    if args.format == "svg" {
        let today = time::OffsetDateTime::now_utc().date();
        println!(
            "{}",
            stackpack_registry::chart::adoption_svg(&answer, today)
        );
        return Ok(());
    }
    let mut rows = Vec::new();
    for stack in &answer {
        for point in &stack.points {
            for version in stack.versions.iter().rev() {
                let version = version.to_string();
                let Some(count) = point.customers.get(&version) else {
                    continue;
                };
                let share = *count as f64 * 100.0 / point.total.max(1) as f64;
                rows.push(vec![
                    stack.stack.clone(),
                    point.at.clone(),
                    version,
                    count.to_string(),
                    format!("{share:.0}% of {}", point.total),
                ]);
            }
        }
    }
    let when = if bucket == Bucket::Week {
        "WEEK OF"
    } else {
        "DAY"
    };
    print!(
        "{}",
        table(&["STACK", when, "VERSION", "CUSTOMERS", "SHARE"], &rows)
    );
    if rows.is_empty() {
        status("no customer has reported a deployment yet");
    }
    Ok(())
}
