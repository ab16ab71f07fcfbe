//! An airgapped customer's kit (`stackpack kit`, issue 40): one tar with the
//! release's bundles, the runner program, the vendor's public key and `SHA256SUMS`
//! signed by the vendor. The customer checks it with `verify.sh` and nothing but
//! `sha256sum` and `openssl`, then the kit's own runner imports and applies the
//! release inside a network namespace with no network at all. A kit that does not
//! verify is refused before anything of it is imported or installed.
//!
//! The runner archive is made from the suite's own `stackpack-runner` in the layout
//! `scripts/dist.sh` writes (the dist build itself is `tests/it/dist.rs`'s subject).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use stackpack_bundle::release::releases_in;

use crate::common::release::{inputs_dir, ReleaseVendor};
use crate::common::{have, stackpack_bin, terraform, Run, Runner};

const ALL_V1: &[(&str, &str)] = &[
    ("network", "0.1.0"),
    ("cluster", "0.1.0"),
    ("gpu-pools", "0.1.0"),
];

fn run(command: &mut Command) -> Run {
    Run::from(command.output().expect("the command starts"))
}

fn runner_archive(dir: &Path, version: &str, program: &Path) -> PathBuf {
    stackpack_test_support::runner_archive(dir, version, program)
}

/// A stand-in runner program that only says its version: for the version rules.
fn saying_version(dir: &Path, version: &str) -> PathBuf {
    let script = dir.join(format!("says-{version}"));
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho 'stackpack-runner {version} (commit 000000000000, test)'\n"),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn own_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

fn vendor_with_release() -> ReleaseVendor {
    let vendor = ReleaseVendor::new();
    vendor.build();
    vendor.write(&vendor.description("platform", "1.0.0", ALL_V1), &[], None);
    vendor
}

fn kit(vendor: &ReleaseVendor, out: &Path, runner: Option<&Path>) -> Run {
    let mut command = Command::new(stackpack_bin());
    command
        .args(["kit", "platform@1.0.0", "--from"])
        .arg(vendor.layout_dir())
        .arg("--key")
        .arg(&vendor.key)
        .arg("-o")
        .arg(out)
        .env("NO_COLOR", "1");
    if let Some(runner) = runner {
        command.arg("--runner").arg(runner);
    }
    run(&mut command)
}

fn unpack(kit: &Path, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    run(Command::new("tar").arg("-xf").arg(kit).arg("-C").arg(into)).ok();
}

/// Re-tars a kit folder as `tar -C DIR -cf kit.tar .` would.
fn retar(dir: &Path, out: &Path) -> PathBuf {
    run(Command::new("tar")
        .arg("-cf")
        .arg(out)
        .arg("-C")
        .arg(dir)
        .arg("."))
    .ok();
    out.to_path_buf()
}

#[test]
fn a_kit_verifies_with_sha256sum_and_openssl_alone_and_its_runner_applies_it_with_no_network() {
    for tool in ["unshare", "openssl", "sha256sum"] {
        assert!(have(tool), "`{tool}` is needed");
    }
    let vendor = vendor_with_release();
    let work = tempfile::tempdir().unwrap();
    let runner_program = PathBuf::from(env!("CARGO_BIN_EXE_stackpack-runner"));
    let archive = runner_archive(work.path(), &own_version(), &runner_program);
    let kit_tar = work.path().join("kit.tar");
    let made = kit(&vendor, &kit_tar, Some(&archive));
    assert_eq!(made.code, 0, "{}", made.stderr);
    assert!(made.stderr.contains("verify.sh"), "{}", made.stderr);

    // What crosses into the customer's account: one tar. Everything below runs in a
    // network namespace with nothing but loopback.
    let unpacked = work.path().join("kit");
    unpack(&kit_tar, &unpacked);
    let only = work.path().join("only-these-tools");
    std::fs::create_dir(&only).unwrap();
    for tool in ["sha256sum", "openssl"] {
        let found = run(Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {tool}")))
        .ok();
        std::os::unix::fs::symlink(found.stdout.trim(), only.join(tool)).unwrap();
    }
    let unshare = run(Command::new("sh").args(["-c", "command -v unshare"])).ok();
    let verified = run(Command::new(unshare.stdout.trim())
        .args(["-n", "/bin/sh", "verify.sh"])
        .current_dir(&unpacked)
        .env_clear()
        .env("PATH", &only));
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    let vendor_key_id = {
        let pem = std::fs::read_to_string(&vendor.public_key).unwrap();
        stackpack_schema::signature::PublicKey::from_pem(&pem)
            .unwrap()
            .key_id()
    };
    assert!(
        verified
            .stdout
            .contains(&format!("key id: {vendor_key_id}")),
        "verify.sh names the key to compare: {}",
        verified.stdout
    );
    assert!(
        verified.stdout.contains("bundles.tar: OK"),
        "{}",
        verified.stdout
    );

    // `scripts/install.sh` installs the runner from the unpacked kit, offline, after
    // the same checks, with the vendor's key the customer holds.
    let installed = run(Command::new(unshare.stdout.trim())
        .arg("-n")
        .arg(stackpack_test_support::repository_root().join("scripts/install.sh"))
        .arg("--from")
        .arg(&unpacked)
        .arg("--key")
        .arg(&vendor.public_key)
        .arg("--to")
        .arg(work.path().join("installed")));
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    assert!(work.path().join("installed/stackpack-runner").is_file());

    // The kit's runner, taken out of the kit, does the rest.
    let bin = work.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let runner_file = format!("stackpack-runner-{}-x86_64-linux.tar.gz", own_version());
    run(Command::new("tar")
        .arg("-xzf")
        .arg(unpacked.join(&runner_file))
        .arg("-C")
        .arg(&bin)
        .arg("--strip-components=1"))
    .ok();
    let home = work.path().join("home");
    let inputs = inputs_dir(work.path(), 1);
    let airgapped = |args: &[&str]| {
        run(Command::new("unshare")
            .arg("-n")
            .arg(bin.join("stackpack-runner"))
            .args(args)
            .env("STACKPACK_RUNNER_HOME", &home)
            .env("NO_COLOR", "1")
            .env("CHECKPOINT_DISABLE", "1"))
    };
    let engine = terraform();
    airgapped(&[
        "init",
        "--customer",
        "initech",
        "--engine-path",
        engine.to_str().unwrap(),
    ])
    .ok();
    airgapped(&[
        "trust",
        "add",
        unpacked.join("vendor.pub").to_str().unwrap(),
    ])
    .ok();
    let imported = airgapped(&["import", kit_tar.to_str().unwrap(), "--json"]).ok();
    let json = imported.json();
    assert_eq!(json["kit"]["release"], "platform@1.0.0");
    assert_eq!(json["kit"]["keyId"], vendor_key_id.as_str());
    assert_eq!(json["imported"].as_array().unwrap().len(), 3);
    assert_eq!(
        json["runner"]["outcome"], "offered",
        "never installed unasked"
    );
    let applied = airgapped(&[
        "apply",
        "platform@1.0.0",
        "--inputs-dir",
        inputs.to_str().unwrap(),
        "--yes",
        "--json",
    ]);
    assert_eq!(applied.code, 0, "{}", applied.stderr);
    let results: Vec<String> = applied.json()["releaseReceipt"]["receipt"]["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{}={}",
                s["name"].as_str().unwrap(),
                s["result"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        results,
        ["network=applied", "cluster=applied", "gpu-pools=applied"]
    );
}

#[test]
fn a_kit_that_does_not_verify_is_refused_before_anything_is_imported_or_installed() {
    let vendor = vendor_with_release();
    let work = tempfile::tempdir().unwrap();
    let good_tar = work.path().join("good.tar");
    let current = runner_archive(
        work.path(),
        &own_version(),
        &PathBuf::from(env!("CARGO_BIN_EXE_stackpack-runner")),
    );
    kit(&vendor, &good_tar, Some(&current)).ok();
    let good = work.path().join("good");
    unpack(&good_tar, &good);
    let other_key = work.path().join("other");
    run(Command::new(stackpack_bin())
        .arg("keygen")
        .arg("--out")
        .arg(&other_key))
    .ok();

    let runner = Runner::new("initech").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();

    type Damage<'a> = &'a dyn Fn(&Path) -> PathBuf;
    let variant = |name: &str, edit: &dyn Fn(&Path)| {
        let dir = work.path().join(name);
        crate::common::copy_dir(&good, &dir);
        edit(&dir);
        retar(&dir, &work.path().join(format!("{name}.tar")))
    };
    let truncated: Damage = &|_| {
        let bytes = std::fs::read(&good_tar).unwrap();
        let path = work.path().join("truncated.tar");
        std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        path
    };
    let sums_edited: Damage = &|_| {
        variant("sums-edited", &|dir| {
            let sums = dir.join("SHA256SUMS");
            let text = std::fs::read_to_string(&sums).unwrap();
            std::fs::write(&sums, text.replacen("kit.json", "kit.json ", 1)).unwrap();
        })
    };
    let other_signer: Damage = &|_| {
        variant("other-signer", &|dir| {
            let status = Command::new("openssl")
                .args(["pkeyutl", "-sign", "-rawin", "-inkey"])
                .arg(other_key.with_extension("key"))
                .arg("-in")
                .arg(dir.join("SHA256SUMS"))
                .arg("-out")
                .arg(dir.join("SHA256SUMS.sig"))
                .status()
                .unwrap();
            assert!(status.success());
        })
    };
    // Another signed export of the vendor's own: signed, but not what this kit signed.
    let swapped: Damage = &|_| {
        let export = vendor.export_tar("whole-layout.tar");
        variant("swapped", &|dir| {
            std::fs::copy(&export, dir.join("bundles.tar")).unwrap();
        })
    };
    let added: Damage = &|_| {
        variant("added", &|dir| {
            std::fs::write(dir.join("run-me.sh"), "#!/bin/sh\n").unwrap()
        })
    };
    let cases: [(&str, Damage, &str); 5] = [
        ("truncated", truncated, "truncated"),
        (
            "SHA256SUMS edited",
            sums_edited,
            "not signed by a key this runner trusts",
        ),
        (
            "signed by another key",
            other_signer,
            "not signed by a key this runner trusts",
        ),
        ("bundles swapped", swapped, "does not match its signed sum"),
        ("a file added", added, "does not list"),
    ];
    for (what, damage, says) in cases {
        let tar = damage(work.path());
        let refused = runner.run(&["import", tar.to_str().unwrap()]);
        assert_eq!(
            refused.code, 1,
            "{what} was not refused: {}",
            refused.stderr
        );
        assert!(refused.stderr.contains(says), "{what}: {}", refused.stderr);
        assert!(
            refused.stderr.contains("hint:"),
            "{what}: {}",
            refused.stderr
        );
        assert!(
            releases_in(&runner.store()).unwrap().is_empty(),
            "{what}: imported anyway"
        );
    }

    // The kit's runner: never older than the running one, installed only when asked.
    let older = runner_archive(work.path(), "0.0.1", &saying_version(work.path(), "0.0.1"));
    let older_kit = work.path().join("older.tar");
    kit(&vendor, &older_kit, Some(&older)).ok();
    let own = work.path().join("own-bin");
    std::fs::create_dir(&own).unwrap();
    let running = own.join("stackpack-runner");
    std::fs::copy(env!("CARGO_BIN_EXE_stackpack-runner"), &running).unwrap();
    let with = |args: &[&str]| {
        run(Command::new(&running)
            .args(args)
            .env("STACKPACK_RUNNER_HOME", &runner.home)
            .env("NO_COLOR", "1"))
    };
    let refused = with(&["import", older_kit.to_str().unwrap(), "--upgrade-runner"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("older than this runner"),
        "{}",
        refused.stderr
    );
    assert!(
        releases_in(&runner.store()).unwrap().is_empty(),
        "imported with a refused runner"
    );

    let newer = runner_archive(
        work.path(),
        "99.0.0",
        &saying_version(work.path(), "99.0.0"),
    );
    let newer_kit = work.path().join("newer.tar");
    kit(&vendor, &newer_kit, Some(&newer)).ok();
    let upgraded = with(&[
        "import",
        newer_kit.to_str().unwrap(),
        "--upgrade-runner",
        "--json",
    ]);
    assert_eq!(upgraded.code, 0, "{}", upgraded.stderr);
    assert_eq!(upgraded.json()["runner"]["outcome"], "installed");
    assert_eq!(releases_in(&runner.store()).unwrap().len(), 1);
    let now = run(Command::new(&running).arg("--version")).ok();
    assert!(
        now.stdout.starts_with("stackpack-runner 99.0.0"),
        "{}",
        now.stdout
    );

    // Not a kit: `--upgrade-runner` is a mistake of the command line.
    let plain = vendor.export_tar("plain.tar");
    let wrong = runner.run(&["import", plain.to_str().unwrap(), "--upgrade-runner"]);
    assert_eq!(wrong.code, 2, "{}", wrong.stderr);
}
