//! Module code only from the signed bundle: a bundle whose configuration calls a
//! module by an absolute path or a `git::` address (which the packager refuses, so a
//! forged or hand-made bundle) is refused before `init`, with the file and line; the
//! engine never plans, so code on the customer's disk never reaches a plan and `init`
//! never fetches the git repository. A call by a relative path inside the bundle runs.

use crate::common;

use std::path::Path;

use common::{fake_engine, raw_archive, write_signed_bundle, Runner};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::bundle::FileEntry;
use stackpack_schema::digest::Digest;
use stackpack_schema::signature::PrivateKey;

/// What a module outside the bundle would put in the plan if it ever ran.
const PLANTED: &str = "planted on the customer's disk";

/// `evil@1.0.0`, signed by a key the runner trusts, with `files` (path, text) in its
/// stack layer; returns the runner (engine: real Terraform behind a recorder) and the
/// recorder's log of engine commands.
fn runner_with(scratch: &Path, files: &[(&str, String)]) -> (Runner, std::path::PathBuf) {
    let key = PrivateKey::from_secret_bytes([9; 32]);
    let public = scratch.join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let entries: Vec<common::RawEntry> = files
        .iter()
        .map(|(path, text)| (*path, tar::EntryType::Regular, text.as_bytes(), None, None))
        .collect();
    let mut signed: Vec<FileEntry> = files
        .iter()
        .map(|(path, text)| FileEntry {
            path: path.to_string(),
            digest: Digest::of(text.as_bytes()),
            size: text.len() as u64,
            executable: false,
            layer: false,
        })
        .collect();
    signed.sort_by(|a, b| a.path.cmp(&b.path));
    let layout = ImageLayout::create(scratch.join("layout")).unwrap();
    write_signed_bundle(
        &layout,
        &key,
        "evil",
        "1.0.0",
        &raw_archive(&entries),
        signed,
    );
    let (engine, ran) = fake_engine(scratch, "recording-engine", "exec \"$REAL\" \"$@\"");
    let runner = Runner::with_engine("globex", &engine).without_account();
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    runner
        .run(&["import", scratch.join("layout").to_str().unwrap()])
        .ok();
    (runner, ran)
}

fn plan(runner: &Runner, scratch: &Path) -> common::Run {
    let inputs = scratch.join("empty.tfvars");
    std::fs::write(&inputs, "").unwrap();
    runner.run(&["plan", "evil@1.0.0", "--inputs", inputs.to_str().unwrap()])
}

/// The engine commands the recorder saw (`version`, `init`, `plan`, …).
fn engine_commands(ran: &Path) -> String {
    std::fs::read_to_string(ran).unwrap_or_default()
}

/// A module folder outside any bundle: what a customer's disk (or a git repository)
/// holds, with an output that would show in the plan.
fn planted_module(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("main.tf"),
        format!("output \"planted\" {{ value = \"{PLANTED}\" }}\n"),
    )
    .unwrap();
}

fn calling(source: &str) -> String {
    format!("\nmodule \"o\" {{\n  source = \"{source}\"\n}}\n\noutput \"x\" {{ value = module.o.planted }}\n")
}

#[test]
fn a_bundle_calling_a_module_by_absolute_path_is_refused_before_init_and_the_file_on_disk_never_reaches_the_plan(
) {
    let scratch = tempfile::tempdir().unwrap();
    let outside = scratch.path().join("customer-disk/module");
    planted_module(&outside);
    let (runner, ran) = runner_with(
        scratch.path(),
        &[("stacks/evil/main.tf", calling(outside.to_str().unwrap()))],
    );

    let run = plan(&runner, scratch.path()).code(1);
    assert!(
        run.stderr.contains(&format!(
            "module `o` takes its code from `{}`, an absolute path, which is not in the bundle",
            outside.display()
        )) && run.stderr.contains("`stacks/evil/main.tf:3`: "),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains(PLANTED) && !run.stderr.contains(PLANTED));
    let commands = engine_commands(&ran);
    assert!(
        !commands.contains("init") && !commands.contains("plan"),
        "the engine ran: {commands}"
    );
    assert!(runner.work_entries().is_empty(), "a work folder was left");

    // An apply is refused the same way, and its receipt says so.
    let inputs = scratch.path().join("empty.tfvars");
    let run = runner
        .run(&[
            "apply",
            "evil@1.0.0",
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .code(1);
    assert!(
        run.stderr
            .contains("`stacks/evil/main.tf:3`: module `o` takes its code from")
            && run.stderr.contains("outcome `failed`"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains(PLANTED) && !run.stderr.contains(PLANTED));
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let receipts = receipts["receipts"].as_array().unwrap();
    // One for the plan, one for the apply: both truthfully `failed`.
    let kinds: Vec<(&str, &str)> = receipts
        .iter()
        .map(|r| {
            let r = &r["receipt"]["receipt"];
            (r["kind"].as_str().unwrap(), r["outcome"].as_str().unwrap())
        })
        .collect();
    assert_eq!(kinds, [("plan", "failed"), ("apply", "failed")]);
    let commands = engine_commands(&ran);
    assert!(!commands.contains("init"), "the engine ran: {commands}");
}

#[test]
fn a_bundle_calling_a_git_module_is_refused_before_init_and_nothing_is_fetched() {
    let scratch = tempfile::tempdir().unwrap();
    let repo = scratch.path().join("repo");
    planted_module(&repo);
    common::git(&repo, &["init", "-q"]);
    common::git(&repo, &["add", "."]);
    common::git(
        &repo,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-qm",
            "m",
        ],
    );
    let source = format!("git::file://{}", repo.display());
    // Also in JSON syntax, from a local module the stack calls: followed transitively.
    let json = format!(r#"{{"module": {{"o": {{"source": "{source}"}}}}}}"#);
    let (runner, ran) = runner_with(
        scratch.path(),
        &[
            (
                "stacks/evil/main.tf",
                "module \"inner\" {\n  source = \"../../modules/inner\"\n}\n".to_string(),
            ),
            ("modules/inner/main.tf.json", json),
        ],
    );

    let run = plan(&runner, scratch.path()).code(1);
    assert!(
        run.stderr.contains(&format!(
            "module `o` takes its code from `{source}`, a git repository, which is not in the bundle"
        )) && run.stderr.contains("`modules/inner/main.tf.json:1`: "),
        "{}",
        run.stderr
    );
    let commands = engine_commands(&ran);
    assert!(
        !commands.contains("init"),
        "the engine ran init: {commands}"
    );
    let fetched: Vec<_> = walk(&runner.home)
        .into_iter()
        .filter(|p| p.ends_with(".terraform/modules/o"))
        .collect();
    assert!(fetched.is_empty(), "fetched: {fetched:?}");
}

/// Security review (issue 39 §7.1): a bundle (forged: the packager refuses it)
/// whose `.tf.json` has two `"module"` keys, the first calling a git repository,
/// the second a module inside the bundle. Terraform reads both; the runner refuses
/// it before `init`, with the file and line, and nothing is fetched.
#[test]
fn duplicate_module_keys_in_tf_json_are_refused_before_init_and_nothing_is_fetched() {
    let scratch = tempfile::tempdir().unwrap();
    let repo = scratch.path().join("repo");
    planted_module(&repo);
    common::git(&repo, &["init", "-q"]);
    common::git(&repo, &["add", "."]);
    common::git(
        &repo,
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "-qm",
            "m",
        ],
    );
    let json = format!(
        "{{\n  \"module\": {{\"o\": {{\"source\": \"git::file://{}\"}}}},\n  \"module\": {{\"p\": {{\"source\": \"../../modules/inside\"}}}}\n}}\n",
        repo.display()
    );
    let (runner, ran) = runner_with(
        scratch.path(),
        &[
            ("stacks/evil/main.tf.json", json),
            (
                "modules/inside/main.tf",
                "output \"planted\" { value = \"from the bundle\" }\n".to_string(),
            ),
        ],
    );
    let run = plan(&runner, scratch.path()).code(1);
    assert!(
        run.stderr
            .contains("the key `module` appears twice in one object")
            && run.stderr.contains("main.tf.json:3"),
        "{}",
        run.stderr
    );
    let commands = engine_commands(&ran);
    assert!(
        !commands.contains("init"),
        "the engine ran init: {commands}"
    );
    let fetched: Vec<_> = walk(&runner.home)
        .into_iter()
        .filter(|p| p.ends_with(".terraform/modules/o"))
        .collect();
    assert!(fetched.is_empty(), "fetched: {fetched:?}");
}

#[test]
fn a_bundle_calling_a_module_by_a_relative_path_inside_it_plans() {
    let scratch = tempfile::tempdir().unwrap();
    let (runner, _ran) = runner_with(
        scratch.path(),
        &[
            ("stacks/evil/main.tf", calling("../../modules/inside")),
            (
                "modules/inside/main.tf",
                "output \"planted\" { value = \"from the bundle\" }\n".to_string(),
            ),
        ],
    );
    let run = plan(&runner, scratch.path()).ok();
    assert!(
        run.stdout.contains("from the bundle") || run.stderr.contains("from the bundle"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}
