//! `stackpack-runner pull` from a real CNCF Distribution on 127.0.0.1: the bundle
//! arrives in the store byte for byte with its blobs moved (not left in staging),
//! the progress lines of a CI log give the real total before the first byte and
//! at the end, `--quiet` prints none, and a blob that rotted in the registry is
//! refused with nothing entering the store. The bundle is the small vendor's
//! `data-plane` (built-in resources) with a few MB of files: what moves is blobs.

use crate::common;

use std::process::Command;

use common::{Runner, Vendor};
use stackpack_bundle::layout::ImageLayout;
use stackpack_schema::oci::ImageManifest;
use stackpack_test_support::servers::Distribution;
use stackpack_test_support::Run;

/// Publishes the vendor's `data-plane`, with a few MB of incompressible files so
/// the transfer is worth measuring, and returns its manifest in the vendor layout.
/// The files are the same bytes each time (xorshift from a fixed seed): a layer of
/// their own, which the next version shares.
fn publish_data_plane(vendor: &Vendor, registry: &Distribution) -> ImageManifest {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..500_000)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect();
    std::fs::write(vendor.dir.join("stacks/data-plane/mirror.bin"), &noise).unwrap();
    vendor.change("stacks/data-plane/README.md", "\nmirror\n");
    let run = Run::from(
        Command::new(common::stackpack_bin())
            .current_dir(&vendor.dir)
            .args([
                "publish",
                "--json",
                "--insecure",
                "--no-modules",
                "--stack",
                "data-plane",
                "--registry",
                &format!("{}/acme", registry.host()),
                "--key",
                vendor.key.to_str().unwrap(),
            ])
            .env_remove("GITHUB_HEAD_REF")
            .env_remove("GITHUB_REF_NAME")
            .env_remove("CI_COMMIT_REF_NAME")
            .output()
            .unwrap(),
    )
    .ok();
    let report = run.json();
    let digest: stackpack_schema::digest::Digest = report["stacks"][0]["digest"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let layout = ImageLayout::open(vendor.layout()).unwrap();
    serde_json::from_slice(&layout.read_blob(&digest, 1 << 20).unwrap()).unwrap()
}

fn trusting_runner(vendor: &Vendor) -> Runner {
    let runner = Runner::new("globex").without_account();
    runner
        .run(&["trust", "add", vendor.public_key.to_str().unwrap()])
        .ok();
    runner
}

#[test]
fn a_pulled_bundle_lands_in_the_store_byte_for_byte_with_its_real_progress_totals() {
    let registry = Distribution::require();
    let vendor = Vendor::small();
    let manifest = publish_data_plane(&vendor, &registry);
    let blobs: Vec<_> = std::iter::once(&manifest.config)
        .chain(&manifest.layers)
        .collect();
    let total: u64 = blobs.iter().map(|b| b.size).sum();
    let reference = format!("{}/acme/stacks/data-plane:0.1.0", registry.host());

    let runner = trusting_runner(&vendor);
    // stderr is a pipe here, as in CI: plain lines, no bar.
    let pulled = runner.run(&["pull", &reference, "--insecure"]).ok();
    let lines: Vec<&str> = pulled.stderr.lines().collect();
    let announced = lines
        .iter()
        .position(|l| l.starts_with(&format!("`data-plane`: {} blob(s) to move, ", blobs.len())))
        .unwrap_or_else(|| panic!("no announced total: {}", pulled.stderr));
    assert!(
        lines[announced].ends_with(&format!("({total} bytes)")),
        "the total is every blob of the manifest: {}",
        pulled.stderr
    );
    let reached = lines
        .iter()
        .position(|l| l.starts_with("`data-plane`: pulled "))
        .unwrap_or_else(|| panic!("no final line: {}", pulled.stderr));
    assert!(reached > announced, "{}", pulled.stderr);
    assert!(
        lines[reached].contains(&format!("({total} bytes) in ")),
        "every byte counted once: {}",
        pulled.stderr
    );
    let store = runner.store();
    let vendor_layout = ImageLayout::open(vendor.layout()).unwrap();
    for blob in &blobs {
        assert_eq!(
            std::fs::read(store.blob_path(&blob.digest)).unwrap(),
            std::fs::read(vendor_layout.blob_path(&blob.digest)).unwrap(),
            "blob {}",
            blob.digest
        );
    }
    let staging_left: Vec<_> = std::fs::read_dir(&runner.home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".staging-"))
        .collect();
    assert!(staging_left.is_empty(), "{staging_left:?}");
    runner.run(&["verify", "data-plane@0.1.0"]).ok();

    // On a terminal (a pty from `script`): the bar, then the same summary line with
    // every byte of the manifest.
    if stackpack_test_support::have("script") {
        let on_terminal = trusting_runner(&vendor);
        let command = format!(
            "{} --home {} pull {reference} --insecure",
            env!("CARGO_BIN_EXE_stackpack-runner"),
            on_terminal.home.display()
        );
        let run = Run::from(
            Command::new("script")
                .args(["-qefc", &command, "/dev/null"])
                .env("NO_COLOR", "1")
                .env("COLUMNS", "120")
                .output()
                .unwrap(),
        )
        .ok();
        assert!(
            run.stdout.contains("`data-plane`: pulled "),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains(&format!("({total} bytes) in ")),
            "{}",
            run.stdout
        );
        assert!(
            !run.stdout.contains("blob(s) to move"),
            "a bar, not CI lines: {}",
            run.stdout
        );
    }

    // `--quiet`: no progress at all.
    let quiet = trusting_runner(&vendor);
    let run = quiet
        .run(&["--quiet", "pull", &reference, "--insecure"])
        .ok();
    assert!(!run.stderr.contains("blob(s) to move"), "{}", run.stderr);
}

#[test]
fn a_blob_rotted_in_the_registry_is_refused_and_nothing_enters_the_store() {
    let registry = Distribution::require();
    let vendor = Vendor::small();
    let manifest = publish_data_plane(&vendor, &registry);
    let layer = manifest
        .layers
        .iter()
        .max_by_key(|l| l.size)
        .expect("a layer");
    let file = registry.blob_file(layer.digest.hex());
    let mut bytes = std::fs::read(&file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&file, bytes).unwrap();

    let runner = trusting_runner(&vendor);
    let reference = format!("{}/acme/stacks/data-plane:0.1.0", registry.host());
    let refused = runner.run(&["pull", &reference, "--insecure"]).code(1);
    assert!(
        refused.stderr.contains("does not match its digest"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&layer.digest.to_string()),
        "{}",
        refused.stderr
    );
    let store = runner.store();
    assert!(store.index().unwrap().manifests.is_empty());
    let stored: Vec<_> = std::fs::read_dir(store.root().join("blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(stored.is_empty(), "{stored:?}");
}

#[test]
fn a_bundle_no_trusted_key_signed_is_refused_before_its_layers_move() {
    let registry = Distribution::require();
    let vendor = Vendor::small();
    let manifest = publish_data_plane(&vendor, &registry);
    // The registry's copy of every layer is gone: a pull that reached for one would
    // fail on it, so the refusal below shows none was asked for.
    for layer in &manifest.layers {
        let _ = std::fs::remove_file(registry.blob_file(layer.digest.hex()));
    }
    let someone_else = Vendor::small();
    let runner = Runner::new("globex").without_account();
    let trusted = runner
        .run(&[
            "trust",
            "add",
            someone_else.public_key.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    let trusted_id = trusted["keyId"]
        .as_str()
        .unwrap_or_else(|| panic!("{trusted}"));

    let reference = format!("{}/acme/stacks/data-plane:0.1.0", registry.host());
    let refused = runner.run(&["pull", &reference, "--insecure"]).code(1);
    let said = &refused.stderr;
    assert!(said.contains("which this runner does not trust"), "{said}");
    let signer = stackpack_bundle::trust::read_public_key(&vendor.public_key)
        .unwrap()
        .key_id();
    assert!(
        said.contains(&format!("`{signer}`")),
        "names the signing key: {said}"
    );
    assert!(
        said.contains(&format!("it trusts `{trusted_id}`")),
        "names the trusted key: {said}"
    );
    // Key ids are random hex and may hold "404" themselves: look past them.
    let rest = said.replace(trusted_id, "").replace(&signer, "");
    assert!(
        !rest.contains("does not match") && !rest.contains("404"),
        "{said}"
    );
    assert!(runner.store().index().unwrap().manifests.is_empty());
}

/// A hostile "registry" on 127.0.0.1: `GET /v2/` answers as a registry does, and
/// every manifest is a body that never ends. Returns its address and the count of
/// manifest bytes it managed to hand to the kernel before the reader hung up.
fn endless_manifest_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let sent = std::sync::Arc::new(AtomicU64::new(0));
    let counter = sent.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let counter = counter.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    return;
                }
                // The rest of the head, up to the blank line.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let path = request_line.split(' ').nth(1).unwrap_or("");
                if !path.contains("/manifests/") {
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nDocker-Distribution-API-Version: registry/2.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                    );
                    return;
                }
                // No length, no end: the body lasts as long as the connection.
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\nConnection: close\r\n\r\n{\"schemaVersion\":2,\"annotations\":{\"x\":\"",
                );
                let chunk = vec![b'x'; 64 * 1024];
                while stream.write_all(&chunk).is_ok() {
                    counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
            });
        }
    });
    (address, sent)
}

#[test]
fn an_endless_manifest_is_cut_off_at_the_manifest_cap_with_an_error_naming_it() {
    let (address, sent) = endless_manifest_server();
    let runner = Runner::new("globex").without_account();
    let started = std::time::Instant::now();
    let mut child = runner
        .command(&[
            "pull",
            &format!("{address}/acme/stacks/data-plane:1.0.0"),
            "--insecure",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Before the cap, the runner read for as long as the server sent (6 GB in 40 s).
    let deadline = started + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`pull` was still reading an endless manifest after 30 s ({} MB sent)",
                sent.load(std::sync::atomic::Ordering::Relaxed) >> 20
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let refused = Run::from(child.wait_with_output().unwrap()).code(1);
    assert!(
        refused
            .stderr
            .contains("manifest larger than the limit of 4 MiB"),
        "{}",
        refused.stderr
    );
    // What the runner took in is the cap plus what the sockets buffer, not the stream.
    let taken = sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        taken < 64 << 20,
        "{} MB were sent before the runner hung up",
        taken >> 20
    );
    assert!(runner.store().index().unwrap().manifests.is_empty());
}

#[test]
fn a_bundle_signed_for_another_repository_is_refused_unless_that_mirror_is_trusted() {
    use stackpack_bundle::remote::Remote;
    use stackpack_bundle::transfer::{pull_bundle, push_manifest_with_blobs, push_referrer};
    let registry = Distribution::require();
    let vendor = Vendor::small();
    publish_data_plane(&vendor, &registry);
    // Someone copies acme's signed bundle, signatures and all, into their own
    // namespace on the same registry.
    let remote = Remote::new(&registry.host(), true).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let copy = ImageLayout::create(scratch.path().join("copy")).unwrap();
    let version = semver::Version::new(0, 1, 0);
    let pulled = pull_bundle(
        &remote,
        "acme/stacks/data-plane",
        "data-plane",
        &version,
        &copy,
        None,
    )
    .unwrap();
    let elsewhere = "other/stacks/data-plane";
    push_manifest_with_blobs(&remote, elsewhere, &copy, &pulled.manifest, "0.1.0", None).unwrap();
    for signature in &pulled.signatures {
        push_referrer(
            &remote,
            elsewhere,
            &copy,
            signature,
            &pulled.manifest.digest,
        )
        .unwrap();
    }

    let runner = trusting_runner(&vendor);
    let reference = format!("{}/{elsewhere}:0.1.0", registry.host());
    let refused = runner.run(&["pull", &reference, "--insecure"]).code(1);
    assert!(
        refused
            .stderr
            .contains("was pulled from `other/stacks/data-plane`, and its vendor signed it for `acme/stacks/data-plane`"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("[policy.mirrors]"),
        "{}",
        refused.stderr
    );
    assert!(runner.store().index().unwrap().manifests.is_empty());

    // The customer says `other` mirrors `acme`: the same pull is accepted.
    let config = runner.home.join("runner.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[policy.mirrors]\n\"other\" = \"acme\"\n");
    std::fs::write(&config, text).unwrap();
    runner.run(&["pull", &reference, "--insecure"]).ok();
    assert!(!runner.store().index().unwrap().manifests.is_empty());
}

/// The blobs of `manifest`: config and layers.
fn blobs_of(manifest: &ImageManifest) -> Vec<stackpack_schema::digest::Digest> {
    std::iter::once(&manifest.config)
        .chain(&manifest.layers)
        .map(|b| b.digest.clone())
        .collect()
}

/// Issue 23, item 14: an upgrade pulls only what the store lacks (a large file's
/// layer, as a provider's, stays), the CI progress line says how many blobs were
/// already here, and pulling what the store holds moves nothing.
#[test]
fn a_pull_moves_only_the_blobs_the_store_does_not_already_hold() {
    let registry = Distribution::require();
    let vendor = Vendor::small();
    let first = publish_data_plane(&vendor, &registry);
    let runner = trusting_runner(&vendor);
    let host = registry.host();
    runner
        .run(&[
            "pull",
            &format!("{host}/acme/stacks/data-plane:0.1.0"),
            "--insecure",
        ])
        .ok();

    let second = publish_data_plane(&vendor, &registry);
    let old = blobs_of(&first);
    let new = blobs_of(&second);
    let shared = new.iter().filter(|d| old.contains(d)).count();
    assert!(shared >= 1 && shared < new.len(), "{old:?} {new:?}");
    let to_move: u64 = std::iter::once(&second.config)
        .chain(&second.layers)
        .filter(|b| !old.contains(&b.digest))
        .map(|b| b.size)
        .sum();
    let pulled = runner
        .run(&[
            "pull",
            &format!("{host}/acme/stacks/data-plane:0.1.1"),
            "--insecure",
        ])
        .ok();
    let announced = pulled
        .stderr
        .lines()
        .find(|l| l.contains("blob(s) to move"))
        .unwrap_or_else(|| panic!("no announced total: {}", pulled.stderr));
    assert!(
        announced.starts_with(&format!(
            "`data-plane`: {} blob(s) to move, ",
            new.len() - shared
        )),
        "{announced}"
    );
    assert!(
        announced.contains(&format!("({to_move} bytes)")),
        "{announced}"
    );
    assert!(
        announced.ends_with(&format!(
            "; {shared} of {} blob(s) already here, checked",
            new.len()
        )),
        "{announced}"
    );
    runner.run(&["verify", "data-plane@0.1.1"]).ok();

    // Everything already here: nothing moves, and the line says so.
    let again = trusting_runner(&vendor);
    std::fs::remove_dir_all(&again.home).unwrap();
    common::copy_dir(&runner.home, &again.home);
    let pulled = again
        .run(&[
            "pull",
            &format!("{host}/acme/stacks/data-plane:0.1.1"),
            "--insecure",
        ])
        .ok();
    assert!(
        pulled.stderr.contains(&format!(
            "all {} blob(s) already here, checked: nothing to move",
            new.len()
        )),
        "{}",
        pulled.stderr
    );
    assert!(
        !pulled.stderr.contains("blob(s) to move"),
        "{}",
        pulled.stderr
    );
}

#[test]
fn pulling_a_repository_or_version_the_registry_does_not_have_names_the_nearest() {
    let registry = Distribution::require();
    let vendor = Vendor::small();
    publish_data_plane(&vendor, &registry);
    let runner = trusting_runner(&vendor);
    let host = registry.host();
    let pull = |reference: String| {
        runner
            .run(&["pull", &reference, "--insecure"])
            .code(2)
            .stderr
    };

    // A misspelt stack: the repository does not exist; the nearest one the
    // registry lists is named.
    let misspelt = pull(format!("{host}/acme/stacks/data-plan:0.1.0"));
    assert!(
        misspelt.contains(&format!(
            "repository `acme/stacks/data-plan` does not exist; did you mean `{host}/acme/stacks/data-plane:0.1.0`?"
        )),
        "{misspelt}"
    );
    // A path without `/stacks/`: the same, and where bundles live.
    let flat = pull(format!("{host}/acme/data-plane:0.1.0"));
    assert!(
        flat.contains("repository `acme/data-plane` does not exist"),
        "{flat}"
    );
    assert!(
        flat.contains(&format!(
            "did you mean `{host}/acme/stacks/data-plane:0.1.0`?"
        )),
        "{flat}"
    );
    assert!(
        flat.contains("HOST/NAMESPACE/stacks/STACK:VERSION"),
        "{flat}"
    );
    // A version never published: the repository's versions.
    let version = pull(format!("{host}/acme/stacks/data-plane:0.3.0"));
    assert!(
        version.contains(
            "repository `acme/stacks/data-plane` has no version `0.3.0`; its versions: `0.1.0`"
        ),
        "{version}"
    );
    let status = runner.run(&["status", "--json"]).ok();
    assert!(
        !status.stdout.contains("data-plane"),
        "nothing entered the store: {}",
        status.stdout
    );
}
