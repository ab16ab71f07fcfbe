//! `serve --config FILE`: one TOML file configures a registry (every replica reads
//! the same one), the command line wins over it, and a typo or a missing data
//! folder is refused before anything starts.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::*;
use stackpack_test_support::binary;
use stackpack_test_support::servers::wait_for_port;

/// A `serve` started with the arguments given alone; killed when dropped.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(args: &[&str], port: u16) -> Serving {
    let child = Command::new(binary("stackpack-registry"))
        .arg("serve")
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let serving = Serving(child);
    wait_for_port(port);
    serving
}

fn serve_fails(args: &[&str]) -> Output {
    Command::new(binary("stackpack-registry"))
        .arg("serve")
        .args(args)
        .output()
        .unwrap()
}

fn alert_list(data: &Path) -> serde_json::Value {
    let out = Command::new(binary("stackpack-registry"))
        .args(["alert", "list", "--json", "--data"])
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_config_file_configures_serve_and_the_command_line_wins_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (from_file, from_flag) = (free_port(), free_port());
    let config = dir.path().join("registry.toml");
    std::fs::write(
        &config,
        format!(
            r#"# one file for every replica
data = "{}"
listen = "127.0.0.1:{from_file}"
anonymous-pull = true
prerelease-tags = "immutable"
silent-after = "2d"

[[alert]]
webhook = "http://127.0.0.1:9/hook"
on = ["failed", "drifted"]
"#,
            data.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let serving = serve(&["--config", config], from_file);
    let url = format!("http://127.0.0.1:{from_file}");
    // anonymous-pull from the file: `/v2/` answers without a token.
    assert_eq!(send("GET", &format!("{url}/v2/"), &[], None).status, 200);
    let alerts = alert_list(&data);
    assert_eq!(alerts[0]["webhook"], "http://127.0.0.1:9/hook");
    assert_eq!(alerts[0]["source"], "config");
    assert_eq!(
        alerts[0]["events"],
        serde_json::json!(["failed", "drifted"])
    );
    drop(serving);

    // The command line wins: another address than the file's, and a second webhook
    // beside the file's.
    let _serving = serve(
        &[
            "--config",
            config,
            "--listen",
            &format!("127.0.0.1:{from_flag}"),
            "--alert",
            "silent=http://127.0.0.1:9/other",
        ],
        from_flag,
    );
    let r = send(
        "GET",
        &format!("http://127.0.0.1:{from_flag}/v2/"),
        &[],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(alert_list(&data).as_array().unwrap().len(), 2);
}

#[test]
fn a_typo_in_the_config_file_is_refused_naming_the_key_and_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("registry.toml");
    std::fs::write(
        &config,
        format!(
            "data = \"{}\"\nanonymus-pull = true\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let out = serve_fails(&["--config", config.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("anonymus-pull"), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(!dir.path().join("data").exists(), "nothing was made");

    // A wrong type and a bad webhook are named too.
    std::fs::write(&config, "data = \"d\"\nmax-blob-bytes = \"big\"\n").unwrap();
    let out = serve_fails(&["--config", config.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    std::fs::write(
        &config,
        "data = \"d\"\n[[alert]]\nwebhook = \"ftp://x\"\non = [\"failed\"]\n",
    )
    .unwrap();
    let out = serve_fails(&["--config", config.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("[[alert]]"), "{stderr}");

    // A pool size the flag would refuse is refused from the file too, not changed.
    let data = dir.path().join("pool-data");
    std::fs::write(
        &config,
        format!("data = \"{}\"\ndatabase-connections = 0\n", data.display()),
    )
    .unwrap();
    let out = serve_fails(&["--config", config.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("database-connections = 0"), "{stderr}");
    assert!(stderr.contains("1 to 256"), "{stderr}");
    assert!(!data.exists(), "nothing was made");
}

#[test]
fn serve_without_a_data_folder_here_or_in_the_file_says_where_to_give_one() {
    let out = serve_fails(&["--listen", "127.0.0.1:0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--data"), "{stderr}");
    let out = serve_fails(&["--config", "/nonexistent/registry.toml"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/registry.toml"), "{stderr}");
}
