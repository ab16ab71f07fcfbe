//! The shared language of Stackpack.
//!
//! A short tour:
//!
//! - [`media_type`] names every media type and artifact type we write or read.
//! - [`digest`] is the `sha256:<hex>` content address, with a streaming hasher.
//! - [`oci`] holds the OCI image-spec types (descriptor, manifest, index, layout).
//! - [`bundle`] is the bundle config: what a bundle contains and where it came from.
//! - [`interface`] is a stack's public API: inputs, outputs, kinds of resource.
//! - [`types`] is the one model of Terraform type constraints, with value checks.
//! - [`attest`] holds the proofs a customer's own tools check: DSSE, in-toto/SLSA
//!   provenance, the CycloneDX SBOM and the Sigstore bundle.
//! - [`signature`] is the signed payload, keys, key ids, signing and verifying.
//! - [`version`] holds the version rules: branch slugs, next stable and prerelease.
//! - [`receipt`] is the signed deployment receipt a runner reports to the registry.
//! - [`reference`](mod@reference) parses `stack@version` references.
//! - [`release`] is a customer environment as one version: stacks in order, wiring, services.
//! - [`release_receipt`] is the signed snapshot of a release run: its stack receipts and services.
//! - [`rollout`] is what the vendor approves for a channel, what the registry assigns, what a runner reports.
//! - [`plan`] reads what a saved plan does: actions by address, drift, digests, differences.
//! - [`forecast`] is each customer's plan along its real path, and a real plan that missed it.
//! - [`rules`] names the interface rules and the findings a bundle records.
//!
//! This crate does no I/O: callers hand it bytes and get values back, so that the
//! packager, the runner and the registry agree by construction.

pub mod attest;
pub mod bundle;
pub mod digest;
pub mod forecast;
pub mod interface;
pub mod media_type;
pub mod oci;
pub mod plan;
pub mod preflight;
pub mod receipt;
pub mod reference;
pub mod release;
pub mod release_receipt;
pub mod rollout;
pub mod rules;
pub mod signature;
pub mod types;
pub mod version;

pub use digest::Digest;
