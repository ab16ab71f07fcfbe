//! The runner's integration tests, one binary: `common` is the harness (the real
//! `stackpack-runner` and `stackpack`, a vendor repository, real Terraform), each other
//! module one area of behaviour. One binary per crate, not one per file: each binary
//! links the whole dependency graph again, and sixty of them once filled a CI disk.

mod common;

mod attested;
mod bad_input;
mod file_layers;
mod hostile;
mod inputs_checked;
mod interrupted;
mod kit;
mod kms;
mod lifecycle;
mod module_sources;
mod policies;
mod preflight;
mod privacy;
mod providers;
mod pull;
mod receipt_changes;
mod registry;
mod releases;
mod reviewed_plans;
mod secrets_in_state;
mod sensitive_text;
mod smoke_rollback;
mod state_in_bucket;
mod support_bundle;
mod sync;
mod tamper;
mod times_on_screen;
mod validation_agrees_with_terraform;
