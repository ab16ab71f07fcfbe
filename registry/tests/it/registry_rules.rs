//! The distribution API's guard rails: what a stable release needs stays, `Accept`
//! is honoured, and uploads are bounded in number, disk, time and idleness.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;

const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

fn index(children: &[(&str, usize, &str)]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": children.iter().map(|(d, s, m)| serde_json::json!({
            "mediaType": m, "digest": d, "size": s,
        })).collect::<Vec<_>>(),
    }))
    .unwrap()
}

#[test]
fn manifests_a_stable_index_needs_cannot_be_deleted_by_a_publisher() {
    let server = OurRegistry::start();
    let publisher = Client::new(server.url(), Some(server.token("publisher", None)));
    let admin = Client::new(server.url(), Some(server.token("admin", None)));
    let repo = "acme/multi";
    let (a, a_digest) = publisher.push_image(repo, "build-a", 1);
    let (b, b_digest) = publisher.push_image(repo, "build-b", 2);
    // `2.0.0` lists A; `3.0.0` lists an untagged index that lists B.
    let stable = index(&[(&a_digest, a.len(), OCI_MANIFEST)]);
    assert_eq!(
        publisher
            .push_manifest(repo, "2.0.0", &stable, OCI_INDEX)
            .status,
        201
    );
    let inner = index(&[(&b_digest, b.len(), OCI_MANIFEST)]);
    let inner_digest = sha256(&inner);
    assert_eq!(
        publisher
            .push_manifest(repo, &inner_digest, &inner, OCI_INDEX)
            .status,
        201
    );
    let outer = index(&[(&inner_digest, inner.len(), OCI_INDEX)]);
    assert_eq!(
        publisher
            .push_manifest(repo, "3.0.0", &outer, OCI_INDEX)
            .status,
        201
    );

    for digest in [&a_digest, &b_digest, &inner_digest] {
        let path = format!("/v2/{repo}/manifests/{digest}");
        let r = publisher.req("DELETE", &path, &[], None);
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (403, "DENIED"),
            "{digest}"
        );
        assert_eq!(publisher.req("GET", &path, &[], None).status, 200);
    }
    for tag in ["2.0.0", "3.0.0"] {
        let path = format!("/v2/{repo}/manifests/{tag}");
        assert_eq!(publisher.req("GET", &path, &[], None).status, 200);
    }
    // An admin may, as with the stable tag itself.
    let path = format!("/v2/{repo}/manifests/{a_digest}");
    assert_eq!(admin.req("DELETE", &path, &[], None).status, 202);
}

#[test]
fn manifest_get_answers_only_in_a_type_the_client_accepts() {
    let server = OurRegistry::start();
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    let repo = "acme/accept";
    let (_, oci_digest) = client.push_image(repo, "oci", 1);
    let config = b"{}".to_vec();
    let config_digest = client.push_blob(repo, &config);
    let docker = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": DOCKER_MANIFEST,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": config_digest, "size": 2},
        "layers": [],
    }))
    .unwrap();
    assert_eq!(
        client
            .push_manifest(repo, "docker", &docker, DOCKER_MANIFEST)
            .status,
        201
    );
    let get = |method: &str, reference: &str, accept: Option<&str>| {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("Accept", a)).into_iter().collect();
        client.req(
            method,
            &format!("/v2/{repo}/manifests/{reference}"),
            &headers,
            None,
        )
    };
    for method in ["GET", "HEAD"] {
        for (reference, accepted, refused) in [
            ("oci", OCI_MANIFEST, DOCKER_MANIFEST),
            (oci_digest.as_str(), OCI_MANIFEST, DOCKER_MANIFEST),
            ("docker", DOCKER_MANIFEST, OCI_MANIFEST),
        ] {
            let r = get(method, reference, Some(refused));
            assert_eq!(r.status, 404, "{method} {reference} with Accept {refused}");
            let r = get(method, reference, Some(accepted));
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), Some(accepted));
            let both = format!("{refused}, {accepted}");
            assert_eq!(get(method, reference, Some(&both)).status, 200);
            assert_eq!(get(method, reference, Some("*/*")).status, 200);
            assert_eq!(get(method, reference, None).status, 200);
        }
    }
    assert_eq!(
        get("GET", "oci", Some(DOCKER_MANIFEST)).error_code(),
        "MANIFEST_UNKNOWN"
    );
}

#[test]
fn upload_sessions_per_token_are_capped() {
    let server = OurRegistry::start_with(&["--max-upload-sessions-per-token", "3"]);
    let one = Client::new(server.url(), Some(server.token("publisher", None)));
    let other = Client::new(server.url(), Some(server.token("publisher", None)));
    let start = |client: &Client| client.req("POST", "/v2/acme/cap/blobs/uploads/", &[], None);
    let mut locations = Vec::new();
    for _ in 0..3 {
        let r = start(&one);
        assert_eq!(r.status, 202);
        locations.push(absolute(&one.base, r.header("location").unwrap()));
    }
    let r = start(&one);
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (429, "TOOMANYREQUESTS")
    );
    assert_eq!(start(&other).status, 202, "another token has its own share");
    assert_eq!(one.req("DELETE", &locations[0], &[], None).status, 204);
    assert_eq!(
        start(&one).status,
        202,
        "a cancelled session frees its place"
    );
}

#[test]
fn writes_are_refused_below_the_disk_floor() {
    let server = OurRegistry::start_with(&["--min-free-bytes", "18000000000000000000"]);
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    let r = client.req("POST", "/v2/acme/full/blobs/uploads/", &[], None);
    assert_eq!(
        (r.status, r.error_code().as_str()),
        (507, "INSUFFICIENT_STORAGE")
    );
    let data = b"a whole blob";
    let path = format!("/v2/acme/full/blobs/uploads/?digest={}", sha256(data));
    let r = client.req("POST", &path, &[], Some(data));
    assert_eq!(r.status, 507);
    assert!(r.json()["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("gc"));
    assert_eq!(
        client.req("GET", "/v2/", &[], None).status,
        200,
        "reads go on"
    );
}

#[test]
fn serve_sweeps_expired_upload_sessions() {
    let server = OurRegistry::start_with(&["--upload-lifetime-secs", "1"]);
    let client = Client::new(server.url(), Some(server.token("publisher", None)));
    let r = client.req("POST", "/v2/acme/sweep/blobs/uploads/", &[], None);
    let location = absolute(&client.base, r.header("location").unwrap());
    assert_eq!(
        client
            .req("PATCH", &location, &[], Some(&bytes(1, 4096)))
            .status,
        202
    );
    let uploads = server.data.join("uploads");
    let deadline = Instant::now() + Duration::from_secs(8);
    while std::fs::read_dir(&uploads).unwrap().count() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        std::fs::read_dir(&uploads).unwrap().count(),
        0,
        "the expired session's file is still there"
    );
    let db = rusqlite::Connection::open(server.data.join("registry.db")).unwrap();
    let rows: i64 = db
        .query_row("SELECT COUNT(*) FROM uploads", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
}

/// Sends `head` and then `body` one byte every `gap`, ignoring a server that hung
/// up; returns the first line of whatever answer came back.
fn trickle(host: &str, head: &str, body: &[u8], gap: Duration) -> String {
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(head.as_bytes());
    for byte in body {
        std::thread::sleep(gap);
        if stream.write_all(&[*byte]).is_err() {
            break;
        }
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn an_upload_trickled_past_its_lifetime_is_refused() {
    let server = OurRegistry::start_with(&["--upload-lifetime-secs", "2"]);
    let token = server.token("publisher", None);
    let client = Client::new(server.url(), Some(token.clone()));
    let r = client.req("POST", "/v2/acme/slow/blobs/uploads/", &[], None);
    let location = r.header("location").unwrap().to_string();
    let body = b"0123456789";
    let head = format!(
        "PATCH {location} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.host(),
        body.len()
    );
    let status_line = trickle(&server.host(), &head, body, Duration::from_millis(350));
    assert!(!status_line.contains(" 202 "), "accepted: {status_line}");
    let put = format!("{}{location}?digest={}", server.url(), sha256(body));
    let r = client.req("PUT", &put, &[], None);
    assert_ne!(
        r.status, 201,
        "a session kept alive past its lifetime was finished"
    );
}

#[test]
fn idle_connections_are_closed() {
    let server = OurRegistry::start_with(&["--idle-timeout-secs", "1"]);
    for sent in ["", "GET /v2/ HTTP/1.1\r\nHost: x\r\n"] {
        let mut stream = TcpStream::connect(server.host()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(6)))
            .unwrap();
        stream.write_all(sent.as_bytes()).unwrap();
        let started = Instant::now();
        let mut answer = Vec::new();
        let read = stream.read_to_end(&mut answer);
        assert!(
            read.is_ok() && started.elapsed() < Duration::from_secs(4),
            "a connection that sent {sent:?} was kept open: {read:?} after {:?}",
            started.elapsed()
        );
    }
    // Headers trickled a byte at a time: the head must arrive within the timeout.
    let mut stream = TcpStream::connect(server.host()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(6)))
        .unwrap();
    stream
        .write_all(b"GET /v2/ HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    let mut cut_off = false;
    for byte in b"X-Slow: ".iter().cycle().take(40) {
        std::thread::sleep(Duration::from_millis(200));
        if stream.write_all(&[*byte]).is_err() {
            cut_off = true;
            break;
        }
        let mut probe = [0u8; 1];
        stream.set_nonblocking(true).unwrap();
        let closed = matches!(stream.read(&mut probe), Ok(0));
        stream.set_nonblocking(false).unwrap();
        if closed {
            cut_off = true;
            break;
        }
    }
    assert!(
        cut_off && started.elapsed() < Duration::from_secs(4),
        "a connection trickling its headers was kept open for {:?}",
        started.elapsed()
    );
    // A client that keeps talking is not cut off.
    let client = Client::new(server.url(), None);
    assert_eq!(client.req("GET", "/healthz", &[], None).status, 200);
}

/// A request whose handling outlasts the idle timeout (here: waiting for SQLite's
/// write lock, held by another process) is answered, not cut off as idle, on a
/// keep-alive connection.
#[test]
fn a_request_slower_than_the_idle_timeout_is_answered() {
    let server = OurRegistry::start_with(&["--idle-timeout-secs", "1"]);
    let token = server.token("publisher", None);
    let client = Client::new(server.url(), Some(token.clone()));
    let r = client.req("POST", "/v2/acme/slow/blobs/uploads/", &[], None);
    let location = r.header("location").unwrap().to_string();
    let mut holder = rusqlite::Connection::open(server.data.join("registry.db")).unwrap();
    let lock = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let host = server.host();
    let waiting = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(&host).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(8)))
            .unwrap();
        let body = bytes(3, 4096);
        let head = format!(
            "PATCH {location} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&body).unwrap();
        let mut answer = [0u8; 64];
        let n = stream.read(&mut answer).unwrap_or(0);
        String::from_utf8_lossy(&answer[..n])
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    });
    std::thread::sleep(Duration::from_millis(2500));
    lock.rollback().unwrap();
    let status_line = waiting.join().unwrap();
    assert!(status_line.contains(" 202 "), "answered `{status_line}`");
}
