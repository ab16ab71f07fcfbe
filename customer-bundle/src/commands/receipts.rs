//! `report`, `receipts export` and `receipts list`.

use stackpack_terminal::ExitStatus;
use std::path::Path;

use serde_json::json;
use stackpack_bundle::remote::http::{self, HttpError};
use stackpack_runner::sync::registry::unreported;
use stackpack_runner::{Error, Result};

use super::{open_installation, print_json, status, table};
use crate::cli::{GlobalArgs, ReportArgs};

pub fn report(global: &GlobalArgs, args: &ReportArgs) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let ledger = installation.ledger()?;
    let pending = unreported(ledger)?;
    let to = Registry {
        base: registry_base(&args.registry, args.insecure),
        token: &args.token,
        pending: pending.len(),
    };
    let mut sent = Vec::new();
    for mut receipt in pending {
        let body = std::mem::take(&mut receipt.body);
        let created = to.send(receipt.path, &receipt.id, body, &sent)?;
        receipt.mark_reported(ledger)?;
        sent.push((receipt.id, receipt.kind, created));
    }
    if sent.is_empty() {
        // Nothing was pending: ask the registry anyway, so that "nothing to
        // report" is never said of a registry nobody answered (or that refuses
        // the token the next report would need).
        to.check_reachable()?;
    }
    let base = &to.base;
    if args.json {
        print_json(&json!({
            "registry": base,
            "sent": sent.iter().map(|(id, kind, created)| json!({"receiptId": id, "kind": kind, "created": created})).collect::<Vec<_>>(),
            "pending": 0,
        }));
    } else if sent.is_empty() {
        println!("nothing to report: `{base}` answered and has every receipt of this installation");
    } else {
        println!(
            "reported {} to `{base}`",
            stackpack_terminal::words::count(sent.len() as u64, "receipt")
        );
    }
    Ok(ExitStatus::Success)
}

/// The registry a `report` sends to, and how many receipts it had to send.
struct Registry<'a> {
    base: String,
    token: &'a str,
    pending: usize,
}

impl Registry<'_> {
    /// Sends one receipt; `Ok(true)` when the registry had not seen it.
    fn send(
        &self,
        path: &str,
        id: &str,
        body: Vec<u8>,
        sent: &[(String, &str, bool)],
    ) -> Result<bool> {
        let url = format!("{}{path}", self.base);
        let answer = http::post_json(&url, self.token, body)
            .map_err(|error| self.unreachable(&url, error, sent.len()))?;
        match answer.status {
            200..=299 => Ok(answer.status == 201),
            code => {
                let hint = match code {
                    401 | 403 => "check the token: it must be a `customer` token for this customer",
                    _ => "receipts already acknowledged stay acknowledged; run `report` again to send the rest",
                };
                Err(Error::refused(format!(
                    "the registry refused receipt `{id}` ({code}): {}; {}",
                    refusal_detail(&answer.body),
                    self.unsent(sent.len())
                ))
                .at(&url)
                .hint(hint))
            }
        }
    }

    /// With nothing to send: the registry's `/v2/` answers, and takes the token.
    fn check_reachable(&self) -> Result<()> {
        let url = format!("{}/v2/", self.base);
        let answer = http::get(&url, Some(self.token), 64 << 10)
            .map_err(|error| self.unreachable(&url, error, 0))?;
        match answer.status {
            200..=299 => Ok(()),
            401 | 403 => Err(Error::refused(format!(
                "the registry refused the token ({}); no receipt was pending",
                answer.status
            ))
            .at(&url)
            .hint("check the token: it must be a `customer` token for this customer")),
            code => Err(Error::refused(format!(
                "the registry answered {code}, not as a Stackpack registry; no receipt was pending"
            ))
            .at(&url)
            .hint("check `--registry`: it is the registry's address, as `pull` takes it")),
        }
    }

    fn unreachable(&self, url: &str, error: HttpError, sent: usize) -> Error {
        let hint = match error {
            HttpError::PlainHttpNotLoopback(_) => "use the registry's `https://` address",
            _ => "with no route to the registry, use `stackpack-runner receipts export -o FILE` and carry the file",
        };
        Error::refused(format!(
            "cannot reach the registry: {error}; {}",
            self.unsent(sent)
        ))
        .at(url)
        .hint(hint)
    }

    fn unsent(&self, sent: usize) -> String {
        if self.pending == 0 {
            return "no receipt was pending".into();
        }
        format!(
            "{sent} of {} sent",
            stackpack_terminal::words::count(self.pending as u64, "receipt")
        )
    }
}

pub fn export(
    global: &GlobalArgs,
    out: Option<&Path>,
    dir: Option<&Path>,
    unreported: bool,
    json: bool,
) -> Result<ExitStatus> {
    let installation = open_installation(global)?;
    let ledger = installation.ledger()?;
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
    let installation = open_installation(global)?;
    let ledger = installation.ledger()?;
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
