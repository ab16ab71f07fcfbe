//! `support-bundle -o FILE`: one tar.gz with what support needs, and none of the
//! secrets the home, the state or the environment hold: proven by decompressing it
//! and searching every byte for known sensitive values put in all three places.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;

use crate::common::Run;
use crate::secrets_in_state::{apply_vault, vault_runner, API_TOKEN, DB_PASSWORD};

const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSUPPORTKEY";
const OTHER_PASSWORD: &str = "env-only-password-77e1";

#[test]
fn a_support_bundle_holds_status_receipts_state_addresses_and_versions_and_no_secret() {
    let (runner, reference, inputs) = vault_runner();
    // The apply leaves both secrets in the state and fails for it (the default
    // policy): a deployment, a failed receipt and its engine output to bundle.
    let failed = apply_vault(&runner, &reference, &inputs).code(1);
    let out = runner.temp.path().join("support.tar.gz");
    let run = Run::from(
        runner
            .command(&["support-bundle", "-o", out.to_str().unwrap(), "--json"])
            .env("TF_VAR_api_token", API_TOKEN)
            .env("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
            .env("SERVICE_DB_PASSWORD", OTHER_PASSWORD)
            .output()
            .unwrap(),
    )
    .ok();
    let written = run.json();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // No temporary file is left beside it.
    let beside: Vec<_> = std::fs::read_dir(runner.temp.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".support-bundle-")
        })
        .collect();
    assert!(beside.is_empty());

    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let mut files = std::collections::BTreeMap::new();
    for entry in tar::Archive::new(raw.as_slice()).entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(name, text);
    }
    let names: Vec<&String> = files.keys().collect();
    for expected in [
        "support-bundle/status.json",
        "support-bundle/receipts.json",
        "support-bundle/versions.json",
        "support-bundle/preflight.json",
        "support-bundle/state-resources.json",
        "support-bundle/runner.toml",
    ] {
        assert!(files.contains_key(expected), "{expected} in {names:?}");
    }
    assert_eq!(written["entries"].as_array().unwrap().len(), files.len());

    let status: serde_json::Value =
        serde_json::from_str(&files["support-bundle/status.json"]).unwrap();
    assert_eq!(status["stacks"][0]["stack"], "vault", "{status}");
    assert_eq!(status["stacks"][0]["lastAttempt"]["outcome"], "failed");
    let state: serde_json::Value =
        serde_json::from_str(&files["support-bundle/state-resources.json"]).unwrap();
    let addresses: Vec<&str> = state["vault"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    assert_eq!(
        addresses,
        [
            "terraform_data.api",
            "terraform_data.db",
            "terraform_data.pin"
        ]
    );
    let versions: serde_json::Value =
        serde_json::from_str(&files["support-bundle/versions.json"]).unwrap();
    assert_eq!(versions["engine"]["name"], "terraform", "{versions}");
    assert!(versions["engine"]["version"]
        .as_str()
        .unwrap()
        .starts_with('1'));
    let receipts = &files["support-bundle/receipts.json"];
    assert!(receipts.contains("secret-in-state"), "{receipts}");
    // The failed run's engine output is there, under its receipt's id.
    let failed_log = files
        .keys()
        .find(|name| name.starts_with("support-bundle/last-failed-run/"))
        .unwrap_or_else(|| panic!("no engine output in {names:?}"));
    assert!(
        files[failed_log].contains("Apply complete"),
        "{}",
        files[failed_log]
    );
    assert!(failed.stderr.contains(
        failed_log
            .trim_start_matches("support-bundle/last-failed-run/")
            .trim_end_matches(".log")
    ));

    // Every byte searched: the inputs' secret, the environment's and the state's.
    let everything = String::from_utf8_lossy(&raw);
    for secret in [DB_PASSWORD, API_TOKEN, AWS_SECRET, OTHER_PASSWORD] {
        assert!(
            !everything.contains(secret),
            "`{secret}` is in the support bundle"
        );
    }
}
