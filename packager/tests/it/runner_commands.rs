//! `runs-commands-on-runner` (issue 23, item 8): a `local-exec` provisioner or an
//! `external` data source runs programs on the customer's runner, so `check` warns,
//! at its line, in a stack or in a module; a stack that means it turns the lint off
//! in its own `stack.toml` `[rules]`, which takes lints only. The real `stackpack`.

use crate::common;

use common::TestRepo;

const HOOK: &str = "\nresource \"terraform_data\" \"hook\" {\n  provisioner \"local-exec\" {\n    command = \"echo hi\"\n  }\n}\n";
const PROBE: &str = "\ndata \"external\" \"probe\" {\n  program = [\"echo\", \"{}\"]\n}\n";

/// `(item, file)` of every `runs-commands-on-runner` lint `check --json` reports.
fn warned(repo: &TestRepo) -> Vec<(String, String, String)> {
    let json = repo.run(&["check", "--json"]).json();
    json["lints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["rule"] == "runs-commands-on-runner")
        .map(|l| {
            (
                l["item"].as_str().unwrap().to_string(),
                l["file"].as_str().unwrap().to_string(),
                l["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn commands_on_the_runners_machine_are_a_warning_a_stack_can_turn_off() {
    let repo = TestRepo::new();
    repo.append("stacks/data-plane/main.tf", HOOK);
    repo.append("modules/network/main.tf", PROBE);
    repo.commit("hook and probe");
    let found = warned(&repo);
    assert!(
        found.contains(&(
            "terraform_data.hook".into(),
            "stacks/data-plane/main.tf".into(),
            "warning".into()
        )),
        "{found:?}"
    );
    assert!(
        found.contains(&(
            "data.external.probe".into(),
            "modules/network/main.tf".into(),
            "warning".into()
        )),
        "{found:?}"
    );
    let run = repo.run(&["check"]);
    assert!(
        run.stdout.contains("runs commands on the runner's machine")
            || run.stderr.contains("runs commands on the runner's machine"),
        "{}{}",
        run.stdout,
        run.stderr
    );

    // Off for the data plane only: the module's warning stays.
    repo.append(
        "stacks/data-plane/stack.toml",
        "\n[rules]\nruns-commands-on-runner = \"off\"\n",
    );
    repo.commit("the data plane means it");
    let found = warned(&repo);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, "modules/network/main.tf");

    // A stack sets lints, not interface rules.
    repo.append(
        "stacks/data-plane/stack.toml",
        "default-changed = \"minor\"\n",
    );
    repo.commit("an interface rule per stack");
    let refused = repo.run(&["check"]).code(2);
    assert!(
        refused
            .stderr
            .contains("`default-changed` is an interface rule"),
        "{}",
        refused.stderr
    );
}
