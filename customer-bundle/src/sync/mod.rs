//! `stackpack-runner sync`: a runner that reconciles.
//!
//! A pass ([`pass`]) reads what should run from one [`source`] — the registry's
//! assignment for this customer (checked against the vendor's signed channel
//! statement), a desired-state file in a git checkout ([`desired`]), or the
//! statements an airgapped export carried into the store — then, per release,
//! pulls if needed, verifies, plans, and follows the home's approval policy
//! (`[sync] approve`): applies, or holds the exact plan as a pending approval
//! ([`pending`]) that `stackpack-runner approve ID` applies. A maintenance
//! [`window`] holds applies outside it; one pass at a time per home ([`lock`]).
//! Connected, the pass sends its receipts and a sync report ([`registry`]); each
//! pass is kept for `status` ([`last`]). What a pass does differently with a
//! release and with a single stack is in [`deployable`].

pub mod deployable;
pub mod desired;
pub mod last;
pub mod lock;
pub mod pass;
pub mod pending;
pub mod registry;
pub mod single;
pub mod source;
pub mod window;
