//! Seeder and clients for `scripts/bench/rollout.sh` (issue 25): the assignment poll
//! of a fleet of runners, timed open-loop beside support's queries, and a rollout of
//! emulated customers timed from promotion to its last wave converged.
//!
//! ```text
//! rolloutbench seed DATA CUSTOMERS SOAK_SECS TOKENS
//!     customers `customer-00000…` in channel `stable` (waves canary 1 %, early 9 %,
//!     general 90 %, soak SOAK_SECS), each with a customer token; TOKENS gets
//!     `CUSTOMER TOKEN` lines. Offline, through the registry's own functions.
//! rolloutbench promote URL PUBLISHER SUPPORT TOKENS
//!     pushes release `platform@1.0.0` and the vendor's statement for `stable`, then
//!     posts a succeeded release receipt for every canary and early customer (their
//!     runners' work), so the general wave is open: every customer has an assignment
//! rolloutbench poll URL TOKENS RATE SECONDS CLIENTS SUPPORT [PATH]
//!     RATE GETs a second for SECONDS, open-loop, each with the next customer's token,
//!     of its `/api/v1/customers/{id}/assignment` (or of PATH, the baseline), while
//!     CLIENTS support clients loop on support's queries and pages
//! rolloutbench rollout URL PUBLISHER SUPPORT TOKENS CUSTOMERS SOAK_SECS TICK_SECS
//!     CUSTOMERS emulated runners poll every 200 ms and report what they are assigned;
//!     times promotion to the rollout `completed`
//! ```
//!
//! `poll` prints one line: `WHAT sent p50_ms p99_ms max_ms errors support_answers_per_s`.

mod bench;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stackpack_bundle::channel::statement_artifact;
use stackpack_registry::config::Config;
use stackpack_registry::{db, rollout};
use stackpack_schema::media_type;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::release_receipt::{
    ReleaseReceipt, SignedReleaseReceipt, RELEASE_RECEIPT_FORMAT,
};
use stackpack_schema::rollout::{
    ApprovedKind, AssignmentResponse, ChannelStatement, SignedChannelStatement, SyncReleaseReport,
    SyncReport, SyncState, CHANNEL_STATEMENT_FORMAT,
};
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::release_index::{ReleaseArtifacts, ReleaseBuilder};

const REPO: &str = "acme/releases/platform";
const WAVES: [&str; 3] = ["canary", "early", "general"];

/// Customer `c` of `n`: the first 1 % canary, the next 9 % early, the rest general.
fn wave_of(c: usize, n: usize) -> &'static str {
    match c * 100 / n.max(1) {
        0 => WAVES[0],
        1..=9 => WAVES[1],
        _ => WAVES[2],
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats")
}

fn seed(data: &str, customers: usize, soak: &str, tokens: &str) {
    let soak: u64 = soak.parse().expect("SOAK_SECS is a number of seconds");
    let started = Instant::now();
    let state = stackpack_registry::open(Config::new(data)).expect("the registry opens");
    let now = db::now_rfc3339();
    let mut lines = String::new();
    state
        .db
        .write_keyed(&[], |tx| {
            let tx = tx.sqlite("the example's rows")?;
            let waves = WAVES.iter().map(|w| w.to_string()).collect();
            rollout::set_channel(tx, "stable", Some(waves), Some(soak), rollout::now_ns())?;
            for c in 0..customers {
                let id = format!("customer-{c:05}");
                db::ledger::register_customer(tx, &id, None, Some("production"), &now)?;
                rollout::place(
                    tx,
                    &id,
                    "stable",
                    Some(wave_of(c, customers)),
                    rollout::now_ns(),
                )?;
                let token = bench::customer_token(tx, &id, &now)?;
                lines.push_str(&format!("{id} {token}\n"));
            }
            Ok(())
        })
        .expect("customers, placements and tokens are written");
    std::fs::write(tokens, lines).expect("the tokens file is written");
    eprintln!(
        "seeded {customers} customers in channel `stable` (soak {soak} s) with their tokens in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn artifacts() -> ReleaseArtifacts {
    ReleaseBuilder::new("platform", "1.0.0")
        .stack("network", "1.0.0", &[])
        .build()
}

fn push_blob(agent: &ureq::Agent, url: &str, bearer: &str, data: &[u8]) {
    let digest = stackpack_schema::Digest::of(data);
    agent
        .post(&format!("{url}/v2/{REPO}/blobs/uploads/?digest={digest}"))
        .set("Authorization", bearer)
        .set("Content-Type", "application/octet-stream")
        .send_bytes(data)
        .expect("the blob is pushed");
}

fn push_manifest(
    agent: &ureq::Agent,
    url: &str,
    bearer: &str,
    reference: &str,
    bytes: &[u8],
    media: &str,
) {
    agent
        .put(&format!("{url}/v2/{REPO}/manifests/{reference}"))
        .set("Authorization", bearer)
        .set("Content-Type", media)
        .send_bytes(bytes)
        .unwrap_or_else(|e| panic!("PUT manifest `{reference}`: {e}"));
}

/// Pushes the release as `stackpack publish` does: blobs, manifests by digest, the
/// index tagged with its version.
fn push_release(agent: &ureq::Agent, url: &str, bearer: &str, release: &ReleaseArtifacts) {
    for blob in &release.blobs {
        push_blob(agent, url, bearer, blob);
    }
    for m in &release.manifests {
        push_manifest(
            agent,
            url,
            bearer,
            &m.digest.to_string(),
            &m.bytes,
            m.media_type,
        );
    }
    let version = release.description.version.to_string();
    let index = &release.index;
    push_manifest(agent, url, bearer, &version, &index.bytes, index.media_type);
}

/// The statement's layer and empty config, then (returned, to be timed) the
/// manifest to PUT by digest, as `stackpack promote` does.
fn stage_statement(
    agent: &ureq::Agent,
    url: &str,
    bearer: &str,
    release: &ReleaseArtifacts,
) -> (String, Vec<u8>) {
    let signed = SignedChannelStatement::sign(
        ChannelStatement {
            format: CHANNEL_STATEMENT_FORMAT,
            channel: "stable".into(),
            kind: ApprovedKind::Release,
            release: "platform".into(),
            version: release.description.version.clone(),
            digest: release.index.digest.clone(),
            required: false,
            promoted_at: now_rfc3339(),
            promoted_by: Some("rolloutbench".into()),
            key_id: String::new(),
        },
        &PrivateKey::from_secret_bytes([42; 32]),
    );
    let (manifest, layer) = statement_artifact(&signed, &release.index.descriptor());
    push_blob(agent, url, bearer, &layer);
    push_blob(agent, url, bearer, media_type::EMPTY_BLOB);
    let bytes = manifest.to_bytes();
    (stackpack_schema::Digest::of(&bytes).to_string(), bytes)
}

/// Customer `c`'s installation key: its runner's, pinned by its first receipt.
fn installation_key(c: usize) -> PrivateKey {
    let mut secret = [7u8; 32];
    secret[..8].copy_from_slice(&(c as u64).to_le_bytes());
    PrivateKey::from_secret_bytes(secret)
}

/// What a runner does after applying its assignment: a signed release receipt, then
/// its sync report.
fn report_applied(
    agent: &ureq::Agent,
    url: &str,
    customer: &str,
    c: usize,
    bearer: &str,
    release: &ReleaseArtifacts,
) {
    let now = now_rfc3339();
    let version = release.description.version.clone();
    let signed = SignedReleaseReceipt::sign(
        ReleaseReceipt {
            format: RELEASE_RECEIPT_FORMAT,
            id: format!("{customer}-platform-{version}"),
            customer: customer.into(),
            release: "platform".into(),
            version: version.clone(),
            digest: release.index.digest.clone(),
            kind: ReceiptKind::Apply,
            outcome: Outcome::Succeeded,
            stacks: Vec::new(),
            services: Vec::new(),
            started_at: now.clone(),
            finished_at: now.clone(),
            key_id: String::new(),
        },
        &installation_key(c),
    );
    agent
        .post(&format!("{url}/api/v1/release-receipts"))
        .set("Authorization", bearer)
        .set("Content-Type", "application/json")
        .send_bytes(&serde_json::to_vec(&signed).expect("a receipt serialises"))
        .unwrap_or_else(|e| panic!("POST the release receipt of `{customer}`: {e}"));
    let sync = SyncReport {
        customer: customer.into(),
        started_at: now.clone(),
        finished_at: now,
        releases: vec![SyncReleaseReport {
            release: "platform".into(),
            kind: ApprovedKind::Release,
            assigned: Some(version.clone()),
            running: Some(version),
            state: SyncState::Applied,
            pending: None,
            message: None,
            receipt_id: Some(signed.receipt.id.clone()),
        }],
        interrupted: None,
        approve: None,
    };
    agent
        .post(&format!("{url}/api/v1/customers/{customer}/sync"))
        .set("Authorization", bearer)
        .set("Content-Type", "application/json")
        .send_bytes(&serde_json::to_vec(&sync).expect("a report serialises"))
        .unwrap_or_else(|e| panic!("POST the sync report of `{customer}`: {e}"));
}

/// The answer's body as JSON (ureq's `json` feature is not built).
fn json_of<T: serde::de::DeserializeOwned>(response: ureq::Response) -> Option<T> {
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut response.into_reader(), &mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn get_json(agent: &ureq::Agent, url: &str, bearer: &str, path: &str) -> serde_json::Value {
    agent
        .get(&format!("{url}{path}"))
        .set("Authorization", bearer)
        .call()
        .ok()
        .and_then(json_of)
        .unwrap_or_else(|| panic!("GET {path} answers JSON"))
}

/// The newest rollout's id.
fn newest_rollout(agent: &ureq::Agent, url: &str, support: &str) -> i64 {
    let list = get_json(agent, url, support, "/api/v1/rollouts");
    let rows = list.get("rollouts").unwrap_or(&list);
    rows[0]["id"].as_i64().expect("a rollout was started")
}

fn promote(url: &str, publisher: &str, support: &str, tokens: &str) {
    let (publisher, support) = (format!("Bearer {publisher}"), format!("Bearer {support}"));
    let tokens = bench::read_tokens(tokens);
    let agent = ureq::AgentBuilder::new().build();
    let release = artifacts();
    push_release(&agent, url, &publisher, &release);
    let (digest, manifest) = stage_statement(&agent, url, &publisher, &release);
    push_manifest(
        &agent,
        url,
        &publisher,
        &digest,
        &manifest,
        media_type::OCI_MANIFEST,
    );
    let started = Instant::now();
    let n = tokens.len();
    let mut reported = 0;
    for (c, (customer, bearer)) in tokens.iter().enumerate() {
        if wave_of(c, n) != WAVES[2] {
            report_applied(&agent, url, customer, c, bearer, &release);
            reported += 1;
        }
    }
    let id = newest_rollout(&agent, url, &support);
    let rollout = get_json(&agent, url, &support, &format!("/api/v1/rollouts/{id}"));
    let r = &rollout["rollout"];
    eprintln!(
        "promoted `platform@1.0.0` to `stable`; {reported} canary and early runners reported in {:.1} s; rollout {id}: {} at wave `{}`, {} assigned",
        started.elapsed().as_secs_f64(),
        r["state"].as_str().unwrap_or_default(),
        r["waves"][r["waveIndex"].as_u64().unwrap_or(0) as usize]
            .as_str()
            .unwrap_or_default(),
        r["assigned"],
    );
}

/// Signs in to the pages: the session cookie.
fn sign_in(agent: &ureq::Agent, url: &str, token: &str) -> String {
    let response = match agent
        .post(&format!("{url}/ui/login"))
        .set("Content-Type", "application/x-www-form-urlencoded")
        .send_string(&format!("token={token}"))
    {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(e) => panic!("signing in: {e}"),
    };
    let cookie = response.header("set-cookie").expect("signed in");
    cookie.split(';').next().unwrap_or_default().to_string()
}

/// Support's queries and pages during the poll.
const SUPPORT_PATHS: [&str; 6] = [
    "/api/v1/fleet?customer=customer-00042",
    "/api/v1/fleet?limit=100",
    "/api/v1/rollouts",
    "/api/v1/rollouts/1",
    "/ui/rollouts",
    "/ui/rollouts/1",
];

fn support_clients(
    url: &str,
    support: &str,
    clients: usize,
    stop: &Arc<AtomicBool>,
    answered: &Arc<AtomicU64>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..clients)
        .map(|n| {
            let (stop, answered) = (stop.clone(), answered.clone());
            let (url, token) = (url.to_string(), support.to_string());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().redirects(0).build();
                let cookie = sign_in(&agent, &url, &token);
                let bearer = format!("Bearer {token}");
                let mut i = n;
                while !stop.load(Ordering::Relaxed) {
                    let path = SUPPORT_PATHS[i % SUPPORT_PATHS.len()];
                    i += 1;
                    let request = agent.get(&format!("{url}{path}"));
                    let request = if path.starts_with("/ui") {
                        request.set("Cookie", &cookie)
                    } else {
                        request.set("Authorization", &bearer)
                    };
                    if let Ok(response) = request.call() {
                        let _ = std::io::Read::read_to_end(
                            &mut response.into_reader(),
                            &mut Vec::new(),
                        );
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect()
}

/// Open-loop: request `i` is due at `i / rate` s; several senders, so a slow answer
/// does not delay the next request, and each latency counts from the due time (no
/// coordinated omission).
fn poll(args: &[String]) {
    let (url, tokens) = (args[0].clone(), bench::read_tokens(&args[1]));
    let rate: f64 = args[2].parse().expect("RATE is a number");
    let seconds: f64 = args[3].parse().expect("SECONDS is a number");
    let clients: usize = args[4].parse().expect("CLIENTS is a number");
    let support = args[5].clone();
    let path = args.get(6).cloned();
    let total = (rate * seconds).round() as usize;
    let senders = ((rate * 0.05).ceil() as usize).clamp(4, 64);
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let support_workers = support_clients(&url, &support, clients, &stop, &answered);
    std::thread::sleep(Duration::from_millis(500));
    let before = answered.load(Ordering::Relaxed);
    let tokens = Arc::new(tokens);
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let began = Instant::now() + Duration::from_millis(50);
    let workers: Vec<_> = (0..senders)
        .map(|_| {
            let (tokens, next, errors) = (tokens.clone(), next.clone(), errors.clone());
            let (url, path) = (url.clone(), path.clone());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                let mut times = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return times;
                    }
                    let due = began + Duration::from_secs_f64(i as f64 / rate);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    let (customer, bearer) = &tokens[i % tokens.len()];
                    let target = match &path {
                        Some(path) => format!("{url}{path}"),
                        None => format!("{url}/api/v1/customers/{customer}/assignment"),
                    };
                    let answer = agent.get(&target).set("Authorization", bearer).call();
                    let ok = match answer {
                        Ok(response) if path.is_some() => {
                            std::io::Read::read_to_end(&mut response.into_reader(), &mut Vec::new())
                                .is_ok()
                        }
                        Ok(response) => json_of::<AssignmentResponse>(response)
                            .is_some_and(|a| !a.assignments.is_empty()),
                        Err(_) => false,
                    };
                    times.push(due.elapsed().as_secs_f64() * 1000.0);
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let mut times: Vec<f64> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("a sender finishes"))
        .collect();
    let elapsed = began.elapsed().as_secs_f64();
    let rate_answered = (answered.load(Ordering::Relaxed) - before) as f64 / elapsed;
    stop.store(true, Ordering::Relaxed);
    for worker in support_workers {
        worker.join().expect("a support client finishes");
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let what = match &path {
        Some(path) => format!("GET-{path}"),
        None => "assignment-poll".to_string(),
    };
    println!(
        "{what}@{rate}/s+{clients}-support {} {:.2} {:.2} {:.2} {} {rate_answered:.0}",
        times.len(),
        bench::percentile(&times, 0.5),
        bench::percentile(&times, 0.99),
        times.last().copied().unwrap_or_default(),
        errors.load(Ordering::Relaxed),
    );
}

/// Registry-clock seconds between two RFC 3339 times.
fn between(from: &str, to: &str) -> f64 {
    let parse = |t: &str| {
        time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|e| panic!("`{t}`: {e}"))
    };
    (parse(to) - parse(from)).as_seconds_f64()
}

/// An emulated runner: polls its assignment every 200 ms; when assigned a version it
/// does not run, reports it applied (receipt and sync report), as `sync` would after
/// a pass that changed something.
fn runner(
    url: String,
    customer: String,
    c: usize,
    bearer: String,
    stop: Arc<AtomicBool>,
    release: ReleaseArtifacts,
) {
    let agent = ureq::AgentBuilder::new().build();
    let mut running = false;
    while !stop.load(Ordering::Relaxed) {
        let answer: Option<AssignmentResponse> = agent
            .get(&format!("{url}/api/v1/customers/{customer}/assignment"))
            .set("Authorization", &bearer)
            .call()
            .ok()
            .and_then(json_of);
        let assigned = answer.is_some_and(|a| {
            a.assignments
                .iter()
                .any(|x| x.version == release.description.version)
        });
        if assigned && !running {
            report_applied(&agent, &url, &customer, c, &bearer, &release);
            running = true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn rollout_bench(args: &[String]) {
    let url = args[0].clone();
    let (publisher, support) = (format!("Bearer {}", args[1]), format!("Bearer {}", args[2]));
    let customers: usize = args[4].parse().expect("CUSTOMERS is a number");
    let soak: f64 = args[5].parse().expect("SOAK_SECS is a number");
    let tick: f64 = args[6].parse().expect("TICK_SECS is a number");
    let tokens: Vec<_> = bench::read_tokens(&args[3])
        .into_iter()
        .take(customers)
        .collect();
    let agent = ureq::AgentBuilder::new().build();
    let release = artifacts();
    push_release(&agent, &url, &publisher, &release);
    let stop = Arc::new(AtomicBool::new(false));
    let runners: Vec<_> = tokens
        .into_iter()
        .enumerate()
        .map(|(c, (customer, bearer))| {
            let (url, stop, release) = (url.clone(), stop.clone(), release.clone());
            std::thread::spawn(move || runner(url, customer, c, bearer, stop, release))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let (digest, manifest) = stage_statement(&agent, &url, &publisher, &release);
    let started = Instant::now();
    push_manifest(
        &agent,
        &url,
        &publisher,
        &digest,
        &manifest,
        media_type::OCI_MANIFEST,
    );
    let id = newest_rollout(&agent, &url, &support);
    let detail = loop {
        let detail = get_json(&agent, &url, &support, &format!("/api/v1/rollouts/{id}"));
        let state = detail["rollout"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if state != "running" || started.elapsed() > Duration::from_secs(300) {
            break detail;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let observed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for r in runners {
        r.join().expect("a runner finishes");
    }
    let state = detail["rollout"]["state"].as_str().unwrap_or_default();
    let events = detail["events"].as_array().cloned().unwrap_or_default();
    let at = |kind: &str| {
        events
            .iter()
            .filter(|e| e["kind"] == kind)
            .map(|e| e["at"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    let promoted = at("promoted").first().cloned().expect("a promotion event");
    let opened: Vec<String> = at("wave-opened")
        .iter()
        .map(|t| format!("{:.2}", between(&promoted, t)))
        .collect();
    let completed = at("completed").first().map(|t| between(&promoted, t));
    let soak_total = soak * (WAVES.len() - 1) as f64;
    println!(
        "rollout of {customers} customers in 3 waves: {state}; promote→completed {observed:.2} s observed, {} s on the registry's clock; waves opened at +{} s",
        completed.map_or("–".to_string(), |s| format!("{s:.2}")),
        opened.join(" / +"),
    );
    println!(
        "configured: soak {soak} s × 2 = {soak_total} s; --rollout-tick-secs {tick}; best a scheduler could do (soak total + one tick): {} s",
        soak_total + tick
    );
    std::io::stdout().flush().ok();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("seed") if args.len() == 5 => seed(
            &args[1],
            args[2].parse().expect("CUSTOMERS is a number"),
            &args[3],
            &args[4],
        ),
        Some("promote") if args.len() == 5 => promote(&args[1], &args[2], &args[3], &args[4]),
        Some("poll") if args.len() >= 7 => poll(&args[1..]),
        Some("rollout") if args.len() == 8 => rollout_bench(&args[1..]),
        _ => {
            eprintln!("usage: rolloutbench seed DATA CUSTOMERS SOAK_SECS TOKENS | promote URL PUBLISHER SUPPORT TOKENS | poll URL TOKENS RATE SECONDS CLIENTS SUPPORT [PATH] | rollout URL PUBLISHER SUPPORT TOKENS CUSTOMERS SOAK_SECS TICK_SECS");
            std::process::exit(2);
        }
    }
}
