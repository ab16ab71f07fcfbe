//! Pulls stay fast while support's fleet-wide questions and gc run: both read or
//! write SQLite off the async workers, and gc works in small batches.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;

/// `customers` customers, each with a few receipts, written straight into the
/// stopped server's database (posting them would take far longer).
fn add_fleet(data: &std::path::Path, customers: usize) {
    let mut db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    let tx = db.transaction().unwrap();
    for c in 0..customers {
        for (n, version) in ["1.0.0", "1.1.0", "2.0.0-rc.1"].iter().enumerate() {
            tx.execute(
                "INSERT INTO receipts (id, customer, stack, version, digest, kind, outcome,
                     started_at, finished_at, key_id, document, received_at, finished_ns)
                 VALUES (?1, ?2, 'data-plane', ?3, 'sha256:00', 'apply', 'succeeded',
                     '2026-02-01T00:00:00Z', '2026-02-01T00:00:00Z', 'k', '{}',
                     '2026-02-01T00:00:00Z', ?4)",
                rusqlite::params![format!("c{c}-{n}"), format!("c{c}"), version, n as i64],
            )
            .unwrap();
        }
    }
    for i in 0..3000 {
        let content = format!("loose {i}");
        let digest = sha256(content.as_bytes());
        let dir = data.join("blobs/sha256").join(&digest[7..9]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&digest[7..]), &content).unwrap();
        tx.execute(
            "INSERT INTO blobs (digest, size, created) VALUES (?1, ?2, 0)",
            rusqlite::params![digest, content.len()],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p) as usize]
}

#[test]
fn pulls_stay_fast_while_fleet_queries_and_gc_run() {
    let mut server = OurRegistry::start();
    let support = server.token("support", None);
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let (_, digest) = publisher.push_image("acme/app", "v1", 1);
    server.kill();
    add_fleet(&server.data, 3000);
    server.spawn();
    let publisher = Client::new(server.url(), publisher.token.clone());

    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut load: Vec<_> = (0..3)
        .map(|_| {
            let (client, stop) = (
                Client::new(server.url(), Some(support.clone())),
                stop.clone(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    assert_eq!(
                        client
                            .req("GET", "/api/v1/support/versions", &[], None)
                            .status,
                        200
                    );
                }
            })
        })
        .collect();
    let (data, gc_stop) = (server.data.clone(), stop.clone());
    load.push(std::thread::spawn(move || {
        while !gc_stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            let status = Command::new(BIN)
                .args(["gc", "--grace-secs", "0", "--data"])
                .arg(&data)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        }
    }));
    std::thread::sleep(Duration::from_millis(300));
    let mut samples = Vec::new();
    for _ in 0..150 {
        let started = Instant::now();
        assert_eq!(publisher.req("GET", "/healthz", &[], None).status, 200);
        samples.push(started.elapsed());
        let started = Instant::now();
        let path = format!("/v2/acme/app/manifests/{digest}");
        assert_eq!(publisher.req("GET", &path, &[], None).status, 200);
        samples.push(started.elapsed());
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in load {
        thread.join().unwrap();
    }
    let p50 = percentile(&mut samples, 0.5);
    let p99 = percentile(&mut samples, 0.99);
    eprintln!("under load: p50 {p50:?}, p99 {p99:?}");
    assert!(p99 < Duration::from_millis(150), "p50 {p50:?}, p99 {p99:?}");
}
