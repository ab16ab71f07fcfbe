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

#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, String, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
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
        let seconds = elapsed.as_secs_f64();
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let histogram = latency.entry(route).or_default();
        for (index, bound) in BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                histogram.counts[index] += 1;
            }
        }
        histogram.sum += seconds;
        histogram.count += 1;
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
            for (index, bound) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "stackpack_registry_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {}",
                    h.counts[index]
                );
            }
            let _ = writeln!(
                out,
                "stackpack_registry_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "stackpack_registry_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "stackpack_registry_request_duration_seconds_count{{route=\"{route}\"}} {}",
                h.count
            );
        }
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
