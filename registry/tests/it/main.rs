//! The registry's integration tests, one binary: `common` speaks raw HTTP to the real
//! `stackpack-registry`, each other module is one area of behaviour. One binary per
//! crate, not one per file: each binary links the whole dependency graph again, and
//! sixty of them once filled a CI disk.

mod common;

mod admin;
mod adoption_deltas;
mod alerts;
mod auth_matrix;
mod bad_input;
mod concurrency;
mod crash;
mod differential;
mod fleet;
mod fleet_paging;
mod forecast;
mod gc_safety;
mod interop;
mod latency;
mod ledger;
mod ledger_rules;
mod migrate;
mod packager_bundles;
mod postgres_alerts;
mod postgres_backend;
mod postgres_cli;
mod postgres_copy;
mod postgres_db;
mod postgres_forecasts;
mod postgres_ledger;
mod postgres_migrate;
mod postgres_rollouts;
mod postgres_scheduler;
mod query_plans;
mod receipt_forgery;
mod registry_rules;
mod release_ledger;
mod replicas;
mod rollout;
mod s3_blobs;
mod schema_equivalence;
mod serve_config;
mod support_bundles;
mod templates;
mod ui;
