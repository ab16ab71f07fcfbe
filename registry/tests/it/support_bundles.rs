//! `support-bundle import --customer C FILE`: a runner's support bundle kept for a
//! customer, linked from the customer's support page and served back byte for byte;
//! a file that is not one, one too large, or one for an unknown customer refused.

use crate::common::*;
use crate::ui::{get, html, sign_in};

/// A small tar.gz as `stackpack-runner support-bundle` writes one.
fn bundle_file(dir: &std::path::Path) -> std::path::PathBuf {
    let inside = dir.join("support-bundle");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(inside.join("status.json"), "{\"stacks\": []}\n").unwrap();
    let file = dir.join("support.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&file)
        .arg("-C")
        .arg(dir)
        .arg("support-bundle")
        .status()
        .unwrap();
    assert!(status.success());
    file
}

#[test]
fn an_imported_support_bundle_is_linked_from_the_customer_page_and_served_whole() {
    let server = OurRegistry::start();
    cli_ok(
        &server,
        &[
            "customer",
            "add",
            "globex",
            "--name",
            "Globex",
            "--environment",
            "production",
        ],
    );
    let temp = tempfile::tempdir().unwrap();
    let file = bundle_file(temp.path());
    let out = cli_ok(
        &server,
        &[
            "support-bundle",
            "import",
            file.to_str().unwrap(),
            "--customer",
            "globex",
            "--json",
        ],
    );
    let stored: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stored["customer"], "globex");
    let id = stored["id"].as_i64().unwrap();

    let cookie = sign_in(&server, &server.token("support", None));
    let page = html(&get(&server, "/ui/customers/globex", &cookie));
    let link = format!("/ui/customers/globex/support-bundles/{id}");
    assert!(page.contains(&format!("href=\"{link}\"")), "{page}");
    let served = get(&server, &link, &cookie);
    assert_eq!(served.status, 200);
    assert_eq!(served.body, std::fs::read(&file).unwrap());
    // Another customer's number is not this customer's bundle.
    assert_eq!(
        get(&server, "/ui/customers/acme/support-bundles/1", &cookie).status,
        404
    );

    // Not a bundle; a customer the registry does not know.
    let text = temp.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let refused = cli(
        &server,
        &[
            "support-bundle",
            "import",
            text.to_str().unwrap(),
            "--customer",
            "globex",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("is not a support bundle"));
    let unknown = cli(
        &server,
        &[
            "support-bundle",
            "import",
            file.to_str().unwrap(),
            "--customer",
            "wonka",
        ],
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("customer `wonka` is not known"));
}
