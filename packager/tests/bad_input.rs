//! Bad input gets a clear error naming the file and how to fix it, a non-zero exit
//! code, and writes nothing.

mod common;

use common::{stackpack, TestRepo};

fn build(repo: &TestRepo) -> common::Run {
    repo.run(&["build", "--key", repo.key.to_str().unwrap()])
}

fn assert_refused(run: &common::Run, code: i32, needles: &[&str]) {
    assert_eq!(
        run.code, code,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "missing `{needle}` in:\n{}",
            run.stderr
        );
    }
    assert!(run.stderr.contains("hint:"), "no hint in:\n{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn a_stack_folder_without_stack_toml_is_named() {
    let repo = TestRepo::new();
    std::fs::remove_file(repo.dir.join("stacks/data-plane/stack.toml")).unwrap();
    repo.commit("remove stack.toml");
    let run = build(&repo);
    assert_refused(&run, 2, &["`stacks/data-plane`", "stack.toml"]);
    assert!(!repo.layout().exists());
}

#[test]
fn a_module_source_outside_the_repository_is_refused_with_its_line() {
    let repo = TestRepo::new();
    repo.append(
        "stacks/control-plane/main.tf",
        "\nmodule \"escape\" {\n  source = \"../../../outside\"\n}\n",
    );
    repo.commit("escape");
    let run = build(&repo);
    assert_refused(
        &run,
        2,
        &[
            "`../../../outside`",
            "outside the repository",
            "stacks/control-plane/main.tf:",
        ],
    );
}

#[test]
fn a_module_source_to_a_missing_folder_is_refused() {
    let repo = TestRepo::new();
    repo.append(
        "stacks/control-plane/main.tf",
        "\nmodule \"gone\" {\n  source = \"../../modules/gone\"\n}\n",
    );
    repo.commit("gone");
    let run = build(&repo);
    assert_refused(
        &run,
        2,
        &[
            "`modules/gone`",
            "does not exist",
            "stacks/control-plane/main.tf:",
        ],
    );
}

#[test]
fn a_cycle_between_modules_is_refused_and_shown() {
    let repo = TestRepo::new();
    repo.append(
        "modules/network/main.tf",
        "\nmodule \"c\" {\n  source = \"../cluster\"\n}\n",
    );
    repo.append(
        "modules/cluster/main.tf",
        "\nmodule \"n\" {\n  source = \"../network\"\n}\n",
    );
    repo.commit("cycle");
    let run = build(&repo);
    assert_refused(
        &run,
        2,
        &["cycle", "`modules/network`", "`modules/cluster`"],
    );
}

#[test]
fn an_unreadable_or_wrong_key_is_named() {
    let repo = TestRepo::new();
    let run = repo.run(&["build", "--key", "/nonexistent/key.pem"]);
    assert_refused(&run, 2, &["`/nonexistent/key.pem`"]);
    // A public key where the private key belongs.
    let run = repo.run(&["build", "--key", repo.public_key.to_str().unwrap()]);
    assert_refused(&run, 2, &["unusable", "PKCS#8"]);
    let run = repo.run(&["build"]);
    assert_refused(&run, 2, &["no signing key"]);
    assert!(!repo.layout().exists());
}

#[test]
fn a_dirty_worktree_is_refused_unless_allowed_and_never_packed_silently() {
    let repo = TestRepo::new();
    repo.append("modules/network/main.tf", "\n# uncommitted\n");
    let run = build(&repo);
    assert_refused(
        &run,
        1,
        &[
            "uncommitted changes",
            "`modules/network/main.tf`",
            "--allow-dirty",
        ],
    );
    assert!(
        !repo.layout().join("index.json").exists()
            || std::fs::read_to_string(repo.layout().join("index.json"))
                .unwrap()
                .contains("\"manifests\":[]")
    );

    let run = repo
        .run(&[
            "build",
            "--json",
            "--allow-dirty",
            "--key",
            repo.key.to_str().unwrap(),
        ])
        .ok();
    assert!(run.stderr.contains("uncommitted"), "{}", run.stderr);
    let report = run.json();
    assert!(report["stacks"][0]["built"] == true);
    let inspect = repo
        .run(&[
            "inspect",
            &format!("{}:control-plane@0.1.0", repo.layout().display()),
            "--json",
        ])
        .ok()
        .json();
    assert!(inspect["config"]["source"]["commit"]
        .as_str()
        .unwrap()
        .ends_with("-dirty"));
}

#[test]
fn an_untracked_file_is_not_dirt_and_is_not_packed() {
    let repo = TestRepo::new();
    repo.write("stacks/data-plane/notes.txt", "scratch");
    let report = repo.build(&[]);
    assert_eq!(report["stacks"][1]["built"], true);
    let inspect = repo
        .run(&[
            "inspect",
            &format!("{}:data-plane@0.1.0", repo.layout().display()),
            "--json",
        ])
        .ok()
        .json();
    let files: Vec<&str> = inspect["config"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(!files.contains(&"stacks/data-plane/notes.txt"));
    assert!(files.contains(&"modules/network/main.tf"));
}

#[test]
fn not_a_repository_and_missing_config_are_usage_errors() {
    let temp = tempfile::tempdir().unwrap();
    let run = stackpack(temp.path(), &["version"]);
    assert_refused(&run, 2, &["stackpack.toml"]);
    std::fs::write(temp.path().join("stackpack.toml"), "registry = 5\n").unwrap();
    let run = stackpack(temp.path(), &["version"]);
    assert_refused(&run, 2, &["stackpack.toml"]);
}

#[test]
fn an_unknown_flag_exits_2() {
    let temp = tempfile::tempdir().unwrap();
    assert_eq!(stackpack(temp.path(), &["build", "--no-such-flag"]).code, 2);
}
