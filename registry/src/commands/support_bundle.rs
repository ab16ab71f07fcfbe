//! `stackpack-registry support-bundle import --customer C FILE`: keep a runner's
//! support bundle for a customer; the customer's support page links the newest.

use stackpack_registry::db;
use stackpack_registry::db::locks::Lock;
use stackpack_registry::db::support_bundles::MAX_SUPPORT_BUNDLE;

use crate::cli::SupportBundleImportArgs;
use crate::commands::{open_registry, print_json, refused_at, Error, Result};

pub fn import(args: &SupportBundleImportArgs) -> Result<()> {
    let file = &args.file;
    let bytes = std::fs::read(file)
        .map_err(|e| Error::usage(format!("cannot read `{}`: {e}", file.display())).caused_by(e))?;
    if bytes.len() > MAX_SUPPORT_BUNDLE {
        return Err(Error::refused(format!(
            "`{}` is {} bytes; a support bundle may be at most {MAX_SUPPORT_BUNDLE}",
            file.display(),
            bytes.len()
        ))
        .hint("write it again with `stackpack-runner support-bundle -o FILE`: a runner's bundle is far smaller"));
    }
    // What the runner writes: gzip (a plain tar is accepted too).
    let gzip = bytes.starts_with(&[0x1f, 0x8b]);
    let tar = bytes.len() > 262 && &bytes[257..262] == b"ustar";
    if !gzip && !tar {
        return Err(Error::refused(format!(
            "`{}` is not a support bundle (neither a tar.gz nor a tar)",
            file.display()
        ))
        .hint("import the file `stackpack-runner support-bundle -o FILE` wrote"));
    }
    let state = open_registry(&args.registry)?;
    let customer = args.customer.as_str();
    let stored = state
        .db
        .write_keyed(&[Lock::Customer(customer)], |tx| {
            if db::ledger::customer(tx, customer)?.is_none() {
                return Ok(None);
            }
            Ok(Some(db::support_bundles::insert(
                tx,
                customer,
                &bytes,
                &db::now_rfc3339(),
            )?))
        })
        .map_err(refused_at(&state.config))?;
    let Some(stored) = stored else {
        return Err(Error::refused(format!(
            "customer `{customer}` is not known to this registry"
        ))
        .hint(
            "check `--customer` (`stackpack-registry customer list`), or import its receipts first",
        ));
    };
    if args.json {
        print_json(&stored);
    } else {
        println!(
            "imported support bundle {} of `{customer}` ({} bytes, {})",
            stored.id, stored.size, stored.sha256
        );
    }
    Ok(())
}
