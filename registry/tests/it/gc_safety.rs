//! gc beside a running server, and killed half way: it never removes the file of a
//! committed blob, never leaves a row without its file, and never stalls the server.

use crate::common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

fn gc(data: &std::path::Path, grace_secs: u64) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "gc",
        "--json",
        "--upload-lifetime-secs",
        "600",
        "--grace-secs",
    ])
    .arg(grace_secs.to_string())
    .arg("--data")
    .arg(data)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    cmd
}

/// Every blob row has its file (a row without its file is corruption).
fn assert_every_row_has_its_file(data: &std::path::Path) -> usize {
    let db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    let digests: Vec<String> = db
        .prepare("SELECT digest FROM blobs")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let blobs = data.join("blobs/sha256");
    let missing: Vec<&String> = digests
        .iter()
        .filter(|d| !blobs.join(&d[7..9]).join(&d[7..]).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} blob rows have no file, e.g. {}",
        missing.len(),
        digests.len(),
        missing[0]
    );
    digests.len()
}

/// Files that gc must leave alone (their mtime is in the future), so that each gc
/// run's sweep over the blob folder takes a while, as it does on a real registry.
fn add_young_filler_files(data: &std::path::Path, count: usize) {
    let future = std::time::SystemTime::now() + Duration::from_secs(3600);
    for i in 0..count {
        let hex = format!("{:064x}", 0xf111_0000_0000u64 + i as u64);
        let dir = data.join("blobs/sha256").join(&hex[..2]);
        std::fs::create_dir_all(&dir).unwrap();
        let file = std::fs::File::create(dir.join(&hex)).unwrap();
        file.set_modified(future).unwrap();
    }
}

/// Sessions whose bytes arrived (PATCH) long enough ago that their files look stale
/// to gc; then each is finished and tagged while gc runs in a loop.
#[test]
fn gc_never_removes_a_committed_blob_file() {
    let server = OurRegistry::start_with(&[
        "--upload-lifetime-secs",
        "600",
        "--max-upload-sessions-per-token",
        "1000",
    ]);
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    add_young_filler_files(&server.data, 10_000);
    const SESSIONS: u64 = 200;
    let mut sessions = Vec::new();
    for seed in 0..SESSIONS {
        let data = bytes(seed + 7000, 2048 + seed as usize);
        let r = client.req("POST", "/v2/gc/race/blobs/uploads/", &[], None);
        assert_eq!(r.status, 202);
        let location = absolute(&client.base, r.header("location").unwrap());
        let r = client.req("PATCH", &location, &[], Some(&data));
        assert_eq!(r.status, 202);
        sessions.push((absolute(&client.base, r.header("location").unwrap()), data));
    }
    // Older than gc's grace now, by the files' age.
    std::thread::sleep(Duration::from_millis(1300));

    let stop = Arc::new(AtomicBool::new(false));
    let data_dir = server.data.clone();
    let looping = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut runs = 0;
            while !stop.load(Ordering::Relaxed) && runs < 500 && Instant::now() < deadline {
                assert!(gc(&data_dir, 1).status().unwrap().success());
                runs += 1;
            }
            runs
        })
    };
    let sessions = Arc::new(Mutex::new(sessions));
    let pushed = Arc::new(Mutex::new(Vec::new()));
    let pushers: Vec<_> = (0..4)
        .map(|_| {
            let (client, sessions, pushed) = (client.clone(), sessions.clone(), pushed.clone());
            std::thread::spawn(move || loop {
                let Some((location, data)) = sessions.lock().unwrap().pop() else {
                    return;
                };
                let digest = sha256(&data);
                let sep = if location.contains('?') { '&' } else { '?' };
                let r = client.req("PUT", &format!("{location}{sep}digest={digest}"), &[], None);
                assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
                // Referenced at once, so gc may never delete its row.
                let manifest = image_manifest(&digest, data.len(), &[], None, None);
                let tag = format!("t{}", &digest[7..19]);
                let r = client.push_manifest("gc/race", &tag, &manifest, OCI_MANIFEST);
                assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
                pushed.lock().unwrap().push((tag, digest, data));
            })
        })
        .collect();
    for pusher in pushers {
        pusher.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let runs = looping.join().unwrap();
    assert!(runs > 0);
    let mut lost = Vec::new();
    for (tag, digest, data) in pushed.lock().unwrap().iter() {
        let r = client.req("GET", &format!("/v2/gc/race/manifests/{tag}"), &[], None);
        assert_eq!(r.status, 200);
        let r = client.req("GET", &format!("/v2/gc/race/blobs/{digest}"), &[], None);
        if r.status != 200 || r.body != *data {
            lost.push(digest.clone());
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {SESSIONS} committed, referenced blobs lost their file to gc ({runs} gc runs): {lost:?}",
        lost.len()
    );
    assert_every_row_has_its_file(&server.data);
}

/// Fills a stopped registry with `count` unreferenced blobs (rows and files), all
/// old enough for any grace period.
fn add_unreferenced_blobs(data: &std::path::Path, count: usize) {
    let mut db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    let tx = db.transaction().unwrap();
    for i in 0..count {
        let content = format!("unreferenced {i}");
        let digest = sha256(content.as_bytes());
        let dir = data.join("blobs/sha256").join(&digest[7..9]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&digest[7..]), &content).unwrap();
        tx.execute(
            "INSERT INTO blobs (digest, size, created) VALUES (?1, ?2, 0)",
            rusqlite::params![digest, content.len()],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO repo_blobs (repo, digest) VALUES ('gc/crash', ?1)",
            rusqlite::params![digest],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// SIGKILL at several points into a gc of many unreferenced blobs: whatever it had
/// done, no row is left without its file, and the next run finishes the job.
#[test]
fn gc_killed_midway_leaves_no_row_without_its_file() {
    let mut server = OurRegistry::start();
    server.kill();
    add_unreferenced_blobs(&server.data, 5000);
    let mut finished = false;
    for delay_ms in [20, 40, 80, 120, 180, 260, 400] {
        let mut child = gc(&server.data, 0).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let status = child.wait().unwrap();
        assert_every_row_has_its_file(&server.data);
        if status.success() {
            finished = true;
            break;
        }
    }
    assert!(gc(&server.data, 0).status().unwrap().success());
    assert_eq!(
        assert_every_row_has_its_file(&server.data),
        0,
        "finished={finished}"
    );
    let left: usize = std::fs::read_dir(server.data.join("blobs/sha256"))
        .unwrap()
        .map(|d| std::fs::read_dir(d.unwrap().path()).unwrap().count())
        .sum();
    assert_eq!(
        left, 0,
        "every unreferenced blob file is gone after a whole run"
    );
}

/// Another process (gc, a backup, sqlite3) holds the database's write lock for a
/// while, and pushes queue behind it: the server still answers `/healthz` and pulls
/// at once, because waiting for SQLite never blocks its async workers.
#[test]
fn healthz_answers_while_another_process_holds_the_write_lock() {
    let server = OurRegistry::start();
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    let (_, manifest_digest) = client.push_image("stall/app", "v1", 1);
    let mut holder = rusqlite::Connection::open(server.data.join("registry.db")).unwrap();
    let lock = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let held_since = Instant::now();
    // More waiting writers than the server has worker threads.
    let writers: Vec<_> = (0..16)
        .map(|_| {
            let client = client.clone();
            std::thread::spawn(move || {
                client
                    .req("POST", "/v2/stall/app/blobs/uploads/", &[], None)
                    .status
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut slowest = Duration::ZERO;
    for _ in 0..10 {
        let started = Instant::now();
        assert_eq!(client.req("GET", "/healthz", &[], None).status, 200);
        let path = format!("/v2/stall/app/manifests/{manifest_digest}");
        assert_eq!(client.req("GET", &path, &[], None).status, 200);
        slowest = slowest.max(started.elapsed());
    }
    let measured_while_held = held_since.elapsed();
    std::thread::sleep(Duration::from_millis(
        2500u64.saturating_sub(measured_while_held.as_millis() as u64),
    ));
    lock.rollback().unwrap();
    for writer in writers {
        assert_eq!(writer.join().unwrap(), 202, "a queued push failed");
    }
    assert!(
        slowest < Duration::from_millis(500),
        "`/healthz` and a manifest GET took {slowest:?} while a writer waited"
    );
}

/// What a writer saw acknowledged: a tag, its manifest digest, and its blobs.
type Tagged = (String, String, Vec<(String, Vec<u8>)>);

/// Pushes tagged images (a layer and a config, then the manifest) until `stop` or
/// the server goes away; records those whose manifest was acknowledged.
fn push_tagged(
    client: Client,
    worker: u64,
    round: u64,
    tagged: Arc<Mutex<Vec<Tagged>>>,
    stop: Arc<AtomicBool>,
) {
    let repo = format!("fault/w{worker}");
    for n in 0..10_000u64 {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let seed = round * 1_000_000 + worker * 10_000 + n;
        let layer = bytes(seed, 16 * 1024 + (seed as usize % 50_000));
        let config = format!("{{\"seed\":{seed}}}").into_bytes();
        let mut blobs = Vec::new();
        for data in [&layer, &config] {
            let digest = sha256(data);
            let path = format!("/v2/{repo}/blobs/uploads/?digest={digest}");
            match client.try_req("POST", &path, &[], Some(data)) {
                Ok(r) if r.status == 201 => blobs.push((digest, data.clone())),
                _ => return,
            }
        }
        let manifest = image_manifest(
            &blobs[1].0,
            config.len(),
            &[(blobs[0].0.clone(), layer.len())],
            None,
            None,
        );
        let tag = format!("r{round}-{n}");
        let path = format!("/v2/{repo}/manifests/{tag}");
        match client.try_req(
            "PUT",
            &path,
            &[("Content-Type", OCI_MANIFEST)],
            Some(&manifest),
        ) {
            Ok(r) if r.status == 201 => {
                tagged
                    .lock()
                    .unwrap()
                    .push((format!("{repo}:{tag}"), sha256(&manifest), blobs))
            }
            // gc may take a blob pushed more than the grace period before its
            // manifest (a slow writer); the manifest is then refused, nothing lost.
            Ok(r) if r.status == 400 => {}
            _ => return,
        }
    }
}

/// Reads back one acknowledged image, byte for byte.
fn check_tagged(client: &Client, (reference, digest, blobs): &Tagged) -> Result<(), String> {
    let (repo, tag) = reference.split_once(':').unwrap();
    let r = client.try_req("GET", &format!("/v2/{repo}/manifests/{tag}"), &[], None)?;
    if r.status != 200 || sha256(&r.body) != *digest {
        return Err(format!("{reference}: manifest answered {}", r.status));
    }
    for (blob, data) in blobs {
        let r = client.try_req("GET", &format!("/v2/{repo}/blobs/{blob}"), &[], None)?;
        if r.status != 200 || r.body != *data {
            return Err(format!("{reference}: blob {blob} answered {}", r.status));
        }
    }
    Ok(())
}

/// gc in a loop (some runs SIGKILLed) beside pushers and pullers, and the server
/// SIGKILLed at the end of each round: every acknowledged tag stays readable and
/// byte-exact, no row lacks its file, and SQLite's checks pass.
#[test]
fn gc_beside_pushes_pulls_and_sigkills_loses_no_tagged_image() {
    let mut server = OurRegistry::start_with(&["--upload-lifetime-secs", "600"]);
    let token = server.token("publisher", None);
    let tagged = Arc::new(Mutex::new(Vec::<Tagged>::new()));
    for round in 0..3u64 {
        let client = Client::new(server.url(), Some(token.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads: Vec<_> = (0..3)
            .map(|worker| {
                let (c, t, s) = (client.clone(), tagged.clone(), stop.clone());
                std::thread::spawn(move || push_tagged(c, worker, round, t, s))
            })
            .collect();
        let (puller, seen, s) = (client.clone(), tagged.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            for i in 0..100_000usize {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let one = {
                    let all = seen.lock().unwrap();
                    (!all.is_empty()).then(|| all[i % all.len()].clone())
                };
                if let Some(one) = one {
                    if let Err(e) = check_tagged(&puller, &one) {
                        // A transport error is the server being killed; an answer must be right.
                        assert!(!e.contains("answered"), "{e}");
                    }
                }
            }
        }));
        let (data, s) = (server.data.clone(), stop.clone());
        threads.push(std::thread::spawn(move || {
            for run in 0..1000u64 {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let mut child = gc(&data, 1).spawn().unwrap();
                if run % 2 == 1 {
                    std::thread::sleep(Duration::from_millis(5 + run % 40));
                    let _ = child.kill();
                }
                let _ = child.wait();
            }
        }));
        std::thread::sleep(Duration::from_millis(1500));
        server.kill();
        stop.store(true, Ordering::Relaxed);
        for thread in threads {
            thread.join().unwrap();
        }
        server.spawn();
    }
    server.kill();
    assert_every_row_has_its_file(&server.data);
    let db = rusqlite::Connection::open(server.data.join("registry.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    server.spawn();
    let client = Client::new(server.url(), Some(token));
    let tagged = tagged.lock().unwrap();
    assert!(tagged.len() > 10, "only {} images pushed", tagged.len());
    eprintln!("{} acknowledged images checked", tagged.len());
    for one in tagged.iter() {
        check_tagged(&client, one).unwrap();
    }
}
