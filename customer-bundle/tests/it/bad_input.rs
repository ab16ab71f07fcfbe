//! Bad input: malformed or wrong inputs, a missing engine, an engine that fails
//! midway, and two runners applying the same stack at once. Failures are recorded in
//! receipts, and nothing is ever recorded as applied that was not.
//!
//! The vendor is the small one (`Vendor::small`: the example's `data-plane` inputs,
//! built-in resources), as none of this depends on AWS; the failed receipt that
//! names the providers the bundle brought is shown on the example's AWS provider.

use crate::common;

use std::process::Stdio;

use common::{build_and_import, fake_engine, globex_inputs, raw_archive, Runner, Vendor};
use stackpack_schema::bundle::FileEntry;
use stackpack_schema::digest::Digest;
use stackpack_schema::interface::{Input, Interface};
use stackpack_schema::signature::PrivateKey;

#[test]
fn inputs_are_checked_with_file_line_and_did_you_mean() {
    let vendor = Vendor::small();
    let runner = Runner::new("globex").without_account();
    let reference = build_and_import(&vendor, &runner);
    let dir = runner.temp.path();

    let malformed = dir.join("malformed.tfvars");
    std::fs::write(
        &malformed,
        "customer_id = \"globex\"\nregion = [\"us-east-1\"\n",
    )
    .unwrap();
    let run = runner
        .run(&[
            "check-inputs",
            &reference,
            "--inputs",
            malformed.to_str().unwrap(),
        ])
        .code(1);
    assert!(run.stderr.contains("not valid HCL"), "{}", run.stderr);
    assert!(run.stderr.contains("malformed.tfvars:"), "{}", run.stderr);

    let wrong = dir.join("wrong.tfvars");
    std::fs::write(
        &wrong,
        "customer_id = \"globex\"\naccount_id = \"111122223333\"\nregion = \"us-east-1\"\nvpc_cdir = \"10.40.0.0/16\"\nkubernetes_version = [\"1.30\"]\ncontrol_plane_region = \"us-east-1\"\n",
    )
    .unwrap();
    let run = runner
        .run(&[
            "check-inputs",
            &reference,
            "--inputs",
            wrong.to_str().unwrap(),
        ])
        .code(1);
    assert!(run.stderr.contains("wrong.tfvars:4"), "{}", run.stderr);
    assert!(
        run.stderr.contains("did you mean `vpc_cidr`?"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("wrong.tfvars:5"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`kubernetes_version` must be of type `string`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("required input `vpc_cidr` is not set"),
        "{}",
        run.stderr
    );
    // Regression: the first problem's location and hint used to come last, after
    // the others. Each is numbered, followed by its own location, in file order.
    let at = |text: &str| {
        run.stderr
            .find(text)
            .unwrap_or_else(|| panic!("`{text}` is missing: {}", run.stderr))
    };
    assert!(
        run.stderr.contains("3 problems with the inputs"),
        "{}",
        run.stderr
    );
    assert!(at("  1. ") < at("wrong.tfvars:4"), "{}", run.stderr);
    assert!(at("wrong.tfvars:4") < at("  2. "), "{}", run.stderr);
    assert!(at("  2. ") < at("wrong.tfvars:5"), "{}", run.stderr);
    assert!(at("wrong.tfvars:5") < at("  3. "), "{}", run.stderr);
    assert!(
        at("  3. ") < at("required input `vpc_cidr` is not set"),
        "{}",
        run.stderr
    );
    let json = runner
        .run(&[
            "check-inputs",
            &reference,
            "--inputs",
            wrong.to_str().unwrap(),
            "--json",
        ])
        .code(1)
        .json();
    assert_eq!(json["findings"].as_array().unwrap().len(), 3);

    // Plan refuses the same inputs before the engine runs, and records nothing.
    runner
        .run(&["plan", &reference, "--inputs", wrong.to_str().unwrap()])
        .code(1);
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    assert!(receipts["receipts"].as_array().unwrap().is_empty());
}

/// A string input; with `alias`, a deprecated alias of it.
fn string_input(name: &str, alias: Option<&str>) -> Input {
    Input {
        name: name.into(),
        type_constraint: stackpack_schema::types::TypeExpr::String,
        required: alias.is_none(),
        default: alias.map(|_| serde_json::Value::Null),
        sensitive: false,
        nullable: true,
        ephemeral: false,
        description: None,
        deprecated: alias.map(|a| format!("renamed to `{a}`")),
        alias_of: alias.map(str::to_string),
        validations: vec![],
    }
}

/// `net@1.0.0` with `interface`, signed by a test key and imported into a runner
/// that trusts it.
fn import_net(interface: Interface) -> (Runner, tempfile::TempDir) {
    let key = PrivateKey::from_secret_bytes([5; 32]);
    let scratch = tempfile::tempdir().unwrap();
    let public = scratch.path().join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let main = b"variable \"cidr\" {}\n";
    let layer = raw_archive(&[(
        "stacks/net/main.tf",
        tar::EntryType::Regular,
        main,
        None,
        None,
    )]);
    let source =
        stackpack_bundle::layout::ImageLayout::create(scratch.path().join("layout")).unwrap();
    let files = vec![FileEntry {
        path: "stacks/net/main.tf".into(),
        digest: Digest::of(main),
        size: main.len() as u64,
        executable: false,
        layer: false,
    }];
    common::write_signed_bundle_with(&source, &key, "net", "1.0.0", &layer, files, interface);
    let runner = Runner::new("globex");
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    runner
        .run(&["import", scratch.path().join("layout").to_str().unwrap()])
        .ok();
    (runner, scratch)
}

#[test]
fn a_malformed_inputs_file_exits_1_like_a_type_error_and_a_missing_one_2() {
    let interface = Interface {
        inputs: vec![string_input("cidr", None)],
        ..Interface::default()
    };
    let (runner, scratch) = import_net(interface);
    let cases = [
        ("type error", "cidr = [1]\n", "cidr"),
        ("not HCL", "cidr = [\"10.0.0.0/16\"\n", "not valid HCL"),
        ("a block", "cidr {\n}\n", "holds a block"),
        ("set twice", "cidr = \"a\"\ncidr = \"b\"\n", "case.tfvars:2"),
        ("not a literal", "cidr = var.x\n", "is not a literal value"),
    ];
    for (name, text, says) in cases {
        let file = scratch.path().join("case.tfvars");
        std::fs::write(&file, text).unwrap();
        let run = runner
            .run(&[
                "check-inputs",
                "net@1.0.0",
                "--inputs",
                file.to_str().unwrap(),
            ])
            .code(1);
        assert!(run.stderr.contains(says), "{name}: {}", run.stderr);
    }
    let missing = scratch.path().join("missing.tfvars");
    runner
        .run(&[
            "check-inputs",
            "net@1.0.0",
            "--inputs",
            missing.to_str().unwrap(),
        ])
        .code(2);
}

#[test]
fn a_deprecated_alias_and_its_new_name_may_not_both_be_set() {
    let interface = Interface {
        inputs: vec![
            string_input("cidr", None),
            string_input("vpc_cidr", Some("cidr")),
        ],
        ..Interface::default()
    };
    let (runner, scratch) = import_net(interface);

    let both = scratch.path().join("both.tfvars");
    std::fs::write(
        &both,
        "cidr = \"10.0.0.0/16\"\nvpc_cidr = \"10.0.0.0/16\"\n",
    )
    .unwrap();
    let run = runner
        .run(&[
            "check-inputs",
            "net@1.0.0",
            "--inputs",
            both.to_str().unwrap(),
        ])
        .code(1);
    assert!(
        run.stderr
            .contains("deprecated alias of `cidr`, and both are set"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("both.tfvars:2"), "{}", run.stderr);

    let alias_only = scratch.path().join("alias.tfvars");
    std::fs::write(&alias_only, "vpc_cidr = \"10.0.0.0/16\"\n").unwrap();
    runner
        .run(&[
            "check-inputs",
            "net@1.0.0",
            "--inputs",
            alias_only.to_str().unwrap(),
        ])
        .ok();

    let typo = scratch.path().join("typo.tfvars");
    std::fs::write(&typo, "vpc_cidrs = \"10.0.0.0/16\"\n").unwrap();
    let run = runner
        .run(&[
            "check-inputs",
            "net@1.0.0",
            "--inputs",
            typo.to_str().unwrap(),
        ])
        .code(1);
    assert!(
        run.stderr
            .contains("did you mean `vpc_cidr` (deprecated: renamed to `cidr`)?"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_missing_engine_is_refused_and_recorded_as_failed() {
    let vendor = Vendor::small();
    let scratch = tempfile::tempdir().unwrap();
    let runner =
        Runner::with_engine("globex", &scratch.path().join("no-such-terraform")).without_account();
    let reference = build_and_import(&vendor, &runner);
    let inputs = vendor.inputs("globex");
    let run = runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .code(1);
    assert!(run.stderr.contains("was not found"), "{}", run.stderr);
    assert!(run.stderr.contains("outcome `failed`"), "{}", run.stderr);
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let receipts = receipts["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0]["receipt"]["receipt"]["outcome"], "failed");
    assert_eq!(receipts[0]["receipt"]["receipt"]["kind"], "apply");
    let status = runner.run(&["status", "--json"]).ok().json();
    assert!(status["stacks"].as_array().unwrap().is_empty(), "{status}");
}

#[test]
fn an_engine_failing_midway_is_recorded_as_failed_and_nothing_counts_as_applied() {
    let vendor = Vendor::small();
    let scratch = tempfile::tempdir().unwrap();
    let (engine, ran) = fake_engine(
        scratch.path(),
        "engine-failing-at-apply",
        "if [ \"$1\" = apply ]; then echo 'o:module.network: Creating...'; echo 'Error: the cloud said no' >&2; exit 1; fi\nexec \"$REAL\" \"$@\"",
    );
    let runner = Runner::with_engine("globex", &engine).without_account();
    let reference = build_and_import(&vendor, &runner);
    let inputs = vendor.inputs("globex");
    let run = runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .code(1);
    assert!(
        run.stderr
            .contains("`terraform apply` failed (exit code 1)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("Error: the cloud said no"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("module.network: Creating..."),
        "{}",
        run.stderr
    );
    assert!(std::fs::read_to_string(&ran).unwrap().contains("apply"));
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let receipts = receipts["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1);
    let receipt = &receipts[0]["receipt"]["receipt"];
    assert_eq!(receipt["outcome"], "failed");
    assert_eq!(receipt["kind"], "apply");
    // The version the real engine behind the stand-in reports.
    let real = std::process::Command::new(common::terraform())
        .arg("version")
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout);
    let reported = receipt["engine"]["version"].as_str().unwrap();
    assert!(
        real.contains(&format!("v{reported}")),
        "{reported} vs {real}"
    );
    let status = runner.run(&["status", "--json"]).ok().json();
    assert!(status["stacks"].as_array().unwrap().is_empty(), "{status}");
}

/// Issue 29: a failed receipt says why: the engine's first error (its summary and
/// the resource it names, on one line, control characters and colours stripped,
/// bounded however long the engine's message), and which runner, platform and
/// providers ran it.
#[test]
fn a_failed_apply_receipt_carries_the_engines_error_and_resource_bounded_and_the_runner() {
    let vendor = Vendor::new();
    let scratch = tempfile::tempdir().unwrap();
    let long = "x".repeat(5000);
    let (engine, _) = fake_engine(
        scratch.path(),
        "engine-failing-at-apply",
        &format!(
            "if [ \"$1\" = apply ]; then printf '\\033[31m╷\\033[0m\\n│ \\033[1mError: \\033[0mcreating EKS Node Group (gpu): InsufficientInstanceCapacity <b>\\a{long}\\n│ \\n│   with aws_eks_node_group.gpu,\\n│   on main.tf line 3:\\n╵\\n' >&2; exit 1; fi\nexec \"$REAL\" \"$@\""
        ),
    );
    let runner = Runner::with_engine("globex", &engine);
    let reference = build_and_import(&vendor, &runner);
    let inputs = globex_inputs();
    runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .code(1);
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let receipt = &receipts["receipts"][0]["receipt"]["receipt"];
    assert_eq!(receipt["outcome"], "failed");
    let failure = &receipt["failure"];
    assert_eq!(failure["address"], "aws_eks_node_group.gpu", "{receipt}");
    let summary = failure["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("creating EKS Node Group (gpu): InsufficientInstanceCapacity <b> xxx"),
        "{summary}"
    );
    assert_eq!(summary.chars().count(), 1000, "bounded");
    assert!(!summary.chars().any(char::is_control));
    let runner_run = &receipt["runner"];
    assert_eq!(runner_run["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        runner_run["platform"].as_str().unwrap().contains('_'),
        "{runner_run}"
    );
    assert!(
        !runner_run["providers"].as_array().unwrap().is_empty(),
        "{runner_run}"
    );
}

#[test]
fn a_second_runner_on_the_same_stack_is_refused_clearly_or_waits() {
    let vendor = Vendor::small();
    let scratch = tempfile::tempdir().unwrap();
    let (engine, _) = fake_engine(
        scratch.path(),
        "slow-engine",
        "if [ \"$1\" = apply ]; then sleep 4; fi\nexec \"$REAL\" \"$@\"",
    );
    let runner = Runner::with_engine("globex", &engine).without_account();
    let reference = build_and_import(&vendor, &runner);
    let inputs = vendor.inputs("globex");
    let inputs = inputs.to_str().unwrap();
    let first_err = scratch.path().join("first.err");
    let first = runner
        .command(&["apply", &reference, "--inputs", inputs, "--yes"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&first_err).unwrap())
        .spawn()
        .unwrap();
    // Wait until the first holds the lock.
    let lock = runner.home.join("locks/data-plane.lock");
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&lock)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(
            start.elapsed().as_secs() < 60,
            "the first runner never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = runner
        .run(&["apply", &reference, "--inputs", inputs, "--yes"])
        .code(1);
    assert!(
        second.stderr.contains("stack `data-plane` is busy"),
        "{}",
        second.stderr
    );
    assert!(
        second.stderr.contains(&format!("process {}", first.id())),
        "{}",
        second.stderr
    );
    let waited = runner
        .run(&[
            "apply", &reference, "--inputs", inputs, "--yes", "--wait", "120",
        ])
        .ok();
    assert!(
        waited.stderr.contains("waiting for another runner"),
        "{}",
        waited.stderr
    );
    let first = common::Run::from(first.wait_with_output().unwrap()).ok();
    assert!(first.stdout.contains("applied"), "{}", first.stdout);
    let first_err = std::fs::read_to_string(&first_err).unwrap();
    let leaked: Vec<&str> = first_err
        .lines()
        .filter(|line| line.contains("[DEBUG]") || line.contains("[TRACE]"))
        .take(3)
        .collect();
    assert!(
        leaked.is_empty(),
        "the engine's debug log leaked: {leaked:?}"
    );
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let outcomes: Vec<_> = receipts["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["receipt"]["receipt"]["outcome"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(outcomes, ["succeeded", "succeeded"]);
}

#[test]
fn a_prerelease_needs_a_policy_that_allows_it() {
    let vendor = Vendor::small();
    vendor.build();
    common::git(
        &vendor.dir,
        &["checkout", "-q", "-b", "feature/bigger-subnets"],
    );
    vendor.change("stacks/data-plane/main.tf", "\n# a change on a branch\n");
    let run = common::Run::from(
        std::process::Command::new(common::stackpack_bin())
            .current_dir(&vendor.dir)
            .args([
                "build",
                "--json",
                "--key",
                vendor.key.to_str().unwrap(),
                "--branch",
                "feature/bigger-subnets",
            ])
            .output()
            .unwrap(),
    )
    .ok();
    let version = run.json()["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["built"] == true)
        .unwrap()["version"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(version.contains('-'), "{version}");
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout().to_str().unwrap()])
        .ok();
    let reference = format!("data-plane@{version}");
    let inputs = vendor.inputs("globex");
    let refused = runner
        .run(&["plan", &reference, "--inputs", inputs.to_str().unwrap()])
        .code(1);
    assert!(
        refused.stderr.contains("is a prerelease"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("allow-prereleases"),
        "{}",
        refused.stderr
    );
    runner.set_config("allow-prereleases = false", "allow-prereleases = true");
    runner
        .run(&["plan", &reference, "--inputs", inputs.to_str().unwrap()])
        .ok();
}

/// A small tmpfs, unmounted when dropped. `None` where mounting is not allowed.
struct TinyDisk {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl TinyDisk {
    fn mount(size: &str) -> Option<TinyDisk> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            assert!(
                std::env::var_os("STACKPACK_REQUIRE_TOOLS").is_none(),
                "cannot mount a tmpfs to test a full disk"
            );
            eprintln!("skipping: cannot mount a tmpfs (needs root) to test a full disk");
            return None;
        }
        Some(TinyDisk { path, _dir: dir })
    }

    /// Writes until the disk is full.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let filler = self.path.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let chunk = vec![0u8; 4096];
        while file.write_all(&chunk).is_ok() {}
        filler
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.path)
            .status();
    }
}

#[test]
fn a_full_disk_fails_the_apply_cleanly_and_it_is_recorded() {
    let Some(disk) = TinyDisk::mount("2m") else {
        return;
    };
    let vendor = Vendor::small();
    let runner = Runner::new("globex").without_account();
    let reference = build_and_import(&vendor, &runner);
    runner.set_config(
        "[engine]",
        &format!(
            "work = \"{}\"\n\n[engine]",
            disk.path.join("work").display()
        ),
    );
    let filler = disk.fill();
    let inputs = vendor.inputs("globex");
    let run = runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .code(1);
    assert!(
        run.stderr.contains("No space left on device"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("outcome `failed`"), "{}", run.stderr);
    let status = runner.run(&["status", "--json"]).ok().json();
    assert!(status["stacks"].as_array().unwrap().is_empty(), "{status}");
    // With room again, the same apply goes through.
    std::fs::remove_file(filler).unwrap();
    runner
        .run(&[
            "apply",
            &reference,
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let outcomes: Vec<_> = receipts["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["receipt"]["receipt"]["outcome"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(outcomes, ["failed", "succeeded"]);
}

#[test]
fn apply_on_a_terminal_shows_the_plan_and_asks_and_only_yes_applies() {
    if !common::have("script") {
        return;
    }
    let vendor = Vendor::small();
    let runner = Runner::new("globex").without_account();
    let reference = build_and_import(&vendor, &runner);
    let inputs = vendor.inputs("globex");
    // `script` gives the runner a terminal; the answer comes in on it.
    let on_terminal = |answer: &str| {
        let command = format!(
            "{} apply {reference} --inputs {}",
            env!("CARGO_BIN_EXE_stackpack-runner"),
            inputs.display()
        );
        let mut child = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .envs(runner.account_env())
            .env("STACKPACK_RUNNER_HOME", &runner.home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{answer}\n").as_bytes())
            .unwrap();
        common::Run::from(child.wait_with_output().unwrap())
    };
    let declined = on_terminal("no");
    assert!(declined.stdout.contains("Plan: "), "{}", declined.stdout);
    assert!(
        declined.stdout.contains("apply this plan?"),
        "{}",
        declined.stdout
    );
    assert!(
        declined.stdout.contains("nothing was applied"),
        "{}",
        declined.stdout
    );
    assert!(!runner.state_file("data-plane").exists());
    let status = runner.run(&["status", "--json"]).ok().json();
    assert!(status["stacks"].as_array().unwrap().is_empty());
    let accepted = on_terminal("yes");
    assert!(
        accepted.stdout.contains("applied `data-plane@"),
        "{}",
        accepted.stdout
    );
    assert!(runner.state_file("data-plane").exists());
}

#[test]
fn engine_variables_in_the_runners_environment_do_not_change_what_apply_does() {
    let vendor = Vendor::small();
    let runner = Runner::new("globex").without_account();
    let reference = build_and_import(&vendor, &runner);
    let inputs = vendor.inputs("globex");
    // Each would turn the apply into something else: a destroy plan (on an empty
    // state, a plan that creates nothing), another workspace, another data folder.
    let scratch = tempfile::tempdir().unwrap();
    let applied = common::Run::from(
        runner
            .command(&[
                "apply",
                &reference,
                "--inputs",
                inputs.to_str().unwrap(),
                "--yes",
            ])
            .env("TF_CLI_ARGS_plan", "-destroy")
            .env("TF_WORKSPACE", "elsewhere")
            .env("TF_DATA_DIR", scratch.path().join("data"))
            .output()
            .unwrap(),
    )
    .ok();
    assert!(
        !applied.stderr.contains("-destroy") && !applied.stderr.contains("elsewhere"),
        "{}",
        applied.stderr
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(runner.state_file("data-plane")).unwrap())
            .unwrap();
    let resources = state["resources"].as_array().unwrap();
    assert!(!resources.is_empty(), "{state}");
    let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
    let receipt = &receipts["receipts"][0]["receipt"]["receipt"];
    assert_eq!(receipt["outcome"], "succeeded", "{receipt}");
    assert!(receipt["plan"]["add"].as_u64().unwrap() > 0, "{receipt}");
    assert_eq!(receipt["plan"]["destroy"], 0, "{receipt}");
    assert!(!scratch.path().join("data").exists());
}

/// Issue 23, item 18: `destroy --confirm WRONG` is refused without saying what the
/// right confirmation is (that would make typing it no check at all).
#[test]
fn a_wrong_destroy_confirmation_does_not_reveal_the_right_one() {
    let runner = Runner::new("globex").without_account();
    let run = runner
        .run(&["destroy", "data-plane", "--confirm", "initech"])
        .code(1);
    assert!(
        run.stderr.contains("does not name this runner's customer"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("globex"), "{}", run.stderr);
}

#[test]
fn a_mistyped_flag_is_answered_with_the_similar_one() {
    // `--yse`: two letters swapped, which clap alone finds nothing similar to.
    for (args, near) in [
        (&["apply", "network@1.0.0", "--yse"][..], "--yes"),
        (
            &["plan", "network@1.0.0", "--inptus", "x.tfvars"][..],
            "--inputs",
        ),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_stackpack-runner"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("tip: a similar argument exists: '{near}'")),
            "{args:?}: {stderr}"
        );
    }
}
