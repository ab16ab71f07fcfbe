//! Large incompressible files travel as layers of their own (config format 2). The
//! runner imports, verifies and unpacks them byte for byte, through the real packager
//! and real Terraform; it refuses, with nothing imported or unpacked and the engine
//! never run, a tampered file layer, a file layer the manifest lacks or the signed
//! list does not name, a file both in a layer and in the tar, an unsafe path, and a
//! format newer than it reads; and bundles of the old format still verify.

use crate::common;

use std::path::Path;

use common::{fake_engine, raw_archive, write_signed_bundle_tweaked, Runner, Tweaks, Vendor};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::bundle::FileEntry;
use stackpack_schema::digest::Digest;
use stackpack_schema::oci::ImageManifest;
use stackpack_schema::signature::PrivateKey;

const LAMBDA: &str = "stacks/data-plane/assets/lambda.zip";

fn random_bytes(size: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; size];
    rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut bytes);
    bytes
}

/// The vendor's data-plane stack with a 3 MiB random binary beside its `.tf` files.
fn vendor_with_binary() -> (Vendor, Vec<u8>) {
    let vendor = Vendor::small();
    let binary = random_bytes((3 << 20) + 101);
    let path = vendor.dir.join(LAMBDA);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &binary).unwrap();
    common::git(&vendor.dir, &["add", "-A"]);
    common::git(&vendor.dir, &["commit", "-q", "-m", "a large binary"]);
    (vendor, binary)
}

/// `stackpack inspect --json` of `stack@version` in the vendor's layout.
fn inspect(vendor: &Vendor, reference: &str) -> serde_json::Value {
    common::Run::from(
        std::process::Command::new(common::stackpack_bin())
            .arg("inspect")
            .arg(format!("{}:{reference}", vendor.layout().display()))
            .arg("--trust")
            .arg(&vendor.public_key)
            .arg("--json")
            .output()
            .unwrap(),
    )
    .ok()
    .json()
}

/// The file layer of `manifest` (there is one in these bundles).
fn file_layer_digest(layout: &ImageLayout, stack: &str, version: &str) -> Digest {
    let version = semver::Version::parse(version).unwrap();
    let bundle = layout.find_bundle(stack, &version).unwrap().unwrap();
    let manifest: ImageManifest =
        serde_json::from_slice(&layout.read_blob(&bundle.digest, 1 << 20).unwrap()).unwrap();
    let layers: Vec<_> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == stackpack_schema::media_type::FILE_LAYER)
        .collect();
    assert_eq!(layers.len(), 1, "{:?}", manifest.layers);
    layers[0].digest.clone()
}

#[test]
fn a_large_binary_travels_in_its_own_layer_shared_by_the_next_version_and_unpacks_byte_for_byte() {
    let (vendor, binary) = vendor_with_binary();
    let scratch = tempfile::tempdir().unwrap();
    let seen = scratch.path().join("seen.zip");
    // Records what the engine finds in its work folder, then runs the real Terraform.
    let (engine, _) = fake_engine(
        scratch.path(),
        "copying-engine",
        &format!(
            "cp -f assets/lambda.zip '{}' 2>/dev/null\nexec \"$REAL\" \"$@\"",
            seen.display()
        ),
    );
    let runner = Runner::with_engine("globex", &engine).without_account();
    let reference = common::build_and_import(&vendor, &runner);
    let version = reference.trim_start_matches("data-plane@").to_string();

    // The packager's own view: one file layer, whole in JSON, its digest the file's.
    let shown = inspect(&vendor, &reference);
    let layers = shown["fileLayers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "{shown}");
    assert_eq!(layers[0]["path"], LAMBDA);
    assert_eq!(layers[0]["size"], binary.len() as u64);
    assert_eq!(layers[0]["digest"], Digest::of(&binary).to_string());
    assert_eq!(shown["config"]["format"], 2);
    let layer = file_layer_digest(
        &ImageLayout::open(vendor.layout()).unwrap(),
        "data-plane",
        &version,
    );
    assert_eq!(layer, Digest::of(&binary));

    // The runner verifies it and unpacks it into the work folder byte for byte.
    runner.run(&["verify", &reference]).ok();
    runner
        .run(&[
            "plan",
            &reference,
            "--inputs",
            vendor.inputs("globex").to_str().unwrap(),
        ])
        .ok();
    assert!(
        std::fs::read(&seen).unwrap() == binary,
        "the engine saw other bytes"
    );
    assert!(runner.work_entries().is_empty());

    // A one-line `.tf` edit: a new version whose file layer is the same blob.
    vendor.change("stacks/data-plane/main.tf", "\n# one more line\n");
    let next = common::build_and_import(&vendor, &runner);
    assert_ne!(next, reference);
    let next_version = next.trim_start_matches("data-plane@");
    assert_eq!(
        file_layer_digest(&runner.store(), "data-plane", next_version),
        layer
    );
    let human = common::Run::from(
        std::process::Command::new(common::stackpack_bin())
            .arg("inspect")
            .arg(format!("{}:{next}", vendor.layout().display()))
            .output()
            .unwrap(),
    )
    .ok();
    assert!(
        human.stdout.contains("FILE LAYER") && human.stdout.contains(&layer.short()),
        "{}",
        human.stdout
    );
}

#[test]
fn a_file_layer_tampered_before_import_or_in_the_store_is_refused_and_nothing_is_unpacked() {
    let (vendor, _) = vendor_with_binary();
    let version = vendor
        .build()
        .into_iter()
        .find(|(s, _)| s == "data-plane")
        .unwrap()
        .1;
    let reference = format!("data-plane@{version}");
    let layer = file_layer_digest(
        &ImageLayout::open(vendor.layout()).unwrap(),
        "data-plane",
        &version,
    );

    // Before import: nothing enters the store.
    let copy = tempfile::tempdir().unwrap();
    common::copy_dir(&vendor.layout(), copy.path());
    flip(
        &ImageLayout::open(copy.path()).unwrap().blob_path(&layer),
        1 << 20,
    );
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    let run = runner
        .run(&["import", copy.path().to_str().unwrap()])
        .code(1);
    assert!(
        run.stderr
            .contains("file layer `stacks/data-plane/assets/lambda.zip`")
            && run.stderr.contains("nothing was imported"),
        "{}",
        run.stderr
    );
    assert!(runner.store().entries().unwrap().is_empty());

    // In the store after import: refused at verify and plan, the engine never runs.
    let scratch = tempfile::tempdir().unwrap();
    let (engine, ran) = fake_engine(scratch.path(), "recording-engine", "exec \"$REAL\" \"$@\"");
    let runner = Runner::with_engine("globex", &engine).without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
        .run(&["import", vendor.layout().to_str().unwrap()])
        .ok();
    flip(&runner.store().blob_path(&layer), 12345);
    for command in ["verify", "plan"] {
        let mut args = vec![command, reference.as_str()];
        let inputs = vendor.inputs("globex");
        if command == "plan" {
            args.extend(["--inputs", inputs.to_str().unwrap()]);
        }
        let run = runner.run(&args).code(1);
        assert!(
            run.stderr.contains("failed verification")
                && run.stderr.contains("does not match its digest"),
            "{command}: {}",
            run.stderr
        );
    }
    assert!(!ran.exists(), "the engine ran");
    assert!(runner.work_entries().is_empty(), "something was unpacked");
}

fn flip(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x20;
    std::fs::write(path, bytes).unwrap();
}

/// A small signed `odd@1.0.0`: a `main.tf` in the tar, and `files` and `tweaks` as
/// given (file layers among them), offered to a runner that trusts its key. Returns
/// what `import` said, and the runner.
fn import_signed(
    tar: &[(&str, &[u8])],
    files: Vec<FileEntry>,
    tweaks: Tweaks,
) -> (common::Run, Runner) {
    let key = PrivateKey::from_secret_bytes([9; 32]);
    let scratch = tempfile::tempdir().unwrap();
    let public = scratch.path().join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let entries: Vec<common::RawEntry> = tar
        .iter()
        .map(|(path, content)| (*path, tar::EntryType::Regular, *content, None, None))
        .collect();
    let layer = raw_archive(&entries);
    // Sorted, as the packager writes the list: the verifier refuses any other order.
    let mut files = files;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let layout = ImageLayout::create(scratch.path().join("layout")).unwrap();
    write_signed_bundle_tweaked(
        &layout,
        &key,
        "odd",
        "1.0.0",
        &layer,
        files,
        Default::default(),
        tweaks,
    );
    let runner = Runner::new("globex");
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    let run = runner.run(&["import", scratch.path().join("layout").to_str().unwrap()]);
    (run, runner)
}

const MAIN: &[u8] = b"output \"x\" { value = 1 }\n";

fn entry(path: &str, content: &[u8], layer: bool) -> FileEntry {
    FileEntry {
        path: path.into(),
        digest: Digest::of(content),
        size: content.len() as u64,
        executable: false,
        layer,
    }
}

/// A refusal case: its name, the tar's files, the signed list, the tweaks, and what
/// the error must say.
type Case<'a> = (
    &'a str,
    Vec<(&'a str, &'a [u8])>,
    Vec<FileEntry>,
    Tweaks,
    &'a str,
);

#[test]
fn file_layers_that_do_not_agree_with_the_signed_list_are_refused_at_import() {
    let binary = random_bytes(2 << 20);
    let main = ("stacks/odd/main.tf", MAIN);
    let with_layer = |title: &str| Tweaks {
        file_layers: vec![(binary.clone(), title.to_string())],
        ..Tweaks::default()
    };
    let cases: Vec<Case> = vec![
        (
            "listed as a layer, missing from the manifest",
            vec![main],
            vec![
                entry(main.0, MAIN, false),
                entry("stacks/odd/blob.bin", &binary, true),
            ],
            Tweaks::default(),
            "and no layer carries it",
        ),
        (
            "listed as a layer, also in the tar",
            vec![main, ("stacks/odd/blob.bin", &binary)],
            vec![
                entry(main.0, MAIN, false),
                entry("stacks/odd/blob.bin", &binary, true),
            ],
            with_layer("stacks/odd/blob.bin"),
            "says it travels as a layer of its own",
        ),
        (
            "a file layer the signed list does not name",
            vec![main],
            vec![entry(main.0, MAIN, false)],
            with_layer("stacks/odd/blob.bin"),
            "that its signed file list does not name",
        ),
        (
            "an absolute path",
            vec![main],
            vec![
                entry("/etc/evil", &binary, true),
                entry(main.0, MAIN, false),
            ],
            with_layer("/etc/evil"),
            "it is an absolute path",
        ),
        (
            "a path with `..`",
            vec![main],
            vec![
                entry(main.0, MAIN, false),
                entry("stacks/odd/../../../evil", &binary, true),
            ],
            with_layer("stacks/odd/../../../evil"),
            "it contains `..`",
        ),
        (
            "a file where a folder must be",
            vec![main],
            vec![
                entry(main.0, MAIN, false),
                entry("stacks/odd/main.tf/x", &binary, true),
            ],
            with_layer("stacks/odd/main.tf/x"),
            "where `stacks/odd/main.tf/x` needs a folder",
        ),
        (
            "a file layer in format 1",
            vec![main],
            vec![
                entry(main.0, MAIN, false),
                entry("stacks/odd/blob.bin", &binary, true),
            ],
            Tweaks {
                format: Some(1),
                ..with_layer("stacks/odd/blob.bin")
            },
            "which only format `2` allows",
        ),
        (
            "a format newer than the runner reads",
            vec![main],
            vec![entry(main.0, MAIN, false)],
            Tweaks {
                format: Some(3),
                ..Tweaks::default()
            },
            "upgrade stackpack-runner",
        ),
    ];
    for (name, tar, files, tweaks, expected) in cases {
        let (run, runner) = import_signed(&tar, files, tweaks);
        let run = run.code(1);
        assert!(
            run.stderr.contains(expected) && run.stderr.contains("nothing was imported"),
            "{name}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{name}: {}", run.stderr);
        if expected == "upgrade stackpack-runner" {
            assert!(
                run.stderr
                    .contains("hint: install a newer `stackpack-runner`"),
                "{name}: {}",
                run.stderr
            );
        }
        assert!(runner.store().entries().unwrap().is_empty(), "{name}");
        assert!(runner.work_entries().is_empty(), "{name}");
    }
}

#[test]
fn an_old_format_bundle_with_every_file_in_the_tar_still_verifies() {
    let binary = random_bytes(2 << 20);
    let (run, runner) = import_signed(
        &[
            ("stacks/odd/blob.bin", &binary),
            ("stacks/odd/main.tf", MAIN),
        ],
        vec![
            entry("stacks/odd/blob.bin", &binary, false),
            entry("stacks/odd/main.tf", MAIN, false),
        ],
        Tweaks {
            format: Some(1),
            ..Tweaks::default()
        },
    );
    run.ok();
    runner.run(&["verify", "odd@1.0.0"]).ok();
}
