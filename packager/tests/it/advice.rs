//! What `check` advises after a mistake a new user makes (issue 23, item 18): advice
//! that fits the mistake, never a flag that was not given or a breaking release for
//! a customer not yet onboarded. The real `stackpack` on a copy of the example.

use crate::common;

use common::TestRepo;

#[test]
fn check_on_a_broken_tf_file_names_the_file_and_no_bump_that_was_never_asked_for() {
    let repo = TestRepo::new();
    repo.append(
        "stacks/data-plane/main.tf",
        "\nresource \"aws_vpc\" \"x\" {\n",
    );
    repo.commit("broken");
    let run = repo.run(&["check"]).code(1);
    assert!(
        run.stderr.contains("`stacks/data-plane/main.tf:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("rule: unreadable-file"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("`--bump -`"), "{}", run.stderr);
    assert!(!run.stderr.contains("was asked for"), "{}", run.stderr);
}

#[test]
fn an_unfilled_customer_scaffold_is_told_to_fill_its_placeholders_not_to_release_a_major() {
    let repo = TestRepo::new();
    repo.run(&["customer", "new", "hooli", "--stack", "data-plane"])
        .ok();
    repo.commit("hooli");
    let run = repo.run(&["check"]).code(1);
    assert!(
        run.stderr
            .contains("hint: fill in the placeholders in `customers/hooli/data-plane.tfvars`"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("--allow-breaking"), "{}", run.stderr);
    assert!(!run.stderr.contains("--bump major"), "{}", run.stderr);
}

#[test]
fn a_renamed_input_refusal_says_it_looks_like_a_rename_and_points_at_the_alias_rule() {
    let repo = TestRepo::new();
    for file in [
        "stacks/data-plane/variables.tf",
        "stacks/data-plane/main.tf",
    ] {
        let text = std::fs::read_to_string(repo.dir.join(file)).unwrap();
        repo.write(
            file,
            &text
                .replace(
                    "variable \"kubernetes_version\"",
                    "variable \"k8s_version\"",
                )
                .replace("var.kubernetes_version", "var.k8s_version"),
        );
    }
    repo.commit("rename kubernetes_version");
    let run = repo.run(&["check"]).code(1);
    let hint = run
        .stderr
        .lines()
        .find(|l| l.starts_with("hint: "))
        .unwrap_or_else(|| panic!("no hint: {}", run.stderr));
    assert!(
        hint.contains("`kubernetes_version` → `k8s_version` looks like a rename"),
        "{hint}"
    );
    assert!(hint.contains("input-renamed-with-alias"), "{hint}");
    assert!(hint.contains("deprecated alias"), "{hint}");
}

/// Regression (issue 39 §4): a stack never released was listed as "needs a patch
/// release" with a warning that it has nothing to compare with, six times in the
/// demo. It is a first release: said so, with no warning, and `--json` keeps the
/// bump it is published with.
#[test]
fn a_stack_never_released_is_a_first_release_not_a_warning() {
    let repo = TestRepo::new();
    let run = repo.run(&["check"]).ok();
    assert!(run.stdout.contains("first release"), "{}", run.stdout);
    assert!(!run.stdout.contains("warning:"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("needs a patch release"),
        "{}",
        run.stdout
    );
    let json = repo.run(&["check", "--json"]).ok().json();
    let unit = &json["units"][0];
    assert_eq!(unit["first"], true, "{json}");
    assert_eq!(unit["required"], "patch", "{json}");
}
