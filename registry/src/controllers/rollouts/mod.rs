//! Rollouts under `/api/v1/`: what a customer is assigned, what its runner reports
//! (sync passes, release receipts), channels and customers' places in them, and the
//! rollouts themselves (list, show, pause, resume, abort). The scheduling is
//! [`crate::rollout`].

pub mod assignment;
pub mod channels;
pub mod control;
pub mod list;
pub mod placement;
pub mod release_receipts;
pub mod show;
pub mod sync;
