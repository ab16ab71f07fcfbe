//! Prometheus metrics in the text exposition format: requests by route, method and
//! status; latency histograms by route; blob bytes in and out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn add(&mut self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        for (index, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                self.counts[index] += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }

    /// Its lines in the text format: buckets, `+Inf`, sum and count.
    fn render(&self, out: &mut String, name: &str, labels: &str) {
        for (index, bound) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels},le=\"{bound}\"}} {}",
                self.counts[index]
            );
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, String, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
    /// Calls to the blob store, by backend and operation.
    storage: Labelled,
    /// Calls to the database, by backend and kind of call.
    database: Labelled,
    pub bytes_received: AtomicU64,
    pub bytes_sent: AtomicU64,
}

impl Metrics {
    pub fn observe(&self, route: &'static str, method: &str, status: u16, elapsed: Duration) {
        {
            let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
            *requests
                .entry((route, method.to_string(), status))
                .or_default() += 1;
        }
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        latency.entry(route).or_default().add(elapsed);
    }

    /// Times one call of the blob store (`backend`: `s3`; `operation`: `get`,
    /// `put`, `upload_part`, …).
    pub fn observe_storage(
        &self,
        backend: &'static str,
        operation: &'static str,
        elapsed: Duration,
    ) {
        observe_in(&self.storage, (backend, operation), elapsed);
    }

    /// Times one database call (`backend`: `sqlite`; `call`: `read`, `scan`,
    /// `support`, `write`), waiting for its connection included.
    pub fn observe_database(&self, backend: &'static str, call: &'static str, elapsed: Duration) {
        observe_in(&self.database, (backend, call), elapsed);
    }

    pub fn add_received(&self, bytes: u64) {
        self.bytes_received.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn add_sent(&self, bytes: u64) {
        self.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP stackpack_registry_requests_total HTTP requests answered.\n");
        out.push_str("# TYPE stackpack_registry_requests_total counter\n");
        for ((route, method, status), count) in self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "stackpack_registry_requests_total{{route=\"{route}\",method=\"{method}\",status=\"{status}\"}} {count}"
            );
        }
        out.push_str("# HELP stackpack_registry_request_duration_seconds Time to answer a request (headers sent).\n");
        out.push_str("# TYPE stackpack_registry_request_duration_seconds histogram\n");
        for (route, h) in self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            h.render(
                &mut out,
                "stackpack_registry_request_duration_seconds",
                &format!("route=\"{route}\""),
            );
        }
        render_labelled(
            &mut out,
            &self.storage,
            "stackpack_registry_blob_store_duration_seconds",
            "Time of one call to the blob store.",
            ("backend", "operation"),
        );
        render_labelled(
            &mut out,
            &self.database,
            "stackpack_registry_database_duration_seconds",
            "Time of one database call, waiting for a connection included.",
            ("backend", "call"),
        );
        out.push_str("# HELP stackpack_registry_blob_bytes_received_total Blob bytes uploaded.\n");
        out.push_str("# TYPE stackpack_registry_blob_bytes_received_total counter\n");
        let _ = writeln!(
            out,
            "stackpack_registry_blob_bytes_received_total {}",
            self.bytes_received.load(Ordering::Relaxed)
        );
        out.push_str("# HELP stackpack_registry_blob_bytes_sent_total Blob bytes served.\n");
        out.push_str("# TYPE stackpack_registry_blob_bytes_sent_total counter\n");
        let _ = writeln!(
            out,
            "stackpack_registry_blob_bytes_sent_total {}",
            self.bytes_sent.load(Ordering::Relaxed)
        );
        out
    }
}

/// Histograms keyed by two labels: the blob store's calls and the database's.
type Labelled = Mutex<BTreeMap<(&'static str, &'static str), Histogram>>;

fn observe_in(map: &Labelled, key: (&'static str, &'static str), elapsed: Duration) {
    let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
    map.entry(key).or_default().add(elapsed);
}

/// `name`'s help and type lines, then each histogram with its two labels.
fn render_labelled(
    out: &mut String,
    map: &Labelled,
    name: &str,
    help: &str,
    (first, second): (&str, &str),
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} histogram");
    for ((a, b), h) in map.lock().unwrap_or_else(|p| p.into_inner()).iter() {
        h.render(out, name, &format!("{first}=\"{a}\",{second}=\"{b}\""));
    }
}
