//! Manifests by tag or digest: image manifests and indexes (OCI and Docker v2).

pub mod channel_statement;
pub mod checked;
pub mod delete;
pub mod get;
pub mod put;
pub mod release_index;
