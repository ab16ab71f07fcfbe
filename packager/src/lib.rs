//! The packager: from a vendor repository to signed bundles.
//!
//! A short tour, in the order a build runs:
//!
//! - [`config`] reads `stackpack.toml` and each `stack.toml`.
//! - [`git`] asks git about commits, changed files, tracked files and the branch.
//! - [`discover`] finds stacks and the local modules each one uses, transitively,
//!   refusing sources outside the repository, missing folders and cycles.
//! - [`repository`] opens a vendor repository: its root, config and stacks.
//! - [`releases`] is the boundary to where versions already exist (an image layout,
//!   or a registry through the same trait), and [`release_view`] picks one of them
//!   for a command.
//! - [`plan`] decides, per stack, whether it changed and which version it gets.
//! - [`pack`] writes the deterministic `tar+gzip` stack layer, streaming.
//! - [`providers`] finds the provider packages a stack's lock file pins and checks
//!   them; each travels as a layer of its own.
//! - [`build`] turns a plan into a signed bundle in an image layout.
//! - [`keys`] makes and reads signing keys; [`attest`] says which builder ran, for
//!   the provenance written beside each signature.
//! - [`publish`] pushes built bundles and [`module_package`]s (OpenTofu module
//!   packages) to a registry, claiming each tag exactly once; [`release::publish`]
//!   then publishes each release (stacks and services as one signed OCI index),
//!   its bump partly from [`release::wiring`].
//! - [`promote`] signs "this release version is approved for channel C" and pushes
//!   it beside the release, where the registry's rollout starts from it.
//! - [`error`] re-exports the one user-facing error the three programs share.
//! - [`check`] compares two releases' interfaces (read by the `stackpack_interface`
//!   crate from the `.tf` files) under the interface rules, the required version
//!   bump, and runs the repository lints; [`witness`] plans customers' inputs old
//!   against new in an emulated account.
//! - [`release::graph`] proves the releases `stackpack.toml` declares and the
//!   dependencies and wiring of their stacks, and names the wirings a change breaks.
//!   The release code is under [`release`], its tour atop it.
//! - [`impact`] checks every customer's inputs against the interface a build would
//!   publish, and [`customers`] writes a new customer's inputs and network range.
//!
//! The binary's `commands/` are thin wrappers over these.

pub mod attest;
pub mod build;
pub mod check;
pub mod config;
pub mod customers;
pub mod discover;
pub mod error;
pub mod forecast;
pub mod git;
pub mod impact;
pub mod keys;
pub mod kit;
pub mod module_package;
pub mod pack;
pub mod plan;
pub mod promote;
pub mod providers;
pub mod publish;
pub mod release;
pub mod release_view;
pub mod releases;
pub mod repository;
mod secret_text;
pub mod witness;

pub use error::{Error, Result};
