//! `version` and `check --against last-release` read the registry `publish` pushes to,
//! so that a fresh clone agrees with `publish`; without an answer they fall back to
//! the local layout and say so.

use crate::common;

use common::servers::Distribution;
use common::{git, stackpack, TestRepo};

fn publish(repo: &TestRepo, host: &str, extra: &[&str]) -> common::Run {
    let registry = format!("{host}/acme");
    let mut args = vec![
        "publish",
        "--json",
        "--insecure",
        "--registry",
        &registry,
        "--key",
        repo.key.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    repo.run(&args)
}

/// Publishes `data-plane@0.1.0`, commits a patch to it, and clones the repository
/// afresh (no `.stackpack/` of earlier builds). Returns the clone's folder.
fn published_then_patched_and_cloned(repo: &TestRepo, host: &str) -> std::path::PathBuf {
    publish(repo, host, &["--stack", "data-plane"]).ok();
    let path = "stacks/data-plane/variables.tf";
    let text = std::fs::read_to_string(repo.dir.join(path)).unwrap();
    repo.write(
        path,
        &text.replacen(
            "Region of the data plane.",
            "Region of the data plane (AWS).",
            1,
        ),
    );
    repo.commit("a clearer description");
    let clone = repo.temp.path().join("fresh-clone");
    git(
        repo.temp.path(),
        &[
            "clone",
            "-q",
            repo.dir.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    assert!(!clone.join(".stackpack").exists());
    clone
}

fn data_plane(json: &serde_json::Value) -> serde_json::Value {
    json["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "data-plane")
        .cloned()
        .unwrap()
}

#[test]
fn version_on_a_fresh_clone_reads_the_last_release_from_the_registry() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let clone = published_then_patched_and_cloned(&repo, &registry.host());
    let address = format!("{}/acme", registry.host());
    let run = stackpack(
        &clone,
        &["version", "--json", "--insecure", "--registry", &address],
    )
    .ok();
    let json = run.json();
    let stack = data_plane(&json);
    assert_eq!(stack["lastStable"], "0.1.0", "{json}");
    assert_eq!(stack["next"], "0.1.1", "what `publish` would take");
    assert!(json["releases"].as_str().unwrap().contains("registry"));
    assert!(!run.stderr.contains("local layout"), "{}", run.stderr);
}

#[test]
fn check_on_a_fresh_clone_compares_with_the_release_in_the_registry() {
    let registry = Distribution::require();
    let repo = TestRepo::new();
    let clone = published_then_patched_and_cloned(&repo, &registry.host());
    let address = format!("{}/acme", registry.host());
    let run = stackpack(
        &clone,
        &["check", "--json", "--insecure", "--registry", &address],
    )
    .ok();
    let json = run.json();
    assert!(
        json["against"].as_str().unwrap().contains("registry"),
        "{json}"
    );
    let unit = json["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["path"] == "stacks/data-plane")
        .cloned()
        .unwrap();
    assert_eq!(unit["required"], "patch");
    assert!(
        unit["warnings"].as_array().unwrap().is_empty(),
        "compared with 0.1.0, not as a first release: {unit}"
    );
}

#[test]
fn without_a_reachable_registry_versions_are_said_to_be_local() {
    let repo = TestRepo::new();
    for command in ["version", "check"] {
        let run = repo
            .run(&[command, "--insecure", "--registry", "127.0.0.1:1/acme"])
            .ok();
        assert!(
            run.stderr.contains("cannot be reached")
                && run.stderr.contains("versions come from the local layout"),
            "{command}: {}",
            run.stderr
        );
    }
}
