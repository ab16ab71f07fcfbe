//! Hostile archives in bundles that are validly signed by a trusted key: `../` paths,
//! absolute paths, symbolic and hard links leaving the tree, device files, and a
//! decompression bomb. Each is refused at import and, planted straight into the
//! store, at plan: nothing is written outside the work folder (nor inside it).

use crate::common;

use common::{raw_archive, write_signed_bundle, write_signed_bundle_tweaked, Runner, Tweaks};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::signature::PrivateKey;
use tar::EntryType;

fn cases(outside: &str) -> Vec<(&'static str, Vec<u8>)> {
    let escape = format!("{outside}/escaped");
    let main: &[u8] = b"output \"x\" { value = 1 }\n";
    let tf = ("stacks/evil/main.tf", EntryType::Regular, main, None, None);
    vec![
        (
            "dot-dot",
            raw_archive(&[
                tf,
                (
                    "stacks/evil/../../../../escaped",
                    EntryType::Regular,
                    b"x",
                    None,
                    None,
                ),
            ]),
        ),
        (
            "absolute",
            raw_archive(&[
                tf,
                (
                    Box::leak(escape.clone().into_boxed_str()),
                    EntryType::Regular,
                    b"x",
                    None,
                    None,
                ),
            ]),
        ),
        (
            "symlink",
            raw_archive(&[
                tf,
                (
                    "stacks/evil/link",
                    EntryType::Symlink,
                    b"",
                    Some(outside),
                    None,
                ),
            ]),
        ),
        (
            "hardlink",
            raw_archive(&[
                tf,
                (
                    "stacks/evil/hard",
                    EntryType::Link,
                    b"",
                    Some("/etc/passwd"),
                    None,
                ),
            ]),
        ),
        (
            "device",
            raw_archive(&[tf, ("stacks/evil/null", EntryType::Char, b"", None, None)]),
        ),
        (
            "fifo",
            raw_archive(&[tf, ("stacks/evil/pipe", EntryType::Fifo, b"", None, None)]),
        ),
        ("bomb", bomb()),
    ]
}

/// 200 MB of zeros in one entry: about 200 kB compressed.
fn bomb() -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::best(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_path("stacks/evil/main.tf").unwrap();
    header.set_size(200 << 20);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append(&header, std::io::repeat(0).take_bytes(200 << 20))
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

trait TakeBytes: std::io::Read + Sized {
    fn take_bytes(self, n: u64) -> std::io::Take<Self> {
        std::io::Read::take(self, n)
    }
}
impl<R: std::io::Read> TakeBytes for R {}

#[test]
fn hostile_archives_signed_by_a_trusted_key_are_refused_and_nothing_is_written() {
    let key = PrivateKey::from_secret_bytes([9; 32]);
    let scratch = tempfile::tempdir().unwrap();
    let public = scratch.path().join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let outside = scratch.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let inputs = scratch.path().join("empty.tfvars");
    std::fs::write(&inputs, "").unwrap();
    let (engine, ran) =
        common::fake_engine(scratch.path(), "recording-engine", "exec \"$REAL\" \"$@\"");

    for (name, layer) in cases(outside.to_str().unwrap()) {
        let source = tempfile::tempdir().unwrap();
        let layout = ImageLayout::create(source.path()).unwrap();
        write_signed_bundle(&layout, &key, "evil", "1.0.0", &layer, vec![]);
        let runner = Runner::with_engine("globex", &engine).without_account();
        runner.run(&["trust", "add", public.to_str().unwrap()]).ok();

        let run = runner
            .run(&["import", source.path().to_str().unwrap()])
            .code(1);
        assert!(
            run.stderr.contains("nothing was imported"),
            "{name}: {}",
            run.stderr
        );
        assert!(runner.store().entries().unwrap().is_empty(), "{name}");

        // Planted straight into the store: refused at plan.
        common::copy_dir(source.path(), &runner.home.join("store"));
        let run = runner
            .run(&["plan", "evil@1.0.0", "--inputs", inputs.to_str().unwrap()])
            .code(1);
        assert!(
            run.stderr.contains("failed verification"),
            "{name}: {}",
            run.stderr
        );
        assert!(
            runner.work_entries().is_empty(),
            "{name}: unpacked into the work folder"
        );
        let escaped: Vec<_> = std::fs::read_dir(&outside).unwrap().collect();
        assert!(escaped.is_empty(), "{name}: wrote outside: {escaped:?}");
        assert!(
            !scratch.path().join("escaped").exists()
                && !runner.temp.path().join("escaped").exists()
        );
        assert!(!ran.exists(), "{name}: the engine ran");
    }
}

/// A validly signed bundle with `tweaks`, offered to a runner that trusts its key;
/// returns what `import` said.
fn import_tweaked(tweaks: Tweaks) -> common::Run {
    let key = PrivateKey::from_secret_bytes([7; 32]);
    let scratch = tempfile::tempdir().unwrap();
    let public = scratch.path().join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    let layer = raw_archive(&[]);
    let layout = ImageLayout::create(scratch.path().join("layout")).unwrap();
    write_signed_bundle_tweaked(
        &layout,
        &key,
        "odd",
        "1.0.0",
        &layer,
        vec![],
        Default::default(),
        tweaks,
    );
    let runner = Runner::new("globex").without_account();
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    let run = runner
        .run(&["import", scratch.path().join("layout").to_str().unwrap()])
        .code(1);
    assert!(runner.store().entries().unwrap().is_empty());
    run
}

#[test]
fn a_signed_bundle_whose_entrypoint_leaves_the_bundle_is_refused_at_import() {
    for entrypoint in ["/etc", "../stacks/x", "stacks/../../x", ""] {
        let run = import_tweaked(Tweaks {
            entrypoint: Some(entrypoint.into()),
            ..Tweaks::default()
        });
        assert!(
            run.stderr.contains("is not a plain relative path"),
            "{entrypoint}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_signature_with_a_malformed_or_future_time_is_refused() {
    for signed_at in ["not-a-time", "2099-01-01T00:00:00Z"] {
        let run = import_tweaked(Tweaks {
            signed_at: signed_at.into(),
            ..Tweaks::default()
        });
        assert!(
            run.stderr.contains(&format!("`signedAt` `{signed_at}`")),
            "{signed_at}: {}",
            run.stderr
        );
    }
}

/// A layout tar: `oci-layout`, `index.json`, then `entries` (name, content); gzipped
/// with `gzip`.
fn layout_tar(
    path: &std::path::Path,
    gzip: bool,
    entries: impl IntoIterator<Item = (String, Vec<u8>)>,
) {
    fn add<W: std::io::Write>(builder: &mut tar::Builder<W>, name: &str, content: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        builder.append_data(&mut header, name, content).unwrap();
    }
    let file = std::fs::File::create(path).unwrap();
    let out: Box<dyn std::io::Write> = if gzip {
        Box::new(flate2::write::GzEncoder::new(
            file,
            flate2::Compression::best(),
        ))
    } else {
        Box::new(file)
    };
    let mut builder = tar::Builder::new(out);
    add(
        &mut builder,
        "oci-layout",
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    );
    add(
        &mut builder,
        "index.json",
        br#"{"schemaVersion":2,"manifests":[]}"#,
    );
    for (name, content) in entries {
        add(&mut builder, &name, &content);
    }
    // Dropping the writer finishes the gzip stream.
    drop(builder.into_inner().unwrap());
}

/// What importing `tar` said, with no staging folder left in the home and nothing
/// in the store.
fn import_refused(tar: &std::path::Path) -> String {
    let key = PrivateKey::from_secret_bytes([5; 32]);
    let runner = Runner::new("globex").without_account();
    let public = runner.temp.path().join("vendor.pub");
    std::fs::write(&public, key.public_key().to_pem()).unwrap();
    runner.run(&["trust", "add", public.to_str().unwrap()]).ok();
    let run = runner.run(&["import", tar.to_str().unwrap()]).code(1);
    let left: Vec<_> = std::fs::read_dir(&runner.home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".staging-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(runner.store().entries().unwrap().is_empty());
    assert!(
        run.stderr.contains(&format!("`{}`", tar.display())),
        "the error does not name the file given: {}",
        run.stderr
    );
    assert!(!run.stderr.contains(".staging-"), "{}", run.stderr);
    run.stderr
}

#[test]
fn an_imported_tar_that_would_inflate_past_the_limits_is_refused_before_it_is_written() {
    let scratch = tempfile::tempdir().unwrap();
    // 40 MiB of zeros, named by their true digest: about 40 kB on disk.
    let zeros = vec![0u8; 40 << 20];
    let digest = stackpack_schema::digest::Digest::of(&zeros);
    let bomb = scratch.path().join("bundles.tar.gz");
    layout_tar(
        &bomb,
        true,
        [(format!("blobs/sha256/{}", digest.hex()), zeros)],
    );
    let stderr = import_refused(&bomb);
    assert!(stderr.contains("decompression bomb"), "{stderr}");
    assert!(stderr.contains("ask them for the file again"), "{stderr}");
}

#[test]
fn an_imported_tar_with_too_many_entries_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let many = scratch.path().join("many.tar.gz");
    layout_tar(
        &many,
        true,
        (0..100_001).map(|i| (format!("notes/{i}"), Vec::new())),
    );
    let stderr = import_refused(&many);
    assert!(stderr.contains("more than 100000 entries"), "{stderr}");
}

#[test]
fn a_truncated_tar_is_refused_with_a_hint_to_copy_it_again() {
    let scratch = tempfile::tempdir().unwrap();
    // 256 kB that do not compress, so that a cut lands inside the blob either way.
    let content: Vec<u8> = (0u32..64 * 1024)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    let digest = stackpack_schema::digest::Digest::of(&content);
    // 20 MiB cut to 600 kB: more than the limits allow for a file that size, yet
    // truncated, not a bomb.
    let large: Vec<u8> = content.iter().copied().cycle().take(20 << 20).collect();
    let large_digest = stackpack_schema::digest::Digest::of(&large);
    let cases = [
        ("cut.tar", false, &content, &digest, None),
        ("cut.tar.gz", true, &content, &digest, None),
        ("cut-large.tar", false, &large, &large_digest, Some(600_000)),
    ];
    for (name, gzip, content, digest, keep) in cases {
        let tar = scratch.path().join(name);
        layout_tar(
            &tar,
            gzip,
            [(format!("blobs/sha256/{}", digest.hex()), content.clone())],
        );
        let bytes = std::fs::read(&tar).unwrap();
        let keep = keep.unwrap_or(bytes.len() / 2);
        std::fs::write(&tar, &bytes[..keep]).unwrap();
        let stderr = import_refused(&tar);
        assert!(stderr.contains("truncated or corrupt"), "{name}: {stderr}");
        assert!(stderr.contains("copy it again"), "{name}: {stderr}");
        assert!(!stderr.contains("stackpack build"), "{name}: {stderr}");
    }
}
