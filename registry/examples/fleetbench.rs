//! Seeder and client for `scripts/bench/fleet.sh`: a fleet of customers × stacks ×
//! versions with history, written through the registry's own functions (receipts
//! signed, checked and stored as `receipts import` does), then support's queries
//! timed over HTTP.
//!
//! ```text
//! fleetbench seed DATA CUSTOMERS STACKS VERSIONS   fill a new registry in DATA
//! fleetbench measure URL TOKEN ROUNDS PATH...       GET each PATH ROUNDS times
//! fleetbench page URL TOKEN ROUNDS PATH...          the same for /ui pages, signed in
//! fleetbench load URL SUPPORT PUBLISHER GETS CLIENTS PATH...
//!     /v2/ manifest GET latency, idle and while CLIENTS loop on the support PATHs
//! fleetbench ingest URL ADMIN CLIENTS COUNT
//!     COUNT signed receipts (of 100 customers `ingest-NNN`, each its own key)
//!     posted to `/api/v1/receipts` by CLIENTS threads
//! ```
//!
//! `measure` and `page` print one line per path: `PATH p50_ms p99_ms bytes`;
//! `load` one line per condition: `WHAT p50_ms p99_ms support_answers_per_s`;
//! `ingest` one line: `receipts_per_s p50_ms p99_ms errors`.

use std::time::Instant;

use stackpack_registry::api::{Release, Source};
use stackpack_registry::config::Config;
use stackpack_registry::{db, receipts};
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::signature::PrivateKey;
use stackpack_schema::Digest;
use stackpack_test_support::receipts::ReceiptBuilder;

/// A small deterministic mix, so every run seeds the same fleet.
fn mix(a: u64, b: u64) -> u64 {
    let mut x = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

fn time_at(days_ago: u64, minute: u64) -> String {
    let t = time::OffsetDateTime::now_utc()
        - time::Duration::days(days_ago as i64)
        - time::Duration::minutes(minute as i64);
    t.replace_nanosecond(0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn version(index: u64) -> String {
    format!("1.{index}.0")
}

fn seed(data: &str, customers: u64, stacks: u64, versions: u64) {
    let state = stackpack_registry::open(Config::new(data)).expect("the registry opens");
    let now = db::now_rfc3339();
    state
        .db
        .write_keyed(&[], |tx| {
            let tx = tx.sqlite("the example's rows")?;
            for s in 0..stacks {
                let stack = format!("stack-{s:02}");
                let mut published: Vec<(String, u64)> =
                    (0..versions).map(|v| (version(v), versions - v)).collect();
                published.push((format!("{}-rc.1", version(versions)), 0));
                for (v, days_ago) in published {
                    let release = Release {
                        stack: stack.clone(),
                        prerelease: v.contains('-'),
                        digest: stackpack_schema::Digest::of(format!("{s}/{v}").as_bytes()),
                        version: v.parse().expect("the bench's versions are semver"),
                        repository: format!("acme/stacks/{stack}"),
                        source: Source::default(),
                        created: None,
                        published_at: time_at(days_ago, 0)
                            .parse()
                            .expect("the bench's times are RFC 3339"),
                        modules: Vec::new(),
                    };
                    db::ledger::upsert_release(tx, &release)?;
                }
            }
            for c in 0..customers {
                let environment =
                    ["production", "production", "staging", "sandbox"][(mix(c, 1) % 4) as usize];
                db::ledger::register_customer(
                    tx,
                    &format!("customer-{c:05}"),
                    Some(&format!("Customer {c}")),
                    Some(environment),
                    &now,
                )?;
            }
            Ok(())
        })
        .expect("releases and customers are written");
    let started = Instant::now();
    let mut total = 0u64;
    for chunk in (0..customers).collect::<Vec<_>>().chunks(200) {
        let mut batch = Vec::new();
        for &c in chunk {
            let roll = mix(c, 2) % 100;
            if roll == 0 {
                continue; // never reports
            }
            let silent = roll < 6;
            let key = PrivateKey::from_secret_bytes({
                let mut secret = [0u8; 32];
                secret[..8].copy_from_slice(&c.to_le_bytes());
                secret[8] = 1;
                secret
            });
            let customer = format!("customer-{c:05}");
            for s in 0..stacks {
                let stack = format!("stack-{s:02}");
                let r = mix(c, 100 + s);
                let current = versions - 1 - (r % 6).min(versions - 1);
                let base_days = if silent { 40 } else { 1 };
                let mut history: Vec<(String, ReceiptKind, Outcome, u64)> = vec![
                    (
                        version(current.saturating_sub(3)),
                        ReceiptKind::Apply,
                        Outcome::Succeeded,
                        base_days + 60,
                    ),
                    (
                        version(current),
                        ReceiptKind::Apply,
                        Outcome::Succeeded,
                        base_days + 20,
                    ),
                ];
                match r % 40 {
                    0 => history.push((
                        version(versions - 1),
                        ReceiptKind::Apply,
                        Outcome::Failed,
                        base_days + 2,
                    )),
                    1 => history.push((
                        version(current),
                        ReceiptKind::Drift,
                        Outcome::Drifted,
                        base_days,
                    )),
                    2 => history.push((
                        format!("{}-rc.1", version(versions)),
                        ReceiptKind::Apply,
                        Outcome::Succeeded,
                        base_days,
                    )),
                    3 => {
                        history.push((
                            version(versions - 1),
                            ReceiptKind::Apply,
                            Outcome::Failed,
                            base_days + 3,
                        ));
                        history.push((
                            version(current),
                            ReceiptKind::Rollback,
                            Outcome::Succeeded,
                            base_days + 2,
                        ));
                    }
                    _ => {}
                }
                for (n, (v, kind, outcome, days)) in history.into_iter().enumerate() {
                    let at = time_at(days, s);
                    batch.push(
                        ReceiptBuilder::new(&customer, &stack, &v)
                            .id(format!("{customer}-{stack}-{n}"))
                            .kind(kind, outcome)
                            .bundle_digest(Digest::of(format!("{s}/{v}").as_bytes()))
                            .inputs_hash(Digest::of(customer.as_bytes()))
                            .at(&at)
                            .sign(&key),
                    );
                }
            }
        }
        total += batch.len() as u64;
        // Seeded as each customer's own runner would report them: first keys pin.
        let (all, _) = receipts::record_all(&state.db, &batch, &receipts::FirstUse::Reporter)
            .expect("the batch is stored");
        assert!(all, "every seeded receipt is accepted");
    }
    eprintln!(
        "seeded {customers} customers × {stacks} stacks × {versions} versions: {total} receipts in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn time_gets(agent: &ureq::Agent, url: &str, header: (&str, &str), rounds: usize, path: &str) {
    let mut times = Vec::with_capacity(rounds);
    let mut size = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        let response = agent
            .get(&format!("{url}{path}"))
            .set(header.0, header.1)
            .call()
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        let mut body = Vec::new();
        std::io::Read::read_to_end(&mut response.into_reader(), &mut body).unwrap();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        size = body.len();
    }
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{path} {:.1} {:.1} {size}",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
}

/// Times GETs of one manifest, `count` of them and for at least `secs` seconds:
/// (p50, p99) in milliseconds.
fn manifest_gets(
    agent: &ureq::Agent,
    url: &str,
    bearer: &str,
    count: usize,
    secs: f64,
) -> (f64, f64) {
    let mut times = Vec::with_capacity(count);
    let began = Instant::now();
    while times.len() < count || began.elapsed().as_secs_f64() < secs {
        let start = Instant::now();
        let response = agent
            .get(&format!("{url}/v2/bench/app/manifests/v1"))
            .set("Authorization", bearer)
            .set("Accept", "application/vnd.oci.image.manifest.v1+json")
            .call()
            .expect("the manifest answers");
        std::io::Read::read_to_end(&mut response.into_reader(), &mut Vec::new()).unwrap();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        // A client pulling now and then, not a flood that would crowd out the
        // support clients it is measured beside.
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    times.sort_by(|a, b| a.total_cmp(b));
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// Pushes a one-blob image `bench/app:v1` for `load` to fetch.
fn push_manifest(agent: &ureq::Agent, url: &str, bearer: &str) {
    let config = b"{\"bench\":true}";
    let digest = stackpack_schema::Digest::of(config).to_string();
    agent
        .post(&format!(
            "{url}/v2/bench/app/blobs/uploads/?digest={digest}"
        ))
        .set("Authorization", bearer)
        .set("Content-Type", "application/octet-stream")
        .send_bytes(config)
        .expect("the config blob is pushed");
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest, "size": config.len()},
        "layers": []
    });
    agent
        .put(&format!("{url}/v2/bench/app/manifests/v1"))
        .set("Authorization", bearer)
        .set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        .send_string(&manifest.to_string())
        .expect("the manifest is pushed");
}

fn load(args: &[String]) {
    let (url, support, publisher) = (
        &args[0],
        format!("Bearer {}", args[1]),
        format!("Bearer {}", args[2]),
    );
    let gets: usize = args[3].parse().unwrap();
    let clients: usize = args[4].parse().unwrap();
    let paths: Vec<String> = args[5..].to_vec();
    let agent = ureq::AgentBuilder::new().build();
    push_manifest(&agent, url, &publisher);
    let secs: f64 = std::env::var("LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0);
    manifest_gets(&agent, url, &publisher, 50, 0.0);
    let (p50, p99) = manifest_gets(&agent, url, &publisher, gets, 0.0);
    println!("/v2/-manifest-GET-idle {p50:.2} {p99:.2} -");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let workers: Vec<_> = (0..clients)
        .map(|n| {
            let (stop, answered) = (stop.clone(), answered.clone());
            let (url, support, paths) = (url.clone(), support.clone(), paths.clone());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                let mut i = n;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let path = &paths[i % paths.len()];
                    i += 1;
                    if let Ok(response) = agent
                        .get(&format!("{url}{path}"))
                        .set("Authorization", &support)
                        .call()
                    {
                        let _ = std::io::Read::read_to_end(
                            &mut response.into_reader(),
                            &mut Vec::new(),
                        );
                        answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let before = answered.load(std::sync::atomic::Ordering::Relaxed);
    let started = Instant::now();
    let (p50, p99) = manifest_gets(&agent, url, &publisher, gets, secs);
    let rate = (answered.load(std::sync::atomic::Ordering::Relaxed) - before) as f64
        / started.elapsed().as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    println!("/v2/-manifest-GET-with-{clients}-support-clients {p50:.2} {p99:.2} {rate:.0}");
}

/// Receipts posted as runners post them, by CLIENTS threads at once: signed before
/// the clock starts, ids salted with the time so that a second run on the same
/// registry stores new ones rather than answering "stored before".
fn ingest(args: &[String]) {
    let (url, bearer) = (args[0].clone(), format!("Bearer {}", args[1]));
    let clients: usize = args[2].parse().unwrap();
    let count: usize = args[3].parse().unwrap();
    let salt = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let at = time_at(0, 1);
    let keys: Vec<PrivateKey> = (0..100u64)
        .map(|c| {
            let mut secret = [0u8; 32];
            secret[..8].copy_from_slice(&c.to_le_bytes());
            secret[8] = 2;
            PrivateKey::from_secret_bytes(secret)
        })
        .collect();
    let bodies: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            let customer = format!("ingest-{:03}", i % 100);
            ReceiptBuilder::new(&customer, "stack-00", "1.0.0")
                .id(format!("ingest-{salt}-{i}"))
                .at(&at)
                .sign(&keys[i % 100])
                .to_bytes()
        })
        .collect();
    let bodies = std::sync::Arc::new(bodies);
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (url, bearer, bodies, next) =
                (url.clone(), bearer.clone(), bodies.clone(), next.clone());
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().build();
                let (mut times, mut errors) = (Vec::new(), 0usize);
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(body) = bodies.get(i) else { break };
                    let start = Instant::now();
                    match agent
                        .post(&format!("{url}/api/v1/receipts"))
                        .set("Authorization", &bearer)
                        .set("Content-Type", "application/json")
                        .send_bytes(body)
                    {
                        Ok(r) if r.status() == 201 => {}
                        Ok(_) | Err(_) => errors += 1,
                    }
                    times.push(start.elapsed().as_secs_f64() * 1000.0);
                }
                (times, errors)
            })
        })
        .collect();
    let (mut times, mut errors) = (Vec::new(), 0);
    for worker in workers {
        let (t, e) = worker.join().unwrap();
        times.extend(t);
        errors += e;
    }
    let seconds = started.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    println!(
        "{:.0} {:.2} {:.2} {errors}",
        count as f64 / seconds,
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let agent = ureq::AgentBuilder::new().redirects(0).build();
    match args.first().map(String::as_str) {
        Some("seed") => seed(
            &args[1],
            args[2].parse().unwrap(),
            args[3].parse().unwrap(),
            args[4].parse().unwrap(),
        ),
        Some("measure") => {
            let bearer = format!("Bearer {}", args[2]);
            for path in &args[4..] {
                time_gets(
                    &agent,
                    &args[1],
                    ("Authorization", &bearer),
                    args[3].parse().unwrap(),
                    path,
                );
            }
        }
        Some("page") => {
            // The sign-in answers 303 with the cookie; redirects are not followed.
            let response = match agent
                .post(&format!("{}/ui/login", args[1]))
                .set("Content-Type", "application/x-www-form-urlencoded")
                .send_string(&format!("token={}", args[2]))
            {
                Ok(response) | Err(ureq::Error::Status(_, response)) => response,
                Err(e) => panic!("signing in: {e}"),
            };
            let cookie = response
                .header("set-cookie")
                .expect("signed in")
                .split(';')
                .next()
                .unwrap()
                .to_string();
            for path in &args[4..] {
                time_gets(
                    &agent,
                    &args[1],
                    ("Cookie", &cookie),
                    args[3].parse().unwrap(),
                    path,
                );
            }
        }
        Some("load") => load(&args[1..]),
        Some("ingest") => ingest(&args[1..]),
        _ => {
            eprintln!("usage: fleetbench seed DATA CUSTOMERS STACKS VERSIONS | measure URL TOKEN ROUNDS PATH... | page URL TOKEN ROUNDS PATH... | load URL SUPPORT PUBLISHER GETS CLIENTS PATH... | ingest URL ADMIN CLIENTS COUNT");
            std::process::exit(2);
        }
    }
}
