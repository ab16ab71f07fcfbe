//! The release receipt lives in `stackpack_schema::release_receipt`: the runner
//! writes it, the registry's rollout health gate reads it.

pub use stackpack_schema::release_receipt::*;
