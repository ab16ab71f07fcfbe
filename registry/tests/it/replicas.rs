//! Several replicas, one registry (issue 27), on one host, in the two layouts
//! replicas run in: three `serve` processes on ONE SHARED DATA FOLDER (one SQLite
//! database, WAL working across processes on one host, blobs in the folder), and
//! the production layout, three `serve --database postgres://… --blobs s3://…`
//! processes each on a data folder of its own (real PostgreSQL, moto's S3: nothing
//! shared through a file system). Debian's `haproxy` on 127.0.0.1 in front of
//! either. One scenario runs on both ([`lose_nothing_acknowledged`]): what must
//! hold across processes holds through the database, never a process's memory.
//! Pushes through the balancer read back from the other replicas, a replica
//! killed mid-push leaves nothing half-visible and the client's retry succeeds on
//! another, two `gc` loops (the CLI, beside the load) take turns through gc's
//! lease in the database and collect what nobody references, once, a receipt
//! reported through two replicas at once is stored once and its alert sent once,
//! support's queries answer the same from every replica, prerelease numbers claimed through two replicas at once are
//! distinct, a support page session opened on one replica works on another, and
//! every acknowledged object reads back byte for byte at the end. On PostgreSQL,
//! the database also stops under the cluster: every replica answers 503, a push
//! under way leaves nothing, and each serves again once it is back.

use crate::common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_test_support::receipts::ReceiptBuilder;
use stackpack_test_support::servers::{wait_for_port, Moto, Postgres};

use crate::alerts::Hook;
use crate::s3_blobs::{blobs_flags, emulator};
use crate::ui::{installation_key, minutes_ago, push_bundle};

/// Where the replicas keep what they share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// One data folder on this host, every replica on it: SQLite, blobs in `blobs/`.
    SharedFolder,
    /// Metadata in PostgreSQL, blobs and upload sessions in S3, each replica on a
    /// data folder of its own: replicas on several machines.
    PostgresAndS3,
}

/// How a command line reaches the registry's stores: `--data` of the shared folder,
/// or `--database` (with `--blobs` and an operator's own data folder for `gc`). Cloned into
/// the thread running gc beside the load.
#[derive(Clone)]
struct Commands {
    data: PathBuf,
    /// `postgres://…`, in the production layout.
    database: Option<String>,
    /// `--blobs s3://…` and the emulator's endpoint, in the production layout.
    blobs: Vec<String>,
}

impl Commands {
    /// `stackpack-registry ARGS` on these stores; `blobs` adds where blobs live,
    /// for the commands that read or delete them.
    fn command(&self, args: &[&str], blobs: bool) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env_remove("AWS_SESSION_TOKEN");
        // On PostgreSQL only gc, which deletes blobs, needs a data folder: the
        // others read and write rows alone, as from any machine reaching the database.
        if self.database.is_none() || blobs {
            command.arg("--data").arg(&self.data);
        }
        if let Some(url) = &self.database {
            command.args(["--database", url]);
        }
        if blobs {
            command.args(&self.blobs);
        }
        command
    }

    /// A token made on the stores every replica reads: each knows it at once.
    fn token(&self, role: &str, customer: Option<&str>) -> String {
        let mut args = vec!["token", "create", "--role", role, "--json"];
        if let Some(customer) = customer {
            args.extend(["--customer", customer]);
        }
        let out = self.command(&args, false).output().unwrap();
        assert!(
            out.status.success(),
            "token create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)["token"].as_str().unwrap().to_string()
    }

    /// `gc --grace-secs GRACE --json`, run to its end.
    fn gc(&self, grace_secs: u64) -> std::process::Output {
        let grace = grace_secs.to_string();
        self.command(&["gc", "--grace-secs", &grace, "--json"], true)
            .output()
            .unwrap()
    }
}

/// The stores of one layout, started (PostgreSQL and the S3 emulator stop when
/// dropped), and the folders the replicas' data folders go in.
struct Stores {
    layout: Layout,
    dir: tempfile::TempDir,
    commands: Commands,
    postgres: Option<Postgres>,
    _s3: Option<Moto>,
}

impl Stores {
    fn start(layout: Layout) -> Stores {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        match layout {
            Layout::SharedFolder => Stores {
                layout,
                dir,
                commands: Commands {
                    data,
                    database: None,
                    blobs: Vec::new(),
                },
                postgres: None,
                _s3: None,
            },
            Layout::PostgresAndS3 => {
                // The operator's host: a data folder of its own, no replica's.
                std::fs::create_dir(&data).unwrap();
                let (postgres, s3) = (Postgres::start(), emulator());
                Stores {
                    layout,
                    dir,
                    commands: Commands {
                        data,
                        database: Some(postgres.url()),
                        blobs: blobs_flags(&s3),
                    },
                    postgres: Some(postgres),
                    _s3: Some(s3),
                }
            }
        }
    }

    /// Replica `index`'s data folder: the shared one, or its own.
    fn data_of(&self, index: usize) -> PathBuf {
        match self.layout {
            Layout::SharedFolder => self.commands.data.clone(),
            Layout::PostgresAndS3 => self.dir.path().join(format!("replica-{index}")),
        }
    }

    /// `serve`'s flags naming the stores beyond the data folder.
    fn serve_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(url) = &self.commands.database {
            args.extend(["--database".to_string(), url.clone()]);
        }
        args.extend(self.commands.blobs.iter().cloned());
        args
    }

    /// What `/healthz` says of a database that answers.
    fn healthy(&self) -> &'static str {
        match self.layout {
            Layout::SharedFolder => "database (sqlite): ok",
            Layout::PostgresAndS3 => "database (postgres): ok",
        }
    }
}

/// One `serve` process. Killed when dropped.
struct Replica {
    name: String,
    port: u16,
    child: Option<Child>,
}

impl Replica {
    /// Starts `serve` without waiting for it: replicas start together, as after a
    /// deploy, and race to create and migrate the one database. The emulator's
    /// test credentials are in its environment (unused without `--blobs s3://…`).
    fn spawn(index: usize, data: &Path, args: &[String]) -> Replica {
        let port = free_port();
        let child = Command::new(BIN)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
            .arg(data)
            .args(args)
            .env("RUST_LOG", "warn")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env_remove("AWS_SESSION_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("stackpack-registry starts");
        Replica {
            name: format!("r{index}"),
            port,
            child: Some(child),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL: no chance to finish anything, as when a machine dies.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Debian's haproxy on 127.0.0.1, in front of the replicas. Killed when dropped.
struct Balancer {
    port: u16,
    child: Child,
    _config: tempfile::TempDir,
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The haproxy binary: on `PATH`, or in the `sbin` folder Debian puts it in (not
/// on every user's `PATH`). Missing, the test is skipped with a message on a
/// developer's machine and fails in CI.
fn haproxy() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join("haproxy"))
        .find(|candidate| candidate.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "`haproxy` is required in CI: run scripts/install-test-deps.sh"
        );
        // Skips with the install hint here, fails where tools are required.
        have("haproxy");
    }
    found
}

/// Round robin over the replicas, each checked on `/healthz` every 300 ms. A
/// request carrying `X-Replica: rN` goes to that replica while it is up: how the
/// test makes a push land on the replica it is about to kill.
fn haproxy_config(port: u16, replicas: &[Replica]) -> String {
    let mut config = format!(
        "global\n    maxconn 512\n\
         defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\
         \x20   retries 3\n    option redispatch\n\
         frontend registry\n    bind 127.0.0.1:{port}\n    default_backend replicas\n\
         backend replicas\n    balance roundrobin\n    option httpchk GET /healthz\n\
         \x20   default-server inter 300ms fall 1 rise 2\n"
    );
    for r in replicas {
        config.push_str(&format!(
            "    use-server {0} if {{ req.hdr(x-replica) -m str {0} }}\n",
            r.name
        ));
    }
    for r in replicas {
        config.push_str(&format!(
            "    server {} 127.0.0.1:{} check\n",
            r.name, r.port
        ));
    }
    config
}

fn start_balancer(binary: &Path, replicas: &[Replica]) -> Balancer {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = dir.path().join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(port, replicas)).unwrap();
    let check = Command::new(binary)
        .arg("-c")
        .arg("-f")
        .arg(&config)
        .output();
    let check = check.expect("haproxy runs");
    assert!(
        check.status.success(),
        "haproxy refuses the config: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let child = Command::new(binary)
        .arg("-db")
        .arg("-f")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("haproxy starts");
    wait_for_port(port);
    Balancer {
        port,
        child,
        _config: dir,
    }
}

/// Waits until every replica answers `/healthz` and the balancer has them all up,
/// its database saying `healthy`.
fn wait_healthy(replicas: &[Replica], balancer: &Balancer, healthy: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for r in replicas {
        wait_for_port(r.port);
        loop {
            let ok = try_send("GET", &format!("{}/healthz", r.url()), &[], None)
                .is_ok_and(|r| r.status == 200);
            if ok {
                break;
            }
            assert!(Instant::now() < deadline, "{} never became healthy", r.name);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // Two passed checks (rise 2, 300 ms apart) put each replica in rotation.
    std::thread::sleep(Duration::from_millis(800));
    let health = send(
        "GET",
        &format!("http://127.0.0.1:{}/healthz", balancer.port),
        &[],
        None,
    );
    assert_eq!(health.status, 200);
    assert!(
        String::from_utf8_lossy(&health.body).contains(healthy),
        "{}",
        String::from_utf8_lossy(&health.body)
    );
}

/// An image a publisher pushed and the registry acknowledged.
#[derive(Clone)]
struct Pushed {
    repo: String,
    tag: String,
    manifest: Vec<u8>,
    blobs: Vec<(String, Vec<u8>)>,
}

fn expect(r: Result<Resp, String>, status: u16, what: &str) -> Result<Resp, String> {
    let r = r?;
    if r.status != status {
        return Err(format!(
            "{what}: {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        ));
    }
    Ok(r)
}

/// One monolithic blob upload (POST, then PUT with the bytes), which may land on
/// two replicas; `pin` sends both to one replica through the balancer.
fn try_push_blob(
    c: &Client,
    repo: &str,
    data: &[u8],
    pin: &[(&str, &str)],
) -> Result<String, String> {
    let digest = sha256(data);
    let r = expect(
        c.try_req("POST", &format!("/v2/{repo}/blobs/uploads/"), pin, None),
        202,
        "upload start",
    )?;
    let location = absolute(&c.base, r.header("location").unwrap_or_default());
    let sep = if location.contains('?') { '&' } else { '?' };
    let mut headers = pin.to_vec();
    headers.push(("Content-Type", "application/octet-stream"));
    expect(
        c.try_req(
            "PUT",
            &format!("{location}{sep}digest={digest}"),
            &headers,
            Some(data),
        ),
        201,
        "upload finish",
    )?;
    Ok(digest)
}

/// Pushes an image (two blobs, a manifest tagged `tag`); an `Err` is a push the
/// client must retry.
fn try_push_image(c: &Client, repo: &str, tag: &str, seed: u64) -> Result<Pushed, String> {
    let layer = bytes(seed, 20_000 + (seed as usize % 50_000));
    try_push_layer(c, repo, tag, seed, layer, &[])
}

/// Pushes an image of one `layer` (sent with `pin` headers) and a config made from
/// `seed`, tagged `tag`.
fn try_push_layer(
    c: &Client,
    repo: &str,
    tag: &str,
    seed: u64,
    layer: Vec<u8>,
    pin: &[(&str, &str)],
) -> Result<Pushed, String> {
    let config = format!("{{\"seed\":{seed}}}").into_bytes();
    let config_digest = try_push_blob(c, repo, &config, &[])?;
    let layer_digest = try_push_blob(c, repo, &layer, pin)?;
    let manifest = image_manifest(
        &config_digest,
        config.len(),
        &[(layer_digest.clone(), layer.len())],
        None,
        None,
    );
    expect(
        c.try_req(
            "PUT",
            &format!("/v2/{repo}/manifests/{tag}"),
            &[("Content-Type", OCI_MANIFEST)],
            Some(&manifest),
        ),
        201,
        "manifest",
    )?;
    Ok(Pushed {
        repo: repo.into(),
        tag: tag.into(),
        manifest,
        blobs: vec![(config_digest, config), (layer_digest, layer)],
    })
}

/// Reads an acknowledged image back from `base`, byte for byte.
fn read_back(base: &str, token: &str, p: &Pushed) -> Result<(), String> {
    let c = Client::new(base.into(), Some(token.into()));
    let r = expect(
        c.try_req(
            "GET",
            &format!("/v2/{}/manifests/{}", p.repo, p.tag),
            &[("Accept", OCI_MANIFEST)],
            None,
        ),
        200,
        "manifest read",
    )?;
    if r.body != p.manifest {
        return Err(format!("{}:{} reads back another manifest", p.repo, p.tag));
    }
    for (digest, data) in &p.blobs {
        let r = expect(
            c.try_req("GET", &format!("/v2/{}/blobs/{digest}", p.repo), &[], None),
            200,
            "blob read",
        )?;
        if &r.body != data {
            return Err(format!("blob `{digest}` of {}:{} differs", p.repo, p.tag));
        }
    }
    Ok(())
}

/// What the load left: every acknowledged push, and the retries it took.
#[derive(Default)]
struct Ledger {
    acknowledged: Vec<Pushed>,
    retries: usize,
}

/// A publisher pushing `count` images through the balancer, retrying each failed
/// push whole (as `stackpack publish` would be run again), and handing each
/// acknowledged one to the pullers.
fn publisher_job(balancer: String, token: String, job: u64, ledger: Arc<Mutex<Ledger>>) {
    let count = 12;
    let c = Client::new(balancer, Some(token));
    for n in 0..count {
        let seed = job * 1000 + n;
        let repo = format!("load/job{job}");
        let mut tries = 0;
        let pushed = loop {
            match try_push_image(&c, &repo, &format!("v{n}"), seed) {
                Ok(pushed) => break pushed,
                Err(e) => {
                    tries += 1;
                    assert!(tries < 10, "push {seed} keeps failing: {e}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        };
        let mut ledger = ledger.lock().unwrap();
        ledger.retries += tries;
        ledger.acknowledged.push(pushed);
    }
}

/// Pulls every acknowledged push straight from a replica (not through the
/// balancer), going round the live ones, until `done`.
fn puller(
    bases: Vec<String>,
    token: String,
    ledger: Arc<Mutex<Ledger>>,
    done: Arc<AtomicBool>,
) -> usize {
    let mut pulled = 0;
    let mut next = 0;
    while !done.load(Ordering::Relaxed) {
        let pushed: Vec<Pushed> = ledger.lock().unwrap().acknowledged.clone();
        for p in pushed.iter().skip(pulled) {
            // A replica killed meanwhile refuses connections; the next one answers.
            let read = (0..bases.len()).find_map(|i| {
                let base = &bases[(next + i) % bases.len()];
                match read_back(base, &token, p) {
                    Err(e) if e.contains("Connection refused") || e.contains("onnection reset") => {
                        None
                    }
                    other => Some(other),
                }
            });
            next += 1;
            if let Some(Err(e)) = read {
                panic!("an acknowledged push does not read back from another replica: {e}");
            }
            pulled += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    pulled
}

/// A body sent slowly: half at once, then nothing until `released`, so the test
/// can kill the replica receiving it mid-push.
struct SlowBody {
    data: Vec<u8>,
    at: usize,
    released: Arc<AtomicBool>,
}

impl Read for SlowBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.data.len() / 2 {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !self.released.load(Ordering::Relaxed) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let n = buf.len().min(self.data.len() - self.at).min(64 * 1024);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Kills replica `victim` while a blob's bytes are half sent to it through the
/// balancer: the blob is not visible on any other replica, and the client's retry
/// of the whole push goes through the balancer to another replica and succeeds.
fn kill_mid_push(balancer: &str, token: &str, replicas: &mut [Replica], victim: usize) -> Pushed {
    let c = Client::new(balancer.into(), Some(token.into()));
    let repo = "load/killed";
    let data = bytes(424242, 4 << 20);
    let digest = sha256(&data);
    let pin = [("X-Replica", replicas[victim].name.clone())];
    let pin: Vec<(&str, &str)> = pin.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = c.req("POST", &format!("/v2/{repo}/blobs/uploads/"), &pin, None);
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let location = absolute(balancer, r.header("location").unwrap());
    let sep = if location.contains('?') { '&' } else { '?' };
    let released = Arc::new(AtomicBool::new(false));
    let body = SlowBody {
        data: data.clone(),
        at: 0,
        released: released.clone(),
    };
    let (url, name, auth) = (
        format!("{location}{sep}digest={digest}"),
        replicas[victim].name.clone(),
        format!("Bearer {token}"),
    );
    let length = data.len().to_string();
    let sending = std::thread::spawn(move || {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .build();
        let sent = agent
            .put(&url)
            .set("X-Replica", &name)
            .set("Authorization", &auth)
            .set("Content-Type", "application/octet-stream")
            .set("Content-Length", &length)
            .send(body);
        match sent {
            Ok(r) => r.status(),
            Err(ureq::Error::Status(status, _)) => status,
            Err(_) => 0,
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    replicas[victim].kill();
    released.store(true, Ordering::Relaxed);
    let status = sending.join().unwrap();
    assert_ne!(
        status, 201,
        "the push to a killed replica cannot have been acknowledged"
    );
    for r in replicas.iter().filter(|r| r.child.is_some()) {
        let head = send(
            "HEAD",
            &format!("{}/v2/{repo}/blobs/{digest}", r.url()),
            &[("Authorization", &format!("Bearer {token}"))],
            None,
        );
        assert_eq!(head.status, 404, "half a push is visible on {}", r.name);
    }
    // The client runs its push again, still asking for the dead replica: the
    // balancer sends it to a live one.
    let mut tries = 0;
    loop {
        match try_push_layer(&c, repo, "after-kill", 7, data.clone(), &pin) {
            Ok(pushed) => return pushed,
            Err(e) => {
                tries += 1;
                assert!(tries < 20, "the retry after the kill keeps failing: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Runs `gc` every half second until `done`: each run either collects or finds
/// another holding gc's lease (in the database, whichever it is). Returns blobs
/// deleted.
fn gc_beside(commands: Commands, done: Arc<AtomicBool>) -> u64 {
    let mut deleted = 0;
    while !done.load(Ordering::Relaxed) {
        let out = commands.gc(8);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            deleted += json(&out)["blobsDeleted"].as_u64().unwrap();
        } else {
            assert!(stderr.contains("gc is already running"), "{stderr}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    deleted
}

/// Two CI jobs publish prereleases of one repository at once, each through its own
/// replica: each lists the tags, takes the next `1.0.0-rc.N` and pushes it; a
/// number the other took first is refused (prerelease tags are immutable) and the
/// job takes the next. Returns `(tag, digest)` of each claim.
fn claim_prereleases(
    base: String,
    token: String,
    job: u64,
    count: usize,
    start: Arc<std::sync::Barrier>,
) -> Vec<(String, String)> {
    let c = Client::new(base, Some(token));
    let repo = "ci/app";
    let mut claims = Vec::new();
    let mut attempt = 0;
    start.wait();
    while claims.len() < count {
        attempt += 1;
        assert!(attempt < 50, "job {job} cannot claim a number");
        let tags = c.req("GET", &format!("/v2/{repo}/tags/list"), &[], None);
        let next = match tags.status {
            200 => tags.json()["tags"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|t| t.as_str()?.strip_prefix("1.0.0-rc.")?.parse::<u64>().ok())
                .max()
                .unwrap_or(0),
            _ => 0,
        } + 1;
        let tag = format!("1.0.0-rc.{next}");
        let pushed = try_push_image(&c, repo, &tag, 90_000 + job * 1000 + attempt);
        match pushed {
            Ok(p) => claims.push((tag, sha256(&p.manifest))),
            Err(e) => assert!(e.starts_with("manifest: 403"), "job {job}: {e}"),
        }
    }
    claims
}

/// Two CI jobs claim prerelease numbers at once through replicas `a` and `b`: every
/// number is claimed once and reads the same from both; two different builds
/// tagged `2.0.0` at once through the two: one wins, and both replicas say which.
fn prereleases_through_two_replicas(a: &Replica, b: &Replica, token: &str) {
    let replicas = [a, b];
    let start = Arc::new(std::sync::Barrier::new(2));
    let jobs: Vec<_> = replicas
        .iter()
        .enumerate()
        .map(|(job, r)| {
            let (base, token, start) = (r.url(), token.to_string(), start.clone());
            std::thread::spawn(move || claim_prereleases(base, token, job as u64, 6, start))
        })
        .collect();
    let claims: Vec<(String, String)> = jobs.into_iter().flat_map(|j| j.join().unwrap()).collect();
    let mut numbers: Vec<&str> = claims.iter().map(|(t, _)| t.as_str()).collect();
    numbers.sort();
    numbers.dedup();
    assert_eq!(numbers.len(), 12, "two jobs claimed one number: {claims:?}");
    for (tag, digest) in &claims {
        for r in &replicas {
            let c = Client::new(r.url(), Some(token.to_string()));
            let got = c.req(
                "HEAD",
                &format!("/v2/ci/app/manifests/{tag}"),
                &[("Accept", OCI_MANIFEST)],
                None,
            );
            assert_eq!(
                got.header("docker-content-digest"),
                Some(digest.as_str()),
                "{tag} on {}",
                r.name
            );
        }
    }

    let start = Arc::new(std::sync::Barrier::new(2));
    let racers: Vec<_> = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (c, start) = (Client::new(r.url(), Some(token.to_string())), start.clone());
            std::thread::spawn(move || {
                start.wait();
                try_push_image(&c, "ci/app", "2.0.0", 77_000 + i as u64)
                    .map(|p| sha256(&p.manifest))
            })
        })
        .collect();
    let results: Vec<Result<String, String>> =
        racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won: Vec<&String> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{results:?}");
    for r in &replicas {
        let c = Client::new(r.url(), Some(token.to_string()));
        let got = c.req(
            "HEAD",
            "/v2/ci/app/manifests/2.0.0",
            &[("Accept", OCI_MANIFEST)],
            None,
        );
        assert_eq!(got.header("docker-content-digest"), Some(won[0].as_str()));
    }
}

/// A registry made by `init` in a temporary folder: the folder (kept while it
/// lives) and the data folder.
fn new_registry() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let init = Command::new(BIN)
        .args(["init", "--data"])
        .arg(&data)
        .output();
    assert!(init.unwrap().status.success());
    (dir, data)
}

/// `stackpack-registry ARGS --data DATA`, run to its end.
fn run(args: &[&str], data: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .arg("--data")
        .arg(data)
        .output()
        .unwrap()
}

#[test]
fn gc_runs_on_one_replica_at_a_time_and_a_dead_holders_lease_lapses() {
    let (_dir, data) = new_registry();
    let db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    let now_ns = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64;
    db.execute(
        "INSERT INTO leases (name, holder, until_ns) VALUES ('gc', 'pid 1 on elsewhere', ?1)",
        [now_ns + 60_000_000_000],
    )
    .unwrap();
    let held = run(&["gc"], &data);
    let stderr = String::from_utf8_lossy(&held.stderr);
    assert_eq!(held.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("gc is already running: pid 1 on elsewhere holds its lease"),
        "{stderr}"
    );
    // That holder died: its lease runs out, and the next gc runs.
    db.execute("UPDATE leases SET until_ns = ?1", [now_ns - 1])
        .unwrap();
    json(&run(&["gc", "--json"], &data));
    let left: i64 = db
        .query_row("SELECT COUNT(*) FROM leases", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0, "a finished gc gives its lease back");
    // A holder on this host whose process is gone need not be waited out.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    db.execute(
        "INSERT INTO leases (name, holder, until_ns) VALUES ('gc', ?1, ?2)",
        rusqlite::params![
            format!("pid {dead_pid} on {} (0badf00d)", host.trim()),
            now_ns + 60_000_000_000
        ],
    )
    .unwrap();
    json(&run(&["gc", "--json"], &data));
}

/// Undoes the newest schema version (17, where the blobs live), to make a
/// database one version behind. A new migration moves this to its own undo.
const UNDO_NEWEST: &str = "DROP TABLE registry_settings;";

#[test]
fn two_replicas_migrating_one_database_at_once_one_waits_and_migrate_check_says_where_it_stands() {
    let (_dir, data) = new_registry();
    let mut db = rusqlite::Connection::open(data.join("registry.db")).unwrap();
    let current: u32 = db
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    db.execute_batch(UNDO_NEWEST).unwrap();
    db.pragma_update(None, "user_version", current - 1).unwrap();
    let check = run(&["migrate", "--check"], &data);
    assert_eq!(
        check.status.code(),
        Some(3),
        "behind: {}",
        String::from_utf8_lossy(&check.stdout)
    );

    // Another process holds the write lock, as a replica midway through a long
    // migration step does: both migrations wait, then one migrates and the other
    // finds the database current.
    let holder = db
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let migrating: Vec<Child> = (0..2)
        .map(|_| {
            Command::new(BIN)
                .args(["migrate", "--json", "--data"])
                .arg(&data)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    holder.rollback().unwrap();
    let mut from = Vec::new();
    for child in migrating {
        let out = child.wait_with_output().unwrap();
        let answer = json(&out);
        assert_eq!(answer["to"], current);
        from.push(answer["from"].as_u64().unwrap());
    }
    from.sort();
    assert_eq!(
        from,
        [current as u64 - 1, current as u64],
        "one migrated, one found it done"
    );
    let check = run(&["migrate", "--check"], &data);
    assert_eq!(check.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&check.stdout).contains("current"));

    db.pragma_update(None, "user_version", current + 1).unwrap();
    let newer = run(&["migrate", "--check"], &data);
    let stderr = String::from_utf8_lossy(&newer.stderr);
    assert_eq!(newer.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("newer than this build's") && stderr.contains("hint:"),
        "{stderr}"
    );
}

/// Three replicas of one layout and the balancer in front, on fresh stores.
struct Cluster {
    replicas: Vec<Replica>,
    balancer: Balancer,
    hook: Hook,
    /// Last, so dropped last: the replicas stop before their database does.
    stores: Stores,
}

impl Cluster {
    fn start(haproxy: &Path, layout: Layout) -> Cluster {
        let stores = Stores::start(layout);
        // A webhook slow to answer: each delivery is in flight across several of the
        // replicas' alert ticks, which must leave it to the one that claimed it.
        let hook = Hook::start(&[200], Duration::from_millis(800));
        let mut args: Vec<String> = [
            "--prerelease-tags",
            "immutable",
            "--alert-tick-ms",
            "100",
            "--alert-timeout-secs",
            "2",
            "--alert",
            &format!("failed={}", hook.url),
        ]
        .map(String::from)
        .to_vec();
        args.extend(stores.serve_args());
        let replicas: Vec<Replica> = (0..3)
            .map(|i| Replica::spawn(i, &stores.data_of(i), &args))
            .collect();
        let balancer = start_balancer(haproxy, &replicas);
        wait_healthy(&replicas, &balancer, stores.healthy());
        Cluster {
            stores,
            replicas,
            balancer,
            hook,
        }
    }

    fn balancer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.balancer.port)
    }

    fn live(&self) -> Vec<&Replica> {
        self.replicas.iter().filter(|r| r.child.is_some()).collect()
    }

    fn token(&self, role: &str, customer: Option<&str>) -> String {
        self.stores.commands.token(role, customer)
    }
}

/// A failed apply reported to two replicas at once is stored once, reads the same
/// from every replica, and reaches the webhook once though every replica delivers
/// alerts.
fn receipts_through_any_replica(cluster: &Cluster) {
    let admin = Client::new(cluster.balancer_url(), Some(cluster.token("admin", None)));
    let body = serde_json::json!({ "id": "acme" }).to_string();
    let r = admin.req("POST", "/api/v1/customers", &[], Some(body.as_bytes()));
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let publisher = Client::new(
        cluster.balancer_url(),
        Some(cluster.token("publisher", None)),
    );
    let bundle = push_bundle(&publisher, "data-plane", "1.0.0", "1.0.0");
    let customer = cluster.token("customer", Some("acme"));
    let key = installation_key("acme");
    let applied = ReceiptBuilder::new("acme", "data-plane", "1.0.0")
        .id("r1")
        .kind(ReceiptKind::Apply, Outcome::Succeeded)
        .bundle_digest(bundle.parse().unwrap())
        .at(&minutes_ago(2))
        .sign(&key);
    let reporter = Client::new(cluster.balancer_url(), Some(customer.clone()));
    let r = reporter.req("POST", "/api/v1/receipts", &[], Some(&applied.to_bytes()));
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let failed = ReceiptBuilder::new("acme", "data-plane", "1.1.0")
        .id("r2")
        .kind(ReceiptKind::Apply, Outcome::Failed)
        .failure(
            "creating EKS Node Group (gpu): InsufficientInstanceCapacity",
            None,
        )
        .at(&minutes_ago(1))
        .sign(&key)
        .to_bytes();
    let start = Arc::new(std::sync::Barrier::new(2));
    let posts: Vec<_> = cluster
        .live()
        .iter()
        .take(2)
        .map(|r| {
            let (c, start, failed) = (
                Client::new(r.url(), Some(customer.clone())),
                start.clone(),
                failed.clone(),
            );
            std::thread::spawn(move || {
                start.wait();
                c.req("POST", "/api/v1/receipts", &[], Some(&failed)).status
            })
        })
        .collect();
    let mut statuses: Vec<u16> = posts.into_iter().map(|p| p.join().unwrap()).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 201], "stored by one, known to the other");
    let support = cluster.token("support", None);
    for r in cluster.live() {
        let c = Client::new(r.url(), Some(support.clone()));
        let list = c
            .req("GET", "/api/v1/deployments?customer=acme", &[], None)
            .json();
        let ids: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["receiptId"].as_str().or(d["id"].as_str()))
            .collect();
        assert_eq!(
            ids.iter().filter(|id| **id == "r2").count(),
            1,
            "{} lists {list}",
            r.name
        );
    }
    support_answers_the_same_from_every_replica(cluster, &support);
    let events = cluster.hook.wait_for(1);
    assert_eq!(events[0]["event"], "failed");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        cluster.hook.accepted().len(),
        1,
        "sent once: {:?}",
        cluster.hook.accepted()
    );
}

/// Support's questions about `acme` (the fleet, its versions, its history, the
/// stack's adoption) answer, and answer alike, from every live replica.
/// Writers in parallel (issue 42): six customers' runners each report three
/// receipts at once, spread over every replica (on PostgreSQL each keyed by its
/// customer, side by side): every one is stored once, each customer's history
/// holds its three in order, and the fleet and adoption agree on every replica
/// with what was sent (no increment lost between two customers' transactions).
fn receipts_of_many_customers_at_once_through_every_replica(cluster: &Cluster) {
    let admin = Client::new(cluster.balancer_url(), Some(cluster.token("admin", None)));
    let publisher = Client::new(
        cluster.balancer_url(),
        Some(cluster.token("publisher", None)),
    );
    let bundles: Vec<String> = ["2.0.0", "2.1.0", "2.2.0"]
        .iter()
        .map(|v| push_bundle(&publisher, "edge", v, v))
        .collect();
    let customers: Vec<String> = (1..=6).map(|n| format!("parallel-{n}")).collect();
    let mut posts = Vec::new();
    let start = Arc::new(std::sync::Barrier::new(customers.len() * 3));
    for (c, customer) in customers.iter().enumerate() {
        let body = serde_json::json!({ "id": customer }).to_string();
        let r = admin.req("POST", "/api/v1/customers", &[], Some(body.as_bytes()));
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let token = cluster.token("customer", Some(customer));
        let key = installation_key(customer);
        for (n, version) in ["2.0.0", "2.1.0", "2.2.0"].iter().enumerate() {
            let receipt = ReceiptBuilder::new(customer, "edge", version)
                .id(format!("{customer}-{n}"))
                .kind(ReceiptKind::Apply, Outcome::Succeeded)
                .bundle_digest(bundles[n].parse().unwrap())
                .at(&minutes_ago(10 - n as i64))
                .sign(&key)
                .to_bytes();
            let live = cluster.live();
            let replica = live[(c + n) % live.len()];
            let (client, start) = (
                Client::new(replica.url(), Some(token.clone())),
                start.clone(),
            );
            posts.push(std::thread::spawn(move || {
                start.wait();
                let r = client.req("POST", "/api/v1/receipts", &[], Some(&receipt));
                (r.status, String::from_utf8_lossy(&r.body).into_owned())
            }));
        }
    }
    for post in posts {
        let (status, body) = post.join().unwrap();
        assert_eq!(status, 201, "{body}");
    }
    let support = cluster.token("support", None);
    for r in cluster.live() {
        let c = Client::new(r.url(), Some(support.clone()));
        for customer in &customers {
            let history = c
                .req(
                    "GET",
                    &format!("/api/v1/customers/{customer}/history"),
                    &[],
                    None,
                )
                .json();
            let text = history.to_string();
            for n in 0..3 {
                assert_eq!(
                    text.matches(&format!("\"{customer}-{n}\"")).count(),
                    1,
                    "{}: {customer}'s history holds receipt {n} once: {text}",
                    r.name
                );
            }
            let fleet = c
                .req(
                    "GET",
                    &format!("/api/v1/fleet?customer={customer}"),
                    &[],
                    None,
                )
                .json()
                .to_string();
            assert!(
                fleet.contains("\"2.2.0\""),
                "{}: {customer} runs 2.2.0: {fleet}",
                r.name
            );
        }
        // The adoption counters are shared by every customer's transaction: each
        // customer moved 2.0.0 → 2.1.0 → 2.2.0, so all six run 2.2.0 now.
        let adoption = c
            .req("GET", "/api/v1/adoption?stack=edge", &[], None)
            .json();
        let now = adoption[0]["points"]
            .as_array()
            .and_then(|p| p.last())
            .cloned();
        let now = now.unwrap_or_default();
        assert_eq!(now["total"], 6, "{}: {adoption}", r.name);
        assert_eq!(now["customers"]["2.2.0"], 6, "{}: {adoption}", r.name);
    }
}

fn support_answers_the_same_from_every_replica(cluster: &Cluster, support: &str) {
    let questions = [
        "/api/v1/fleet?customer=acme",
        "/api/v1/fleet?failed=true",
        "/api/v1/support/versions",
        "/api/v1/customers/acme",
        "/api/v1/customers/acme/history",
        "/api/v1/adoption?stack=data-plane",
    ];
    for question in questions {
        let answers: Vec<(String, serde_json::Value)> = cluster
            .live()
            .iter()
            .map(|r| {
                let c = Client::new(r.url(), Some(support.to_string()));
                let answer = c.req("GET", question, &[], None);
                let body = String::from_utf8_lossy(&answer.body);
                assert_eq!(answer.status, 200, "{question} on {}: {body}", r.name);
                (r.name.clone(), answer.json())
            })
            .collect();
        for (name, answer) in &answers[1..] {
            assert_eq!(
                answer, &answers[0].1,
                "{question}: {name} answers otherwise than {}",
                answers[0].0
            );
        }
    }
}

/// A support page session opened on one replica works on another, and signing
/// out on that one ends it on the first.
fn sign_in_on_one_replica_works_on_another(cluster: &Cluster) {
    let live = cluster.live();
    let (first, second) = (live[0], live[1]);
    let support = cluster.token("support", None);
    let r = send(
        "POST",
        &format!("{}/ui/login", first.url()),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(format!("token={support}").as_bytes()),
    );
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let cookie = r
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let get = |replica: &Replica, path: &str| {
        let url = format!("{}{path}", replica.url());
        send("GET", &url, &[("Cookie", &cookie)], None).status
    };
    let (a, b) = (&first.name, &second.name);
    assert_eq!(get(second, "/ui"), 200, "signed in on {a} but not on {b}");
    assert_eq!(get(second, "/ui/logout"), 303);
    assert_eq!(get(first, "/ui"), 303, "signed out on {b}, still in on {a}");
}

/// The scenario both layouts run (the module's doc says what it guards); on
/// PostgreSQL, the database also stops under the cluster and comes back.
fn lose_nothing_acknowledged(layout: Layout) {
    let Some(haproxy) = haproxy() else {
        return;
    };
    let started = Instant::now();
    let mut cluster = Cluster::start(&haproxy, layout);
    let publisher = cluster.token("publisher", None);
    let reader = cluster.token("reader", None);
    let balancer = cluster.balancer_url();

    // Blobs nobody references: gc beside the load collects them once their grace
    // period has passed.
    let orphans: Vec<String> = (0..3)
        .map(|i| {
            Client::new(balancer.clone(), Some(publisher.clone()))
                .push_blob("load/orphans", &bytes(5000 + i, 3000))
        })
        .collect();
    // Their grace period runs from here: starting PostgreSQL and S3 takes seconds.
    let orphaned = Instant::now();

    let ledger: Arc<Mutex<Ledger>> = Default::default();
    let done = Arc::new(AtomicBool::new(false));
    let publishers: Vec<_> = (0..2)
        .map(|job| {
            let (b, t, l) = (balancer.clone(), publisher.clone(), ledger.clone());
            std::thread::spawn(move || publisher_job(b, t, job, l))
        })
        .collect();
    // Pullers read from r0 and r2 straight; r1 is the one to be killed.
    let bases = vec![cluster.replicas[0].url(), cluster.replicas[2].url()];
    let (l, d, t) = (ledger.clone(), done.clone(), reader.clone());
    let pulling = std::thread::spawn(move || puller(bases, t, l, d));
    // Two operators' gc loops, as from two hosts: they take turns through the lease.
    let collecting: Vec<_> = (0..2)
        .map(|_| {
            let (commands, d) = (cluster.stores.commands.clone(), done.clone());
            std::thread::spawn(move || gc_beside(commands, d))
        })
        .collect();

    std::thread::sleep(Duration::from_secs(2));
    let survivor = kill_mid_push(&balancer, &publisher, &mut cluster.replicas, 1);
    ledger.lock().unwrap().acknowledged.push(survivor);
    for p in publishers {
        p.join().unwrap();
    }
    // Past the orphans' grace period, with one more gc run to see them go.
    while orphaned.elapsed() < Duration::from_secs(12) {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1500));
    done.store(true, Ordering::Relaxed);
    let pulled = pulling.join().unwrap();
    let collected: u64 = collecting.into_iter().map(|c| c.join().unwrap()).sum();
    let under_load = ledger.lock().unwrap().acknowledged.len();
    assert!(pulled >= under_load - 1, "the pullers kept up: {pulled}");

    receipts_through_any_replica(&cluster);
    receipts_of_many_customers_at_once_through_every_replica(&cluster);
    sign_in_on_one_replica_works_on_another(&cluster);
    let live = cluster.live();
    prereleases_through_two_replicas(live[0], live[1], &publisher);
    if let Some(postgres) = &cluster.stores.postgres {
        let pushed = postgres_stopped_under_the_cluster(&cluster, postgres, &publisher);
        ledger.lock().unwrap().acknowledged.push(pushed);
    }

    let ledger = ledger.lock().unwrap();
    assert_eq!(
        collected,
        orphans.len() as u64,
        "gc collected the orphans, each once"
    );
    let live: Vec<String> = cluster.live().iter().map(|r| r.url()).collect();
    for (i, p) in ledger.acknowledged.iter().enumerate() {
        read_back(&live[i % live.len()], &reader, p)
            .unwrap_or_else(|e| panic!("acknowledged, then lost: {e}"));
    }
    let c = Client::new(live[0].clone(), Some(reader.clone()));
    for orphan in &orphans {
        let head = c.req(
            "HEAD",
            &format!("/v2/load/orphans/blobs/{orphan}"),
            &[],
            None,
        );
        assert_eq!(head.status, 404, "gc left orphan `{orphan}`");
    }
    eprintln!(
        "replicas ({layout:?}): {} pushes acknowledged ({} retried), {pulled} pulled from other replicas, {collected} blobs collected, in {:?}",
        ledger.acknowledged.len(),
        ledger.retries,
        started.elapsed()
    );
}

/// PostgreSQL stops under the running cluster (restarted, failed over): every
/// replica answers 503, a blob whose bytes arrive meanwhile is neither
/// acknowledged nor visible once it is back, and every replica serves again
/// without a restart of its own. Returns the push the publisher then retries.
fn postgres_stopped_under_the_cluster(
    cluster: &Cluster,
    postgres: &Postgres,
    publisher: &str,
) -> Pushed {
    let repo = "load/outage";
    let layer = bytes(31337, 200_000);
    let digest = sha256(&layer);
    let c = Client::new(cluster.balancer_url(), Some(publisher.to_string()));
    let r = c.req("POST", &format!("/v2/{repo}/blobs/uploads/"), &[], None);
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    let location = absolute(&c.base, r.header("location").unwrap());
    let sep = if location.contains('?') { '&' } else { '?' };

    postgres.stop();
    for replica in cluster.live() {
        let health = send("GET", &format!("{}/healthz", replica.url()), &[], None);
        let body = String::from_utf8_lossy(&health.body);
        assert_eq!(
            health.status, 503,
            "{} with PostgreSQL away: {body}",
            replica.name
        );
        assert!(body.contains("database (postgres): error"), "{body}");
        let on = Client::new(replica.url(), Some(publisher.to_string()));
        let v2 = on.req("GET", "/v2/", &[], None);
        assert_eq!(v2.status, 503, "{} with PostgreSQL away", replica.name);
        let finish = on.req(
            "PUT",
            &format!("{}{sep}digest={digest}", on_replica(replica, &location)),
            &[("Content-Type", "application/octet-stream")],
            Some(&layer),
        );
        assert_eq!(
            finish.status,
            503,
            "{} finishing an upload with PostgreSQL away: {}",
            replica.name,
            String::from_utf8_lossy(&finish.body)
        );
    }
    postgres.restart();

    let deadline = Instant::now() + Duration::from_secs(20);
    for replica in cluster.live() {
        let on = Client::new(replica.url(), Some(publisher.to_string()));
        while on.try_req("GET", "/v2/", &[], None).map(|r| r.status) != Ok(200) {
            assert!(
                Instant::now() < deadline,
                "{} did not serve again once PostgreSQL was back",
                replica.name
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let head = on.req("HEAD", &format!("/v2/{repo}/blobs/{digest}"), &[], None);
        assert_eq!(
            head.status, 404,
            "a blob refused while PostgreSQL was away is visible on {}",
            replica.name
        );
    }
    let mut tries = 0;
    loop {
        match try_push_layer(&c, repo, "after-outage", 31337, layer.clone(), &[]) {
            Ok(pushed) => return pushed,
            Err(e) => {
                tries += 1;
                assert!(tries < 20, "pushes keep failing after the outage: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// `location` (an upload session's, through the balancer) on `replica` itself.
fn on_replica(replica: &Replica, location: &str) -> String {
    let path = &location[location.find("/v2/").unwrap()..];
    format!("{}{path}", replica.url())
}

#[test]
fn three_replicas_on_one_shared_sqlite_folder_behind_haproxy_lose_nothing_acknowledged_when_one_is_killed_mid_push(
) {
    lose_nothing_acknowledged(Layout::SharedFolder);
}

#[test]
fn three_replicas_on_postgres_and_s3_behind_haproxy_lose_nothing_acknowledged_when_one_is_killed_mid_push_or_postgres_stops(
) {
    lose_nothing_acknowledged(Layout::PostgresAndS3);
}
