//! Releases: a customer's whole environment, the stacks and services that
//! `stackpack.toml` lists under `[releases.<name>]`, published as one signed OCI
//! image index in `<namespace>/releases/<name>`.
//!
//! A short tour:
//!
//! - [`graph`] reads the releases and the dependencies and wiring of their stacks,
//!   and proves them for `check`: `graph/prove.rs` what `check` refuses,
//!   `graph/breaks.rs` the upstream outputs a change breaks, [`graph::types`] what a
//!   wiring can know of types, [`graph::service_ref`] a service reference,
//!   `graph/locate.rs` the `file:line` a finding names, [`graph::render`] the
//!   releases in `check`'s output.
//! - [`publish`] publishes each release whose parts changed, after the stacks:
//!   [`publish::describe`] pins its parts and decides the version (`publish/changes.rs`
//!   the changes and the bump), [`publish::engine`] the engine it carries,
//!   [`publish::services`] its services resolved to digests, `publish/push.rs`
//!   pushes it whole, tag last, and [`publish::fetch`] reads releases back.
//! - [`wiring`] says how a release's wiring changed since its last version, for
//!   the release's bump.
//!
//! The versions of a stack that already exist (also called releases in the code)
//! are not here: [`crate::releases`] and [`crate::release_view`].

pub mod graph;
pub mod publish;
pub mod wiring;
