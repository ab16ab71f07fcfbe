//! The bundle crate's integration tests, one binary (one per crate keeps link time
//! and disk down; modules are the scenarios).

mod fuzz_unpack;
