//! No secret left in state: after an apply the runner looks for the values of the
//! sensitive inputs it passed in what the engine shows of the state. A stack that
//! stores one fails its apply (a `failed` receipt naming where, never what) under
//! the default `[policy] secrets-in-state = "deny"`, or warns with `"warn"`. Real
//! Terraform, `terraform_data` standing in for a resource that stores an argument.

use std::path::PathBuf;

use crate::common::release::ReleaseVendor;
use crate::common::{Run, Runner};

/// A stack that stores one sensitive input from the inputs file and one from the
/// environment, and keeps a third (shorter than the threshold) too.
const VAULT: &str = r#"variable "db_password" {
  type        = string
  sensitive   = true
  description = "The database's password."
}

variable "api_token" {
  type        = string
  sensitive   = true
  description = "The API's token."
}

variable "pin" {
  type        = string
  sensitive   = true
  description = "Too short to be looked for."
}

resource "terraform_data" "db" {
  input = { password = var.db_password }
}

resource "terraform_data" "api" {
  input = "Bearer ${var.api_token}"
}

resource "terraform_data" "pin" {
  input = var.pin
}
"#;

pub const DB_PASSWORD: &str = "s3cr3t-db-password-0451";
pub const API_TOKEN: &str = "tok-9f8e7d6c5b4a3210";

/// A runner holding the vendor's `vault@V`; returns it, the reference and the
/// inputs file (the password and the pin; the token comes from `TF_VAR_api_token`).
pub fn vault_runner() -> (Runner, String, PathBuf) {
    let vendor = ReleaseVendor::new();
    vendor.add_stack(
        "vault",
        "description = \"vault\"\nengine = \"terraform\"\n",
        VAULT,
    );
    let version = vendor.build_version_of("vault");
    let runner = Runner::new("globex").without_account();
    runner.trust_and_import(&vendor.public_key, &vendor.layout_dir());
    let inputs = runner.temp.path().join("vault.tfvars");
    std::fs::write(
        &inputs,
        format!("db_password = \"{DB_PASSWORD}\"\npin = \"1234\"\n"),
    )
    .unwrap();
    (runner, format!("vault@{version}"), inputs)
}

pub fn apply_vault(runner: &Runner, reference: &str, inputs: &std::path::Path) -> Run {
    Run::from(
        runner
            .command(&[
                "apply",
                reference,
                "--inputs",
                inputs.to_str().unwrap(),
                "--yes",
            ])
            .env("TF_VAR_api_token", API_TOKEN)
            .output()
            .unwrap(),
    )
}

#[test]
fn an_apply_that_leaves_a_sensitive_input_in_state_fails_naming_where_never_the_value() {
    let (runner, reference, inputs) = vault_runner();
    let run = apply_vault(&runner, &reference, &inputs).code(1);
    for place in [
        "`terraform_data.db` attribute `input.password` holds the value of sensitive input `db_password`",
        "`terraform_data.api` attribute `input` holds the value of sensitive input `api_token`",
        "secrets-in-state = \"warn\"",
    ] {
        assert!(run.stderr.contains(place), "{place}\n{}", run.stderr);
    }
    // The pin is shorter than the threshold: not looked for, so not named.
    assert!(!run.stderr.contains("`pin`"), "{}", run.stderr);
    for secret in [DB_PASSWORD, API_TOKEN] {
        assert!(!run.stderr.contains(secret) && !run.stdout.contains(secret));
    }
    // The receipt says what happened: applied, and failed.
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = &receipts["receipts"].as_array().unwrap().last().unwrap()["receipt"]["receipt"];
    assert_eq!(last["kind"], "apply", "{last}");
    assert_eq!(last["outcome"], "failed", "{last}");
    assert!(run.stderr.contains(last["id"].as_str().unwrap()));
}

#[test]
fn with_secrets_in_state_warn_the_apply_succeeds_and_says_where() {
    let (runner, reference, inputs) = vault_runner();
    let config = std::fs::read_to_string(runner.home.join("runner.toml")).unwrap();
    let config = if config.contains("[policy]") {
        config.replace("[policy]", "[policy]\nsecrets-in-state = \"warn\"")
    } else {
        format!("{config}\n[policy]\nsecrets-in-state = \"warn\"\n")
    };
    std::fs::write(runner.home.join("runner.toml"), config).unwrap();
    let run = apply_vault(&runner, &reference, &inputs).ok();
    assert!(
        run.stderr.contains(
            "warning: `terraform_data.db` attribute `input.password` holds the value of sensitive input `db_password`"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(DB_PASSWORD));
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let last = &receipts["receipts"].as_array().unwrap().last().unwrap()["receipt"]["receipt"];
    assert_eq!(last["outcome"], "succeeded", "{last}");
}
