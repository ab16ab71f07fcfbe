//! Blobs in object storage (`serve --blobs s3://…`), against moto's S3 in server
//! mode: the S3 emulator standing in for AWS S3 or any S3 API. Pushes and pulls byte
//! for byte, an upload session begun on one `serve` process and finished on
//! another sharing the database and the bucket, a wrong digest that leaves nothing
//! in the bucket's `blobs/`, gc deleting from the bucket, and the start refused with
//! the bucket or the credentials named.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::*;
use stackpack_test_support::servers::{wait_for_port, Moto};
use stackpack_test_support::Run;

pub(crate) const BUCKET: &str = "registry-blobs";
pub(crate) const PREFIX: &str = "acme";
const MIB: usize = 1024 * 1024;

/// The S3 emulator with the registry's bucket made.
pub(crate) fn emulator() -> Moto {
    let moto = Moto::start();
    moto.python(&format!(
        "import boto3\nboto3.client(\"s3\", endpoint_url=ENDPOINT, region_name=\"us-east-1\").create_bucket(Bucket=\"{BUCKET}\")\n"
    ))
    .ok();
    moto
}

/// The keys under `prefix` in the bucket, as the emulator lists them.
pub(crate) fn keys(moto: &Moto, prefix: &str) -> Vec<String> {
    let out = moto
        .python(&format!(
            "import boto3, json\ns3 = boto3.client(\"s3\", endpoint_url=ENDPOINT, region_name=\"us-east-1\")\nkeys = []\nfor page in s3.get_paginator(\"list_objects_v2\").paginate(Bucket=\"{BUCKET}\", Prefix=\"{prefix}\"):\n    keys += [o[\"Key\"] for o in page.get(\"Contents\", [])]\nprint(json.dumps(keys))\n"
        ))
        .ok();
    serde_json::from_str(out.stdout.trim()).unwrap()
}

/// Multipart uploads begun and neither completed nor aborted.
pub(crate) fn open_multipart_uploads(moto: &Moto) -> usize {
    let out = moto
        .python(&format!(
            "import boto3\ns3 = boto3.client(\"s3\", endpoint_url=ENDPOINT, region_name=\"us-east-1\")\nprint(len(s3.list_multipart_uploads(Bucket=\"{BUCKET}\").get(\"Uploads\", [])))\n"
        ))
        .ok();
    out.stdout.trim().parse().unwrap()
}

/// `serve`'s (and `gc`'s) flags for the emulator's bucket, under one prefix.
pub(crate) fn blobs_flags(moto: &Moto) -> Vec<String> {
    vec![
        "--blobs".into(),
        format!("s3://{BUCKET}/{PREFIX}"),
        "--s3-endpoint".into(),
        moto.url.clone(),
        "--s3-region".into(),
        "us-east-1".into(),
    ]
}

/// A `stackpack-registry` command with the emulator's test credentials.
pub(crate) fn registry_command(args: &[String]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env_remove("AWS_SESSION_TOKEN")
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1");
    command
}

/// One `serve` process on a data folder, blobs in the emulator's bucket. Several
/// may share one data folder (one SQLite file) and the bucket: replicas.
struct Replica {
    child: Child,
    port: u16,
}

impl Replica {
    fn start(data: &Path, moto: &Moto) -> Replica {
        let port = free_port();
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--data".into(),
            data.display().to_string(),
        ];
        args.extend(blobs_flags(moto));
        let child = registry_command(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        wait_for_port(port);
        Replica { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn publisher(data: &Path) -> String {
    let out = Run::from(
        Command::new(BIN)
            .args(["token", "create", "--role", "publisher", "--json", "--data"])
            .arg(data)
            .output()
            .unwrap(),
    )
    .ok();
    serde_json::from_str::<serde_json::Value>(&out.stdout).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Opens a session; returns its absolute location.
fn begin(client: &Client, repo: &str) -> String {
    let r = client.req("POST", &format!("/v2/{repo}/blobs/uploads/"), &[], None);
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    absolute(&client.base, r.header("location").unwrap())
}

/// Appends `chunk` at byte `start` of the session at `location` (any replica's
/// address may stand in front of its path); returns the next location.
fn patch(client: &Client, location: &str, start: usize, chunk: &[u8]) -> String {
    let range = format!("{start}-{}", start + chunk.len() - 1);
    let r = client.req(
        "PATCH",
        location,
        &[
            ("Content-Type", "application/octet-stream"),
            ("Content-Range", &range),
        ],
        Some(chunk),
    );
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.header("range"),
        Some(format!("0-{}", start + chunk.len() - 1).as_str())
    );
    absolute(&client.base, r.header("location").unwrap())
}

fn finish(client: &Client, location: &str, digest: &str) -> Resp {
    let sep = if location.contains('?') { '&' } else { '?' };
    client.req("PUT", &format!("{location}{sep}digest={digest}"), &[], None)
}

/// The session's path on another replica.
fn on(client: &Client, location: &str) -> String {
    let path = &location[location.find("/v2/").unwrap()..];
    format!("{}{path}", client.base)
}

fn pull(client: &Client, repo: &str, digest: &str) -> Vec<u8> {
    let r = client.req("GET", &format!("/v2/{repo}/blobs/{digest}"), &[], None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.body
}

#[test]
fn blobs_pushed_chunked_and_whole_to_the_s3_emulator_pull_back_byte_for_byte() {
    let moto = emulator();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let registry = Replica::start(&data, &moto);
    let client = Client::new(registry.url(), Some(publisher(&data)));

    // 21 MiB in three 7 MiB chunks: a multipart upload of three parts at commit.
    let big = bytes(1, 21 * MIB);
    let big_digest = sha256(&big);
    let mut location = begin(&client, "acme/app");
    for (i, chunk) in big.chunks(7 * MIB).enumerate() {
        location = patch(&client, &location, i * 7 * MIB, chunk);
    }
    let r = finish(&client, &location, &big_digest);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

    // A small blob in one request (POST with the digest), and one by POST + PUT.
    let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
    let config_digest = sha256(&config);
    let r = client.req(
        "POST",
        &format!("/v2/acme/app/blobs/uploads/?digest={config_digest}"),
        &[("Content-Type", "application/octet-stream")],
        Some(&config),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let small = bytes(2, 3 * MIB);
    let small_digest = client.push_blob("acme/app", &small);
    // 20 MiB in the request that finishes the session: straight into a multipart
    // upload of three parts, no copy.
    let whole = bytes(7, 20 * MIB);
    let whole_digest = client.push_blob("acme/app", &whole);

    let manifest = image_manifest(
        &config_digest,
        config.len(),
        &[
            (big_digest.clone(), big.len()),
            (small_digest.clone(), small.len()),
            (whole_digest.clone(), whole.len()),
        ],
        None,
        None,
    );
    let r = client.push_manifest(
        "acme/app",
        "1.0.0",
        &manifest,
        "application/vnd.oci.image.manifest.v1+json",
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

    assert!(
        pull(&client, "acme/app", &big_digest) == big,
        "the 21 MiB blob"
    );
    assert!(pull(&client, "acme/app", &small_digest) == small);
    assert!(
        pull(&client, "acme/app", &whole_digest) == whole,
        "the 20 MiB blob"
    );
    assert_eq!(pull(&client, "acme/app", &config_digest), config);
    let r = client.req("GET", "/v2/acme/app/manifests/1.0.0", &[], None);
    assert_eq!(r.body, manifest);
    // A range from the middle of the second part.
    let r = client.req(
        "GET",
        &format!("/v2/acme/app/blobs/{big_digest}"),
        &[("Range", "bytes=9000000-9000099")],
        None,
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, big[9_000_000..9_000_100]);
    let r = client.req(
        "HEAD",
        &format!("/v2/acme/app/blobs/{big_digest}"),
        &[],
        None,
    );
    assert_eq!(r.header("content-length"), Some("22020096"));

    // The blobs are objects of their own; no session left anything behind.
    let mut stored = keys(&moto, &format!("{PREFIX}/blobs/"));
    stored.sort();
    let mut expected: Vec<String> = [&big_digest, &small_digest, &whole_digest, &config_digest]
        .iter()
        .map(|d| format!("{PREFIX}/blobs/sha256/{}", &d[7..]))
        .collect();
    expected.sort();
    assert_eq!(stored, expected);
    assert_eq!(
        keys(&moto, &format!("{PREFIX}/uploads/")),
        Vec::<String>::new()
    );
    assert_eq!(open_multipart_uploads(&moto), 0);

    let health = client.req("GET", "/healthz", &[], None);
    assert_eq!(health.status, 200);
    let health = String::from_utf8(health.body).unwrap();
    assert!(
        health.contains(&format!("blobs (s3) `s3://{BUCKET}/{PREFIX}/`: ok")),
        "{health}"
    );
    let metrics = String::from_utf8(client.req("GET", "/metrics", &[], None).body).unwrap();
    assert!(
        metrics.contains(
            "stackpack_registry_blob_store_duration_seconds_count{backend=\"s3\",operation=\"upload_part\"} 6"
        ),
        "{metrics}"
    );
}

#[test]
fn a_chunked_upload_begun_on_one_replica_is_finished_on_another() {
    let moto = emulator();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut first = Replica::start(&data, &moto);
    let second = Replica::start(&data, &moto);
    let token = publisher(&data);
    let a = Client::new(first.url(), Some(token.clone()));
    let b = Client::new(second.url(), Some(token));

    let blob = bytes(3, 13 * MIB + 12_345);
    let digest = sha256(&blob);
    let location = begin(&a, "acme/app");
    let location = patch(&a, &location, 0, &blob[..6 * MIB]);
    // The first replica dies; the second knows how far the session got.
    let _ = first.child.kill();
    let _ = first.child.wait();
    let r = b.req("GET", &on(&b, &location), &[], None);
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        r.header("range"),
        Some(format!("0-{}", 6 * MIB - 1).as_str())
    );
    let location = patch(&b, &on(&b, &location), 6 * MIB, &blob[6 * MIB..]);
    let r = finish(&b, &location, &digest);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));

    assert!(pull(&b, "acme/app", &digest) == blob);
    // A replica started afterwards on the same database and bucket serves it too.
    let third = Replica::start(&data, &moto);
    let c = Client::new(third.url(), b.token.clone());
    assert!(pull(&c, "acme/app", &digest) == blob);
    assert_eq!(
        keys(&moto, &format!("{PREFIX}/uploads/")),
        Vec::<String>::new()
    );
}

#[test]
fn a_wrong_digest_leaves_nothing_visible_and_nothing_in_the_buckets_blobs() {
    let moto = emulator();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let registry = Replica::start(&data, &moto);
    let client = Client::new(registry.url(), Some(publisher(&data)));

    // Large enough for a multipart upload, which must be aborted, not completed.
    let blob = bytes(4, 18 * MIB);
    let claimed = sha256(b"something else");
    let mut location = begin(&client, "acme/app");
    for (i, chunk) in blob.chunks(9 * MIB).enumerate() {
        location = patch(&client, &location, i * 9 * MIB, chunk);
    }
    let r = finish(&client, &location, &claimed);
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), "DIGEST_INVALID");
    // A large one sent whole, straight into a multipart upload.
    let r = client.req(
        "POST",
        &format!("/v2/acme/app/blobs/uploads/?digest={claimed}"),
        &[],
        Some(&blob),
    );
    assert_eq!(r.error_code(), "DIGEST_INVALID");
    // And a small one sent whole.
    let r = client.req(
        "POST",
        &format!("/v2/acme/app/blobs/uploads/?digest={claimed}"),
        &[],
        Some(b"not what was claimed"),
    );
    assert_eq!(r.error_code(), "DIGEST_INVALID");

    for digest in [&claimed, &sha256(&blob)] {
        let r = client.req("HEAD", &format!("/v2/acme/app/blobs/{digest}"), &[], None);
        assert_eq!(r.status, 404);
    }
    assert_eq!(
        keys(&moto, &format!("{PREFIX}/blobs/")),
        Vec::<String>::new()
    );
    assert_eq!(
        keys(&moto, &format!("{PREFIX}/uploads/")),
        Vec::<String>::new()
    );
    // An abort runs beside the answer; give it a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while open_multipart_uploads(&moto) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(open_multipart_uploads(&moto), 0);
}

#[test]
fn gc_deletes_an_unreferenced_blob_from_the_bucket_and_keeps_a_referenced_one() {
    let moto = emulator();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let registry = Replica::start(&data, &moto);
    let client = Client::new(registry.url(), Some(publisher(&data)));
    let (_, _) = client.push_image("acme/app", "1.0.0", 5);
    let kept = keys(&moto, &format!("{PREFIX}/blobs/"));
    let orphan = bytes(6, 2 * MIB);
    let orphan_digest = client.push_blob("acme/app", &orphan);
    let orphan_key = format!("{PREFIX}/blobs/sha256/{}", &orphan_digest[7..]);
    assert!(keys(&moto, &orphan_key).contains(&orphan_key));

    let mut args: Vec<String> = vec![
        "gc".into(),
        "--json".into(),
        "--grace-secs".into(),
        "0".into(),
        "--data".into(),
        data.display().to_string(),
    ];
    args.extend(blobs_flags(&moto));
    let out = Run::from(registry_command(&args).output().unwrap()).ok();
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["blobsDeleted"], 1, "{report}");
    assert_eq!(report["bytesFreed"], orphan.len(), "{report}");

    assert_eq!(keys(&moto, &orphan_key), Vec::<String>::new());
    assert_eq!(keys(&moto, &format!("{PREFIX}/blobs/")), kept);
    let r = client.req(
        "HEAD",
        &format!("/v2/acme/app/blobs/{orphan_digest}"),
        &[],
        None,
    );
    assert_eq!(r.status, 404);
    let r = client.req("GET", "/v2/acme/app/manifests/1.0.0", &[], None);
    assert_eq!(r.status, 200);
}

fn serve_refused(moto: &Moto, bucket: &str, key: &str, secret: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data",
        &dir.path().join("data").display().to_string(),
        "--blobs",
        &format!("s3://{bucket}/{PREFIX}"),
        "--s3-endpoint",
        &moto.url,
    ]
    .map(String::from);
    Run::from(
        registry_command(&args)
            .env("AWS_ACCESS_KEY_ID", key)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    )
    .code(1)
}

#[test]
fn a_missing_bucket_and_refused_credentials_stop_the_start_with_their_names() {
    let moto = emulator();
    let run = serve_refused(&moto, "no-such-bucket", "test", "test");
    assert!(
        run.stderr
            .contains("bucket `no-such-bucket` does not exist"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("create the bucket first"),
        "{}",
        run.stderr
    );

    // An emulator that checks credentials as AWS does: it knows no access key.
    let strict = Moto::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", "0")]);
    let secret = "wJalrXUtnFEMI-never-print-this-secret";
    let run = serve_refused(&strict, BUCKET, "AKIAEXAMPLEWRONG1234", secret);
    assert!(
        run.stderr
            .contains("the credentials (access key `AKIA…1234`) were refused"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("AWS_SECRET_ACCESS_KEY"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(secret) && !run.stdout.contains(secret));
    assert!(!run.stderr.contains("AKIAEXAMPLEWRONG1234"));

    // No credentials at all.
    let dir = tempfile::tempdir().unwrap();
    let run = Run::from(
        Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("data"))
            .args([
                "--blobs",
                &format!("s3://{BUCKET}"),
                "--s3-endpoint",
                &moto.url,
            ])
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env("NO_COLOR", "1")
            .output()
            .unwrap(),
    )
    .code(1);
    assert!(run.stderr.contains("no S3 credentials"), "{}", run.stderr);
}

#[test]
fn a_chunk_cut_off_keeps_what_arrived_and_the_session_goes_on_from_there() {
    use std::io::Write;
    let moto = emulator();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let registry = Replica::start(&data, &moto);
    let client = Client::new(registry.url(), Some(publisher(&data)));
    let blob = bytes(8, 20 * MIB);
    let digest = sha256(&blob);
    let location = begin(&client, "acme/app");

    // A PATCH announcing the whole blob whose connection drops after 10 MiB.
    let path = &location[location.find("/v2/").unwrap()..];
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", registry.port)).unwrap();
    write!(
        stream,
        "PATCH {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        client.token.as_deref().unwrap(),
        blob.len()
    )
    .unwrap();
    stream.write_all(&blob[..10 * MIB]).unwrap();
    stream.flush().unwrap();
    drop(stream);

    // What arrived is stored; the client asks how far and sends the rest.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let stored = loop {
        let r = client.req("GET", &location, &[], None);
        assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
        let range = r.header("range").unwrap().to_string();
        let stored: usize = range.split('-').nth(1).unwrap().parse::<usize>().unwrap() + 1;
        if stored == 10 * MIB || std::time::Instant::now() > deadline {
            break stored;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(stored, 10 * MIB);
    let location = patch(&client, &location, stored, &blob[stored..]);
    let r = finish(&client, &location, &digest);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert!(pull(&client, "acme/app", &digest) == blob);
}

#[test]
fn a_registry_moves_its_blobs_from_its_data_folder_into_a_bucket_and_a_replica_told_the_wrong_store_is_refused(
) {
    let moto = emulator();
    // A registry as it runs today: blobs in its data folder, a bundle-sized layer
    // beside small ones.
    let mut folder = OurRegistry::start();
    let data = folder.data.clone();
    let token = publisher(&data);
    let client = Client::new(folder.url(), Some(token.clone()));
    let big = bytes(7, 9 * MIB + 5);
    let big_digest = client.push_blob("acme/data-plane", &big);
    let (manifest, manifest_digest) = client.push_image("acme/data-plane", "1.0.0", 3);
    folder.terminate();

    // A replica started on the bucket before the move is refused: the rows point
    // into the data folder, and it would answer "blob unknown" for all of them.
    let mut serve: Vec<String> = vec!["serve".into(), "--data".into(), data.display().to_string()];
    serve.extend(blobs_flags(&moto));
    serve.extend(["--listen".into(), format!("127.0.0.1:{}", free_port())]);
    let refused = Run::from(registry_command(&serve).output().unwrap());
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("blobs live in `data-folder`, not in `s3://registry-blobs/acme/`"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("--move-blobs-to"),
        "{}",
        refused.stderr
    );

    let mut migrate: Vec<String> = vec![
        "migrate".into(),
        "--json".into(),
        "--data".into(),
        data.display().to_string(),
        "--move-blobs-to".into(),
        format!("s3://{BUCKET}/{PREFIX}"),
        "--s3-endpoint".into(),
        moto.url.clone(),
    ];
    let moved = Run::from(registry_command(&migrate).output().unwrap())
        .ok()
        .json();
    assert_eq!(moved["moved"]["blobs"], 3, "{moved}");
    assert!(keys(&moto, &format!("{PREFIX}/blobs/sha256/")).len() >= 3);
    assert_eq!(open_multipart_uploads(&moto), 0);

    // On the bucket now: every blob and manifest answers as before, the token too.
    let replica = Replica::start(&data, &moto);
    let client = Client::new(replica.url(), Some(token));
    assert_eq!(pull(&client, "acme/data-plane", &big_digest), big);
    let r = client.req(
        "GET",
        "/v2/acme/data-plane/manifests/1.0.0",
        &[("Accept", OCI_MANIFEST)],
        None,
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.body, manifest);
    assert_eq!(sha256(&r.body), manifest_digest);
    drop(replica);

    // And a replica still told the data folder is refused the other way round.
    let mut folder_serve: Vec<String> = serve[..3].to_vec();
    folder_serve.extend(["--listen".into(), format!("127.0.0.1:{}", free_port())]);
    let refused = Run::from(registry_command(&folder_serve).output().unwrap());
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("--blobs s3://registry-blobs/acme/"),
        "{}",
        refused.stderr
    );

    // A second move to where they already are changes nothing.
    migrate[1] = "--data".into();
    migrate.remove(1);
    let again = Run::from(registry_command(&migrate).output().unwrap()).ok();
    assert!(again.stderr.contains("nothing to move"), "{}", again.stderr);
}

#[test]
fn the_s3_endpoint_lost_mid_upload_fails_the_request_cleanly_and_the_session_resumes_when_it_returns(
) {
    use stackpack_test_support::cut_relay::CutRelay;
    let moto = emulator();
    let relay = CutRelay::start(&moto.url);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let args: Vec<String> = [
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--data",
        data.to_str().unwrap(),
        "--blobs",
        &format!("s3://{BUCKET}/{PREFIX}"),
        "--s3-endpoint",
        &relay.url,
    ]
    .map(String::from)
    .to_vec();
    let child = registry_command(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    wait_for_port(port);
    let replica = Replica { child, port };
    let client = Client::new(replica.url(), Some(publisher(&data)));
    let blob = bytes(11, 12 * MIB + 3);
    let (first, second) = blob.split_at(9 * MIB);
    let location = begin(&client, "acme/data-plane");
    let location = patch(&client, &location, 0, first);

    // The endpoint goes away: the next chunk fails, nothing is claimed stored, and
    // /healthz takes the replica out naming the blob store.
    relay.cut();
    let range = format!("{}-{}", first.len(), blob.len() - 1);
    let r = client.req(
        "PATCH",
        &location,
        &[
            ("Content-Type", "application/octet-stream"),
            ("Content-Range", &range),
        ],
        Some(second),
    );
    assert!(
        r.status >= 500,
        "{} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    let health = send("GET", &format!("{}/healthz", replica.url()), &[], None);
    assert_eq!(health.status, 503);
    assert!(
        String::from_utf8_lossy(&health.body).contains("s3://registry-blobs/acme/"),
        "{}",
        String::from_utf8_lossy(&health.body)
    );

    // Back: the session still holds the first chunk, goes on from there, and the
    // blob is whole and right.
    let _back = relay.restore(&moto.url);
    let status = client.req("GET", &location, &[], None);
    assert_eq!(status.status, 204);
    assert_eq!(
        status.header("range"),
        Some(format!("0-{}", first.len() - 1).as_str())
    );
    let location = patch(&client, &location, first.len(), second);
    let digest = sha256(&blob);
    let r = finish(&client, &location, &digest);
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(pull(&client, "acme/data-plane", &digest), blob);
    assert_eq!(
        send("GET", &format!("{}/healthz", replica.url()), &[], None).status,
        200
    );
}

/// An operator whose keys live in `~/.aws` (as the AWS CLI keeps them) names the
/// profile, as for every other AWS tool; a profile that runs something for its keys
/// (SSO here) is refused with the command that exports them.
#[test]
fn the_blob_store_takes_its_keys_and_region_from_the_aws_profile_named() {
    let moto = emulator();
    let dir = tempfile::tempdir().unwrap();
    let aws = dir.path().join("home/.aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        "[default]\naws_access_key_id = AKIAEXAMPLEWRONG1234\naws_secret_access_key = wrong\n\n[ops]\naws_access_key_id = test\naws_secret_access_key = test\n",
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        "[profile ops]\nregion = us-east-1\n[profile sso]\nsso_session = corp\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let serve = |profile: &str, port: u16| {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
            .arg(&data)
            .args([
                "--blobs",
                &format!("s3://{BUCKET}/{PREFIX}"),
                "--s3-endpoint",
                &moto.url,
            ])
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_REGION")
            .env_remove("AWS_DEFAULT_REGION")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .env_remove("AWS_CONFIG_FILE")
            .env("HOME", dir.path().join("home"))
            .env("AWS_PROFILE", profile)
            .env("NO_COLOR", "1");
        command
    };
    let refused = Run::from(serve("sso", port).output().unwrap()).code(1);
    assert!(
        refused.stderr.contains("AWS profile `sso`")
            && refused
                .stderr
                .contains("aws configure export-credentials --profile sso"),
        "{}",
        refused.stderr
    );
    let mut child = serve("ops", port)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    wait_for_port(port);
    let client = Client::new(format!("http://127.0.0.1:{port}"), Some(publisher(&data)));
    let blob = bytes(3, MIB);
    let digest = client.push_blob("acme/app", &blob);
    assert_eq!(pull(&client, "acme/app", &digest), blob);
    let _ = child.kill();
    let _ = child.wait();
    assert!(keys(&moto, PREFIX)
        .iter()
        .any(|k| k.ends_with(&digest[7..])));
}
