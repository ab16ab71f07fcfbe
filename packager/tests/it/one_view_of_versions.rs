//! `version` and `check --against last-release` read the registry `publish` pushes to,
//! so that a fresh clone agrees with `publish`; a registry that cannot be reached at
//! all leaves them on the local layout with a warning naming it, and one that answers
//! and refuses (a token, plain HTTP without `--insecure`) is an error, as for `publish`.

use crate::common;

use common::servers::{Distribution, OurRegistry};
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
fn a_closed_port_leaves_versions_local_with_a_warning_naming_the_registry() {
    let repo = TestRepo::new();
    let port = common::servers::free_port();
    let address = format!("127.0.0.1:{port}/acme");
    for command in ["version", "check"] {
        let run = repo
            .run(&[command, "--insecure", "--registry", &address])
            .ok();
        assert!(
            run.stderr.contains("warning")
                && run
                    .stderr
                    .contains(&format!("`{address}` cannot be reached"))
                && run.stderr.contains("versions come from the local layout"),
            "{command}: {}",
            run.stderr
        );
    }
}

/// `stackpack COMMAND --registry HOST/acme [extra]` with `STACKPACK_REGISTRY_TOKEN`.
fn run_with_token(
    repo: &TestRepo,
    command: &str,
    host: &str,
    token: &str,
    extra: &[&str],
) -> common::Run {
    let address = format!("{host}/acme");
    let mut args = vec![command, "--registry", &address];
    args.extend_from_slice(extra);
    common::Run::from_output(
        std::process::Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args(&args)
            .env("STACKPACK_REGISTRY_TOKEN", token)
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_HEAD_REF")
            .output()
            .unwrap(),
    )
}

#[test]
fn a_refused_token_is_an_error_with_the_publish_hint_not_a_fallback() {
    let registry = OurRegistry::start();
    let repo = TestRepo::new();
    for command in ["version", "check"] {
        let run = run_with_token(
            &repo,
            command,
            &registry.host(),
            "not-a-real-token",
            &["--insecure"],
        );
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "registry `{}` refused a bearer token",
                registry.host()
            )) && run.stderr.contains("hint: the token given was refused")
                && run.stderr.contains("STACKPACK_REGISTRY_TOKEN"),
            "{command}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("cannot be reached"),
            "{command}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("not-a-real-token"),
            "the secret was printed"
        );
    }
    // The right token reads the registry: no fallback, no warning.
    let run = run_with_token(
        &repo,
        "version",
        &registry.host(),
        &registry.publisher_token(),
        &["--insecure", "--json"],
    )
    .ok();
    assert!(!run.stderr.contains("local layout"), "{}", run.stderr);
}

#[test]
fn a_plain_http_registry_without_insecure_is_an_error_saying_to_add_it() {
    let registry = OurRegistry::start();
    let repo = TestRepo::new();
    for command in ["version", "check"] {
        let run = run_with_token(
            &repo,
            command,
            &registry.host(),
            &registry.publisher_token(),
            &[],
        );
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!("`{}` speaks plain HTTP", registry.host()))
                && run.stderr.contains("hint: add `--insecure`"),
            "{command}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("InvalidContentType"),
            "{command}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("cannot be reached"),
            "{command}: {}",
            run.stderr
        );
    }
}
