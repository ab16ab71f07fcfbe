//! Releases on the customer's side: a release imported with the bundles it pins
//! ([`stored`]), its stacks planned and applied in dependency order with their
//! upstreams' outputs wired to their inputs ([`wiring`], [`run`]), rolled back and
//! destroyed in reverse order ([`ops`]), each run ending in a signed release
//! receipt ([`receipt`]) kept in the ledger ([`history`]); pulled from a registry
//! ([`pull`]); its services mirrored into the customer's registry ([`mirror`]).

pub mod history;
pub mod mirror;
pub mod ops;
pub mod pull;
pub mod receipt;
pub mod run;
pub mod stored;
pub mod wiring;
