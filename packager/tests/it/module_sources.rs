//! A bundle carries its module code: every `module` call of a stack, and of the local
//! modules it uses, must be a relative path to a folder the bundle packs. Any other
//! source (an absolute path, `git::`, `hg::`, `s3::`, `gcs::`, a URL, `github.com/…`,
//! `bitbucket.org/…`, a registry address, `oci://`) would make the customer's `init`
//! fetch unsigned code or read it from their disk: `build` and `check` refuse it with
//! exit 1, naming the file and line, and write nothing.

use crate::common;

use common::TestRepo;

const STACK_FILE: &str = "stacks/control-plane/main.tf";

/// Appends a call of module `o` from `source` to `path`; returns the line of `source`.
fn call_module(repo: &TestRepo, path: &str, source: &str) -> usize {
    let existing = std::fs::read_to_string(repo.dir.join(path)).unwrap();
    repo.append(
        path,
        &format!("\nmodule \"o\" {{\n  source = \"{source}\"\n}}\n"),
    );
    existing.lines().count() + 3
}

fn assert_refused(run: &common::Run, source: &str, location: &str) {
    assert_eq!(run.code, 1, "{source}: {}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("module `o` takes its code from `{source}`, "))
            && run.stderr.contains("which is not in the bundle")
            && run.stderr.contains(&format!("--> {location}"))
            && run.stderr.contains("vendor the module into `modules/o`"),
        "{source}: {}",
        run.stderr
    );
}

#[test]
fn every_module_source_a_bundle_cannot_carry_is_refused_by_build_with_its_line() {
    let sources = [
        "/opt/modules/o",
        "git::file:///srv/git/o",
        "git::https://git.example.com/o.git?ref=v1.0.0",
        "hg::http://hg.example.com/o",
        "s3::https://s3-eu-west-1.amazonaws.com/acme-modules/o.zip",
        "gcs::https://www.googleapis.com/storage/v1/acme-modules/o",
        "https://example.com/o.zip",
        "github.com/acme/o",
        "bitbucket.org/acme/o",
        "hashicorp/consul/aws",
        "app.terraform.io/acme/o/aws",
        "oci://registry.example.com/acme/modules/o?tag=1.0.0",
    ];
    for source in sources {
        let repo = TestRepo::new();
        let line = call_module(&repo, STACK_FILE, source);
        repo.commit("a module from outside");
        let run = repo.run(&["build", "--key", repo.key.to_str().unwrap()]);
        assert_refused(&run, source, &format!("{STACK_FILE}:{line}"));
        assert!(!repo.layout().exists(), "{source}: a bundle was written");
    }
}

#[test]
fn a_module_source_outside_the_bundle_is_refused_in_json_syntax_and_by_check() {
    let repo = TestRepo::new();
    let source = "git::https://git.example.com/o.git";
    repo.write(
        "stacks/control-plane/extra.tf.json",
        &format!("{{\n  \"module\": {{\n    \"o\": {{\n      \"source\": \"{source}\"\n    }}\n  }}\n}}\n"),
    );
    repo.commit("a module from outside, in JSON");
    let location = "stacks/control-plane/extra.tf.json:4";
    let run = repo.run(&["build", "--key", repo.key.to_str().unwrap()]);
    assert_refused(&run, source, location);
    assert!(!repo.layout().exists());
    assert_refused(&repo.run(&["check"]), source, location);
}

/// Security review (issue 39 §7.1): two `"module"` keys in one `.tf.json` object.
/// Terraform reads both; a reader keeping only the last saw a harmless call and
/// signed a bundle whose `init` fetched the first.
#[test]
fn duplicate_module_keys_in_tf_json_are_refused_by_build_and_check() {
    let repo = TestRepo::new();
    repo.write(
        "stacks/control-plane/extra.tf.json",
        "{\n  \"module\": {\"o\": {\"source\": \"git::file:///srv/git/o\"}},\n  \"module\": {\"p\": {\"source\": \"../../modules/o\"}}\n}\n",
    );
    repo.commit("two module keys");
    let says = |run: &common::Run| {
        assert_ne!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("the key `module` appears twice in one object")
                && run.stderr.contains("stacks/control-plane/extra.tf.json:3")
                && run.stderr.contains("hint: "),
            "{}",
            run.stderr
        );
    };
    says(&repo.run(&["build", "--key", repo.key.to_str().unwrap()]));
    let index = std::fs::read_to_string(repo.layout().join("index.json")).unwrap_or_default();
    assert!(
        !index.contains("control-plane"),
        "a control-plane bundle was written: {index}"
    );
    says(&repo.run(&["check"]));
}

#[test]
fn a_local_module_calling_a_module_outside_the_bundle_is_refused() {
    let repo = TestRepo::new();
    let source = "/home/ci/modules/o";
    let line = call_module(&repo, "modules/network/main.tf", source);
    repo.commit("the network module calls one from outside");
    let run = repo.run(&["build", "--key", repo.key.to_str().unwrap()]);
    assert_refused(&run, source, &format!("modules/network/main.tf:{line}"));
    assert!(!repo.layout().exists());
}

#[test]
fn a_local_module_whose_own_call_leaves_the_repository_is_refused() {
    let repo = TestRepo::new();
    let line = call_module(&repo, "modules/network/main.tf", "../../../outside");
    repo.commit("the network module calls one outside the repository");
    let run = repo.run(&["build", "--key", repo.key.to_str().unwrap()]);
    // Exit 2, as for a stack's own call outside the repository (`bad_input`): a path
    // that names nothing the repository has.
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("points outside the repository")
            && run
                .stderr
                .contains(&format!("--> modules/network/main.tf:{line}")),
        "{}",
        run.stderr
    );
    assert!(!repo.layout().exists());
}
