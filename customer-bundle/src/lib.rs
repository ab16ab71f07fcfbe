//! `stackpack-runner`: what the customer's runner does with verified bundles, as a
//! library its binary's thin `commands/` call.
//!
//! Bundles themselves (layouts, archives, verification, trust, transport) come from
//! `stackpack-bundle`, shared with the packager; a stack's interface is read with
//! `stackpack-interface`. This crate adds what only the customer's side needs:
//!
//! - [`home`]: the runner home (`runner.toml`, trusted keys, the store, the ledger,
//!   the installation key, engine state) and its configuration.
//! - [`kit`]: an airgapped customer's kit checked whole, its bundles imported, its
//!   runner installed only when asked.
//! - [`store`]: the verified bundle store, an OCI image layout inside the home, and
//!   `import` of a layout (folder or tar) after every bundle in it is verified.
//! - [`unpack`]: a verified bundle out of the store into a work folder, checked again.
//! - [`engine`]: running Terraform or OpenTofu in a throwaway work folder (each
//!   binary's version remembered in the home while the file is unchanged).
//! - [`carried_engine`]: the engine a release carries, installed into the home and
//!   checked against the signed release before every run.
//! - [`redact`]: sensitive inputs replaced in the engine output relayed and kept.
//! - [`inputs`]: checking a customer's `.tfvars` against a bundle's interface.
//! - [`installation`]: the home opened once per command, with its ledger opened at
//!   most once.
//! - [`ledger`]: the local SQLite record of every receipt and deployment.
//! - [`receipts`]: the installation key and signed receipts.
//! - [`lock`]: one runner at a time per stack, held until the engine has stopped.
//! - [`interrupt`]: SIGINT/SIGTERM stop the engine gracefully and are recorded.
//! - [`providers`]: the bundle's provider packages as the engine's only source.
//! - [`pull`]: a bundle from a registry into the store, verified first.
//! - [`policy`]: Rego policies (vendor's and customer's) on every plan.
//! - [`preflight`]: the account checked against what a stack needs, before an apply.
//! - [`review`]: reviewed plans, signed by the installation key.
//! - [`secrets_in_state`]: the values of sensitive inputs looked for in the state after an apply.
//! - [`smoke`]: `check` blocks and output assertions after an apply.
//! - [`release`]: releases: import, plan, apply, rollback and destroy of many stacks.
//! - [`module_sources`]: module code only from the bundle, checked before `init`.
//! - [`deploy`]: plan, apply, rollback and drift, tying the above together.
//! - [`run_marker`]: who runs a stack, beside its state in the bucket, for `unlock`
//!   from any home.
//! - [`state_bucket`], [`deployment_record`]: state in the customer's bucket, and what runs, kept beside it.
//! - [`sync`]: `sync`, `pending` and `approve`: reconcile to an assignment, with an approval policy.
//! - [`support_bundle`]: what support needs from this home, secrets left out.
//! - [`files`]: the file helpers they share (private files, folders, work folders).

pub mod applied_state;
pub mod attested;
pub mod carried_engine;
pub mod deploy;
pub mod deployment_record;
pub mod engine;
mod engine_versions;
pub mod files;
pub mod home;
pub mod inputs;
pub mod installation;
pub mod interrupt;
pub mod kit;
pub mod ledger;
pub mod lock;
pub mod module_sources;
pub mod preflight;
pub mod providers;
pub mod pull;
pub mod receipts;
pub mod redact;
pub mod release;
pub mod review;
pub mod run_marker;
pub mod secrets_in_state;
pub mod smoke;
pub mod state_bucket;
pub mod store;
pub mod support_bundle;
pub mod sync;
pub mod unlock;
pub mod unpack;

pub use stackpack_bundle::error;
pub use stackpack_bundle::error::{Error, ErrorKind, Result};
/// Rego policies on plans: shared with the packager, whose forecasts read them.
pub use stackpack_bundle::policy;
