//! Issue 39 §6: a file or folder named on the command line that does not exist is a
//! wrong command line in all three programs: exit 2, an error naming it (in
//! backticks) with one hint, nothing on stdout and nothing done. Each program's
//! `cli::tests::every_file_argument_read_is_refused_with_exit_2_when_missing` keeps
//! every path argument it reads checked while the command line is parsed; this runs
//! the built programs, those checks and the ones a command makes itself (`--repo`,
//! `--home`, `--data`).

use std::path::Path;
use std::process::Command;

use stackpack_test_support::{binary, Run};

/// Stands for the missing path in the cases below.
const MISSING: &str = "MISSING";

fn run(program: &str, dir: &Path, args: &[&str], missing: &str) -> Run {
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == MISSING { missing } else { a })
        .collect();
    Run::from(
        Command::new(binary(program))
            .current_dir(dir)
            .args(&args)
            .env("NO_COLOR", "1")
            .env("STACKPACK_RUNNER_HOME", dir.join("runner-home"))
            .output()
            .unwrap(),
    )
}

#[test]
fn every_command_taking_a_file_exits_2_naming_it_when_it_does_not_exist() {
    let cases: &[(&str, &[&str])] = &[
        ("stackpack-runner", &["trust", "add", MISSING]),
        ("stackpack-runner", &["import", MISSING]),
        (
            "stackpack-runner",
            &["check-inputs", "a@1.0.0", "--inputs", MISSING],
        ),
        (
            "stackpack-runner",
            &["plan", "a@1.0.0", "--inputs", MISSING],
        ),
        (
            "stackpack-runner",
            &["plan", "a@1.0.0", "--inputs-dir", MISSING],
        ),
        (
            "stackpack-runner",
            &["apply", "a@1.0.0", "--inputs", MISSING, "--yes"],
        ),
        (
            "stackpack-runner",
            &["apply", "a@1.0.0", "--plan", MISSING, "--yes"],
        ),
        (
            "stackpack-runner",
            &["rollback", "a", "--inputs", MISSING, "--yes"],
        ),
        (
            "stackpack-runner",
            &["preflight", "a@1.0.0", "--inputs", MISSING],
        ),
        ("stackpack-runner", &["sync", "--desired", MISSING]),
        ("stackpack-runner", &["sync", "--inputs", MISSING]),
        ("stackpack-runner", &["status", "--home", MISSING]),
        (
            "stackpack-registry",
            &["customer", "key", "add", "globex", MISSING],
        ),
        (
            "stackpack-registry",
            &["receipts", "import", MISSING, "--customer", "globex"],
        ),
        (
            "stackpack-registry",
            &["support-bundle", "import", MISSING, "--customer", "globex"],
        ),
        ("stackpack-registry", &["serve", "--config", MISSING]),
        (
            "stackpack-registry",
            &["customer", "list", "--data", MISSING],
        ),
        ("stackpack-registry", &["gc", "--data", MISSING]),
        ("stackpack", &["inspect", "out", "--trust", MISSING]),
        (
            "stackpack",
            &["export", "a@1.0.0", "--out", "x.tar", "--from", MISSING],
        ),
        (
            "stackpack",
            &[
                "promote",
                "a@1.0.0",
                "--channel",
                "stable",
                "--layout",
                MISSING,
            ],
        ),
        ("stackpack", &["build", "--repo", MISSING]),
        ("stackpack", &["check", "--repo", MISSING]),
    ];
    let scratch = tempfile::tempdir().unwrap();
    for (program, args) in cases {
        // Relative, as a typo on the command line is.
        let missing = "not-there/vendor.pub";
        let run = run(program, scratch.path(), args, missing);
        let shown = format!("{program} {}", args.join(" "));
        assert_eq!(run.code, 2, "`{shown}`:\n{}", run.stderr);
        assert!(
            run.stderr.starts_with("error: ") && run.stderr.contains(&format!("{missing}`")),
            "`{shown}` does not name the missing path:\n{}",
            run.stderr
        );
        assert_eq!(
            run.stderr.matches("hint: ").count(),
            1,
            "`{shown}`:\n{}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "`{shown}` printed:\n{}", run.stdout);
    }
    // Nothing was made: no runner home, no registry, no export.
    let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
