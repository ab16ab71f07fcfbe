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

/// The files of `data-plane@version` as the built bundle lists them.
fn packed_files(repo: &TestRepo, version: &str) -> Vec<String> {
    let inspect = repo
        .run(&[
            "inspect",
            &format!("{}:data-plane@{version}", repo.layout().display()),
            "--json",
        ])
        .ok()
        .json();
    inspect["config"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dotfiles_stay_out_of_the_bundle_and_one_stack_toml_includes_is_linted_for_secrets() {
    let repo = TestRepo::new();
    repo.write(
        "stacks/data-plane/.env",
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n",
    );
    repo.write(
        "stacks/data-plane/.hidden/creds.tfvars",
        "db_password = \"hunter2hunter2\"\n",
    );
    repo.write(
        "stacks/data-plane/.secret.tf",
        "locals {\n  access_key = \"AKIAIOSFODNN7EXAMPLE\"\n}\n",
    );
    repo.commit("secrets beside the code");
    let run = repo.run(&["build", "--json", "--key", repo.key.to_str().unwrap()]);
    let report = run.ok().json();
    let version = TestRepo::built(&report)
        .into_iter()
        .find(|(stack, _)| stack == "data-plane")
        .expect("data-plane was built")
        .1;
    let files = packed_files(&repo, &version);
    for hidden in [".env", ".hidden/creds.tfvars", ".secret.tf"] {
        let path = format!("stacks/data-plane/{hidden}");
        assert!(!files.contains(&path), "{path} was packed: {files:?}");
    }
    // The engine reads the lock file: it always travels.
    assert!(
        files.contains(&"stacks/data-plane/.terraform.lock.hcl".to_string()),
        "{files:?}"
    );

    // Named in `include`, a dotfile is packed, so it is linted like any other.
    repo.append("stacks/data-plane/stack.toml", "include = [\".env\"]\n");
    repo.commit("pack .env");
    let refused = repo
        .run(&["build", "--key", repo.key.to_str().unwrap()])
        .code(1);
    assert!(
        refused.stderr.contains("stacks/data-plane/.env:1")
            && refused.stderr.contains("no-secret-literals"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("AKIAIOSFODNN7EXAMPLE"),
        "{}",
        refused.stderr
    );
}

/// Sets `repository` in the example's `stackpack.toml` to `address`, and commits.
fn set_repository(repo: &TestRepo, address: &str) {
    let path = repo.dir.join("stackpack.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let current = text
        .lines()
        .find(|l| l.starts_with("repository = "))
        .expect("the example names its repository");
    std::fs::write(
        &path,
        text.replace(current, &format!("repository = \"{address}\"")),
    )
    .unwrap();
    repo.commit("repository address");
}

#[test]
fn a_credential_in_the_repository_address_never_reaches_a_bundle() {
    let repo = TestRepo::new();
    set_repository(
        &repo,
        "https://ci:s3cret@git.acme.example/platform/infra.git?private_token=qtoken123#main",
    );
    let report = repo.build(&[]);
    let version = TestRepo::built(&report)
        .into_iter()
        .find(|(stack, _)| stack == "data-plane")
        .expect("data-plane was built")
        .1;
    let inspect = repo
        .run(&[
            "inspect",
            &format!("{}:data-plane@{version}", repo.layout().display()),
            "--json",
        ])
        .ok()
        .json();
    let address = "https://git.acme.example/platform/infra.git";
    assert_eq!(
        inspect["config"]["source"]["repository"], address,
        "{inspect}"
    );
    assert_eq!(
        inspect["manifest"]["annotations"]["org.opencontainers.image.source"], address,
        "{inspect}"
    );
    let text = inspect.to_string();
    assert!(
        !text.contains("s3cret") && !text.contains("qtoken123"),
        "{text}"
    );

    // A token left in the path cannot be stripped: the build is refused.
    let token = format!("ghp_{}", "Zq3".repeat(12));
    set_repository(
        &repo,
        &format!("https://git.acme.example/{token}/infra.git"),
    );
    repo.append("stacks/data-plane/main.tf", "\n# a change to build\n");
    repo.commit("change");
    let refused = repo
        .run(&["build", "--key", repo.key.to_str().unwrap()])
        .code(2);
    assert!(
        refused
            .stderr
            .contains("looks like it holds a GitHub token"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains(&token), "{}", refused.stderr);
}
