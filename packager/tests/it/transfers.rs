//! The bundle transport against real registries on 127.0.0.1 (CNCF Distribution and
//! our own): a manifest with several large layers pushed with its blobs in
//! parallel, in one request each and in `PATCH` chunks, pulled back byte for byte;
//! the progress totals announced before the first byte and reached at the end; blobs
//! the registry has are not sent again; a registry failing one blob upload midway
//! leaves neither manifest nor tag; a corrupted blob is refused on pull.

use crate::common;

use std::io::Read;
use std::sync::atomic::Ordering;

use common::servers::{Distribution, FaultProxy, OurRegistry};
use stackpack_bundle::layout::ImageLayout;
use stackpack_bundle::remote::progress::Tally;
use stackpack_bundle::remote::{Credentials, Progress, Remote};
use stackpack_bundle::transfer::{pull_bundle, push_manifest_with_blobs};
use stackpack_schema::media_type;
use stackpack_schema::oci::{Descriptor, ImageManifest};

const MIB: usize = 1024 * 1024;

fn random(bytes: usize) -> Vec<u8> {
    let mut data = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(&mut data)
        .unwrap();
    data
}

/// A layout holding one bundle-shaped manifest (artifact type, config) whose
/// layers are `layer_sizes` bytes of random content, of two media types (the
/// transport must move whatever a manifest lists).
fn layout_with_layers(layer_sizes: &[usize]) -> (tempfile::TempDir, ImageLayout, Descriptor) {
    let dir = tempfile::tempdir().unwrap();
    let layout = ImageLayout::create(dir.path()).unwrap();
    let (config_digest, config_size) = layout.write_blob(br#"{"stack":"bench"}"#).unwrap();
    let layers = layer_sizes
        .iter()
        .enumerate()
        .map(|(index, size)| {
            let (digest, size) = layout.write_blob(&random(*size)).unwrap();
            let kind = if index % 2 == 0 {
                media_type::STACK_LAYER
            } else {
                "application/vnd.stackpack.files.v1.tar"
            };
            Descriptor::new(kind, digest, size)
        })
        .collect();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(media_type::OCI_MANIFEST.into()),
        artifact_type: Some(media_type::BUNDLE_ARTIFACT.into()),
        config: Descriptor::new(media_type::BUNDLE_CONFIG, config_digest, config_size),
        layers,
        subject: None,
        annotations: None,
    };
    let bytes = serde_json::to_vec(&manifest).unwrap();
    let (digest, size) = layout.write_blob(&bytes).unwrap();
    let descriptor = Descriptor::new(media_type::OCI_MANIFEST, digest, size);
    (dir, layout, descriptor)
}

fn manifest_of(layout: &ImageLayout, descriptor: &Descriptor) -> ImageManifest {
    serde_json::from_slice(&layout.read_blob(&descriptor.digest, 1 << 20).unwrap()).unwrap()
}

fn blobs_of(manifest: &ImageManifest) -> Vec<Descriptor> {
    std::iter::once(manifest.config.clone())
        .chain(manifest.layers.iter().cloned())
        .collect()
}

/// Both registries, each with the credentials it needs.
fn registries() -> Vec<(&'static str, String, Credentials, Box<dyn std::any::Any>)> {
    let distribution = Distribution::require();
    let ours = OurRegistry::start();
    vec![
        (
            "CNCF Distribution",
            distribution.host(),
            Credentials::Anonymous,
            Box::new(distribution),
        ),
        (
            "our registry",
            ours.host(),
            Credentials::Bearer(ours.publisher_token()),
            Box::new(ours),
        ),
    ]
}

#[test]
fn several_large_layers_push_in_parallel_and_pull_back_byte_for_byte_with_real_totals() {
    let (_dir, layout, descriptor) =
        layout_with_layers(&[9 * MIB, 7 * MIB, 5 * MIB, 3 * MIB, 1000]);
    let manifest = manifest_of(&layout, &descriptor);
    let content: u64 = blobs_of(&manifest).iter().map(|b| b.size).sum();
    for (name, host, credentials, _server) in registries() {
        // One request per blob (the default), and PATCH chunks: with a 4 MiB
        // monolithic limit and 3 MiB chunks, the 9, 7 and 5 MiB layers go in pieces.
        for (mode, remote) in [
            (
                "one request",
                Remote::with_credentials(&host, true, credentials.clone()).unwrap(),
            ),
            (
                "chunks",
                Remote::with_credentials(&host, true, credentials.clone())
                    .unwrap()
                    .with_upload_sizes(4 * MIB as u64, 3 * MIB as u64),
            ),
        ] {
            let repository = format!("acme/stacks/{}", mode.replace(' ', "-"));
            let tally = Tally::new();
            let pushed = push_manifest_with_blobs(
                &remote,
                &repository,
                &layout,
                &descriptor,
                "1.0.0",
                Some(tally.clone() as Progress),
            )
            .unwrap();
            assert_eq!(
                pushed.bytes_sent,
                content + descriptor.size,
                "{name}, {mode}"
            );
            assert_eq!(pushed.blobs_skipped, 0, "{name}, {mode}");
            assert_eq!(
                tally.total(),
                content,
                "{name}, {mode}: the total announced up front"
            );
            assert_eq!(
                tally.moved(),
                content,
                "{name}, {mode}: every blob's bytes counted once"
            );
            assert_eq!(tally.blobs(), 6, "{name}, {mode}");
            assert_eq!(tally.transfers(), (1, 1), "{name}, {mode}");

            let pulled_dir = tempfile::tempdir().unwrap();
            let pulled = ImageLayout::create(pulled_dir.path()).unwrap();
            let tally = Tally::new();
            let version = semver::Version::new(1, 0, 0);
            let result = pull_bundle(
                &remote,
                &repository,
                "bench",
                &version,
                &pulled,
                Some(tally.clone() as Progress),
            )
            .unwrap();
            assert_eq!(result.manifest.digest, descriptor.digest, "{name}, {mode}");
            assert_eq!(
                (tally.total(), tally.moved()),
                (content, content),
                "{name}, {mode}"
            );
            for blob in blobs_of(&manifest) {
                assert_eq!(
                    std::fs::read(pulled.blob_path(&blob.digest)).unwrap(),
                    std::fs::read(layout.blob_path(&blob.digest)).unwrap(),
                    "{name}, {mode}: blob {} differs",
                    blob.digest
                );
            }
            let leftovers: Vec<_> = std::fs::read_dir(pulled_dir.path().join("blobs/sha256"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with('.'))
                .collect();
            assert!(leftovers.is_empty(), "{name}, {mode}: {leftovers:?}");
        }
    }
}

#[test]
fn blobs_the_registry_has_are_not_sent_again_and_other_repositories_mount_them() {
    let (_dir, layout, descriptor) = layout_with_layers(&[4 * MIB, 2 * MIB]);
    for (name, host, credentials, _server) in registries() {
        let remote = Remote::with_credentials(&host, true, credentials.clone()).unwrap();
        push_manifest_with_blobs(
            &remote,
            "acme/stacks/one",
            &layout,
            &descriptor,
            "1.0.0",
            None,
        )
        .unwrap();
        // A second push of the same manifest, in a new session: only the manifest goes.
        let remote = Remote::with_credentials(&host, true, credentials.clone()).unwrap();
        let tally = Tally::new();
        let again = push_manifest_with_blobs(
            &remote,
            "acme/stacks/one",
            &layout,
            &descriptor,
            "1.0.1",
            Some(tally.clone() as Progress),
        )
        .unwrap();
        assert_eq!(
            again.bytes_sent, descriptor.size,
            "{name}: only the manifest"
        );
        assert_eq!(again.blobs_skipped, 3, "{name}");
        assert_eq!(
            (tally.total(), tally.moved()),
            (0, 0),
            "{name}: nothing to move"
        );
        // Another repository of the same host, in the same session: mounted, not sent.
        let mounted = push_manifest_with_blobs(
            &remote,
            "acme/stacks/two",
            &layout,
            &descriptor,
            "1.0.0",
            None,
        )
        .unwrap();
        assert_eq!(
            mounted.bytes_sent, descriptor.size,
            "{name}: mounted, not sent"
        );
        assert_eq!(mounted.blobs_skipped, 3, "{name}");
        assert!(remote
            .pull_manifest("acme/stacks/two", "1.0.0")
            .unwrap()
            .is_some());
    }
}

#[test]
fn a_registry_failing_one_blob_upload_midway_leaves_no_manifest_or_tag() {
    let registry = Distribution::require();
    let (_dir, layout, descriptor) = layout_with_layers(&[6 * MIB, 6 * MIB, 6 * MIB]);
    // The second closing PUT fails (one request per blob), then the second PATCH of
    // a chunked upload.
    for (method, path, limit) in [
        ("PUT", "/blobs/uploads/", u64::MAX),
        ("PATCH", "/blobs/uploads/", 2 * MIB as u64),
    ] {
        let proxy = FaultProxy::start(registry.port, method, path, 2);
        let remote = Remote::with_credentials(&proxy.host(), true, Credentials::Anonymous)
            .unwrap()
            .with_upload_sizes(limit, 2 * MIB as u64);
        let repository = format!("acme/stacks/failing-{}", method.to_lowercase());
        let error =
            push_manifest_with_blobs(&remote, &repository, &layout, &descriptor, "1.0.0", None)
                .unwrap_err();
        assert_eq!(proxy.failures.load(Ordering::SeqCst), 1, "{method}");
        let message = error.to_string();
        assert!(message.contains("500"), "{method}: {message}");
        assert!(message.contains(&proxy.host()), "{method}: {message}");
        let direct =
            Remote::with_credentials(&registry.host(), true, Credentials::Anonymous).unwrap();
        assert!(
            direct
                .pull_manifest(&repository, &descriptor.digest.to_string())
                .unwrap()
                .is_none(),
            "{method}: no manifest without every blob"
        );
        assert!(direct.tags(&repository).unwrap().is_empty(), "{method}");
    }
}

#[test]
fn a_corrupted_blob_among_parallel_downloads_is_refused_and_never_counts_as_present() {
    let registry = Distribution::require();
    let (_dir, layout, descriptor) = layout_with_layers(&[5 * MIB, 5 * MIB, 5 * MIB, 5 * MIB]);
    let remote = Remote::with_credentials(&registry.host(), true, Credentials::Anonymous).unwrap();
    push_manifest_with_blobs(
        &remote,
        "acme/stacks/rot",
        &layout,
        &descriptor,
        "1.0.0",
        None,
    )
    .unwrap();
    let manifest = manifest_of(&layout, &descriptor);
    let victim = &manifest.layers[2];
    let file = registry.blob_file(victim.digest.hex());
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[4 * MIB] ^= 0x01;
    std::fs::write(&file, bytes).unwrap();

    let pulled_dir = tempfile::tempdir().unwrap();
    let pulled = ImageLayout::create(pulled_dir.path()).unwrap();
    let version = semver::Version::new(1, 0, 0);
    let error = pull_bundle(&remote, "acme/stacks/rot", "bench", &version, &pulled, None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("does not match its digest"), "{error}");
    assert!(error.contains(&victim.digest.to_string()), "{error}");
    assert!(!pulled.has_blob(&victim.digest));
    assert!(!pulled
        .root()
        .join("blobs/sha256")
        .join(format!(".partial-{}", victim.digest.hex()))
        .exists());
    assert!(
        pulled.index().unwrap().manifests.is_empty(),
        "nothing indexed"
    );
}
