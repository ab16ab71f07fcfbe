//! Administration: `token list`, `token revoke`, tokens that expire, customers
//! registered with their environment.

use crate::common;

use std::process::Command;

use common::*;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Creates a token with `extra` arguments; returns (token, id).
fn token_with(server: &OurRegistry, role: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["token", "create", "--role", role, "--json"];
    args.extend_from_slice(extra);
    let out = cli(server, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["token"].as_str().unwrap().to_string(),
        v["id"].as_str().unwrap().to_string(),
    )
}

fn versions(server: &OurRegistry, token: &str) -> Resp {
    Client::new(server.url(), Some(token.to_string())).req(
        "GET",
        "/api/v1/support/versions",
        &[],
        None,
    )
}

#[test]
fn token_list_shows_role_customer_expiry_and_last_use_but_never_the_secret() {
    let server = OurRegistry::start();
    let (support, support_id) = token_with(&server, "support", &["--expires-in", "30d"]);
    let (customer, _) = token_with(&server, "customer", &["--customer", "globex"]);
    let out = cli(&server, &["token", "list", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains(&support) && !stdout.contains(&customer));
    assert!(!stdout.to_lowercase().contains("hash"), "{stdout}");
    let list: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{stdout}");
    let support_row = rows
        .iter()
        .find(|r| r["id"] == support_id.as_str())
        .unwrap();
    assert_eq!(support_row["role"], "support");
    assert_eq!(support_row["status"], "active");
    assert!(support_row["expiresAt"].as_str().unwrap().ends_with('Z'));
    let customer_row = rows.iter().find(|r| r["role"] == "customer").unwrap();
    assert_eq!(customer_row["customer"], "globex");
    assert!(customer_row["expiresAt"].is_null());

    // Using a token records when (in the background, within a moment).
    assert!(customer_row["lastUsed"].is_null());
    assert_eq!(versions(&server, &support).status, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let list: serde_json::Value =
            serde_json::from_slice(&cli(&server, &["token", "list", "--json"]).stdout).unwrap();
        let row = list
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == support_id.as_str())
            .unwrap();
        if row["lastUsed"].is_string() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "lastUsed never written: {row}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    let out = cli(&server, &["token", "list"]);
    let table = text(&out.stdout);
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains(&support_id) && table.contains("never"),
        "{table}"
    );
    assert!(!table.contains(&support), "{table}");
}

#[test]
fn a_revoked_token_is_refused_at_once_with_401() {
    let server = OurRegistry::start();
    let (support, id) = token_with(&server, "support", &[]);
    assert_eq!(versions(&server, &support).status, 200);
    let out = cli(&server, &["token", "revoke", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains(&support));
    let r = versions(&server, &support);
    assert_eq!(r.status, 401, "{}", text(&r.body));
    assert!(text(&r.body).contains("was revoked"), "{}", text(&r.body));
    assert!(!text(&r.body).contains(&support));
    let list: serde_json::Value =
        serde_json::from_slice(&cli(&server, &["token", "list", "--json"]).stdout).unwrap();
    assert_eq!(list[0]["status"], "revoked");

    let out = cli(&server, &["token", "revoke", "000000000000"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`000000000000`") && stderr.contains("hint:"),
        "{stderr}"
    );
}

/// Guards the pull's one-statement path (`manifests::get::prefetched`), which reads
/// a token and the manifest together: the manifest never leaves without the token.
#[test]
fn a_manifest_pull_reads_its_token_with_it_and_a_revoked_token_gets_neither() {
    let server = OurRegistry::start();
    let (admin, _) = token_with(&server, "admin", &[]);
    let (manifest, digest) =
        Client::new(server.url(), Some(admin)).push_image("acme/app", "1.0.0", 7);
    let (reader, id) = token_with(&server, "reader", &[]);
    let client = Client::new(server.url(), Some(reader.clone()));
    for path in [
        "/v2/acme/app/manifests/1.0.0",
        &format!("/v2/acme/app/manifests/{digest}"),
    ] {
        let r = client.req("GET", path, &[], None);
        assert_eq!(r.status, 200, "{path}: {}", text(&r.body));
        assert_eq!(r.body, manifest);
        assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
    }
    for (path, status) in [
        ("/v2/acme/app/manifests/2.0.0", 404),
        ("/v2/acme/other/manifests/1.0.0", 404),
        ("/v2/acme/app/manifests/sha256:00", 400),
        ("/v2/Acme/App/manifests/1.0.0", 400),
    ] {
        let r = client.req("GET", path, &[], None);
        assert_eq!(r.status, status, "{path}: {}", text(&r.body));
    }
    let out = cli(&server, &["token", "revoke", &id]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for path in [
        "/v2/acme/app/manifests/1.0.0",
        &format!("/v2/acme/app/manifests/{digest}"),
    ] {
        for method in ["GET", "HEAD"] {
            let r = client.req(method, path, &[], None);
            assert_eq!(r.status, 401, "{method} {path}");
            assert!(r.header("www-authenticate").is_some(), "{method} {path}");
            assert_ne!(r.body, manifest);
            assert!(
                r.header("docker-content-digest").is_none(),
                "{method} {path}"
            );
        }
    }
    let r = client.req("GET", "/v2/acme/app/manifests/1.0.0", &[], None);
    assert!(text(&r.body).contains("was revoked"), "{}", text(&r.body));
}

#[test]
fn an_expired_token_is_refused_with_a_clear_message() {
    let server = OurRegistry::start();
    let (support, _) = token_with(&server, "support", &["--expires-in", "1s"]);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let r = versions(&server, &support);
    assert_eq!(r.status, 401, "{}", text(&r.body));
    let body = text(&r.body);
    assert!(body.contains("expired at"), "{body}");
    assert!(body.contains("token create"), "{body}");

    let out = cli(
        &server,
        &[
            "token",
            "create",
            "--role",
            "reader",
            "--expires-in",
            "soon",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`soon`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_data_folder_and_its_database_are_private_under_umask_022() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    // `serve` under the umask of a default login shell.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(["serve", "--data"])
        .arg(&data)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    stackpack_test_support::servers::wait_for_port(port);
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let database = data.join("registry.db");
    let modes = (mode(&data), mode(&database));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(modes, (0o700, 0o600), "data folder, database");
    for journal in ["registry.db-wal", "registry.db-shm"] {
        let path = data.join(journal);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{journal}");
        }
    }
}

#[test]
fn three_publisher_tokens_are_told_apart_by_their_names_in_token_list() {
    let server = OurRegistry::start();
    let (_, ci) = token_with(&server, "publisher", &["--name", "ci"]);
    let (_, laptop) = token_with(&server, "publisher", &["--name", "release laptop"]);
    let (_, unnamed) = token_with(&server, "publisher", &[]);
    let list: serde_json::Value =
        serde_json::from_slice(&cli(&server, &["token", "list", "--json"]).stdout).unwrap();
    let name_of = |id: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()["name"]
            .clone()
    };
    assert_eq!(name_of(&ci), "ci");
    assert_eq!(name_of(&laptop), "release laptop");
    assert!(name_of(&unnamed).is_null(), "{list}");

    let table = text(&cli(&server, &["token", "list"]).stdout);
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.contains("NAME"),
        "{table}"
    );
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap()
            .to_string()
    };
    assert!(row(&ci).contains(" ci "), "{table}");
    assert!(row(&laptop).contains("release laptop"), "{table}");
}

#[test]
fn a_token_name_already_taken_even_by_a_revoked_token_is_refused_and_nothing_is_created() {
    let server = OurRegistry::start();
    let (_, ci) = token_with(&server, "publisher", &["--name", "ci"]);
    assert!(cli(&server, &["token", "revoke", &ci]).status.success());
    let out = cli(
        &server,
        &["token", "create", "--role", "publisher", "--name", "ci"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("a token named `ci` already exists") && stderr.contains("hint:"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no token printed");
    let list: serde_json::Value =
        serde_json::from_slice(&cli(&server, &["token", "list", "--json"]).stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn a_token_name_with_a_control_character_or_too_long_is_a_usage_error() {
    let server = OurRegistry::start();
    let long = "n".repeat(65);
    for bad in ["ci\tjob", "\u{1b}[2Jci", " ci", "", long.as_str()] {
        let out = cli(
            &server,
            &["token", "create", "--role", "publisher", "--name", bad],
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(
            stderr.contains("token name") && stderr.contains("hint:"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
    let list: serde_json::Value =
        serde_json::from_slice(&cli(&server, &["token", "list", "--json"]).stdout).unwrap();
    assert!(list.as_array().unwrap().is_empty(), "{list}");
}

/// Copies a folder tree (the blobs an operator copies after the database).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// An operator backs the registry up while it serves; a registry made from the
/// backup and the blobs copied after it answers as the original did, to the same
/// tokens. A backup never replaces a file, leaves nothing half-written beside it,
/// and is private whatever the umask.
#[test]
fn a_backup_taken_while_serving_restores_a_registry_that_answers_the_same() {
    use std::os::unix::fs::PermissionsExt;
    let server = OurRegistry::start();
    let token = server.token("publisher", None);
    let client = Client::new(server.url(), Some(token.clone()));
    let (manifest, digest) = client.push_image("acme/app", "1.0.0", 3);
    register_customers(&server, ["globex"]);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry-backup.db");
    let out = cli_ok(
        &server,
        &["backup", "--to", file.to_str().unwrap(), "--json"],
    );
    let summary = json(&out);
    assert_eq!(summary["file"], file.display().to_string());
    let rows = |table: &str| {
        summary["counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["table"] == table)
            .unwrap_or_else(|| panic!("no {table} in {summary}"))["rows"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        (rows("manifests"), rows("tags"), rows("customers")),
        (1, 1, 1)
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    // Written while serving: the registry still takes pushes afterwards.
    client.push_image("acme/app", "1.0.1", 4);
    let again = cli(&server, &["backup", "--to", file.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["registry-backup.db".to_string()],
        "no partial file is left"
    );

    let restored = dir.path().join("restored");
    std::fs::create_dir(&restored).unwrap();
    std::fs::copy(&file, restored.join("registry.db")).unwrap();
    copy_tree(&server.data.join("blobs"), &restored.join("blobs"));
    let back = OurRegistry::start_on(restored);
    let restored_client = Client::new(back.url(), Some(token));
    let r = restored_client.req(
        "GET",
        "/v2/acme/app/manifests/1.0.0",
        &[("Accept", OCI_MANIFEST)],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, manifest);
    assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
    // What came after the backup is not in it.
    let later = restored_client.req(
        "GET",
        "/v2/acme/app/manifests/1.0.1",
        &[("Accept", OCI_MANIFEST)],
        None,
    );
    assert_eq!(later.status, 404);
}

#[test]
fn a_backup_of_a_folder_without_a_registry_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["backup", "--data"])
        .arg(dir.path().join("nothing"))
        .arg("--to")
        .arg(dir.path().join("b.db"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("there is no registry in"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("b.db").exists());
}
