//! Seeder and client for `scripts/bench/alerts.sh` (issue 29): receipts that each
//! change a customer's state, posted over HTTP as runners post them, timed with the
//! registry's alerts on and off.
//!
//! ```text
//! alertbench seed DATA CUSTOMERS TOKENS
//!     customers `customer-00000…`, each with a customer token and its runner's
//!     installation key trusted; TOKENS gets `CUSTOMER TOKEN` lines. Offline,
//!     through the registry's own functions.
//! alertbench post URL TOKENS CLIENTS
//!     every customer in TOKENS posts one signed receipt, a failed apply of
//!     `data-plane` (its state changes: it failed), CLIENTS at a time
//! ```
//!
//! `post` prints one line: `posted RECEIPTS SECONDS RECEIPTS_PER_S P50_MS P99_MS
//! STARTED_UNIX_S`, the last the time the first receipt was sent (the webhook's
//! arrival times are measured from it).

mod bench;

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use stackpack_registry::config::Config;
use stackpack_registry::db;
use stackpack_schema::receipt::{Outcome, ReceiptKind};
use stackpack_schema::signature::PrivateKey;
use stackpack_test_support::receipts::ReceiptBuilder;

/// Customer `c`'s installation key, trusted by `seed`.
fn installation_key(c: usize) -> PrivateKey {
    let mut secret = [9u8; 32];
    secret[..8].copy_from_slice(&(c as u64).to_le_bytes());
    PrivateKey::from_secret_bytes(secret)
}

fn seed(data: &str, customers: usize, tokens: &str) {
    let started = Instant::now();
    let state = stackpack_registry::open(Config::new(data)).expect("the registry opens");
    let now = db::now_rfc3339();
    let mut lines = String::new();
    state
        .db
        .write_keyed(&[], |tx| {
            let tx = tx.sqlite("the example's rows")?;
            for c in 0..customers {
                let id = format!("customer-{c:05}");
                db::ledger::register_customer(tx, &id, None, Some("production"), &now)?;
                let key = installation_key(c).public_key();
                let der = base64::engine::general_purpose::STANDARD.encode(key.to_der());
                db::ledger::add_installation_key(
                    tx,
                    &id,
                    &key.key_id(),
                    &der,
                    &now,
                    db::ledger::PinnedBy::Admin,
                )?;
                let token = bench::customer_token(tx, &id, &now)?;
                lines.push_str(&format!("{id} {token}\n"));
            }
            Ok(())
        })
        .expect("customers, keys and tokens are written");
    std::fs::write(tokens, lines).expect("the tokens file is written");
    eprintln!(
        "seeded {customers} customers with their tokens and keys in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn post(url: &str, tokens: &str, clients: usize) {
    let tokens = bench::read_tokens(tokens);
    // Signed before the clock starts: the runner's work, not the registry's.
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a UTC time formats");
    let bodies: Vec<(String, Vec<u8>)> = tokens
        .iter()
        .enumerate()
        .map(|(c, (id, bearer))| {
            let signed = ReceiptBuilder::new(id, "data-plane", "2.0.0")
                .id(format!("{id}-failed"))
                .kind(ReceiptKind::Apply, Outcome::Failed)
                .failure(
                    "creating EKS Node Group (gpu): InsufficientInstanceCapacity",
                    Some("aws_eks_node_group.gpu"),
                )
                .at(&now)
                .sign(&installation_key(c));
            (bearer.clone(), signed.to_bytes())
        })
        .collect();
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(bodies.len())));
    let started_unix = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as f64 / 1e9;
    let started = Instant::now();
    let workers: Vec<_> = (0..clients.max(1))
        .map(|_| {
            let (bodies, next, latencies) = (bodies.clone(), next.clone(), latencies.clone());
            let url = url.to_string();
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(30))
                    .build();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((bearer, body)) = bodies.get(i) else {
                        return;
                    };
                    let sent = Instant::now();
                    agent
                        .post(&format!("{url}/api/v1/receipts"))
                        .set("Authorization", bearer)
                        .set("Content-Type", "application/json")
                        .send_bytes(body)
                        .unwrap_or_else(|e| panic!("POST receipt {i}: {e}"));
                    let ms = sent.elapsed().as_secs_f64() * 1000.0;
                    latencies.lock().expect("not poisoned").push(ms);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a client finished");
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut latencies = latencies.lock().expect("not poisoned").clone();
    latencies.sort_by(f64::total_cmp);
    println!(
        "posted {} {seconds:.3} {:.1} {:.2} {:.2} {started_unix:.3}",
        latencies.len(),
        latencies.len() as f64 / seconds,
        bench::percentile(&latencies, 0.5),
        bench::percentile(&latencies, 0.99),
    );
    std::io::stdout().flush().ok();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("seed") if args.len() == 4 => seed(
            &args[1],
            args[2].parse().expect("CUSTOMERS is a number"),
            &args[3],
        ),
        Some("post") if args.len() == 4 => post(
            &args[1],
            &args[2],
            args[3].parse().expect("CLIENTS is a number"),
        ),
        _ => {
            eprintln!("usage: alertbench seed DATA CUSTOMERS TOKENS | post URL TOKENS CLIENTS");
            std::process::exit(2);
        }
    }
}
