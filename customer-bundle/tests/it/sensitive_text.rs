//! Security review (issue 39 §7.5): a sensitive value in text the runner writes
//! itself. A `check` block's message built with `nonsensitive(var.db_password)` was
//! printed in the runner's summary and kept in the receipt; a `for_each` key holding
//! it reached the signed receipt's `changes`. Every such text is scrubbed of each
//! value the runner knows to be sensitive. Real Terraform, `terraform_data`.

use crate::common::release::ReleaseVendor;
use crate::common::Runner;

const STACK: &str = r#"variable "db_password" {
  type        = string
  sensitive   = true
  description = "The database's password."
}

resource "terraform_data" "per_password" {
  for_each = toset([nonsensitive(var.db_password)])
  input    = "x"
}

check "password_length" {
  assert {
    condition     = length(var.db_password) < 8
    error_message = "the password ${nonsensitive(var.db_password)} is too long"
  }
}
"#;

const PASSWORD: &str = "hunter2-correct-horse-battery";

#[test]
fn a_sensitive_input_never_reaches_the_runners_own_messages_or_the_receipt() {
    let vendor = ReleaseVendor::new();
    vendor.add_stack(
        "leaky",
        "description = \"leaky\"\nengine = \"terraform\"\n",
        STACK,
    );
    let version = vendor.build_version_of("leaky");
    let runner = Runner::new("globex").without_account();
    runner.trust_and_import(&vendor.public_key, &vendor.layout_dir());
    let inputs = runner.temp.path().join("leaky.tfvars");
    std::fs::write(&inputs, format!("db_password = \"{PASSWORD}\"\n")).unwrap();
    let reference = format!("leaky@{version}");
    let applied = runner.run(&[
        "apply",
        &reference,
        "--inputs",
        inputs.to_str().unwrap(),
        "--yes",
    ]);
    // The check fails (its message is the vendor's), so the apply does.
    assert_eq!(applied.code, 1, "{}", applied.stderr);
    assert!(
        applied
            .stderr
            .contains("the password (sensitive value) is too long"),
        "{}",
        applied.stderr
    );
    for (what, text) in [("stdout", &applied.stdout), ("stderr", &applied.stderr)] {
        assert!(!text.contains(PASSWORD), "the password in {what}:\n{text}");
    }

    let exported = runner.temp.path().join("receipts.json");
    runner
        .run(&["receipts", "export", "-o", exported.to_str().unwrap()])
        .ok();
    let receipts = std::fs::read_to_string(&exported).unwrap();
    assert!(
        !receipts.contains(PASSWORD),
        "the password in a receipt:\n{receipts}"
    );
    assert!(
        receipts.contains("terraform_data.per_password[\\\"(sensitive value)\\\"]"),
        "the changed resource is still named:\n{receipts}"
    );

    // The support bundle's list of state addresses neither.
    let out = runner.temp.path().join("support.tar.gz");
    runner
        .run(&["support-bundle", "-o", out.to_str().unwrap()])
        .ok();
    let read = |member: Option<&str>| {
        let mut command = std::process::Command::new("tar");
        command.arg("-xzOf").arg(&out);
        if let Some(member) = member {
            command.arg(member);
        }
        String::from_utf8_lossy(&command.output().unwrap().stdout).into_owned()
    };
    let resources = read(Some("support-bundle/state-resources.json"));
    assert!(
        resources.contains("terraform_data.per_password[\\\"(sensitive value)\\\"]"),
        "the support bundle lists the resource, its key scrubbed: {resources}"
    );
    let everything = read(None);
    assert!(
        !everything.contains(PASSWORD),
        "the password in the support bundle"
    );
}
