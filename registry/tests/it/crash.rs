//! Crash safety: writers push blobs (chunked and whole) and manifests while the
//! server is killed with SIGKILL, many times. After each restart every object whose
//! push was acknowledged is intact, nothing half-written is visible, every stored
//! blob file hashes to its name, and SQLite's `integrity_check` passes.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

#[derive(Default)]
struct Committed {
    blobs: Vec<(String, String, Vec<u8>)>,
    tags: Vec<(String, String, String)>,
}

/// One writer: pushes until the server goes away. Returns nothing; what the server
/// acknowledged goes into `committed`.
fn writer(
    client: Client,
    worker: u64,
    round: u64,
    committed: Arc<Mutex<Committed>>,
    stop: Arc<AtomicBool>,
) {
    let repo = format!("crash/w{worker}");
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let seed = round * 1_000_000 + worker * 10_000 + n;
        let data = bytes(seed, 64 * 1024 + (seed as usize % 300_000));
        let digest = sha256(&data);
        // Chunked: POST, PATCH x3, PUT.
        let Ok(r) = client.try_req("POST", &format!("/v2/{repo}/blobs/uploads/"), &[], None) else {
            return;
        };
        if r.status != 202 {
            return;
        }
        let mut location = absolute(&client.base, r.header("location").unwrap());
        let third = data.len() / 3;
        let mut ok = true;
        for (i, chunk) in data.chunks(third + 1).enumerate() {
            let start = i * (third + 1);
            let range = format!("{}-{}", start, start + chunk.len() - 1);
            match client.try_req(
                "PATCH",
                &location,
                &[
                    ("Content-Range", range.as_str()),
                    ("Content-Type", "application/octet-stream"),
                ],
                Some(chunk),
            ) {
                Ok(r) if r.status == 202 => {
                    location = absolute(&client.base, r.header("location").unwrap())
                }
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            return;
        }
        match client.try_req("PUT", &format!("{location}?digest={digest}"), &[], None) {
            Ok(r) if r.status == 201 => {
                committed
                    .lock()
                    .unwrap()
                    .blobs
                    .push((repo.clone(), digest.clone(), data.clone()))
            }
            _ => return,
        }
        // A whole small config blob, then a manifest tagged with the round.
        let config = format!("{{\"seed\":{seed}}}").into_bytes();
        let config_digest = sha256(&config);
        match client.try_req(
            "POST",
            &format!("/v2/{repo}/blobs/uploads/?digest={config_digest}"),
            &[],
            Some(&config),
        ) {
            Ok(r) if r.status == 201 => committed.lock().unwrap().blobs.push((
                repo.clone(),
                config_digest.clone(),
                config.clone(),
            )),
            _ => return,
        }
        let manifest = image_manifest(
            &config_digest,
            config.len(),
            &[(digest, data.len())],
            None,
            None,
        );
        let tag = format!("r{round}-{n}");
        match client.try_req(
            "PUT",
            &format!("/v2/{repo}/manifests/{tag}"),
            &[("Content-Type", OCI_MANIFEST)],
            Some(&manifest),
        ) {
            Ok(r) if r.status == 201 => {
                committed
                    .lock()
                    .unwrap()
                    .tags
                    .push((repo.clone(), tag, sha256(&manifest)))
            }
            _ => return,
        }
    }
}

fn check_store(server: &OurRegistry, client: &Client, committed: &Committed) {
    // Every acknowledged blob and tag is intact.
    for (repo, digest, data) in &committed.blobs {
        let r = client.req("GET", &format!("/v2/{repo}/blobs/{digest}"), &[], None);
        assert_eq!(r.status, 200, "acknowledged blob {digest} lost");
        assert!(r.body == *data, "acknowledged blob {digest} corrupted");
    }
    for (repo, tag, digest) in &committed.tags {
        let r = client.req("GET", &format!("/v2/{repo}/manifests/{tag}"), &[], None);
        assert_eq!(r.status, 200, "acknowledged tag {repo}:{tag} lost");
        assert_eq!(sha256(&r.body), *digest);
    }
    // Every blob file is whole: it hashes to its own name.
    let blobs = server.data.join("blobs/sha256");
    for prefix in std::fs::read_dir(&blobs).unwrap() {
        for file in std::fs::read_dir(prefix.unwrap().path()).unwrap() {
            let file = file.unwrap();
            let name = file.file_name().to_string_lossy().to_string();
            assert_eq!(
                sha256(&std::fs::read(file.path()).unwrap()),
                format!("sha256:{name}"),
                "a blob file is not whole"
            );
        }
    }
    // The database is sound, and every blob it lists is on disk (nothing half-visible).
    let db = rusqlite::Connection::open(server.data.join("registry.db")).unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let fk: Vec<String> = db
        .prepare("PRAGMA foreign_key_check")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(fk.is_empty(), "foreign key violations: {fk:?}");
    let digests: Vec<String> = db
        .prepare("SELECT digest FROM blobs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for digest in digests {
        assert!(
            blobs.join(&digest[7..9]).join(&digest[7..]).exists(),
            "blob row {digest} without its file"
        );
    }
    let missing: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM manifest_refs r WHERE r.kind = 'blob' AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.digest = r.child)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        missing, 0,
        "a manifest references a blob that is not stored"
    );
    let dangling_tags: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM tags t WHERE NOT EXISTS (SELECT 1 FROM manifests m WHERE m.repo = t.repo AND m.digest = t.digest)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        dangling_tags, 0,
        "a tag points at a manifest that is not stored"
    );
}

#[test]
fn sigkill_during_pushes_loses_nothing_acknowledged_and_shows_nothing_half_written() {
    let mut server = OurRegistry::start();
    let token = server.token("publisher", None);
    let committed = Arc::new(Mutex::new(Committed::default()));
    let rounds = 12;
    for round in 0..rounds {
        let client = Client::new(server.url(), Some(token.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (client, committed, stop) = (client.clone(), committed.clone(), stop.clone());
                std::thread::spawn(move || writer(client, w, round, committed, stop))
            })
            .collect();
        // Kill at a different moment each round.
        std::thread::sleep(Duration::from_millis(80 + (round * 37) % 250));
        server.kill();
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        server.spawn();
        let client = Client::new(server.url(), Some(token.clone()));
        check_store(&server, &client, &committed.lock().unwrap());
    }
    let committed = committed.lock().unwrap();
    assert!(
        committed.tags.len() >= rounds as usize,
        "too little was pushed to mean anything: {}",
        committed.tags.len()
    );
    eprintln!(
        "{} blobs and {} tags survived {rounds} kills",
        committed.blobs.len(),
        committed.tags.len()
    );
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut server = OurRegistry::start();
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    client.push_image("t/app", "1.0.0", 1);
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    server.spawn();
    let client = Client::new(server.url(), client.token.clone());
    assert_eq!(
        client
            .req("GET", "/v2/t/app/manifests/1.0.0", &[], None)
            .status,
        200
    );
}

/// A reader that hands out its bytes slowly, so a request is still in flight when
/// the server is told to stop.
struct Slow {
    data: Vec<u8>,
    at: usize,
}

impl std::io::Read for Slow {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.data.len() {
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(15));
        let n = buf.len().min(64 * 1024).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn sigterm_lets_an_upload_in_flight_finish() {
    let mut server = OurRegistry::start();
    let token = server.token("publisher", None);
    let client = Client::new(server.url(), Some(token.clone()));
    let r = client.req("POST", "/v2/t/app/blobs/uploads/", &[], None);
    let location = absolute(&client.base, r.header("location").unwrap());
    let data = bytes(5, 640 * 1024);
    let digest = sha256(&data);
    let url = format!("{location}?digest={digest}");
    let body = data.clone();
    let upload = std::thread::spawn(move || {
        ureq::put(&url)
            .set("Authorization", &format!("Bearer {token}"))
            .set("Content-Length", &body.len().to_string())
            .send(Slow { data: body, at: 0 })
            .map(|r| r.status())
            .unwrap_or_else(|e| match e {
                ureq::Error::Status(code, _) => code,
                e => panic!("upload: {e}"),
            })
    });
    std::thread::sleep(Duration::from_millis(300));
    let status = server.terminate();
    assert_eq!(upload.join().unwrap(), 201, "the upload in flight finished");
    assert!(status.success());
    server.spawn();
    let client = Client::new(server.url(), client.token.clone());
    assert_eq!(
        client
            .req("GET", &format!("/v2/t/app/blobs/{digest}"), &[], None)
            .body,
        data
    );
}
