//! `report`, `receipts export` and `receipts list`.

use stackpack_terminal::ExitStatus;
use std::path::Path;

use serde_json::json;
use stackpack_bundle::remote::http::{self, HttpError};
use stackpack_runner::ledger::Ledger;
use stackpack_runner::{receipts, Error, Result};

use super::{open_home, print_json, status, table};
use crate::cli::{GlobalArgs, ReportArgs};

pub fn report(global: &GlobalArgs, args: &ReportArgs) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let ledger = Ledger::open(&home.ledger_path())?;
    let pending = ledger.receipts(true)?;
    let base = registry_base(&args.registry, args.insecure);
    let url = format!("{base}/api/v1/receipts");
    let mut sent = Vec::new();
    for stored in &pending {
        let id = &stored.signed.receipt.id;
        let unsent = |sent: &Vec<(String, bool)>| {
            format!(
                "{} of {} sent",
                sent.len(),
                stackpack_terminal::words::count(pending.len() as u64, "receipt")
            )
        };
        let answer = http::post_json(&url, &args.token, stored.signed.to_bytes()).map_err(|error| {
            let hint = match error {
                HttpError::PlainHttpNotLoopback(_) => "use the registry's `https://` address",
                _ => "with no route to the registry, use `stackpack-runner receipts export -o FILE` and carry the file",
            };
            Error::refused(format!("cannot report to the registry: {error}; {}", unsent(&sent)))
                .at(&url)
                .hint(hint)
        })?;
        match answer.status {
            200..=299 => {
                ledger.mark_reported(id, &receipts::now())?;
                sent.push((id.clone(), answer.status == 201));
            }
            code => {
                let hint = match code {
                    401 | 403 => "check the token: it must be a `customer` token for this customer",
                    _ => "receipts already acknowledged stay acknowledged; run `report` again to send the rest",
                };
                return Err(Error::refused(format!(
                    "the registry refused receipt `{id}` ({code}): {}; {}",
                    refusal_detail(&answer.body),
                    unsent(&sent)
                ))
                .at(&url)
                .hint(hint));
            }
        }
    }
    if args.json {
        print_json(&json!({
            "sent": sent.iter().map(|(id, created)| json!({"receiptId": id, "created": created})).collect::<Vec<_>>(),
            "pending": 0,
        }));
    } else if sent.is_empty() {
        println!("nothing to report: the registry has every receipt");
    } else {
        println!("reported {} receipt(s) to `{base}`", sent.len());
    }
    Ok(ExitStatus::Success)
}

pub fn export(
    global: &GlobalArgs,
    out: Option<&Path>,
    dir: Option<&Path>,
    unreported: bool,
    json: bool,
) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let ledger = Ledger::open(&home.ledger_path())?;
    let stored = ledger.receipts(unreported)?;
    let signed: Vec<_> = stored.iter().map(|s| &s.signed).collect();
    let written = if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::usage(format!("cannot create `{}`: {e}", dir.display())))?;
        for receipt in &signed {
            let path = dir.join(format!("{}.json", receipt.receipt.id));
            stackpack_bundle::layout::write_atomically(&path, &receipt.to_bytes())?;
        }
        dir.display().to_string()
    } else {
        let out = out.expect("clap requires `-o` or `--dir`");
        let bytes = serde_json::to_vec_pretty(&signed).expect("receipts serialise");
        if out
            .parent()
            .is_some_and(|p| !p.as_os_str().is_empty() && !p.is_dir())
        {
            return Err(Error::usage(format!(
                "the folder of `{}` does not exist",
                out.display()
            )));
        }
        stackpack_bundle::layout::write_atomically(out, &bytes)?;
        out.display().to_string()
    };
    if json {
        print_json(&json!({"receipts": signed.len(), "written": written}));
    } else {
        println!("wrote {} receipt(s) to `{written}`", signed.len());
        status(
            "each receipt is signed by this installation's key; the registry checks it on import",
        );
    }
    Ok(ExitStatus::Success)
}

pub fn list(global: &GlobalArgs, json: bool) -> Result<ExitStatus> {
    let home = open_home(global)?;
    let ledger = Ledger::open(&home.ledger_path())?;
    let stored = ledger.receipts(false)?;
    if json {
        let mut receipts = Vec::new();
        for s in &stored {
            let notes = ledger.notes(&s.signed.receipt.id)?;
            receipts.push(json!({
                "receipt": s.signed,
                "reportedAt": s.reported_at,
                "notes": notes.iter().map(|n| json!({
                    "kind": n.kind,
                    "rule": n.rule,
                    "address": n.address,
                    "message": n.message,
                })).collect::<Vec<_>>(),
            }));
        }
        print_json(&json!({ "receipts": receipts }));
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<Vec<String>> = stored
        .iter()
        .map(|s| {
            let r = &s.signed.receipt;
            vec![
                stackpack_terminal::words::time(&r.finished_at),
                r.kind.to_string(),
                r.outcome.to_string(),
                format!("{}@{}", r.stack, r.version),
                if s.reported_at.is_some() {
                    "yes".into()
                } else {
                    "no".into()
                },
                r.id.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &["FINISHED", "KIND", "OUTCOME", "BUNDLE", "REPORTED", "ID"],
            &rows
        )
    );
    Ok(ExitStatus::Success)
}

/// The registry's own words from an error body (OCI `errors[0].message`, or the
/// ledger's `message`/`error`), else the start of the body.
fn refusal_detail(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v["errors"][0]["message"]
                .as_str()
                .or(v["message"].as_str())
                .or(v["error"].as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| body.chars().take(200).collect())
}

/// The registry's base URL from the one address syntax every command takes
/// (`HOST[:PORT][/NAMESPACE]`, `--insecure` for plain HTTP), or from a URL.
/// The registry's base URL from any form the README shows: `HOST[:PORT]`,
/// `HOST[:PORT]/NAMESPACE` (as `pull` takes it), or a URL with or without a
/// namespace. The ledger's API lives at the host's root, whatever the namespace.
fn registry_base(registry: &str, insecure: bool) -> String {
    let (scheme, rest) = match registry.split_once("://") {
        Some((scheme, rest)) => (scheme.to_string(), rest),
        None => (
            (if insecure { "http" } else { "https" }).to_string(),
            registry,
        ),
    };
    let host = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::registry_base;

    #[test]
    fn report_takes_the_address_pull_takes_or_a_url() {
        assert_eq!(
            registry_base("registry.acme.example/acme", false),
            "https://registry.acme.example"
        );
        assert_eq!(
            registry_base("127.0.0.1:5000", true),
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            registry_base("https://registry.acme.example/", false),
            "https://registry.acme.example"
        );
    }

    #[test]
    fn a_url_with_a_namespace_reports_to_the_hosts_api_not_under_the_namespace() {
        assert_eq!(
            registry_base("http://127.0.0.1:5000/acme", true),
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            registry_base("https://registry.acme.example/acme/", false),
            "https://registry.acme.example"
        );
        assert_eq!(
            registry_base("127.0.0.1:5000/acme", true),
            "http://127.0.0.1:5000"
        );
    }
}
