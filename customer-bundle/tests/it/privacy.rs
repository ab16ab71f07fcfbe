//! The runner's home holds secrets (engine state, inputs, plans, keys, the ledger): it
//! and everything in it are private whatever the caller's umask, and a home made
//! with loose modes is repaired on the next start. The apply is the small vendor's
//! (built-in resources): the engine's state, plan and work files are what it writes.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Run, Runner, Vendor};

/// Runs the runner under `umask 022`, as a default login shell would.
fn under_umask_022(runner: &Runner, args: &[&str]) -> Run {
    let command = runner.command(args);
    let program = command.get_program().to_owned();
    let mut shell = std::process::Command::new("sh");
    shell
        .arg("-c")
        .arg("umask 022 && exec \"$0\" \"$@\"")
        .arg(program)
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    Run::from(shell.output().unwrap())
}

/// Every file and folder under `root` readable or writable by others.
fn loose(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o777;
        // The engine sets its provider binaries to 0755 itself; they are public
        // programs, and the private folders above them keep others out.
        let engine_set = meta.is_file() && path.to_string_lossy().contains("/providers/cache/");
        if mode & 0o077 != 0 && !engine_set {
            found.push(format!("{} {:o}", path.display(), mode));
        }
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    found
}

#[test]
fn the_home_and_everything_in_it_are_private_under_umask_022() {
    let vendor = Vendor::small();
    let built = vendor.build();
    let version = &built.iter().find(|(s, _)| s == "data-plane").unwrap().1;
    let tar = vendor.export_tar("bundles.tar");
    let runner = Runner::new("globex").without_account();
    under_umask_022(
        &runner,
        &["trust", "add", vendor.public_key.to_str().unwrap()],
    )
    .ok();
    under_umask_022(&runner, &["import", tar.to_str().unwrap()]).ok();
    let inputs = vendor.inputs("globex");
    under_umask_022(
        &runner,
        &[
            "apply",
            &format!("data-plane@{version}"),
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ],
    )
    .ok();
    assert!(runner.state_file("data-plane").is_file());
    let found = loose(&runner.home);
    assert!(found.is_empty(), "readable by others: {found:#?}");
}

#[test]
fn a_home_with_loose_modes_is_made_private_on_the_next_start() {
    let runner = Runner::new("globex").without_account();
    for path in [&runner.home, &runner.home.join("runner.toml")] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    runner.run(&["status"]).ok();
    let found = loose(&runner.home);
    assert!(found.is_empty(), "still readable by others: {found:#?}");
}
