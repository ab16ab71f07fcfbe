//! `inspect` reads the tar `export` writes as it reads the layout folder: the same
//! list, the same verified bundle; a tar altered in one byte is refused, naming it.

use crate::common;

use std::path::{Path, PathBuf};

use common::{stackpack, TestRepo};

/// Builds `data-plane` and exports it to a tar; returns the repo, the version and
/// the tar.
fn built_and_exported() -> (TestRepo, String, PathBuf) {
    let repo = TestRepo::new();
    let report = repo.build(&["--stack", "data-plane"]);
    let version = report["stacks"][0]["version"].as_str().unwrap().to_string();
    let tar = repo.temp.path().join("bundles.tar");
    repo.run(&[
        "export",
        &format!("data-plane@{version}"),
        "-o",
        tar.to_str().unwrap(),
    ])
    .ok();
    (repo, version, tar)
}

fn inspect(repo: &TestRepo, target: &str) -> common::Run {
    let public = repo.public_key.to_str().unwrap().to_string();
    stackpack(
        &repo.dir,
        &["inspect", target, "--trust", &public, "--json"],
    )
}

#[test]
fn inspect_lists_and_verifies_an_exported_tar_as_it_does_the_folder() {
    let (repo, version, tar) = built_and_exported();
    let folder = repo.layout();
    let (folder, tar) = (folder.to_str().unwrap(), tar.to_str().unwrap());

    let listed_folder = inspect(&repo, folder).ok().json();
    let listed_tar = inspect(&repo, tar).ok().json();
    assert_eq!(listed_tar, listed_folder);
    assert_eq!(
        listed_tar["bundles"][0]["stack"], "data-plane",
        "{listed_tar}"
    );

    let one = |layout: &str| inspect(&repo, &format!("{layout}:data-plane@{version}"));
    let verified_folder = one(folder).ok().json();
    let verified_tar = one(tar).ok().json();
    assert_eq!(verified_tar, verified_folder);
    assert!(
        verified_tar.to_string().contains("data-plane"),
        "{verified_tar}"
    );
}

/// The offset in `tar` of the first content byte of its largest blob.
fn largest_blob_offset(tar: &Path) -> u64 {
    let mut archive = ::tar::Archive::new(std::fs::File::open(tar).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| {
            entry
                .path()
                .unwrap()
                .to_string_lossy()
                .contains("blobs/sha256/")
        })
        .map(|entry| (entry.size(), entry.raw_file_position()))
        .max()
        .expect("the tar holds blobs")
        .1
}

#[test]
fn inspect_refuses_an_exported_tar_with_a_flipped_byte() {
    let (repo, version, tar) = built_and_exported();
    let mut bytes = std::fs::read(&tar).unwrap();
    let at = largest_blob_offset(&tar) as usize + 16;
    bytes[at] ^= 0x01;
    std::fs::write(&tar, bytes).unwrap();
    let tar = tar.to_str().unwrap();
    for target in [tar.to_string(), format!("{tar}:data-plane@{version}")] {
        let run = inspect(&repo, &target);
        assert_eq!(run.code, 1, "{target}: {}", run.stderr);
        assert!(
            run.stderr.contains("does not match its digest") && run.stderr.contains(tar),
            "{target}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "nothing is shown: {}", run.stdout);
    }
}
