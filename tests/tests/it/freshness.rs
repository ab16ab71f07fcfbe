//! Freeze protection across the programs: `stackpack publish` signs each stack's
//! "newest stable version" statement; `stackpack-runner pull` reports it, and with
//! `max-latest-age` in its policy refuses a statement older than that (a registry
//! that keeps serving an old state). Real CNCF Distribution on 127.0.0.1.

use std::path::Path;
use std::process::Command;

use stackpack_test_support::servers::Distribution;
use stackpack_test_support::{binary, copy_dir, example_dir, git, use_provider_mirror, Run};

fn run(program: &str, dir: &Path, args: &[&str]) -> Run {
    Run::from(
        Command::new(binary(program))
            .current_dir(dir)
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .output()
            .unwrap(),
    )
}

#[test]
fn a_pull_reports_the_signed_newest_version_and_refuses_a_statement_older_than_the_policy() {
    use_provider_mirror();
    let Some(registry) = Distribution::start() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("acme-infra");
    copy_dir(&example_dir(), &repo);
    std::fs::write(repo.join(".gitignore"), ".stackpack/\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let key = work.path().join("vendor");
    run(
        "stackpack",
        work.path(),
        &["keygen", "--out", key.to_str().unwrap()],
    )
    .ok();
    let address = format!("{}/acme", registry.host());
    run(
        "stackpack",
        &repo,
        &[
            "publish",
            "--registry",
            &address,
            "--insecure",
            "--no-modules",
            "--key",
            work.path().join("vendor.key").to_str().unwrap(),
        ],
    )
    .ok();

    let home = work.path().join("home");
    let runner = |args: &[&str]| {
        let mut all = vec!["--home", home.to_str().unwrap()];
        all.extend_from_slice(args);
        run("stackpack-runner", work.path(), &all)
    };
    runner(&["init", "--customer", "globex"]).ok();
    runner(&[
        "trust",
        "add",
        work.path().join("vendor.pub").to_str().unwrap(),
    ])
    .ok();
    let reference = format!("{address}/stacks/data-plane:0.1.0");
    let pulled = runner(&["pull", &reference, "--insecure"]).ok();
    assert!(
        pulled
            .stderr
            .contains("the vendor's newest stable `data-plane` is `0.1.0`"),
        "{}",
        pulled.stderr
    );

    // A policy that wants statements at most a second old: the one published above
    // is older than that by the time of the next pull.
    let config = home.join("runner.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("[policy]", "[policy]\nmax-latest-age = \"1s\""),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let refused = runner(&["pull", &reference, "--insecure"]).code(1);
    assert!(
        refused.stderr.contains("may be frozen"),
        "{}",
        refused.stderr
    );

    // A fresh publish run (nothing new to publish) signs a fresh statement.
    run(
        "stackpack",
        &repo,
        &[
            "publish",
            "--registry",
            &address,
            "--insecure",
            "--no-modules",
            "--key",
            work.path().join("vendor.key").to_str().unwrap(),
        ],
    )
    .ok();
    std::fs::write(
        &config,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("max-latest-age = \"1s\"", "max-latest-age = \"1h\""),
    )
    .unwrap();
    runner(&["pull", &reference, "--insecure"]).ok();
}
