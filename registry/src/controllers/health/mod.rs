pub mod healthz;
pub mod metrics;
