//! 50 clients at once: each pushes its own images and pulls everyone's, some push
//! the very same blobs and manifests into a shared repository, and some race on
//! one upload session. Nothing is lost or corrupted.

use crate::common;

use std::sync::{Arc, Barrier};

use common::*;

#[test]
fn fifty_clients_pushing_and_pulling_lose_nothing() {
    let server = OurRegistry::start();
    let token = server.token("publisher", None);
    let clients = 50;
    let barrier = Arc::new(Barrier::new(clients));
    let shared_layer = bytes(4242, 200_000);
    let shared_digest = sha256(&shared_layer);
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let client = Client::new(server.url(), Some(token.clone()));
            let barrier = barrier.clone();
            let shared_layer = shared_layer.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut pushed = Vec::new();
                for round in 0..3u64 {
                    let seed = i as u64 * 100 + round;
                    let repo = format!("load/c{i}");
                    let (manifest, digest) = client.push_image(&repo, &format!("v{round}"), seed);
                    pushed.push((repo, format!("v{round}"), manifest, digest));
                }
                // Everyone pushes the same blob and the same manifest to one repository.
                let d = client.push_blob("load/shared", &shared_layer);
                let config = client.push_blob("load/shared", b"{}");
                let manifest = image_manifest(&config, 2, &[(d, shared_layer.len())], None, None);
                let r = client.push_manifest("load/shared", "1.0.0", &manifest, OCI_MANIFEST);
                assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
                pushed
            })
        })
        .collect();
    let pushed: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();

    // Now 50 readers pull everything at once and check every byte.
    let pushed = Arc::new(pushed);
    let readers: Vec<_> = (0..clients)
        .map(|i| {
            let client = Client::new(server.url(), Some(token.clone()));
            let pushed = pushed.clone();
            let shared_digest = shared_digest.clone();
            std::thread::spawn(move || {
                for k in 0..pushed.len() / 10 {
                    let (repo, tag, manifest, digest) = &pushed[(i * 7 + k * 13) % pushed.len()];
                    let r = client.req("GET", &format!("/v2/{repo}/manifests/{tag}"), &[], None);
                    assert_eq!(&r.body, manifest);
                    assert_eq!(r.header("docker-content-digest"), Some(digest.as_str()));
                    let m: serde_json::Value = serde_json::from_slice(manifest).unwrap();
                    for d in [&m["config"], &m["layers"][0]] {
                        let digest = d["digest"].as_str().unwrap();
                        let r = client.req("GET", &format!("/v2/{repo}/blobs/{digest}"), &[], None);
                        assert_eq!(r.status, 200);
                        assert_eq!(sha256(&r.body), digest);
                    }
                }
                let r = client.req(
                    "GET",
                    &format!("/v2/load/shared/blobs/{shared_digest}"),
                    &[],
                    None,
                );
                assert_eq!(sha256(&r.body), shared_digest);
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    let client = Client::new(server.url(), Some(token.clone()));
    let tags = client.req("GET", "/v2/_catalog?n=1000", &[], None).json();
    assert_eq!(tags["repositories"].as_array().unwrap().len(), clients + 1);
}

#[test]
fn racing_chunks_on_one_session_never_corrupt_it() {
    let server = OurRegistry::start();
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    let r = client.req("POST", "/v2/race/app/blobs/uploads/", &[], None);
    let location = absolute(&client.base, r.header("location").unwrap());
    let chunk = bytes(1, 100_000);
    // Ten clients all send the first chunk at once: exactly one may win.
    let handles: Vec<_> = (0..10)
        .map(|_| {
            let (client, location, chunk) = (client.clone(), location.clone(), chunk.clone());
            std::thread::spawn(move || {
                client
                    .req(
                        "PATCH",
                        &location,
                        &[("Content-Range", "0-99999")],
                        Some(&chunk),
                    )
                    .status
            })
        })
        .collect();
    let statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 202).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 202 || *s == 416),
        "{statuses:?}"
    );
    let digest = sha256(&chunk);
    let r = client.req("PUT", &format!("{location}?digest={digest}"), &[], None);
    assert_eq!(r.status, 201);
    assert_eq!(
        client
            .req("GET", &format!("/v2/race/app/blobs/{digest}"), &[], None)
            .body,
        chunk
    );
}
