//! End-to-end scenarios across the three programs, one binary (one per crate keeps
//! link time and disk down); each module is one scenario family.

mod dist;
mod engine_in_release;
mod fleet;
mod forecast;
mod freshness;
mod images;
mod main_job;
mod readme_tour;
mod rollout;
mod support_ledger;
