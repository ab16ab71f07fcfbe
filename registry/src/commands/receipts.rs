//! `stackpack-registry receipts import`: all receipts of a file, or none.

use stackpack_registry::receipts::{self, FirstUse, Outcome};
use stackpack_schema::receipt::SignedReceipt;

use crate::cli::ReceiptsImportArgs;
use crate::commands::{open_registry, print_json, refused_at, Error, Result};

/// Reads one signed receipt, a JSON array of them, or JSON Lines.
fn parse_receipts(bytes: &[u8]) -> std::result::Result<Vec<SignedReceipt>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return serde_json::from_str::<Vec<SignedReceipt>>(trimmed).map_err(|e| e.to_string());
    }
    if let Ok(one) = SignedReceipt::from_bytes(trimmed.as_bytes()) {
        return Ok(vec![one]);
    }
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(index, line)| {
            SignedReceipt::from_bytes(line.as_bytes())
                .map_err(|e| format!("line {}: {e}", index + 1))
        })
        .collect()
}

fn json_report(imported: bool, outcomes: &[Outcome]) -> serde_json::Value {
    let items: Vec<_> = outcomes
        .iter()
        .map(|o| match &o.result {
            Ok(created) => serde_json::json!({"receiptId": o.receipt_id, "created": created}),
            Err(e) => serde_json::json!({
                "receiptId": o.receipt_id,
                "refused": {"code": e.code.as_str(), "message": e.message, "hint": hint(e)},
            }),
        })
        .collect();
    serde_json::json!({ "imported": imported, "receipts": items })
}

/// The hint a refusal carries in its detail, if any.
fn hint(e: &stackpack_registry::error::Error) -> Option<&str> {
    e.detail.as_ref()?.get("hint")?.as_str()
}

fn print_outcomes(imported: bool, outcomes: &[Outcome]) {
    for o in outcomes {
        match (&o.result, imported) {
            (Ok(true), true) => println!("imported receipt `{}`", o.receipt_id),
            (Ok(false), true) => println!("receipt `{}` was already imported", o.receipt_id),
            (Ok(_), false) => eprintln!("receipt `{}`: accepted, but not recorded", o.receipt_id),
            (Err(e), _) => stackpack_terminal::warning(&match hint(e) {
                Some(hint) => format!(
                    "receipt `{}`: refused: {}\n  hint: {hint}",
                    o.receipt_id, e.message
                ),
                None => format!("receipt `{}`: refused: {}", o.receipt_id, e.message),
            }),
        }
    }
}

pub fn import(args: &ReceiptsImportArgs) -> Result<()> {
    let file = &args.file;
    let bytes = std::fs::read(file)
        .map_err(|e| Error::usage(format!("cannot read `{}`: {e}", file.display())).caused_by(e))?;
    // A file that is not receipts is refused (exit 1), like a receipt whose signature
    // does not check out. Every receipt is read before any is recorded.
    let receipts = parse_receipts(&bytes).map_err(|e| {
        Error::refused(format!(
            "`{}` is not a signed receipt, an array of them, or JSON Lines: {e}",
            file.display()
        ))
    })?;
    let state = open_registry(&args.registry)?;
    let (imported, outcomes) =
        receipts::record_all(&state.db, &receipts, &FirstUse::Named(&args.customers))
            .map_err(refused_at(&state.config))?;
    if args.json {
        print_json(&json_report(imported, &outcomes));
    } else {
        print_outcomes(imported, &outcomes);
    }
    if imported {
        return Ok(());
    }
    let refused = outcomes.iter().filter(|o| o.result.is_err()).count();
    Err(Error::refused(format!(
        "nothing was imported: {refused} of {} in `{}` {} refused",
        stackpack_terminal::words::count(outcomes.len() as u64, "receipt"),
        file.display(),
        if refused == 1 { "was" } else { "were" }
    ))
    .hint(
        outcomes
            .iter()
            .find_map(|o| o.result.as_ref().err().and_then(hint))
            .unwrap_or("fix or remove the refused receipts, then import the file again"),
    ))
}
