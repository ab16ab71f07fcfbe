use stackpack_packager::keys;

use crate::cli::{GlobalArgs, KeygenArgs};
use crate::output;
use stackpack_packager::Result;
use stackpack_terminal::ExitStatus;

pub fn run(args: &KeygenArgs, _global: &GlobalArgs) -> Result<ExitStatus> {
    let pair = keys::generate(&args.out)?;
    if args.json {
        output::print_json(&serde_json::json!({
            "keyId": pair.key_id,
            "privateKey": pair.private_path,
            "publicKey": pair.public_path,
        }));
    } else {
        println!("{}", pair.key_id);
        output::status(&format!(
            "wrote `{}` (keep it secret: it signs bundles) and `{}` (give it to customers)",
            pair.private_path.display(),
            pair.public_path.display()
        ));
    }
    Ok(ExitStatus::Success)
}
