//! Forged receipts (issue 23, item 3): a receipt carries its own key, so a file of
//! receipts proves nothing about whose they are. A key pinned to one customer is
//! refused for another, a customer's first key is pinned only through a path that
//! names the customer (its own token, or `receipts import --customer`), and a file
//! with one refused receipt stores nothing and pins nothing.

use crate::common;

use common::*;
use stackpack_schema::receipt::SignedReceipt;
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

fn globex_key() -> PrivateKey {
    PrivateKey::from_secret_bytes([61; 32])
}

fn initech_key() -> PrivateKey {
    PrivateKey::from_secret_bytes([62; 32])
}

fn receipt(customer: &str, id: &str, version: &str, key: &PrivateKey) -> SignedReceipt {
    ReceiptBuilder::new(customer, "data-plane", version)
        .id(id)
        .finished_at("2026-02-01T08:00:00Z")
        .sign(key)
}

fn post(server: &OurRegistry, customer: &str, signed: &SignedReceipt) -> Resp {
    Client::new(server.url(), Some(server.token("customer", Some(customer)))).req(
        "POST",
        "/api/v1/receipts",
        &[],
        Some(&signed.to_bytes()),
    )
}

/// Writes `receipts` as the JSON array `receipts export -o` writes.
fn file_of(dir: &tempfile::TempDir, receipts: &[&SignedReceipt]) -> std::path::PathBuf {
    let file = dir.path().join("receipts.json");
    std::fs::write(&file, serde_json::to_vec(receipts).unwrap()).unwrap();
    file
}

fn import(server: &OurRegistry, file: &std::path::Path, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["receipts", "import", file.to_str().unwrap(), "--json"];
    args.extend(flags);
    cli(server, &args)
}

/// Every stored receipt id, oldest first by id.
fn stored(server: &OurRegistry) -> Vec<String> {
    let support = Client::new(server.url(), Some(server.token("support", None)));
    let deployments = support.req("GET", "/api/v1/deployments", &[], None).json();
    let mut ids: Vec<String> = deployments
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["receiptId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_forged_receipt_for_another_customer_in_an_imported_file_is_refused_and_cannot_lock_that_customer_out(
) {
    let server = OurRegistry::start();
    // Globex's runner reports with its token: its key is pinned to globex.
    assert_eq!(
        post(
            &server,
            "globex",
            &receipt("globex", "g-1", "1.0.0", &globex_key())
        )
        .status,
        201
    );
    // Globex's exported file, with one more receipt claiming to be initech's (which
    // has never reported), signed with globex's own installation key.
    let dir = tempfile::tempdir().unwrap();
    let next = receipt("globex", "g-2", "1.1.0", &globex_key());
    let forged = receipt("initech", "forged", "9.9.9", &globex_key());
    let file = file_of(&dir, &[&next, &forged]);
    for flags in [
        &[][..],
        &["--customer", "globex"],
        &["--customer", "initech"],
    ] {
        let out = import(&server, &file, flags);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {stderr}");
        assert!(stderr.contains("nothing was imported"), "{stderr}");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["imported"], false);
        let refused = &report["receipts"][1]["refused"];
        assert_eq!(report["receipts"][1]["receiptId"], "forged");
        assert_eq!(refused["code"], "DENIED", "{report}");
        let message = refused["message"].as_str().unwrap();
        assert!(
            message.contains("`initech`") && message.contains("`globex`"),
            "names both customers: {message}"
        );
        assert!(
            refused["hint"]
                .as_str()
                .unwrap()
                .contains("customer key add initech"),
            "{report}"
        );
    }
    // The whole file was refused: not even globex's own new receipt is stored.
    assert_eq!(stored(&server), ["g-1"]);
    // Initech's real runner is still accepted: globex's key was not pinned to it.
    assert_eq!(
        post(
            &server,
            "initech",
            &receipt("initech", "i-1", "1.0.0", &initech_key())
        )
        .status,
        201
    );
    assert_eq!(stored(&server), ["g-1", "i-1"]);
}

#[test]
fn a_key_pinned_to_one_customer_is_refused_for_another_over_http_until_an_admin_adds_it() {
    let server = OurRegistry::start();
    assert_eq!(
        post(
            &server,
            "globex",
            &receipt("globex", "g-1", "1.0.0", &globex_key())
        )
        .status,
        201
    );
    // Initech's own token, but globex's installation key.
    let r = post(
        &server,
        "initech",
        &receipt("initech", "i-0", "1.0.0", &globex_key()),
    );
    assert_eq!(r.status, 403, "{}", String::from_utf8_lossy(&r.body));
    let error = &r.json()["errors"][0];
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("`initech`") && message.contains("`globex`"),
        "{message}"
    );
    assert!(
        error["detail"]["hint"]
            .as_str()
            .unwrap()
            .contains("customer key add initech"),
        "{error}"
    );
    // Nothing was pinned: initech's own runner still pins its key on first use.
    assert_eq!(
        post(
            &server,
            "initech",
            &receipt("initech", "i-1", "1.0.0", &initech_key())
        )
        .status,
        201
    );
    // If it really is a second installation of initech, an admin says so.
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("globex.pub");
    std::fs::write(&pem, globex_key().public_key().to_pem()).unwrap();
    cli_ok(
        &server,
        &["customer", "key", "add", "initech", pem.to_str().unwrap()],
    );
    assert_eq!(
        post(
            &server,
            "initech",
            &receipt("initech", "i-2", "1.1.0", &globex_key())
        )
        .status,
        201
    );
}

#[test]
fn an_import_without_customer_of_a_key_not_yet_pinned_is_refused_with_a_hint_to_name_the_customer()
{
    let server = OurRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(
        &dir,
        &[&receipt("umbrella", "u-1", "1.0.0", &initech_key())],
    );
    // As a person reads it: the refused receipt, why, and what to do.
    let out = cli(&server, &["receipts", "import", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("receipt `u-1`: refused: customer `umbrella` has no installation key yet"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: if the file came from `umbrella`'s installation, import it with `--customer umbrella`"),
        "{stderr}"
    );
    assert!(stored(&server).is_empty());
}

#[test]
fn an_import_naming_the_customer_pins_its_first_key_and_later_imports_need_no_flag() {
    let server = OurRegistry::start();
    cli_ok(&server, &["customer", "add", "umbrella"]);
    let dir = tempfile::tempdir().unwrap();
    let first = file_of(
        &dir,
        &[&receipt("umbrella", "u-1", "1.0.0", &initech_key())],
    );
    let out = import(&server, &first, &["--customer", "umbrella"]);
    assert_eq!(json(&out)["receipts"][0]["created"], true);
    // The key is pinned: the next file needs no `--customer`, and another key is
    // refused even when the file names the customer.
    let later = file_of(
        &dir,
        &[&receipt("umbrella", "u-2", "1.1.0", &initech_key())],
    );
    assert_eq!(
        json(&import(&server, &later, &[]))["receipts"][0]["created"],
        true
    );
    let other = file_of(&dir, &[&receipt("umbrella", "u-3", "1.2.0", &globex_key())]);
    let out = import(&server, &other, &["--customer", "umbrella"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stored(&server), ["u-1", "u-2"]);
}

/// Issue 23, item 24: a file names its own customer and carries its own key; for a
/// customer never registered nothing else vouches for either.
#[test]
fn an_import_for_a_customer_never_registered_is_refused_and_pins_nothing_until_it_is_added() {
    let server = OurRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(
        &dir,
        &[&receipt("umbrella", "u-1", "1.0.0", &initech_key())],
    );
    let out = import(&server, &file, &["--customer", "umbrella"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let refused = &report["receipts"][0]["refused"];
    assert_eq!(refused["code"], "DENIED", "{report}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("customer `umbrella` is not registered"),
        "{report}"
    );
    assert!(
        refused["hint"]
            .as_str()
            .unwrap()
            .contains("`stackpack-registry customer add umbrella`"),
        "{report}"
    );
    assert!(stored(&server).is_empty());
    let rows = json(&cli_ok(&server, &["fleet", "--json"]));
    assert_eq!(rows, serde_json::json!([]), "no row for umbrella");
    // Registered, the same file imports.
    cli_ok(&server, &["customer", "add", "umbrella"]);
    let out = import(&server, &file, &["--customer", "umbrella"]);
    assert_eq!(json(&out)["receipts"][0]["created"], true);
    let rows = json(&cli_ok(&server, &["fleet", "--json"]));
    assert_eq!(rows[0]["registered"], true, "{rows}");
    assert_eq!(rows[0]["version"], "1.0.0", "{rows}");
}

#[test]
fn a_customer_an_admin_token_reported_for_is_marked_not_registered_in_the_fleet() {
    let server = OurRegistry::start();
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let signed = receipt("umbrella", "u-1", "1.0.0", &initech_key());
    let r = admin.req("POST", "/api/v1/receipts", &[], Some(&signed.to_bytes()));
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let fleet = cli_ok(&server, &["fleet", "--customer", "umbrella"]);
    let fleet = String::from_utf8_lossy(&fleet.stdout);
    assert!(
        fleet.contains("not registered: known only from its receipts"),
        "{fleet}"
    );
    let rows = json(&cli_ok(&server, &["fleet", "--json"]));
    assert_eq!(rows[0]["registered"], false, "{rows}");
}

#[test]
fn a_customer_registered_by_the_vendor_is_not_marked_unregistered_in_the_fleet() {
    let server = OurRegistry::start();
    cli_ok(&server, &["customer", "add", "initech"]);
    assert_eq!(
        post(
            &server,
            "globex",
            &receipt("globex", "g-1", "1.0.0", &globex_key())
        )
        .status,
        201
    );
    let rows = json(&cli_ok(&server, &["fleet", "--json"]));
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r["registered"] == true), "{rows:?}");
}

#[test]
fn a_file_mixing_good_and_forged_receipts_stores_nothing_and_pins_no_key() {
    let server = OurRegistry::start();
    cli_ok(&server, &["customer", "add", "umbrella"]);
    cli_ok(&server, &["customer", "add", "initech"]);
    let dir = tempfile::tempdir().unwrap();
    let good = receipt("umbrella", "u-1", "1.0.0", &globex_key());
    let forged = receipt("initech", "forged", "9.9.9", &globex_key());
    let file = file_of(&dir, &[&good, &forged]);
    let out = import(
        &server,
        &file,
        &["--customer", "umbrella", "--customer", "initech"],
    );
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["receipts"][1]["refused"]["code"], "DENIED",
        "{report}"
    );
    assert!(stored(&server).is_empty());
    // No key was pinned to umbrella: the good receipt alone, without `--customer`,
    // is still refused, and initech's own runner is accepted.
    let alone = file_of(&dir, &[&good]);
    assert_eq!(import(&server, &alone, &[]).status.code(), Some(1));
    assert_eq!(
        post(
            &server,
            "initech",
            &receipt("initech", "i-1", "1.0.0", &initech_key())
        )
        .status,
        201
    );
}
