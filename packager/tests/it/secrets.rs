//! A signing key is a secret: given where a path belongs it is refused without being
//! printed; given as PEM in the variable `stackpack.toml` names, it is used; a named
//! variable that is unset is named in the error.

use crate::common;

use std::process::Command;

use common::{Run, TestRepo};

fn build(repo: &TestRepo, key_flag: Option<&str>, variable: Option<&str>) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stackpack"));
    command
        .current_dir(&repo.dir)
        .args(["build"])
        .env("NO_COLOR", "1");
    if let Some(key) = key_flag {
        command.args(["--key", key]);
    }
    match variable {
        Some(value) => command.env("STACKPACK_SIGNING_KEY", value),
        None => command.env_remove("STACKPACK_SIGNING_KEY"),
    };
    Run::from(command.output().unwrap())
}

#[test]
fn a_key_given_where_its_path_belongs_is_refused_and_never_printed() {
    let repo = TestRepo::new();
    let pem = std::fs::read_to_string(&repo.key).unwrap();
    let body: String = pem.lines().nth(1).unwrap().to_string();
    let run = build(&repo, Some(&pem), None).code(2);
    assert!(run.stderr.contains("not shown"), "{}", run.stderr);
    assert!(
        !run.stderr.contains(&body),
        "the key was printed: {}",
        run.stderr
    );
    assert!(!run.stdout.contains(&body));
}

#[test]
fn the_pem_in_the_variable_stackpack_toml_names_is_used_and_an_unset_one_is_named() {
    let repo = TestRepo::new();
    let pem = std::fs::read_to_string(&repo.key).unwrap();
    let body: String = pem.lines().nth(1).unwrap().to_string();
    let run = build(&repo, None, Some(&pem)).ok();
    assert!(
        !run.stderr.contains(&body),
        "the key was printed: {}",
        run.stderr
    );
    assert!(!run.stdout.contains(&body));
    let unset = build(&repo, None, None).code(2);
    assert!(
        unset
            .stderr
            .contains("names `env:STACKPACK_SIGNING_KEY`, and `STACKPACK_SIGNING_KEY` is not set"),
        "{}",
        unset.stderr
    );
}
