//! `stackpack key public`: the public key of a signing key, to give customers.

use stackpack_packager::{keys, Result};
use stackpack_terminal::ExitStatus;

use crate::cli::KeyPublicArgs;
use crate::output;

/// Prints the SPKI PEM of the key `--key` would sign with (for a key in AWS KMS, the
/// one `GetPublicKey` gives, once the key is checked to sign with ECDSA P-256).
pub fn public(args: &KeyPublicArgs) -> Result<ExitStatus> {
    let key = keys::open_key_source(&keys::key_source(&args.key)?)?;
    let public = key.public_key();
    let pem = public.to_pem();
    if let Some(out) = &args.out {
        std::fs::write(out, &pem).map_err(|e| stackpack_packager::error::io("write", out, e))?;
    }
    if args.json {
        output::print_json(&serde_json::json!({
            "keyId": public.key_id(),
            "algorithm": public.algorithm(),
            "publicKey": pem,
            "file": args.out,
        }));
        return Ok(ExitStatus::Success);
    }
    print!("{pem}");
    let written = match &args.out {
        Some(out) => format!(", written to `{}`", out.display()),
        None => String::new(),
    };
    output::status(&format!(
        "key `{}` ({}){written}: customers trust it with `stackpack-runner trust add vendor.pub`",
        public.key_id(),
        public.algorithm()
    ));
    Ok(ExitStatus::Success)
}
