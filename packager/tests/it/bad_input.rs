//! Bad input gets a clear error naming the file and how to fix it, a non-zero exit
//! code, and writes nothing.
//!
//! The messages are insta snapshots in `tests/it/snapshots/`, with temporary folders
//! redacted. A changed message fails the test and leaves a `.snap.new` to review
//! with `cargo insta review`; with `CI` set (or `INSTA_UPDATE=no`) nothing is
//! written and the mismatch just fails.

use crate::common;

use std::path::Path;

use common::{stackpack, TestRepo};

fn build(repo: &TestRepo) -> common::Run {
    repo.run(&["build", "--key", repo.key.to_str().unwrap()])
}

/// Checks the exit code and returns stderr with `temporary` redacted, for a snapshot.
fn refusal(run: &common::Run, code: i32, temporary: &Path) -> String {
    assert_eq!(
        run.code, code,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    run.stderr_redacted(temporary)
}

#[test]
fn a_stack_folder_without_stack_toml_is_named() {
    let repo = TestRepo::new();
    std::fs::remove_file(repo.dir.join("stacks/data-plane/stack.toml")).unwrap();
    repo.commit("remove stack.toml");
    let run = build(&repo);
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
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
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
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
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
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
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
}

#[test]
fn a_missing_key_file_is_named() {
    let repo = TestRepo::new();
    let run = repo.run(&["build", "--key", "/nonexistent/key.pem"]);
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
    assert!(!repo.layout().exists());
}

#[test]
fn a_public_key_where_the_private_key_belongs_is_unusable() {
    let repo = TestRepo::new();
    let run = repo.run(&["build", "--key", repo.public_key.to_str().unwrap()]);
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
    assert!(!repo.layout().exists());
}

#[test]
fn no_signing_key_at_all_says_how_to_make_one() {
    let repo = TestRepo::new();
    let run = repo.run(&["build"]);
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
    assert!(!repo.layout().exists());
}

#[test]
fn a_syntax_error_in_a_stack_names_the_file_and_line() {
    let repo = TestRepo::new();
    repo.append(
        "stacks/control-plane/main.tf",
        "\nmodule \"broken\" {\n  source = \n",
    );
    repo.commit("broken");
    let run = build(&repo);
    insta::assert_snapshot!(refusal(&run, 2, repo.temp.path()));
}

#[test]
fn a_dirty_worktree_is_refused_and_nothing_is_built() {
    let repo = TestRepo::new();
    repo.append("modules/network/main.tf", "\n# uncommitted\n");
    let run = build(&repo);
    insta::assert_snapshot!(refusal(&run, 1, repo.temp.path()));
    assert!(
        !repo.layout().join("index.json").exists()
            || std::fs::read_to_string(repo.layout().join("index.json"))
                .unwrap()
                .contains("\"manifests\":[]")
    );
}

#[test]
fn allow_dirty_packs_uncommitted_changes_with_a_warning_and_a_dirty_revision() {
    let repo = TestRepo::new();
    repo.append("modules/network/main.tf", "\n# uncommitted\n");
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
    let control_plane = report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stack"] == "control-plane")
        .unwrap();
    assert!(control_plane["built"] == true);
    // Never a plain stable version for uncommitted changes, even on main.
    assert_eq!(control_plane["version"], "0.1.0-dirty.1");
    let inspect = repo
        .run(&[
            "inspect",
            &format!("{}:control-plane@0.1.0-dirty.1", repo.layout().display()),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(inspect["config"]["version"], "0.1.0-dirty.1");
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
    assert!(report["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["stack"] == "data-plane" && s["built"] == true));
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
fn a_folder_without_stackpack_toml_is_a_usage_error() {
    let temp = tempfile::tempdir().unwrap();
    let run = stackpack(temp.path(), &["version"]);
    insta::assert_snapshot!(refusal(&run, 2, temp.path()));
}

#[test]
fn an_invalid_stackpack_toml_is_a_usage_error() {
    let temp = tempfile::tempdir().unwrap();
    std::fs::write(temp.path().join("stackpack.toml"), "registry = 5\n").unwrap();
    let run = stackpack(temp.path(), &["version"]);
    insta::assert_snapshot!(refusal(&run, 2, temp.path()));
}

#[test]
fn an_unknown_flag_exits_2() {
    let temp = tempfile::tempdir().unwrap();
    assert_eq!(stackpack(temp.path(), &["build", "--no-such-flag"]).code, 2);
}

#[test]
fn a_mistyped_flag_is_answered_with_the_similar_one() {
    let dir = tempfile::tempdir().unwrap();
    // `--kye`: two letters swapped, which clap alone finds nothing similar to.
    for (args, near) in [
        (&["build", "--kye", "vendor.key"][..], "--key"),
        (&["build", "--stakc", "network"][..], "--stack"),
        (
            &["promote", "a@1.0.0", "--chanel", "stable"][..],
            "--channel",
        ),
        (&["-v", "build", "--kye", "vendor.key"][..], "--key"),
    ] {
        let run = stackpack(dir.path(), args).code(2);
        assert!(
            run.stderr
                .contains(&format!("tip: a similar argument exists: '{near}'")),
            "{args:?}: {}",
            run.stderr
        );
    }
    // Nothing near: no guess.
    let run = stackpack(dir.path(), &["build", "--zzzzzz"]).code(2);
    assert!(!run.stderr.contains("similar argument"), "{}", run.stderr);
}

#[test]
fn stackpack_finds_stackpack_toml_from_a_folder_below_the_repository_root() {
    let repo = TestRepo::fixture("runner-vendor");
    let key = repo.key.to_str().unwrap();
    // From inside a stack, as git and terraform find their root: the whole
    // repository is built, into its own layout.
    let inside = repo.dir.join("stacks/data-plane");
    let report = stackpack(&inside, &["build", "--json", "--key", key])
        .ok()
        .json();
    assert_eq!(
        TestRepo::built(&report),
        [("data-plane".to_string(), "0.1.0".to_string())],
        "{report}"
    );
    assert!(repo.layout().join("index.json").is_file());
    assert!(!inside.join(".stackpack").exists());

    // Never past a git repository's root: a repository without `stackpack.toml`
    // inside this one is not this one.
    let other = repo.dir.join("vendored/tool");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::create_dir_all(other.join("src")).unwrap();
    let run = stackpack(&other.join("src"), &["build", "--key", key]).code(2);
    assert!(
        run.stderr.contains("cannot read `stackpack.toml`"),
        "{}",
        run.stderr
    );
}

#[test]
fn inspect_of_a_bundle_the_layout_does_not_hold_is_not_found_with_did_you_mean() {
    let repo = TestRepo::fixture("runner-vendor");
    repo.build(&[]);
    let layout = repo.layout();
    let inspect = |target: &str| {
        repo.run(&["inspect", &format!("{}:{target}", layout.display())])
            .code(2)
            .stderr
    };
    // Not "failed verification" (exit 1): the name is wrong.
    let misspelt = inspect("data-plan@0.1.0");
    assert!(
        misspelt.contains(
            "bundle `data-plan@0.1.0` is not in the layout; did you mean `data-plane`?; its stacks: `data-plane`"
        ),
        "{misspelt}"
    );
    assert!(!misspelt.contains("verification"), "{misspelt}");
    let version = inspect("data-plane@0.3.0");
    assert!(
        version.contains(
            "bundle `data-plane@0.3.0` is not in the layout; its versions there: `0.1.0`"
        ),
        "{version}"
    );
    assert!(version.contains("stackpack inspect LAYOUT"), "{version}");
}
