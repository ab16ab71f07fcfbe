//! `stackpack check` as the CLI runs it (the command module compiled into this test,
//! since `main.rs` dispatches to it): exit codes and formats on the example repository.

use crate::acme;
// Relative to this file's folder, `tests/it/`.
#[path = "../../src/commands/check.rs"]
mod command;

use acme::Repo;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: command::CheckArgs,
}

/// The exit code `stackpack check` would end with (an error is reported as its code).
fn run(repo: &Repo, flags: &[&str]) -> Result<u8, stackpack_packager::Error> {
    let mut argv = vec!["stackpack-check", "--repo", repo.root.to_str().unwrap()];
    argv.extend_from_slice(flags);
    command::run(&Cli::parse_from(argv).args).map(|status| status.code())
}

#[test]
fn exit_codes_follow_the_requested_bump() {
    let repo = Repo::new();
    repo.edit("modules/cluster/variables.tf", |t| {
        t.replace("default     = 3", "default     = 5")
    });
    let before = repo.commit("bigger system node group");

    assert_eq!(
        run(&repo, &["--against", &before]).unwrap(),
        0,
        "no bump asked: report only"
    );
    assert_eq!(
        run(&repo, &["--against", &before, "--bump", "minor"]).unwrap(),
        1
    );
    assert_eq!(
        run(
            &repo,
            &[
                "--against",
                &before,
                "--bump",
                "major",
                "--format",
                "github"
            ]
        )
        .unwrap(),
        0
    );
    assert_eq!(
        run(&repo, &["--against", "HEAD~1", "--bump", "patch", "--json"]).unwrap(),
        1
    );
    // Nothing changed since HEAD.
    assert_eq!(
        run(&repo, &["--against", "HEAD", "--bump", "patch"]).unwrap(),
        0
    );

    let error = run(&repo, &["--against", "no-such-ref"]).unwrap_err();
    assert_eq!(error.exit_code(), 2);
}

#[test]
fn lints_fail_the_check() {
    let repo = Repo::new();
    // Not the stack's inputs file, so that only the lint (not customer impact) fails.
    repo.edit("customers/globex/notes.tfvars", |t| {
        t + "db_password          = \"s3cr3t-value\"\n"
    });
    repo.commit("oops");
    assert_eq!(run(&repo, &["--against", "HEAD"]).unwrap(), 1);
    assert_eq!(run(&repo, &["--against", "HEAD", "--no-lint"]).unwrap(), 0);
}

#[test]
fn last_release_without_releases_checks_every_stack_as_new() {
    let repo = Repo::new();
    assert_eq!(run(&repo, &["--bump", "patch"]).unwrap(), 0);
}
