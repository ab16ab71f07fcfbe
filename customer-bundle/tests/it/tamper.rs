//! The tamper and trust matrix, through the runner: a bundle with a flipped byte in
//! its layer, config, manifest or signature, signed by an untrusted key, or with no
//! signature, is refused at import (nothing enters the store) and, when it is
//! tampered inside the store after import, refused at plan and apply: nothing is
//! unpacked and the engine never runs. The bundles are the small vendor's
//! (`Vendor::small`): what is checked is bytes and signatures, not what they deploy.

use crate::common;

use std::path::Path;

use common::{fake_engine, raw_archive, write_signed_bundle, Runner, Vendor};
use stackpack_bundle::layout::{self, ImageLayout};
use stackpack_schema::bundle::FileEntry;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::ImageManifest;
use stackpack_schema::signature::PrivateKey;

#[derive(Clone, Copy, Debug)]
enum Tamper {
    Layer,
    Config,
    Manifest,
    Signature,
    Unsigned,
}

const ALL: [Tamper; 5] = [
    Tamper::Layer,
    Tamper::Config,
    Tamper::Manifest,
    Tamper::Signature,
    Tamper::Unsigned,
];

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x20;
    std::fs::write(path, bytes).unwrap();
}

/// Applies `tamper` to `stack@version` in `layout`.
fn tamper(layout: &ImageLayout, stack: &str, version: &semver::Version, how: Tamper) {
    let bundle = layout.find_bundle(stack, version).unwrap().unwrap();
    let manifest: ImageManifest =
        serde_json::from_slice(&layout.read_blob(&bundle.digest, 1 << 20).unwrap()).unwrap();
    let signature = layout.signatures_for(&bundle.digest).unwrap().remove(0);
    let signature_manifest: ImageManifest =
        serde_json::from_slice(&layout.read_blob(&signature.digest, 1 << 20).unwrap()).unwrap();
    let blob = |d: &Digest| layout.blob_path(d);
    match how {
        Tamper::Layer => flip(&blob(&manifest.layers[0].digest), 200),
        Tamper::Config => flip(&blob(&manifest.config.digest), 30),
        Tamper::Manifest => flip(&blob(&bundle.digest), 40),
        Tamper::Signature => flip(&blob(&signature_manifest.layers[0].digest), 60),
        Tamper::Unsigned => layout
            .update_index(|index| index.manifests.retain(|d| d.digest != signature.digest))
            .unwrap(),
    }
}

fn data_plane(vendor: &Vendor) -> semver::Version {
    let built = vendor.build();
    semver::Version::parse(&built.iter().find(|(s, _)| s == "data-plane").unwrap().1).unwrap()
}

#[test]
fn tampered_or_unsigned_bundles_are_refused_at_import_and_nothing_enters_the_store() {
    let vendor = Vendor::small();
    let version = data_plane(&vendor);
    for how in ALL {
        let copy = tempfile::tempdir().unwrap();
        common::copy_dir(&vendor.layout(), copy.path());
        let layout = ImageLayout::open(copy.path()).unwrap();
        tamper(&layout, "data-plane", &version, how);
        let runner = Runner::new("globex").without_account();
        runner
            .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
            .ok();
        let run = runner
            .run(&["import", copy.path().to_str().unwrap()])
            .code(1);
        assert!(
            run.stderr.contains("nothing was imported"),
            "{how:?}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("panicked") && !run.stderr.contains("Error {"),
            "{}",
            run.stderr
        );
        assert!(
            runner.store().entries().unwrap().is_empty(),
            "{how:?} let entries in"
        );
        let blobs = std::fs::read_dir(runner.home.join("store/blobs/sha256"))
            .unwrap()
            .count();
        assert_eq!(blobs, 0, "{how:?} let blobs in");
    }
}

/// Edits the config of `stack@version` in `layout` and re-hashes everything up to
/// the index, as someone who knows the format would: every digest matches again,
/// but no signature names the new manifest.
fn edit_and_rehash(layout: &ImageLayout, stack: &str, version: &semver::Version) {
    let bundle = layout.find_bundle(stack, version).unwrap().unwrap();
    let mut manifest: ImageManifest =
        serde_json::from_slice(&layout.read_blob(&bundle.digest, 1 << 20).unwrap()).unwrap();
    let config = layout.read_blob(&manifest.config.digest, 1 << 24).unwrap();
    // Valid JSON still, and another digest.
    let edited = String::from_utf8(config).unwrap() + "\n";
    let (digest, size) = layout.write_blob(edited.as_bytes()).unwrap();
    manifest.config.digest = digest;
    manifest.config.size = size;
    let (manifest_digest, manifest_size) = layout
        .write_blob(&serde_json::to_vec(&manifest).unwrap())
        .unwrap();
    layout
        .update_index(|index| {
            for entry in index
                .manifests
                .iter_mut()
                .filter(|d| d.digest == bundle.digest)
            {
                entry.digest = manifest_digest.clone();
                entry.size = manifest_size;
            }
        })
        .unwrap();
}

/// Issue 23, item 18: an exported tar with a flipped byte is "altered or
/// corrupted: get a fresh copy from the vendor" (not "not an image layout tar",
/// with a hint about `tar -cf`), and a re-hashed edit is "no trusted signature
/// matches this bundle" (not "has no signature").
#[test]
fn a_damaged_tar_says_altered_or_corrupted_and_a_rehashed_edit_says_no_signature_matches() {
    let vendor = Vendor::small();
    let version = data_plane(&vendor);
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();

    let flipped = tempfile::tempdir().unwrap();
    common::copy_dir(&vendor.layout(), flipped.path());
    let layout = ImageLayout::open(flipped.path()).unwrap();
    tamper(&layout, "data-plane", &version, Tamper::Layer);
    let tar = common::release::tar_of(flipped.path(), &runner.temp.path().join("flipped.tar"));
    let run = runner.run(&["import", tar.to_str().unwrap()]).code(1);
    assert!(
        run.stderr.contains("was altered or corrupted"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hint: get a fresh copy from the vendor"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("tar -cf"), "{}", run.stderr);

    let edited = tempfile::tempdir().unwrap();
    common::copy_dir(&vendor.layout(), edited.path());
    edit_and_rehash(
        &ImageLayout::open(edited.path()).unwrap(),
        "data-plane",
        &version,
    );
    let tar = common::release::tar_of(edited.path(), &runner.temp.path().join("edited.tar"));
    let run = runner.run(&["import", tar.to_str().unwrap()]).code(1);
    assert!(
        run.stderr.contains("no trusted signature matches bundle"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("has no signature"), "{}", run.stderr);
    assert!(runner.store().entries().unwrap().is_empty());
}

#[test]
fn a_bundle_by_an_untrusted_key_is_refused_with_a_hint() {
    let vendor = Vendor::small();
    let version = data_plane(&vendor);
    let other = Vendor::small();
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", other.public_key.to_str().unwrap()])
        .ok();
    let run = runner
        .run(&["import", vendor.layout().to_str().unwrap()])
        .code(1);
    assert!(run.stderr.contains("does not trust"), "{}", run.stderr);
    assert!(
        run.stderr.contains("; it trusts `"),
        "names the trusted key: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("hint: ask your vendor"),
        "{}",
        run.stderr
    );
    assert!(runner.store().entries().unwrap().is_empty());

    // Trusting the right key makes it importable; removing it makes it unusable again.
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout().to_str().unwrap()])
        .ok();
    let reference = format!("data-plane@{version}");
    runner.run(&["verify", &reference]).ok();
    let keys = runner.run(&["trust", "list", "--json"]).ok().json();
    assert_eq!(keys["keys"].as_array().unwrap().len(), 2);
    let vendor_key = stackpack_bundle::trust::read_public_key(&vendor.public_key)
        .unwrap()
        .key_id();
    runner.run(&["trust", "remove", &vendor_key]).ok();
    let run = runner.run(&["verify", &reference]).code(1);
    assert!(
        run.stderr.contains(&format!(
            "is signed by key `{vendor_key}`, which was removed from this runner's trusted keys"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn bundles_tampered_in_the_store_are_refused_before_anything_is_unpacked_or_run() {
    let vendor = Vendor::small();
    let version = data_plane(&vendor);
    let reference = format!("data-plane@{version}");
    let inputs = vendor.inputs("globex");
    for how in ALL {
        let scratch = tempfile::tempdir().unwrap();
        let (engine, ran) =
            fake_engine(scratch.path(), "recording-engine", "exec \"$REAL\" \"$@\"");
        let runner = Runner::with_engine("globex", &engine).without_account();
        runner
            .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
            .ok();
        runner
            .run(&["import", vendor.layout().to_str().unwrap()])
            .ok();
        tamper(&runner.store(), "data-plane", &version, how);
        for command in ["verify", "plan", "apply"] {
            let mut args = vec![command, reference.as_str()];
            if command != "verify" {
                args.extend(["--inputs", inputs.to_str().unwrap(), "--yes"]);
                if command == "plan" {
                    args.pop();
                }
            }
            let run = runner.run(&args).code(1);
            assert!(
                run.stderr.contains("failed verification")
                    || run.stderr.contains("no trusted signature matches"),
                "{how:?} {command}: {}",
                run.stderr
            );
        }
        assert!(!ran.exists(), "{how:?}: the engine ran");
        assert!(
            runner.work_entries().is_empty(),
            "{how:?}: something was unpacked"
        );
        assert!(!runner.state_file("data-plane").exists());
        let receipts = runner.run(&["receipts", "list", "--json"]).ok().json();
        assert!(
            receipts["receipts"].as_array().unwrap().is_empty(),
            "{how:?}: a receipt says something ran"
        );
    }
}

/// A small stack of one output (no provider), signed by a test key.
struct Small {
    key: PrivateKey,
    scratch: tempfile::TempDir,
    layer: Vec<u8>,
}

impl Small {
    fn new() -> Small {
        let main: &[u8] = b"output \"x\" { value = 1 }\n";
        Small {
            key: PrivateKey::from_secret_bytes([3; 32]),
            scratch: tempfile::tempdir().unwrap(),
            layer: raw_archive(&[(
                "stacks/net/main.tf",
                tar::EntryType::Regular,
                main,
                None,
                None,
            )]),
        }
    }

    /// `net@version` signed into the layout folder `name`; returns the folder.
    fn layout(&self, name: &str, version: &str) -> std::path::PathBuf {
        let main: &[u8] = b"output \"x\" { value = 1 }\n";
        let files = vec![FileEntry {
            path: "stacks/net/main.tf".into(),
            digest: Digest::of(main),
            size: main.len() as u64,
            executable: false,
            layer: false,
        }];
        let dir = self.scratch.path().join(name);
        let layout = ImageLayout::create(&dir).unwrap();
        write_signed_bundle(&layout, &self.key, "net", version, &self.layer, files);
        dir
    }

    /// A runner that trusts the key.
    fn runner(&self) -> Runner {
        let public = self.scratch.path().join("vendor.pub");
        std::fs::write(&public, self.key.public_key().to_pem()).unwrap();
        let runner = Runner::new("globex").without_account();
        runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
        runner
    }
}

#[test]
fn importing_again_repairs_a_blob_damaged_in_the_store() {
    let small = Small::new();
    let source = small.layout("layout", "1.0.0");
    let runner = small.runner();
    runner.run(&["import", source.to_str().unwrap()]).ok();
    flip(&runner.store().blob_path(&Digest::of(&small.layer)), 20);
    runner.run(&["verify", "net@1.0.0"]).code(1);

    let again = runner
        .run(&["import", source.to_str().unwrap(), "--json"])
        .ok();
    assert_eq!(
        again.json()["imported"][0]["repairedBlobs"],
        1,
        "{}",
        again.stdout
    );
    runner.run(&["verify", "net@1.0.0"]).ok();
    let third = runner
        .run(&["import", source.to_str().unwrap(), "--json"])
        .ok();
    assert_eq!(third.json()["imported"][0]["repairedBlobs"], 0);
}

#[test]
fn status_shows_as_newer_only_a_version_that_verifies() {
    let small = Small::new();
    let runner = small.runner();
    for (name, version) in [("v1", "1.0.0"), ("v1.5", "1.5.0")] {
        let source = small.layout(name, version);
        runner.run(&["import", source.to_str().unwrap()]).ok();
    }
    let inputs = small.scratch.path().join("empty.tfvars");
    std::fs::write(&inputs, "").unwrap();
    runner
        .run(&[
            "apply",
            "net@1.0.0",
            "--inputs",
            inputs.to_str().unwrap(),
            "--yes",
        ])
        .ok();

    // An index entry that only claims `2.0.0`: it points at `1.5.0`'s manifest.
    let store = runner.store();
    let v15 = store
        .find_bundle("net", &semver::Version::new(1, 5, 0))
        .unwrap()
        .unwrap();
    let mut claim = v15.clone();
    claim.annotations = Some(layout::bundle_entry_annotations(
        "net",
        &semver::Version::new(2, 0, 0),
    ));
    store
        .update_index(|index| index.manifests.push(claim))
        .unwrap();

    let status = runner.run(&["status", "--json"]).ok();
    assert_eq!(
        status.json()["stacks"][0]["newerInStore"],
        "1.5.0",
        "{}",
        status.stdout
    );
    let table = runner.run(&["status"]).ok();
    assert!(!table.stdout.contains("2.0.0"), "{}", table.stdout);
}

#[test]
fn a_missing_bundle_or_blob_is_reported_as_missing_not_as_failed_verification() {
    let small = Small::new();
    let source = small.layout("layout", "1.0.0");
    let runner = small.runner();
    runner.run(&["import", source.to_str().unwrap()]).ok();

    let absent = runner.run(&["verify", "net@9.9.9"]).code(1);
    assert!(
        absent.stderr.contains("is not in the store"),
        "{}",
        absent.stderr
    );
    assert!(absent.stderr.contains("`net@1.0.0`"), "{}", absent.stderr);

    std::fs::remove_file(runner.store().blob_path(&Digest::of(&small.layer))).unwrap();
    let partial = runner.run(&["verify", "net@1.0.0"]).code(1);
    assert!(
        !partial.stderr.contains("failed verification"),
        "{}",
        partial.stderr
    );
    assert!(
        partial.stderr.contains("is incomplete"),
        "{}",
        partial.stderr
    );
    assert!(
        partial.stderr.contains("import it again"),
        "{}",
        partial.stderr
    );
    runner.run(&["import", source.to_str().unwrap()]).ok();
    runner.run(&["verify", "net@1.0.0"]).ok();
}
